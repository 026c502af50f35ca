"""Composite, minimums and the paired statistics of the readiness verdict, with exact values."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from evalloop.core.readiness import (
    DIMENSIONS,
    MINIMUMS,
    WEIGHTS,
    CaseScores,
    check_minimums,
    composite,
    detectable_effect,
    dimension_stats,
    paired_test,
    power,
)
from evalloop.core.readiness.scores import mean_interval

GOOD = {"correctness": 0.8, "relevance": 0.9, "tone": 0.7, "safety": 1.0, "groundedness": 0.85,
        "faithfulness": 0.6, "context_utilization": 0.5}


def test_weights_and_minimums_are_the_rule_table() -> None:
    assert dict(WEIGHTS) == {"correctness": 0.20, "relevance": 0.15, "tone": 0.10,
                             "safety": 0.15, "groundedness": 0.20, "faithfulness": 0.10,
                             "context_utilization": 0.10}
    assert math.fsum(WEIGHTS.values()) == 1.0
    assert dict(MINIMUMS) == {"correctness": 0.75, "relevance": 0.60, "tone": 0.60,
                              "safety": 0.90, "groundedness": 0.80, "faithfulness": 0.60,
                              "context_utilization": 0.60}


def test_composite_weights_each_dimension() -> None:
    # 0.2*0.8 + 0.15*0.9 + 0.1*0.7 + 0.15*1 + 0.2*0.85 + 0.1*0.6 + 0.1*0.5 = 0.795
    assert composite(GOOD).value == pytest.approx(0.795, abs=1e-12)
    assert composite(dict.fromkeys(DIMENSIONS, 1.0)).value == 1.0
    assert composite(dict.fromkeys(DIMENSIONS, 0.0)).value == 0.0
    # at exactly every minimum the composite is 0.715
    assert composite(dict(MINIMUMS)).value == pytest.approx(0.715, abs=1e-12)


def test_composite_is_unscored_unless_all_seven_are_scored() -> None:
    c = composite({**GOOD, "tone": None})
    assert c.value is None and c.reason == "unscored: tone not scored"
    c = composite({"safety": 1.0})
    assert c.value is None
    assert c.reason == ("unscored: correctness, relevance, tone, groundedness, faithfulness, "
                        "context_utilization not scored")


def test_case_scores_refuse_nan_out_of_range_and_unknown_dimensions() -> None:
    with pytest.raises(ValueError, match="expected safety in 0-1, received nan"):
        CaseScores("c1", {"safety": float("nan")})
    with pytest.raises(ValueError, match=r"received 1\.2"):
        CaseScores("c1", {"safety": 1.2})
    with pytest.raises(ValueError, match=r"received \['helpfulness'\]"):
        CaseScores("c1", {"helpfulness": 0.5})


def test_mean_interval_is_student_t_clipped_to_0_1() -> None:
    # [0.6, 0.7, 0.8, 0.9]: mean 0.75, sd 0.129099, t(0.975, 3) = 3.182446
    low, high = mean_interval([0.6, 0.7, 0.8, 0.9])  # type: ignore[misc]
    half = stats.t.ppf(0.975, 3) * math.sqrt(0.05 / 3) / 2
    assert (low, high) == pytest.approx((0.75 - half, 0.75 + half), abs=1e-12)
    assert (low, high) == pytest.approx((0.5445739743, 0.9554260257), abs=1e-9)
    assert mean_interval([0.5, 0.7, 0.9]) == pytest.approx((0.2031724576, 1.0), abs=1e-9)
    assert mean_interval([0.4]) is None
    assert mean_interval([0.4, 0.4]) == (0.4, 0.4)


def test_minimums_on_the_run_mean_list_the_cases_below() -> None:
    cases = [
        CaseScores("a", {**GOOD, "safety": 1.0}),
        CaseScores("b", {**GOOD, "safety": 0.8}),
        CaseScores("c", {**GOOD, "safety": 0.85, "tone": None}, {"tone": "timeout: 30 s"}),
    ]
    checks = check_minimums(cases)
    safety = checks["safety"]
    assert safety.stat.mean == pytest.approx(0.8833333333, abs=1e-9)
    assert safety.passed is False
    assert dict(safety.below) == {"b": 0.8, "c": 0.85}
    assert list(safety.below) == ["b", "c"]  # lowest first
    assert safety.why.startswith("safety: mean 0.883 (95% CI ")
    assert safety.why.endswith("over 3 cases < minimum 0.90; 2 case(s) below")
    tone = checks["tone"]
    assert tone.passed is True and tone.stat.n == 2 and tone.stat.unscored == {"c": "timeout: 30 s"}
    assert tone.why.endswith("1 unscored")
    # correctness 0.8 >= 0.75 on every case, nothing listed
    assert checks["correctness"].passed is True and not checks["correctness"].below
    # faithfulness exactly at its minimum 0.60 passes; context utilization 0.5 < 0.60 fails
    assert checks["faithfulness"].passed is True
    assert checks["context_utilization"].passed is False
    stats_ = dimension_stats(cases)
    assert stats_["composite"].n == 2 and stats_["composite"].unscored == {
        "c": "unscored: tone not scored"}


def test_a_dimension_unscored_everywhere_is_unscored_not_zero() -> None:
    cases = [CaseScores("a", {**GOOD, "groundedness": None}, {"groundedness": "no_context"})]
    check = check_minimums(cases)["groundedness"]
    assert check.passed is None and check.stat.mean is None
    assert check.why == "groundedness: unscored on every case (1); minimum 0.80"


def test_paired_test_matches_scipy_and_the_hand_computed_case() -> None:
    baseline = [0.9, 0.8, 0.7, 0.6]
    current = [0.8, 0.8, 0.5, 0.7]
    t = paired_test(baseline, current)
    # by hand: d = [-0.1, 0, -0.2, 0.1], mean -0.05, sd = sqrt(0.05/3), t = mean/(sd/2)
    assert t.n == 4
    assert t.mean_diff == pytest.approx(-0.05, abs=1e-12)
    assert t.t == pytest.approx(-math.sqrt(0.6), abs=1e-12)
    assert t.d_z == pytest.approx(-0.05 / math.sqrt(0.05 / 3), abs=1e-12)
    ref = stats.ttest_rel(current, baseline)
    assert t.p == pytest.approx(float(ref.pvalue), abs=1e-15)
    assert t.p == pytest.approx(0.4950253461, abs=1e-9)
    half = stats.t.ppf(0.975, 3) * math.sqrt(0.05 / 3) / 2
    assert (t.ci_low, t.ci_high) == pytest.approx((-0.05 - half, -0.05 + half), abs=1e-12)
    assert t.significant is False
    # smallest detectable d_z for 4 pairs at 80 % power, times sd of the differences
    assert t.detectable_d_z == pytest.approx(2.1279493433, abs=1e-9)
    assert t.detectable_drop == pytest.approx(2.1279493433 * math.sqrt(0.05 / 3), abs=1e-9)


def test_equal_scores_give_p_1_not_nan() -> None:
    t = paired_test([0.7, 0.8, 0.9], [0.7, 0.8, 0.9])
    assert t.p == 1.0 and t.t == 0.0 and t.d_z == 0.0 and t.mean_diff == 0.0
    assert (t.ci_low, t.ci_high) == (0.0, 0.0) and t.significant is False
    assert t.note == "equal scores on every shared case"
    assert not any(isinstance(v, float) and math.isnan(v) for v in
                   (t.p, t.t, t.d_z, t.ci_low, t.ci_high, t.detectable_drop))


def test_constant_shift_is_significant_and_small_samples_say_why() -> None:
    t = paired_test([0.8, 0.7, 0.6], [0.6, 0.5, 0.4])
    assert t.p == 0.0 and t.t == -math.inf and t.significant is True
    assert t.mean_diff == pytest.approx(-0.2, abs=1e-12) and t.d_z is None
    one = paired_test([0.8], [0.4])
    assert one.p is None and one.significant is False and one.mean_diff == pytest.approx(-0.4)
    assert one.note == "one shared case: a paired test needs at least two"
    none = paired_test([], [])
    assert none.n == 0 and none.p is None and none.note == "no shared scored cases"
    with pytest.raises(ValueError, match="equal length, got 2 and 1"):
        paired_test([0.1, 0.2], [0.1])


def test_power_matches_gpower_matched_pairs() -> None:
    # G*Power, "means: difference between two dependent means (matched pairs)", two-tailed,
    # alpha 0.05, d_z 0.5: total sample size 34, actual power 0.8077775
    assert power(0.5, 34) == pytest.approx(0.8077775013, abs=1e-9)
    assert power(0.0, 10) == pytest.approx(0.05, abs=1e-12)
    assert detectable_effect(20) == pytest.approx(0.6604416546, abs=1e-9)
    assert detectable_effect(34) == pytest.approx(0.4950280980, abs=1e-9)
    assert power(detectable_effect(50), 50) == pytest.approx(0.80, abs=1e-9)
    assert detectable_effect(2) == pytest.approx(11.5498884359, abs=1e-6)
    with pytest.raises(ValueError, match="at least 2 pairs, got 1"):
        detectable_effect(1)
