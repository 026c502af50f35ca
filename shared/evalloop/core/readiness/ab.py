"""A/B comparison of two agent configurations on the same cases (``docs/rules.md#ab-comparison``,
``docs/readiness.md#ab-comparison``).

Per dimension and for the composite: both means, the paired difference ``B - A`` with its 95 %
interval and p-value (:func:`evalloop.core.readiness.paired.paired_test`), the cases where the
two diverge most (largest absolute composite difference), the judged cases left out of the
composite comparison (with why), and the verdict. The verdict looks at hard failures first: a
side with refusal / escalation gate failures or agent errors the other side does not have is
worse, whatever the composite. Then the composite's paired test: which version is better and by
how much when significant at p < 0.05; with fewer than two paired cases "too few paired cases
to compare"; else "no significant difference" with the smallest difference this many cases
could detect (or "no difference of any size is detectable" when that exceeds 1).

Pure: values in, values out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from evalloop.core.readiness.paired import PairedTest, paired_test
from evalloop.core.readiness.scores import DIMENSIONS, CaseScores, composite

__all__ = ["ABCase", "ABDimension", "ABExcluded", "ABReport", "compare_ab", "headline"]


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
class ABExcluded:
    """A case left out of the composite comparison, with why (``"composite unscored on A"``,
    ``"composite unscored on both"``, ``"not judged on B"``)."""

    case_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class ABReport:
    """The comparison.

    Attributes:
        shared: ids of the cases both sides scored (the composite's pairs).
        dimensions: per dimension then ``"composite"``.
        divergent: the most divergent cases, largest ``|diff|`` first.
        winner: ``"A"``, ``"B"`` or ``"neither"``: first by hard failures (refusal / escalation
            gate failures and agent errors one side has and the other does not), then by the
            composite's paired test.
        summary: one line: who is better and by how much, or why neither.
        excluded: judged cases left out of the composite comparison, with why.
        gate_failures, agent_errors: per side (``"A"``, ``"B"``), the case ids.
        basis: what decided ``winner``: ``"failures"`` (hard failures differ), ``"composite"``
            (the paired test), ``"too_few"`` (fewer than two pairs) or ``"nothing"`` (no pair).
    """

    shared: tuple[str, ...]
    dimensions: dict[str, ABDimension]
    divergent: tuple[ABCase, ...]
    winner: str
    summary: str
    excluded: tuple[ABExcluded, ...] = ()
    gate_failures: dict[str, tuple[str, ...]] = field(default_factory=dict)
    agent_errors: dict[str, tuple[str, ...]] = field(default_factory=dict)
    basis: str = "composite"


def _better(t: PairedTest) -> str:
    if not t.significant or t.mean_diff is None or t.mean_diff == 0:
        return "neither"
    return "B" if t.mean_diff > 0 else "A"


def _ids(xs: Sequence[str], limit: int = 8) -> str:
    return ", ".join(xs[:limit]) + (f" and {len(xs) - limit} more" if len(xs) > limit else "")


def _failures_verdict(gates: Mapping[str, Sequence[str]],
                      errors: Mapping[str, Sequence[str]]) -> tuple[str, str] | None:
    """``(winner, sentence)`` when one side has hard failures the other does not, else ``None``
    (``docs/readiness.md#ab-comparison``)."""
    hard = {s: set(gates.get(s, ())) | set(errors.get(s, ())) for s in ("A", "B")}
    only = {s: sorted(hard[s] - hard["B" if s == "A" else "A"]) for s in ("A", "B")}
    if not only["A"] and not only["B"]:
        return None
    counts = (f"gate failures A {len(gates.get('A', ()))}, B {len(gates.get('B', ()))}; "
              f"agent errors A {len(errors.get('A', ()))}, B {len(errors.get('B', ()))}")
    if only["A"] and only["B"]:
        return "neither", (f"neither is better: each side fails cases the other passes "
                           f"(A only: {len(only['A'])} - {_ids(only['A'])}; B only: "
                           f"{len(only['B'])} - {_ids(only['B'])}; {counts})")
    worse = "A" if only["A"] else "B"
    better = "B" if worse == "A" else "A"
    return better, (f"{better} is better: {worse} fails {len(only[worse])} refusal/escalation "
                    f"gate or agent-error case(s) that {better} passes ({_ids(only[worse])}; "
                    f"{counts}), whatever the composite")


def _composite_sentence(t: PairedTest, winner: str) -> str:
    if t.n == 0:
        return "no case was scored on both sides: nothing to compare"
    if t.n < 2:
        return (f"too few paired cases to compare (n = {t.n}): composite B - A = "
                f"{t.mean_diff:+.3f} on that case, no significance verdict")
    if winner == "neither":
        p = "n/a" if t.p is None else f"{t.p:.3f}"
        if t.detectable_drop is None and t.detectable_note.startswith("not computable"):
            detect = f"; the smallest detectable difference is {t.detectable_note}"
        elif t.detectable_drop is None:
            detect = f"; {t.detectable_note.replace('drop', 'difference')}"
        elif t.detectable_drop == 0:
            detect = ""
        else:
            detect = (f"; the smallest difference detectable at 80% power with {t.n} cases "
                      f"is {t.detectable_drop:.3f}")
        return (f"no significant difference: composite B - A = {t.mean_diff:+.3f} "
                f"(p = {p}, n = {t.n}){detect}")
    assert t.mean_diff is not None and t.p is not None
    ci = ("" if t.ci_low is None or t.ci_high is None else
          f", 95% CI {t.ci_low:+.3f} to {t.ci_high:+.3f}"
          + (" (clipped to [-1, 1])" if t.ci_clipped else ""))
    return (f"{winner} is better by {abs(t.mean_diff):.3f} composite "
            f"(B - A = {t.mean_diff:+.3f}{ci}, p = {t.p:.4f}, n = {t.n})")


def compare_ab(a: Sequence[CaseScores], b: Sequence[CaseScores], *, top: int = 5,
               gate_failures: Mapping[str, Sequence[str]] | None = None,
               agent_errors: Mapping[str, Sequence[str]] | None = None) -> ABReport:
    """Compare B with A: hard failures first, then the composite on the cases both scored.

    Args:
        a, b: the judged cases of each side.
        top: how many divergent cases to list.
        gate_failures: per side (``"A"``, ``"B"``) the case ids failing a refusal or escalation
            gate (``docs/rules.md#refusal-and-escalation-gates``), over the whole run.
        agent_errors: per side the case ids the agent answered with an error.

    Returns:
        The report. A side with gate failures or agent errors the other does not have is worse
        whatever the composite; with fewer than two paired cases there is no significance
        verdict (``docs/readiness.md#ab-comparison``).

    Raises:
        ValueError: a case id repeats within one side.
    """
    for label, side in (("A", a), ("B", b)):
        ids = [c.case_id for c in side]
        if len(set(ids)) != len(ids):
            raise ValueError(f"side {label}: expected unique case ids")
    by_a = {c.case_id: c for c in a}
    by_b = {c.case_id: c for c in b}
    dims: dict[str, ABDimension] = {}
    for dim in DIMENSIONS:
        pairs = [(float(x), float(y)) for c in b if c.case_id in by_a
                 if (x := by_a[c.case_id].score(dim)) is not None
                 and (y := c.score(dim)) is not None]
        t = paired_test([x for x, _ in pairs], [y for _, y in pairs])
        dims[dim] = ABDimension(dim, t, _better(t))
    cases: list[ABCase] = []
    excluded: list[ABExcluded] = []
    for case_id in sorted(set(by_a) | set(by_b)):
        ca = composite(by_a[case_id].scores).value if case_id in by_a else None
        cb = composite(by_b[case_id].scores).value if case_id in by_b else None
        if ca is not None and cb is not None:
            cases.append(ABCase(case_id, ca, cb, cb - ca))
            continue
        if case_id not in by_a or case_id not in by_b:
            why = f"not judged on {'A' if case_id not in by_a else 'B'}"
        else:
            why = ("composite unscored on both" if ca is None and cb is None else
                   f"composite unscored on {'A' if ca is None else 'B'}")
        excluded.append(ABExcluded(case_id, why))
    t = paired_test([x.composite_a for x in cases], [x.composite_b for x in cases])
    dims["composite"] = ABDimension("composite", t, _better(t))
    gates = {s: tuple((gate_failures or {}).get(s, ())) for s in ("A", "B")}
    errors = {s: tuple((agent_errors or {}).get(s, ())) for s in ("A", "B")}
    by_failures = _failures_verdict(gates, errors)
    comp = _composite_sentence(t, dims["composite"].better)
    if by_failures is not None:
        winner, first = by_failures
        summary, basis = f"{first}; composite on the paired cases: {comp}", "failures"
    else:
        winner = dims["composite"].better if t.n >= 2 else "neither"
        basis = "nothing" if t.n == 0 else "too_few" if t.n < 2 else "composite"
        summary = comp
    if excluded:
        summary += (f"; {len(excluded)} judged case(s) left out of the composite comparison: "
                    + ", ".join(f"{x.case_id} ({x.reason})" for x in excluded[:8])
                    + (" ..." if len(excluded) > 8 else ""))
    divergent = tuple(sorted(cases, key=lambda x: (-abs(x.diff), x.case_id))[:top])
    return ABReport(tuple(x.case_id for x in cases), dims, divergent, winner, summary,
                    tuple(excluded), gates, errors, basis)


def headline(report: ABReport) -> str:
    """The verdict in a few words (the web tab's headline; the reasons are in ``summary``):
    ``"A is better (gate failures / agent errors)"``, ``"neither is better (both fail cases)"``,
    ``"too few paired cases to compare"``, ``"nothing to compare"``, ``"B is better"`` or
    ``"no significant difference"``."""
    if report.basis == "failures":
        return ("neither is better (both fail cases)" if report.winner == "neither"
                else f"{report.winner} is better (gate failures / agent errors)")
    if report.basis == "too_few":
        return "too few paired cases to compare"
    if report.basis == "nothing":
        return "nothing to compare"
    return "no significant difference" if report.winner == "neither" else (
        f"{report.winner} is better")
