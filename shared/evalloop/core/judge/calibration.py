"""Calibration: raw P(yes) -> calibrated score per dimension, and the record that says how well.

Raw P(yes) from a small judge is skewed high (a threshold of 0.5 on it is wrong), so each
dimension — and per-claim support — gets a monotone map fitted by isotonic regression on human
labels (``docs/judge.md#calibration``). The map is stored as its breakpoints and applied by
linear interpolation between them, clipped at both ends; it is non-decreasing, so it keeps the
judge's ranking and only moves thresholds.

A dimension whose cross-validated agreement with the humans is below the bar — ROC-AUC < 0.75
for binary labels, Spearman < 0.40 for ratings — is **advisory** (``docs/judge.md#advisory-
dimensions``): shown, never alone a NO-GO. A judge with no calibration record for its model and
prompt version scores ``raw`` unchanged and every dimension is advisory (``IDENTITY``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from evalloop.core.judge.types import DIMENSIONS

__all__ = [
    "AUC_BAR",
    "CLAIM",
    "IDENTITY",
    "MIN_ITEMS",
    "SPEARMAN_BAR",
    "CalibrationRecord",
    "DimensionCalibration",
    "IsotonicMap",
    "LabelKind",
    "SourceShare",
    "Target",
    "advisory_reason",
    "is_advisory",
    "targets_in_order",
    "uncalibrated",
]

AUC_BAR = 0.75
SPEARMAN_BAR = 0.40
#: Fewer scored items than this cannot show agreement, whatever the point estimate.
MIN_ITEMS = 20
CLAIM = "claim"
#: A calibration target: one of the seven dimensions, or ``"claim"`` (per-claim support).
Target = str
LabelKind = Literal["binary", "rating"]


@dataclass(frozen=True, slots=True)
class IsotonicMap:
    """A non-decreasing piecewise-linear map [0, 1] -> [0, 1] given by its breakpoints.

    Attributes:
        x: strictly increasing raw values (at least one).
        y: calibrated values at ``x``, non-decreasing, each in [0, 1].

    Raises:
        ValueError: (on construction) lengths differ, ``x`` not strictly increasing, ``y``
            decreasing or outside [0, 1], or a NaN anywhere.
    """

    x: tuple[float, ...]
    y: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.x or len(self.x) != len(self.y):
            raise ValueError(f"expected equal, non-empty x and y, got {len(self.x)}/{len(self.y)}")
        if any(math.isnan(v) for v in (*self.x, *self.y)):
            raise ValueError("isotonic breakpoints must not be NaN")
        if any(b <= a for a, b in zip(self.x, self.x[1:], strict=False)):
            raise ValueError(f"x must be strictly increasing, got {self.x}")
        if any(b < a for a, b in zip(self.y, self.y[1:], strict=False)):
            raise ValueError(f"y must be non-decreasing, got {self.y}")
        if any(not 0.0 <= v <= 1.0 for v in self.y):
            raise ValueError(f"y must lie in [0, 1], got {self.y}")

    def __call__(self, raw: float) -> float:
        """Map ``raw`` (clipped to the breakpoints' range) to its calibrated value.

        Raises:
            ValueError: ``raw`` is NaN.
        """
        if math.isnan(raw):
            raise ValueError("cannot calibrate NaN")
        xs, ys = self.x, self.y
        if raw <= xs[0]:
            return ys[0]
        if raw >= xs[-1]:
            return ys[-1]
        lo, hi = 0, len(xs) - 1
        while hi - lo > 1:  # binary search for xs[lo] <= raw < xs[hi]
            mid = (lo + hi) // 2
            if xs[mid] <= raw:
                lo = mid
            else:
                hi = mid
        t = (raw - xs[lo]) / (xs[hi] - xs[lo])
        return ys[lo] + t * (ys[hi] - ys[lo])

    def as_dict(self) -> dict[str, list[float]]:
        """Return ``{"x": [...], "y": [...]}`` for JSON."""
        return {"x": list(self.x), "y": list(self.y)}


IDENTITY = IsotonicMap((0.0, 1.0), (0.0, 1.0))


@dataclass(frozen=True, slots=True)
class SourceShare:
    """What one label source contributed to a target's calibration
    (``docs/judge.md#combining-sources``).

    Attributes:
        source: the source name (a judge data folder, ``feedbackqa`` or ``human-review``).
        kind: the kind of label that source gives (``binary`` or ``rating``).
        n: scored items from this source.
        unscored: items from this source the judge could not score.
        raw_rank: ROC-AUC (binary) or Spearman (rating) of the raw P(yes) against this source's
            labels alone (``None`` when it cannot be computed: one class, constant values or
            fewer than 3 items); information only.
    """

    source: str
    kind: LabelKind
    n: int
    unscored: int = 0
    raw_rank: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (the inverse of :meth:`from_dict`)."""
        return {"source": self.source, "kind": self.kind, "n": self.n,
                "unscored": self.unscored, "raw_rank": self.raw_rank}  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SourceShare:
        """Build from :meth:`as_dict` output.

        Raises:
            ValueError: a field is missing or malformed.
        """
        try:
            kind = data["kind"]
            if kind not in ("binary", "rating"):
                raise ValueError(f"kind: expected 'binary' or 'rating', got {kind!r}")
            rank = data.get("raw_rank")
            return cls(str(data["source"]), kind, int(data["n"]), int(data.get("unscored", 0)),
                       None if rank is None else float(rank))  # fmt: skip
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed source share: {exc!r}") from exc


def is_advisory(
    kind: LabelKind, auc: float | None, spearman: float | None, n: int = MIN_ITEMS
) -> bool:
    """Apply the agreement bar (``docs/judge.md#advisory-dimensions``).

    Args:
        kind: ``"binary"`` labels are judged by ROC-AUC, ``"rating"`` labels by Spearman.
        auc: cross-validated ROC-AUC, or ``None`` when it could not be computed.
        spearman: cross-validated Spearman rho, or ``None``.
        n: scored items the metric rests on.

    Returns:
        True when the metric is missing or below its bar (AUC < 0.75, Spearman < 0.40), or
        rests on fewer than ``MIN_ITEMS`` items.
    """
    metric, bar = (auc, AUC_BAR) if kind == "binary" else (spearman, SPEARMAN_BAR)
    return metric is None or metric < bar or n < MIN_ITEMS


def advisory_reason(cal: DimensionCalibration | None) -> str:
    """Why a target is advisory, in a few words (``docs/judge.md#advisory-dimensions``).

    Args:
        cal: the target's calibration, or ``None`` (not calibrated).

    Returns:
        ``"AUC 0.40 < 0.75"`` or ``"Spearman 0.08 < 0.40"`` (below the bar; the figure to two
        decimals), ``"12 items < 20"`` (too few labelled items), ``"no ROC-AUC computed"`` /
        ``"no Spearman computed"``, ``"not calibrated"``; ``""`` when the target is not advisory.
    """
    if cal is None:
        return "not calibrated"
    if not cal.advisory:
        return ""
    name, metric, bar = (("AUC", cal.auc, AUC_BAR) if cal.kind == "binary"
                         else ("Spearman", cal.spearman, SPEARMAN_BAR))
    if metric is None:
        return f"no {'ROC-AUC' if name == 'AUC' else name} computed"
    if metric < bar:
        return f"{name} {metric:.2f} < {bar:.2f}"
    if cal.n < MIN_ITEMS:
        return f"{cal.n} items < {MIN_ITEMS}"
    return "marked advisory by its calibration record"


@dataclass(frozen=True, slots=True)
class DimensionCalibration:
    """One target's fitted map and its cross-validated agreement with human labels.

    Attributes:
        target: a dimension name or ``"claim"``.
        kind: ``"binary"`` or ``"rating"`` labels.
        n: labelled items used (after dropping unscored ones).
        sources: data sets (folder names) the labels came from.
        mapping: the isotonic map fitted on all ``n`` items.
        auc, auc_ci: ROC-AUC of out-of-fold calibrated scores and its 95 % interval (binary).
        balanced_accuracy, balanced_accuracy_ci: at calibrated score >= 0.5 (binary).
        spearman, spearman_ci: Spearman rho against the ratings and its interval (rating).
        advisory: below the bar (``is_advisory``).
        unscored: items the judge could not score (excluded from ``n``).
        note: caveats in one line (e.g. "little labelled data").
        raw_rank: ROC-AUC (binary) or Spearman (rating) of the *raw* P(yes) on all ``n`` items:
            nothing is fitted for it, so it shows the judge's ranking without cross-validation
            noise; information only — the advisory rule uses the cross-validated figures.
        by_source: per label source, its kind and item counts (in ``sources`` order; empty in
            records written before sources were combined).
    """

    target: Target
    kind: LabelKind
    n: int
    sources: tuple[str, ...]
    mapping: IsotonicMap
    auc: float | None = None
    auc_ci: tuple[float, float] | None = None
    balanced_accuracy: float | None = None
    balanced_accuracy_ci: tuple[float, float] | None = None
    spearman: float | None = None
    spearman_ci: tuple[float, float] | None = None
    advisory: bool = True
    unscored: int = 0
    note: str = ""
    raw_rank: float | None = None
    by_source: tuple[SourceShare, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (the inverse of :meth:`from_dict`)."""
        return {
            "target": self.target,
            "kind": self.kind,
            "n": self.n,
            "sources": list(self.sources),
            "mapping": self.mapping.as_dict(),
            "auc": self.auc,
            "auc_ci": list(self.auc_ci) if self.auc_ci else None,
            "balanced_accuracy": self.balanced_accuracy,
            "balanced_accuracy_ci": (
                list(self.balanced_accuracy_ci) if self.balanced_accuracy_ci else None
            ),
            "spearman": self.spearman,
            "spearman_ci": list(self.spearman_ci) if self.spearman_ci else None,
            "advisory": self.advisory,
            "unscored": self.unscored,
            "note": self.note,
            "raw_rank": self.raw_rank,
            "by_source": [b.as_dict() for b in self.by_source],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DimensionCalibration:
        """Build from :meth:`as_dict` output.

        Raises:
            ValueError: a field is missing or malformed (the message names it).
        """
        try:

            def pair(key: str) -> tuple[float, float] | None:
                v = data.get(key)
                return (float(v[0]), float(v[1])) if v else None

            def num(key: str) -> float | None:
                v = data.get(key)
                return None if v is None else float(v)

            kind = data["kind"]
            if kind not in ("binary", "rating"):
                raise ValueError(f"kind: expected 'binary' or 'rating', got {kind!r}")
            return cls(
                target=str(data["target"]),
                kind=kind,
                n=int(data["n"]),
                sources=tuple(str(s) for s in data["sources"]),
                mapping=IsotonicMap(
                    tuple(float(v) for v in data["mapping"]["x"]),
                    tuple(float(v) for v in data["mapping"]["y"]),
                ),
                auc=num("auc"),
                auc_ci=pair("auc_ci"),
                balanced_accuracy=num("balanced_accuracy"),
                balanced_accuracy_ci=pair("balanced_accuracy_ci"),
                spearman=num("spearman"),
                spearman_ci=pair("spearman_ci"),
                advisory=bool(data["advisory"]),
                unscored=int(data.get("unscored", 0)),
                note=str(data.get("note", "")),
                raw_rank=num("raw_rank"),
                by_source=tuple(SourceShare.from_dict(b) for b in data.get("by_source") or ()),
            )
        except (KeyError, TypeError, IndexError) as exc:
            raise ValueError(f"malformed dimension calibration: {exc!r}") from exc


@dataclass(frozen=True, slots=True)
class CalibrationRecord:
    """Everything a judge needs to calibrate its raw scores, and the evidence for it.

    Attributes:
        calibration_id: identifier (``<model>/<prompt_version>/<created_at>``; or
            ``uncalibrated``).
        judge_model: model the maps were fitted for.
        prompt_version: prompts the maps were fitted for.
        created_at: ISO-8601 UTC time of the fit.
        targets: target name -> its calibration (the seven dimensions and ``"claim"``; a missing
            target is uncalibrated: identity map, advisory).
        method: one line naming the method (folds, bootstrap resamples, seed, sample sizes).
    """

    calibration_id: str
    judge_model: str
    prompt_version: str
    created_at: str
    targets: Mapping[Target, DimensionCalibration] = field(default_factory=dict)
    method: str = ""

    def calibrate(self, target: Target, raw: float) -> float:
        """Return ``raw`` mapped by ``target``'s isotonic map (identity when uncalibrated)."""
        cal = self.targets.get(target)
        return (cal.mapping if cal else IDENTITY)(raw)

    def advisory(self, target: Target) -> bool:
        """True when ``target`` is uncalibrated or below the agreement bar."""
        cal = self.targets.get(target)
        return True if cal is None else cal.advisory

    def advisory_reason(self, target: Target) -> str:
        """``advisory_reason`` of ``target``'s calibration (``""`` when it gates)."""
        return advisory_reason(self.targets.get(target))

    def matches(self, judge_model: str, prompt_version: str) -> bool:
        """True when fitted for exactly this model and prompt version."""
        return self.judge_model == judge_model and self.prompt_version == prompt_version

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (the inverse of :meth:`from_dict`)."""
        return {
            "calibration_id": self.calibration_id,
            "judge_model": self.judge_model,
            "prompt_version": self.prompt_version,
            "created_at": self.created_at,
            "method": self.method,
            "targets": {k: v.as_dict() for k, v in self.targets.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CalibrationRecord:
        """Build from :meth:`as_dict` output.

        Raises:
            ValueError: a field is missing or malformed.
        """
        try:
            return cls(
                calibration_id=str(data["calibration_id"]),
                judge_model=str(data["judge_model"]),
                prompt_version=str(data["prompt_version"]),
                created_at=str(data["created_at"]),
                method=str(data.get("method", "")),
                targets={
                    str(k): DimensionCalibration.from_dict(v) for k, v in data["targets"].items()
                },
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"malformed calibration record: {exc!r}") from exc


def uncalibrated(judge_model: str, prompt_version: str) -> CalibrationRecord:
    """A record with no targets: scores equal raw P(yes) and every dimension is advisory."""
    return CalibrationRecord("uncalibrated", judge_model, prompt_version, "")


def targets_in_order() -> Sequence[Target]:
    """The seven dimensions in report order, then ``"claim"``."""
    return (*DIMENSIONS, CLAIM)
