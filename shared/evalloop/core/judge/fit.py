"""Fitting calibration maps and measuring agreement with humans (``docs/judge.md#calibration``).

- :func:`fit_isotonic`: isotonic regression (scikit-learn, ``y`` clipped to [0, 1]) of the
  labels on raw P(yes), returned as an :class:`IsotonicMap`.
- :func:`cross_validate`: ``k``-fold out-of-fold calibrated scores (stratified by label for
  binary labels), then ROC-AUC and balanced accuracy at 0.5 (binary) or Spearman's rho
  (ratings) of those scores against the labels, each with a seeded percentile-bootstrap 95 %
  interval over items (Efron & Tibshirani 1993, ch. 13).

Labels are floats in [0, 1]: binary labels are 0/1; ratings are rescaled to [0, 1]
(``(r - lo) / (hi - lo)``) so the calibrated score is the expected rescaled rating.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.stats import spearmanr
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import balanced_accuracy_score, roc_auc_score
from sklearn.model_selection import KFold, StratifiedKFold

from evalloop.core.judge.calibration import (
    CalibrationRecord,
    DimensionCalibration,
    IsotonicMap,
    LabelKind,
    SourceShare,
    Target,
    is_advisory,
    targets_in_order,
)

__all__ = [
    "NOTES",
    "RawLabel",
    "balanced_accuracy",
    "bootstrap_ci",
    "calibrate_target",
    "combined_kind",
    "cross_validate",
    "fit_isotonic",
    "fit_record",
    "roc_auc",
    "spearman",
]

Floats = NDArray[np.float64]


def _arrays(raw: Sequence[float], labels: Sequence[float]) -> tuple[Floats, Floats]:
    x = np.asarray(raw, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"expected two equal-length 1-d sequences, got {x.shape} and {y.shape}")
    if np.isnan(x).any() or np.isnan(y).any():
        raise ValueError("raw scores and labels must not hold NaN (drop unscored items first)")
    if ((x < 0) | (x > 1) | (y < 0) | (y > 1)).any():
        raise ValueError("raw scores and labels must lie in [0, 1]")
    return x, y


def fit_isotonic(raw: Sequence[float], labels: Sequence[float]) -> IsotonicMap:
    """Fit a non-decreasing map raw -> label.

    Args:
        raw: raw P(yes) per item, in [0, 1].
        labels: label per item in [0, 1] (0/1, or a rescaled rating).

    Returns:
        The fitted map's breakpoints (identity-like single point when all raw values are equal).

    Raises:
        ValueError: empty input, unequal lengths, NaN, or values outside [0, 1].
    """
    x, y = _arrays(raw, labels)
    if x.size == 0:
        raise ValueError("cannot fit a calibration map on no items")
    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip", increasing=True)
    iso.fit(x, y)
    xs = np.asarray(iso.X_thresholds_, dtype=np.float64)
    ys = np.clip(np.asarray(iso.y_thresholds_, dtype=np.float64), 0.0, 1.0)
    # keep strictly increasing x (sklearn may repeat an x at a step): last y of a run wins
    keep_x: list[float] = []
    keep_y: list[float] = []
    for xv, yv in zip(xs.tolist(), ys.tolist(), strict=True):
        if keep_x and xv <= keep_x[-1]:
            keep_y[-1] = max(keep_y[-1], yv)
            continue
        keep_x.append(xv)
        keep_y.append(yv)
    for i in range(1, len(keep_y)):  # guard against float noise breaking monotonicity
        keep_y[i] = max(keep_y[i], keep_y[i - 1])
    return IsotonicMap(tuple(keep_x), tuple(keep_y))


def roc_auc(scores: Sequence[float], labels: Sequence[int]) -> float | None:
    """ROC-AUC of ``scores`` against 0/1 ``labels`` (ties count one half); ``None`` if one class."""
    y = np.asarray(labels)
    if len(set(y.tolist())) < 2:
        return None
    return float(roc_auc_score(y, np.asarray(scores, dtype=np.float64)))


def balanced_accuracy(
    scores: Sequence[float], labels: Sequence[int], threshold: float = 0.5
) -> float | None:
    """Mean of sensitivity and specificity of ``score >= threshold``; ``None`` if one class."""
    y = np.asarray(labels)
    if len(set(y.tolist())) < 2:
        return None
    pred = (np.asarray(scores, dtype=np.float64) >= threshold).astype(int)
    return float(balanced_accuracy_score(y, pred))


def spearman(scores: Sequence[float], ratings: Sequence[float]) -> float | None:
    """Spearman's rho (average ranks for ties); ``None`` when either side is constant."""
    a = np.asarray(scores, dtype=np.float64)
    b = np.asarray(ratings, dtype=np.float64)
    if a.size < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    rho = float(spearmanr(a, b).statistic)
    return None if math.isnan(rho) else rho


