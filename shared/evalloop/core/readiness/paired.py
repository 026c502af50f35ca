"""Paired comparison of two runs on the cases they share: t-test, interval, effect size, power.

``docs/rules.md#regression``: a paired t-test decides whether a difference is significant
(p < 0.05). Beside the p-value (``scipy.stats.ttest_rel``) this module gives the mean difference
with its Student-t 95 % interval, the effect size Cohen's *d_z* (mean difference / standard
deviation of the differences; Cohen 1988, section 2.3.5), and the **smallest drop this many
pairs could detect** with 80 % power at alpha 0.05, two-sided: the *d_z* solving
``power(d_z, n) = 0.80`` for the noncentral t distribution (the G*Power "matched pairs" test;
``n = 34, d_z = 0.5`` gives power 0.8078, as G*Power reports), times the observed standard
deviation of the differences, in score units.

Degenerate cases are answered, never NaN (``docs/readiness.md#regression-statistics``):

* every difference zero (equal scores): ``t = 0``, ``p = 1`` -- no evidence of any change;
* every difference the same non-zero value: ``p = 0`` -- every pair moved by exactly that much;
  ``d_z`` is unbounded (``None``);
* in both, the detectable drop (a multiple of the differences' standard deviation) is not
  computable: ``detectable_drop`` is ``None`` and ``detectable_note`` is ``ZERO_SPREAD``;
* fewer than two pairs: no test (``p = None`` with the reason).

Scores live on 0-1, so a difference lives on [-1, 1] (``docs/readiness.md#regression-statistics``):

* the Student-t interval is clipped to ``[-1, 1]`` and ``ci_clipped`` says so;
* a smallest detectable drop above 1 is no drop at all: ``detectable_drop`` is ``None`` and
  ``detectable_note`` reads "no drop of any size is detectable with N cases".

Pure: values in, values out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# numpy and scipy are imported inside the functions that compute: importing scipy.stats takes
# about 1 s, and ``evalloop gate --help`` / ``evalloop ab --help`` import this module

__all__ = ["ALPHA", "MAX_DIFF", "POWER", "ZERO_SPREAD", "PairedTest", "detectable_effect",
           "paired_test", "power"]

#: Why no detectable drop is given when every pair differs by the same amount: it is a multiple
#: of the differences' standard deviation, and a zero spread would claim any drop is detectable
#: (``docs/readiness.md#regression-statistics``).
ZERO_SPREAD = "not computable: the paired differences have zero spread"

#: Significance level of the regression test (``docs/rules.md#regression``: p < 0.05).
ALPHA = 0.05
#: Power at which the smallest detectable drop is reported (the usual 80 %).
POWER = 0.80
#: The largest possible difference of two 0-1 scores (``docs/readiness.md#regression-statistics``).
MAX_DIFF = 1.0


def power(d_z: float, n: int, alpha: float = ALPHA) -> float:
    """Power of the two-sided paired t-test with ``n`` pairs to detect effect size ``d_z``.

    Args:
        d_z: standardised mean difference (>= 0).
        n: number of pairs (>= 2).
        alpha: significance level.

    Returns:
        The probability 0-1 that the test rejects at ``alpha`` when the true effect is ``d_z``.

    Raises:
        ValueError: ``n < 2``.
    """
    if n < 2:
        raise ValueError(f"power needs at least 2 pairs, got {n}")
    from scipy import stats

    df = n - 1
    crit = float(stats.t.ppf(1 - alpha / 2, df))
    nc = d_z * math.sqrt(n)
    upper = float(stats.nct.sf(crit, df, nc))
    if math.isnan(upper):  # scipy's series fails far in the tail; the complement does not
        upper = 1.0 - float(stats.nct.cdf(crit, df, nc))
    lower = float(stats.nct.cdf(-crit, df, nc))
    if math.isnan(lower):  # far below the lower critical value: that tail is ~0
        lower = 0.0
    return upper + lower


def detectable_effect(n: int, target: float = POWER, alpha: float = ALPHA) -> float:
    """The smallest effect size ``d_z`` the two-sided paired t-test detects with power
    ``target`` from ``n`` pairs (``n = 20``: 0.6604; ``n = 34``: 0.4950).

    Raises:
        ValueError: ``n < 2``.
    """
    if n < 2:
        raise ValueError(f"a detectable effect needs at least 2 pairs, got {n}")
    from scipy import optimize

    hi = 1.0
    while power(hi, n, alpha) < target:
        hi *= 2.0
    return float(optimize.brentq(lambda d: power(d, n, alpha) - target, 0.0, hi, xtol=1e-12))


@dataclass(frozen=True, slots=True)
class PairedTest:
    """Current minus baseline over ``n`` pairs (positive = improved).

    Attributes:
        n: pairs compared.
        mean_baseline, mean_current: means of each side (``None`` when ``n == 0``).
        mean_diff: mean of ``current - baseline``.
        ci_low, ci_high: Student-t 95 % interval of ``mean_diff`` clipped to ``[-1, 1]``
            (``None`` below 2 pairs).
        t: the t statistic (``None`` below 2 pairs; 0 for equal scores; +-inf for a constant
            non-zero difference).
        p: two-sided p-value (``None`` below 2 pairs; 1.0 for equal scores).
        d_z: Cohen's d_z (``None`` below 2 pairs or when the differences have no spread and
            are not all zero; 0.0 for equal scores).
        detectable_d_z: smallest d_z detectable at 80 % power with ``n`` pairs.
        detectable_drop: ``detectable_d_z`` times the standard deviation of the differences,
            in score units (0-1); ``None`` below 2 pairs, when the differences have zero
            spread (``ZERO_SPREAD``) or when above 1 (no drop on a 0-1 scale is that large;
            see ``detectable_note``).
        significant: ``p < 0.05``.
        note: why a figure is missing, or ``""``.
        ci_clipped: the Student-t interval reached beyond ``[-1, 1]`` and was clipped.
        detectable_note: why ``detectable_drop`` is missing, or ``""``.
    """

    n: int
    mean_baseline: float | None
    mean_current: float | None
    mean_diff: float | None
    ci_low: float | None
    ci_high: float | None
    t: float | None
    p: float | None
    d_z: float | None
    detectable_d_z: float | None
    detectable_drop: float | None
    significant: bool
    note: str = ""
    ci_clipped: bool = False
    detectable_note: str = ""


def paired_test(baseline: Sequence[float], current: Sequence[float],
                alpha: float = ALPHA) -> PairedTest:
    """Paired t-test of ``current`` against ``baseline`` (same cases, same order).

    Raises:
        ValueError: the two sequences differ in length.
    """
    if len(baseline) != len(current):
        raise ValueError(f"paired samples must have equal length, got {len(baseline)} "
                         f"and {len(current)}")
    n = len(baseline)
    if n == 0:
        return PairedTest(0, None, None, None, None, None, None, None, None, None, None, False,
                          "no shared scored cases")
    import numpy as np
    from scipy import stats

    b = np.asarray(baseline, dtype=float)
    c = np.asarray(current, dtype=float)
    diff = c - b
    mean_diff = float(diff.mean())
    base = (float(b.mean()), float(c.mean()), mean_diff)
    if n < 2:
        return PairedTest(n, *base, None, None, None, None, None, None, None, False,
                          "one shared case: a paired test needs at least two",
                          detectable_note="a paired test needs at least two cases (n = 1)")
    sd = float(diff.std(ddof=1))
    d_eff = detectable_effect(n, POWER, alpha)
    if sd == 0.0 or np.allclose(diff, diff[0], rtol=0.0, atol=1e-12):
        if abs(mean_diff) <= 1e-12:
            return PairedTest(n, *base, 0.0, 0.0, 0.0, 1.0, 0.0, d_eff, None, False,
                              "equal scores on every shared case",
                              detectable_note=ZERO_SPREAD)
        t = math.copysign(math.inf, mean_diff)
        return PairedTest(n, *base, mean_diff, mean_diff, t, 0.0, None, d_eff, None, True,
                          "every shared case moved by the same amount",
                          detectable_note=ZERO_SPREAD)
    res = stats.ttest_rel(c, b)
    ci = res.confidence_interval(confidence_level=1 - alpha)
    p = float(res.pvalue)
    lo, hi = float(ci.low), float(ci.high)
    clipped = lo < -MAX_DIFF or hi > MAX_DIFF
    drop: float | None = d_eff * sd
    why_no_drop = ""
    if drop is not None and drop > MAX_DIFF:
        drop, why_no_drop = None, f"no drop of any size is detectable with {n} cases"
    return PairedTest(
        n, *base, max(lo, -MAX_DIFF), min(hi, MAX_DIFF), float(res.statistic), p,
        mean_diff / sd, d_eff, drop, p < alpha, ci_clipped=clipped, detectable_note=why_no_drop,
    )
