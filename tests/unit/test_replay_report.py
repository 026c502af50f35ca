"""Rendering of the demo report (pure: a hand-built DemoReport, no servers)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

from rich.console import Console

from evalloop.adapters.monitor_store import JobRow
from evalloop.core.window import BucketCounts, WindowReport
from evalloop.demo import DemoReport
from evalloop.replay.report import render, sparkline

T0 = datetime(2025, 6, 1, tzinfo=UTC)
JOB = UUID("00000000-0000-0000-0000-000000000001")


def _points(rates: list[tuple[int, int]]) -> list[WindowReport]:
    return [
        WindowReport.of(T0 + timedelta(hours=h - 24), T0 + timedelta(hours=h),
                        BucketCounts(served=n, negatives=k, signalled=k, turns=n))
        for h, (k, n) in enumerate(rates, 1)
    ]


def test_sparkline_scales_to_the_top() -> None:
    assert sparkline([0.0, 0.01, 0.02, 0.04], 0.04) == "▁▂▄█"
    assert sparkline([0.5, 2.0], 1.0) == "▄█"
    assert sparkline([0.0, 0.0], 0.0) == "▁▁"


def test_render_names_each_agents_verdict_and_the_request() -> None:
    report = DemoReport(
        dsn="postgresql://x/y", kept=False, origin="sample", schedule=[],
        events_sent=10, events_by_type={"agent_response": 8, "user_rating": 2},
        negative_cases={"bad": 9},
        rates={
            "bad": _points([(2, 300), (9, 300), (4, 300)]),
            "good": _points([(1, 300), (2, 300), (3, 300)]),
            "tiny": _points([(3, 5), (4, 6), (4, 7)]),
        },
        jobs=[JobRow(job_id=JOB, agent_id="bad", trigger="negative_rate",
                     reason="negative rate 3.0% over 24 h > 2%", requested_at=T0,
                     published_at=T0, status="failed", attempts=1, finished_at=T0,
                     result=None, error="no golden set for agent 'bad'")],
        requests={JOB: {"rate": 0.03, "wilson_low": 0.016, "wilson_high": 0.056,
                        "negatives": 9, "turns": 300, "denominator": "agent_response",
                        "window_end": "2025-06-01T02:00:00+00:00"}},
        timings={"replay": 1.0, "total": 2.5},
    )
    console = Console(record=True, width=200)
    render(report, console)
    text = console.export_text()
    assert "re-evaluation requested x1" in text  # bad
    assert "stayed <= 2%" in text  # good: peak 1.0%
    assert "never 200 turns in 24 h (at most 7 at an hourly window end): not judged" in text  # tiny
    assert "3.00% [1.59%-5.60%] 9/300 (06-01 02:00)" in text  # bad's peak, Wilson 95%
    assert "3.00% [1.60%-5.60%]" in text and "9/300 (agent_response)" in text
    assert "no run (no golden set for agent 'bad')" in text
    assert "wall time 2.5 s (replay 1.0 s)" in text
    assert "total" in text and "10" in text


def test_a_kept_database_prints_the_line_to_export() -> None:
    report = DemoReport(
        dsn="postgresql://postgres:@/evalloop_demo_ab12?host=/var/tmp/pg", kept=True,
        origin="sample", schedule=[], events_sent=0, events_by_type={}, negative_cases={},
        rates={}, jobs=[], requests={}, timings={"total": 1.0},
    )
    console = Console(record=True, width=60)
    render(report, console)
    lines = console.export_text().splitlines()
    assert lines[-2:] == [
        "database kept; to use it from the CLI (queue list...):",
        "  export EVALLOOP_POSTGRES__DSN="
        "'postgresql://postgres:@/evalloop_demo_ab12?host=/var/tmp/pg'"]


def test_render_says_why_triage_read_more_messages_than_there_are_cases() -> None:
    # the demo's bar counted 666 messages triaged beside 665 negative cases: a case a later
    # signal changes is published again
    def text(published: int) -> str:
        report = DemoReport(dsn="postgresql://x/y", kept=False, origin="sample", schedule=[],
                            events_sent=10, events_by_type={"agent_response": 10},
                            negative_cases={"a": 400, "b": 265}, negative_published=published)
        console = Console(record=True, width=200)
        render(report, console)
        return console.export_text()

    assert ("665 negative cases in 666 messages to triage: a case a later signal changes (a "
            "late rating, an escalation) is published again, and triage keeps its newest "
            "version") in text(666)
    assert "messages to triage" not in text(665)
