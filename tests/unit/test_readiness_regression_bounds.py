"""A difference of two 0-1 scores lives on [-1, 1]: clipped intervals and "no drop of any size
is detectable" in the paired test, the regression JSON, the gate text and the demo summary
(docs/readiness.md#regression-statistics)."""

from __future__ import annotations

import json
import math
import uuid
from datetime import UTC, datetime

import pytest
from scipy import stats

from evalloop.core.readiness import DIMENSIONS, CaseScores, GateInputs, compare, decide
from evalloop.core.readiness.paired import detectable_effect, paired_test
from evalloop.readiness.report import decision_report, render_summary, render_text

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_interval_beyond_the_scale_is_clipped_and_says_so() -> None:
    t = paired_test([0.1, 0.9], [0.9, 0.2])
    raw = stats.ttest_rel([0.9, 0.2], [0.1, 0.9]).confidence_interval()
    assert (float(raw.low), float(raw.high)) == pytest.approx((-9.479653552131, 9.579653552131))
    assert (t.ci_low, t.ci_high, t.ci_clipped) == (-1.0, 1.0, True)
    assert t.p == pytest.approx(0.9576213907301069, abs=1e-12)
    inside = paired_test([0.7, 0.8, 0.9], [0.6, 0.75, 0.9])
    assert inside.ci_clipped is False
    assert (inside.ci_low, inside.ci_high) == pytest.approx((-0.1742068856, 0.0742068856))


def test_detectable_drop_above_one_is_none_with_the_reason() -> None:
    # two pairs, differences -0.10 and -0.23: d_z 11.5499 needed, times sd 0.0919 = 1.0617 (> 1)
    t = paired_test([0.7, 0.6], [0.6, 0.37])
    sd = math.sqrt(((-0.1 + 0.165) ** 2 + (-0.23 + 0.165) ** 2) / 1)
    assert detectable_effect(2) * sd == pytest.approx(1.0617105765, abs=1e-9)
    assert t.detectable_drop is None and t.detectable_d_z == pytest.approx(11.5498884, abs=1e-6)
    assert t.detectable_note == "no drop of any size is detectable with 2 cases"
    assert t.ci_clipped is False and t.ci_low == pytest.approx(-0.9909033078513552)
    three = paired_test([0.7, 0.8, 0.9], [0.6, 0.75, 0.9])
    assert three.detectable_drop == pytest.approx(0.16320217748, abs=1e-9)
    assert three.detectable_note == ""
    one = paired_test([0.8], [0.4])
    assert one.detectable_drop is None
    assert one.detectable_note == "a paired test needs at least two cases (n = 1)"


def test_regression_report_json_text_and_summary() -> None:
    base = [CaseScores("c0", dict.fromkeys(DIMENSIONS, 0.7)),
            CaseScores("c1", dict.fromkeys(DIMENSIONS, 0.6))]
    cur = [CaseScores("c0", dict.fromkeys(DIMENSIONS, 0.6)),
           CaseScores("c1", dict.fromkeys(DIMENSIONS, 0.37))]
    reg = compare(base, cur, baseline_run_id="b", current_run_id="c")
    report = decision_report(
        decision_id=uuid.UUID(int=1), run_id=uuid.UUID(int=2), agent_id="a", decided_at=NOW,
        gate=decide(GateInputs("c", cur, regression=reg)), regression=reg,
        baseline_how="pinned", hallucinations={"claims": 0}, reeval=None, judged={},
        cases_total=2, scored=2)
    comp = report["regression"]["dimensions"]["composite"]
    assert comp["detectable_drop_80"] is None and comp["ci95_clipped"] is False
    assert comp["detectable_drop_80_note"] == "no drop of any size is detectable with 2 cases"
    assert "NaN" not in json.dumps(report) and "Infinity" not in json.dumps(report)
    text = render_text(report).splitlines()
    row = next(line for line in text if line.startswith("  composite ") and ".." in line)
    assert row == ("  composite             0.650  0.485  -0.165              -0.991..+0.661 "
                   " 0.2389  -1.79 no drop of any size is detectable with 2 cases warning")
    summary = render_summary(report)
    line = next(x for x in summary if x.startswith("  regression vs"))
    assert line.startswith(
        "  regression vs pinned run b on 2 shared cases: composite 0.650 -> 0.485 (diff -0.165,"
        " p = 0.2389; no drop of any size is detectable with 2 cases); ")


def test_clipped_regression_interval_is_marked_in_the_text() -> None:
    base = [CaseScores("c0", dict.fromkeys(DIMENSIONS, 0.1)),
            CaseScores("c1", dict.fromkeys(DIMENSIONS, 0.9))]
    cur = [CaseScores("c0", dict.fromkeys(DIMENSIONS, 0.9)),
           CaseScores("c1", dict.fromkeys(DIMENSIONS, 0.2))]
    reg = compare(base, cur, baseline_run_id="b", current_run_id="c")
    report = decision_report(
        decision_id=uuid.UUID(int=1), run_id=uuid.UUID(int=2), agent_id="a", decided_at=NOW,
        gate=decide(GateInputs("c", cur, regression=reg)), regression=reg,
        baseline_how="pinned", hallucinations={"claims": 0}, reeval=None, judged={},
        cases_total=2, scored=2)
    comp = report["regression"]["dimensions"]["composite"]
    assert comp["ci95"] == [-1.0, 1.0] and comp["ci95_clipped"] is True
    assert "-1.000..+1.000 (clipped)" in render_text(report)
