"""A/B comparison of two agent configurations on the same cases (``docs/rules.md#a-b-comparison``,
``docs/readiness.md#a-b-comparison``).

Per dimension and for the composite: both means, the paired difference ``B - A`` with its 95 %
interval and p-value (:func:`evalloop.core.readiness.paired.paired_test`), the cases where the
two diverge most (largest absolute composite difference), and the verdict: which version is
better and by how much -- the composite difference when it is significant at p < 0.05, else
"no significant difference" with the smallest difference this many cases could detect.

Pure: values in, values out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evalloop.core.readiness.paired import PairedTest, paired_test
from evalloop.core.readiness.scores import DIMENSIONS, CaseScores, composite

__all__ = ["ABCase", "ABDimension", "ABReport", "compare_ab"]


@dataclass(frozen=True, slots=True)
class ABDimension:
    """One dimension (or ``"composite"``) of A and B on their shared scored cases.

    Attributes:
        dimension: the dimension or ``"composite"``.
        test: the paired test of ``B - A``.
        better: ``"A"``, ``"B"`` (significantly higher) or ``"neither"``.
    """

    dimension: str
    test: PairedTest
    better: str


@dataclass(frozen=True, slots=True)
class ABCase:
    """A case where A and B diverge: their composites and ``diff = B - A``."""

    case_id: str
    composite_a: float
    composite_b: float
    diff: float


@dataclass(frozen=True, slots=True)
class ABReport:
    """The comparison.

    Attributes:
        shared: ids of the cases both sides scored (the composite's pairs).
        dimensions: per dimension then ``"composite"``.
        divergent: the most divergent cases, largest ``|diff|`` first.
        winner: ``"A"``, ``"B"`` or ``"neither"`` (by the composite).
        summary: one line: who is better and by how much, or why neither.
    """

    shared: tuple[str, ...]
    dimensions: dict[str, ABDimension]
    divergent: tuple[ABCase, ...]
    winner: str
    summary: str


def _better(t: PairedTest) -> str:
    if not t.significant or t.mean_diff is None or t.mean_diff == 0:
        return "neither"
    return "B" if t.mean_diff > 0 else "A"


def compare_ab(a: Sequence[CaseScores], b: Sequence[CaseScores], *, top: int = 5) -> ABReport:
    """Compare B with A on the cases both scored.

    Raises:
        ValueError: a case id repeats within one side.
    """
    for label, side in (("A", a), ("B", b)):
        ids = [c.case_id for c in side]
        if len(set(ids)) != len(ids):
            raise ValueError(f"side {label}: expected unique case ids")
    by_a = {c.case_id: c for c in a}
    dims: dict[str, ABDimension] = {}
    for dim in DIMENSIONS:
        pairs = [(float(x), float(y)) for c in b if c.case_id in by_a
                 if (x := by_a[c.case_id].score(dim)) is not None
                 and (y := c.score(dim)) is not None]
        t = paired_test([x for x, _ in pairs], [y for _, y in pairs])
        dims[dim] = ABDimension(dim, t, _better(t))
    cases: list[ABCase] = []
    for c in b:
        if c.case_id not in by_a:
            continue
        ca, cb = composite(by_a[c.case_id].scores).value, composite(c.scores).value
        if ca is not None and cb is not None:
            cases.append(ABCase(c.case_id, ca, cb, cb - ca))
    t = paired_test([x.composite_a for x in cases], [x.composite_b for x in cases])
    winner = _better(t)
    dims["composite"] = ABDimension("composite", t, winner)
    if t.n == 0:
        summary = "no case was scored on both sides: nothing to compare"
    elif winner == "neither":
        p = "n/a" if t.p is None else f"{t.p:.3f}"
        detect = ("" if t.detectable_drop is None or t.detectable_drop == 0 else
                  f"; with {t.n} cases a difference below {t.detectable_drop:.3f} is not "
                  "detectable at 80% power")
        summary = (f"no significant difference: composite B - A = {t.mean_diff:+.3f} "
                   f"(p = {p}, n = {t.n}){detect}")
    else:
        assert t.mean_diff is not None
        ci = ("" if t.ci_low is None or t.ci_high is None else
              f", 95% CI {t.ci_low:+.3f} to {t.ci_high:+.3f}")
        summary = (f"{winner} is better by {abs(t.mean_diff):.3f} composite "
                   f"(B - A = {t.mean_diff:+.3f}{ci}, p = {t.p:.4f}, n = {t.n})")
    divergent = tuple(sorted(cases, key=lambda x: (-abs(x.diff), x.case_id))[:top])
    return ABReport(tuple(x.case_id for x in cases), dims, divergent, winner, summary)
