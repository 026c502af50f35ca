"""Regression of a run against its baseline (``docs/rules.md#regression``).

Compared on the cases **both** runs scored (their number is reported):

* a case whose composite drops by more than :data:`CASE_DROP` (0.15) is a **case regression**;
* a dimension whose mean over the shared cases drops by more than :data:`DIMENSION_DROP`
  (0.10) is a **regression warning**, even if the composite holds;
* a paired t-test (:func:`evalloop.core.readiness.paired.paired_test`) per dimension and for the
  composite marks a difference **significant** at p < 0.05; a *significant regression* is a
  significant difference whose mean is a drop.

Each dimension's pairs are the shared cases where both runs scored it (so ``n`` may differ per
dimension); the composite's pairs are the shared cases with a composite on both sides.

Pure: values in, values out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evalloop.core.readiness.paired import PairedTest, paired_test
from evalloop.core.readiness.scores import DIMENSIONS, CaseScores, composite

__all__ = ["CASE_DROP", "DIMENSION_DROP", "CaseRegression", "DimensionComparison",
           "RegressionReport", "compare"]

#: ``docs/rules.md#regression``: a case whose score drops by more than this is a regression.
CASE_DROP = 0.15
#: ``docs/rules.md#regression``: a dimension whose mean drops by more than this is a warning.
DIMENSION_DROP = 0.10
_EPS = 1e-9  # a drop of exactly 0.15 / 0.10 is not "more than" (float noise aside)


@dataclass(frozen=True, slots=True)
class CaseRegression:
    """A shared case whose composite dropped by more than 0.15.

    Attributes:
        case_id: the case.
        baseline, current: its composite in each run (0-1).
        drop: ``baseline - current`` (> 0.15).
        dimensions: ``dimension -> drop`` of the dimensions that fell, largest first.
    """

    case_id: str
    baseline: float
    current: float
    drop: float
    dimensions: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class DimensionComparison:
    """One dimension (or ``"composite"``) compared on the shared cases.

    Attributes:
        dimension: the dimension or ``"composite"``.
        test: the paired test (current - baseline).
        drop: ``-test.mean_diff`` (positive = worse), ``None`` with no pairs.
        warning: the mean dropped by more than 0.10.
        significant_regression: the difference is significant (p < 0.05) and a drop.
    """

    dimension: str
    test: PairedTest
    drop: float | None
    warning: bool
    significant_regression: bool


@dataclass(frozen=True, slots=True)
class RegressionReport:
    """A run compared with its baseline.

    Attributes:
        baseline_run_id, current_run_id: the two runs (as given).
        shared_cases: ids of the cases both runs contain, in the current run's order.
        only_baseline, only_current: ids present in one run only.
        dimensions: ``{dimension: comparison}`` for the seven dimensions then ``"composite"``.
        case_regressions: shared cases whose composite dropped by more than 0.15, worst first.
    """

    baseline_run_id: str
    current_run_id: str
    shared_cases: tuple[str, ...]
    only_baseline: tuple[str, ...]
    only_current: tuple[str, ...]
    dimensions: Mapping[str, DimensionComparison]
    case_regressions: tuple[CaseRegression, ...]

    @property
    def warnings(self) -> list[str]:
        """Dimensions (and the composite) whose mean dropped by more than 0.10."""
        return [d for d, c in self.dimensions.items() if c.warning]

    @property
    def significant_regressions(self) -> list[str]:
        """Dimensions (and the composite) with a significant drop."""
        return [d for d, c in self.dimensions.items() if c.significant_regression]


def _compare(name: str, pairs: list[tuple[float, float]]) -> DimensionComparison:
    test = paired_test([b for b, _ in pairs], [c for _, c in pairs])
    drop = None if test.mean_diff is None else -test.mean_diff
    return DimensionComparison(
        dimension=name, test=test, drop=drop,
        warning=drop is not None and drop > DIMENSION_DROP + _EPS,
        significant_regression=test.significant and drop is not None and drop > 0,
    )


def compare(baseline: Sequence[CaseScores], current: Sequence[CaseScores], *,
            baseline_run_id: str = "baseline", current_run_id: str = "current"
            ) -> RegressionReport:
    """Compare ``current`` with ``baseline`` on their shared cases.

    Args:
        baseline: the baseline run's scored answers.
        current: this run's scored answers.
        baseline_run_id, current_run_id: labels carried into the report.

    Returns:
        The regression report (see the module docstring for the rules).

    Raises:
        ValueError: a case id repeats within one run.
    """
    for label, run in (("baseline", baseline), ("current", current)):
        ids = [c.case_id for c in run]
        if len(set(ids)) != len(ids):
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            raise ValueError(f"{label} run: expected unique case ids, {dupes} repeat")
    base = {c.case_id: c for c in baseline}
    cur = {c.case_id: c for c in current}
    shared = tuple(c.case_id for c in current if c.case_id in base)
    dims: dict[str, DimensionComparison] = {}
    for dim in DIMENSIONS:
        pairs = [(float(b), float(c)) for cid in shared
                 if (b := base[cid].score(dim)) is not None
                 and (c := cur[cid].score(dim)) is not None]
        dims[dim] = _compare(dim, pairs)
    comp_pairs: list[tuple[float, float]] = []
    regressions: list[CaseRegression] = []
    for cid in shared:
        b_comp, c_comp = composite(base[cid].scores).value, composite(cur[cid].scores).value
        if b_comp is None or c_comp is None:
            continue
        comp_pairs.append((b_comp, c_comp))
        if b_comp - c_comp > CASE_DROP + _EPS:
            fell = {d: bs - cs for d in DIMENSIONS
                    if (bs := base[cid].score(d)) is not None
                    and (cs := cur[cid].score(d)) is not None and bs - cs > _EPS}
            regressions.append(CaseRegression(
                cid, b_comp, c_comp, b_comp - c_comp,
                dict(sorted(fell.items(), key=lambda kv: (-kv[1], kv[0]))),
            ))
    dims["composite"] = _compare("composite", comp_pairs)
    regressions.sort(key=lambda r: (-r.drop, r.case_id))
    return RegressionReport(
        baseline_run_id=baseline_run_id, current_run_id=current_run_id, shared_cases=shared,
        only_baseline=tuple(c.case_id for c in baseline if c.case_id not in cur),
        only_current=tuple(c.case_id for c in current if c.case_id not in base),
        dimensions=dims, case_regressions=tuple(regressions),
    )