def bootstrap_ci(
    scores: Sequence[float],
    labels: Sequence[float],
    metric: str,
    *,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile-bootstrap 95 % interval of ``metric`` over items.

    Args:
        scores: per-item scores.
        labels: per-item labels (0/1 for ``auc`` and ``balanced_accuracy``).
        metric: ``"auc"``, ``"balanced_accuracy"`` or ``"spearman"``.
        resamples: bootstrap resamples (resamples where the metric is undefined are skipped).
        seed: NumPy generator seed.

    Returns:
        ``(low, high)`` = the 2.5th and 97.5th percentiles, or ``None`` when fewer than half of
        the resamples gave a value.

    Raises:
        ValueError: unknown ``metric``.
    """
    fns = {
        "auc": lambda s, y: roc_auc(s, y.astype(int)),
        "balanced_accuracy": lambda s, y: balanced_accuracy(s, y.astype(int)),
        "spearman": spearman,
    }
    if metric not in fns:
        raise ValueError(f"metric: expected one of {sorted(fns)}, got {metric!r}")
    fn = fns[metric]
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    rng = np.random.default_rng(seed)
    values: list[float] = []
    for _ in range(resamples):
        idx = rng.integers(0, s.size, s.size)
        v = fn(s[idx], y[idx])
        if v is not None:
            values.append(v)
    if len(values) < resamples / 2:
        return None
    lo, hi = np.percentile(np.asarray(values), [2.5, 97.5])
    return float(lo), float(hi)


def cross_validate(
    raw: Sequence[float],
    labels: Sequence[float],
    kind: LabelKind,
    *,
    folds: int = 5,
    seed: int = 0,
) -> list[float]:
    """Out-of-fold calibrated scores: each item mapped by a map fitted without its fold.

    Args:
        raw: raw P(yes) per item.
        labels: 0/1 (``binary``) or rescaled ratings in [0, 1] (``rating``).
        kind: ``binary`` folds are stratified by label; ``rating`` folds are plain shuffled.
        folds: number of folds (reduced to the smallest class size when that is smaller, >= 2).
        seed: shuffling seed.

    Returns:
        One calibrated score per item, in input order.

    Raises:
        ValueError: fewer than 4 items, or a binary set with fewer than 2 items of a class.
    """
    x, y = _arrays(raw, labels)
    if x.size < 4:
        raise ValueError(f"cross-validation needs at least 4 items, got {x.size}")
    out = np.empty_like(x)
    if kind == "binary":
        yi = y.astype(int)
        smallest = int(min(np.bincount(yi, minlength=2)))
        if smallest < 2:
            raise ValueError("binary cross-validation needs at least 2 items of each class")
        k = max(2, min(folds, smallest))
        splits = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(x, yi)
    else:
        k = max(2, min(folds, x.size))
        splits = KFold(n_splits=k, shuffle=True, random_state=seed).split(x)
    for train, test in splits:
        fitted = fit_isotonic(x[train].tolist(), y[train].tolist())
        out[test] = [fitted(v) for v in x[test].tolist()]
    return [float(v) for v in out]


def calibrate_target(
    target: Target,
    raw: Sequence[float],
    labels: Sequence[float],
    kind: LabelKind,
    *,
    sources: Sequence[str],
    unscored: int = 0,
    folds: int = 5,
    seed: int = 0,
    resamples: int = 2000,
    note: str = "",
    by_source: Sequence[SourceShare] = (),
) -> DimensionCalibration:
    """Fit ``target``'s map on all items and measure agreement by cross-validation.

    Args:
        target: dimension name or ``"claim"``.
        raw: raw P(yes) of the scored items.
        labels: their labels in [0, 1].
        kind: ``binary`` -> ROC-AUC + balanced accuracy; ``rating`` -> Spearman.
        sources: data set names the labels came from.
        unscored: items the judge could not score (reported, excluded).
        folds, seed, resamples: cross-validation and bootstrap parameters.
        note: caveat line stored with the record.
        by_source: what each source contributed (stored as given).

    Returns:
        The target's calibration; ``advisory`` per ``is_advisory``.

    Raises:
        ValueError: as :func:`cross_validate`.
    """
    oof = cross_validate(raw, labels, kind, folds=folds, seed=seed)
    mapping = fit_isotonic(raw, labels)
    if kind == "binary":
        yi = [round(v) for v in labels]
        auc = roc_auc(oof, yi)
        bal = balanced_accuracy(oof, yi)
        return DimensionCalibration(
            target=target,
            kind=kind,
            n=len(raw),
            sources=tuple(sources),
            mapping=mapping,
            auc=auc,
            auc_ci=bootstrap_ci(oof, yi, "auc", resamples=resamples, seed=seed),
            balanced_accuracy=bal,
            balanced_accuracy_ci=bootstrap_ci(
                oof, yi, "balanced_accuracy", resamples=resamples, seed=seed
            ),
            advisory=is_advisory(kind, auc, None, len(raw)),
            unscored=unscored,
            note=note,
            raw_rank=roc_auc(raw, yi),
            by_source=tuple(by_source),
        )
    rho = spearman(oof, labels)
    return DimensionCalibration(
        target=target,
        kind=kind,
        n=len(raw),
        sources=tuple(sources),
        mapping=mapping,
        spearman=rho,
        spearman_ci=bootstrap_ci(oof, labels, "spearman", resamples=resamples, seed=seed),
        advisory=is_advisory(kind, None, rho, len(raw)),
        unscored=unscored,
        note=note,
        raw_rank=spearman(raw, labels),
        by_source=tuple(by_source),
    )


@dataclass(frozen=True, slots=True)
class RawLabel:
    """One judged, human-labelled item (a line of the calibration's raw file).

    Attributes:
        item_id: the record id in the judge data folder.
        target: dimension name or ``"claim"``.
        source: the data folder name.
        kind: ``binary`` or ``rating``.
        label: 0/1 or the rescaled rating, in [0, 1].
        raw: the judge's raw P(yes), or ``None`` when unscored.
        unscored_reason: why not scored (``None`` when scored).
    """

    item_id: str
    target: Target
    source: str
    kind: LabelKind
    label: float
    raw: float | None
    unscored_reason: str | None = None


#: Caveats stored with a target's calibration (``docs/judge.md#calibration-table``).
NOTES: dict[Target, str] = {
    "tone": (
        "little labelled data: naturalness ratings of open-domain chat turns only, "
        "no politeness or brand-tone labels"
    ),
    "correctness": "accuracy ratings of FAQ-grounded answers (no reference answer shown)",
    "context_utilization": "Generic vs knowledge-using responses (BEGIN)",
}


def combined_kind(kinds: Sequence[LabelKind]) -> LabelKind:
    """The label kind of a target whose sources give ``kinds`` (``docs/judge.md#combining-
    sources``): ``binary`` when every source is binary, else ``rating`` — a 0/1 label is a
    two-level rating on the same [0, 1] scale, so ratings and verdicts pool into one isotonic
    fit and one Spearman figure.

    Raises:
        ValueError: ``kinds`` is empty.
    """
    if not kinds:
        raise ValueError("expected at least one label kind")
    return "binary" if all(k == "binary" for k in kinds) else "rating"


def _source_shares(group: Sequence[RawLabel]) -> list[SourceShare]:
    shares: list[SourceShare] = []
    for source in sorted({r.source for r in group}):
        rows = [r for r in group if r.source == source]
        scored = [r for r in rows if r.raw is not None]
        kinds = {r.kind for r in rows}
        if len(kinds) != 1:
            raise ValueError(f"source {source}: mixed label kinds {sorted(kinds)}")
        kind = rows[0].kind
        raw = [float(r.raw) for r in scored if r.raw is not None]
        labels = [r.label for r in scored]
        if kind == "binary":
            rank = roc_auc(raw, [round(v) for v in labels]) if raw else None
        else:
            rank = spearman(raw, labels)
        shares.append(SourceShare(source, kind, len(scored), len(rows) - len(scored), rank))
    return shares


def fit_record(
    rows: Sequence[RawLabel],
    *,
    judge_model: str,
    prompt_version: str,
    created_at: str,
    folds: int = 5,
    seed: int = 0,
    resamples: int = 2000,
) -> CalibrationRecord:
    """Fit every target present in ``rows`` into one calibration record.

    Args:
        rows: judged items; unscored ones are counted, not fitted.
        judge_model: the model that produced ``raw``.
        prompt_version: the prompts that produced it.
        created_at: ISO-8601 UTC time stamped on the record (and its id).
        folds, seed, resamples: as :func:`calibrate_target`.

    Returns:
        The record; a target with too few scored items for cross-validation is left out
        (uncalibrated: identity, advisory). A target fed by several sources pools their items
        (kind per :func:`combined_kind`) and records each source's share.

    Raises:
        ValueError: one source gives one target labels of two kinds.
    """
    by_target: dict[Target, list[RawLabel]] = {}
    for row in rows:
        by_target.setdefault(row.target, []).append(row)
    targets: dict[Target, DimensionCalibration] = {}
    for target in targets_in_order():
        group = by_target.get(target, [])
        scored = [r for r in group if r.raw is not None]
        if not scored:
            continue
        shares = _source_shares(group)
        kind = combined_kind([s.kind for s in shares if s.n])
        try:
            targets[target] = calibrate_target(
                target,
                [r.raw for r in scored if r.raw is not None],
                [r.label for r in scored],
                kind,
                sources=[s.source for s in shares if s.n],
                unscored=len(group) - len(scored),
                folds=folds,
                seed=seed,
                resamples=resamples,
                note=NOTES.get(target, ""),
                by_source=shares,
            )
        except ValueError:
            continue  # too few items or one class only: stays uncalibrated (advisory)
    return CalibrationRecord(
        calibration_id=f"{judge_model}/{prompt_version}/{created_at}",
        judge_model=judge_model,
        prompt_version=prompt_version,
        created_at=created_at,
        targets=targets,
        method=(
            f"isotonic regression per target; {folds}-fold cross-validation (stratified for "
            f"binary labels), out-of-fold scores; percentile bootstrap 95 % intervals, "
            f"{resamples} resamples, seed {seed}"
        ),
    )
