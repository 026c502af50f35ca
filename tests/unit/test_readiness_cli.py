"""Pure helpers of the readiness commands: exit codes, --since spans, the text report."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
import typer

from evalloop.cli.readiness import exit_code_for, parse_since
from evalloop.core.readiness import DIMENSIONS, CaseScores, GateInputs, compare, decide
from evalloop.readiness.report import decision_report, render_summary, render_text

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_exit_codes_follow_the_table() -> None:
    assert exit_code_for("GO", 1) == 0
    assert exit_code_for("NO-GO", 0) == 1
    assert exit_code_for("CONDITIONAL GO", 0) == 0
    assert exit_code_for("CONDITIONAL GO", 1) == 1


def test_since_spans_and_iso_times() -> None:
    assert parse_since("7d", NOW) == datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    assert parse_since("24h", NOW) == datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    assert parse_since("2w", NOW) == datetime(2026, 11, 16, 12, 0, tzinfo=UTC)
    assert parse_since("2026-11-01T00:00:00", NOW) == datetime(2026, 11, 1, tzinfo=UTC)
    with pytest.raises(typer.BadParameter, match="expected a span like 7d"):
        parse_since("last week", NOW)


def test_report_is_finite_json_and_renders() -> None:
    base = [CaseScores(f"c{i}", dict.fromkeys(DIMENSIONS, 0.9)) for i in range(3)]
    cur = [CaseScores(f"c{i}", dict.fromkeys(DIMENSIONS, 0.8)) for i in range(3)]
    reg = compare(base, cur, baseline_run_id="b", current_run_id="c")
    gate = decide(GateInputs("c", cur, regression=reg))
    report = decision_report(
        decision_id=uuid.UUID(int=1), run_id=uuid.UUID(int=2), agent_id="a", decided_at=NOW,
        gate=gate, regression=reg, baseline_how="pinned", hallucinations={"claims": 0},
        reeval=None, judged={}, cases_total=3, scored=3)
    comp = report["regression"]["dimensions"]["composite"]
    # a constant drop of 0.1 on every case: p = 0, t infinite -> null with the note
    assert (comp["p"], comp["t"], comp["cohens_dz"]) == (0.0, None, None)
    assert comp["note"] == "every shared case moved by the same amount"
    assert comp["significant"] is True and report["decision"] == "NO-GO"
    text = render_text(report)
    assert text.splitlines()[0] == (
        "NO-GO  run 00000000-0000-0000-0000-000000000002  agent a  (2026-11-30T12:00:00Z)")
    assert "SIGNIFICANT DROP" in text
    summary = render_summary(report)
    assert summary[0] == "readiness verdict: NO-GO"
    assert any(line.startswith("  regression vs pinned run b on 3 shared cases: composite "
                               "0.900 -> 0.800") for line in summary)
