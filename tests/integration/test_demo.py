"""The demo pipeline on a small slice: real PostgreSQL, every service on the in-process bus, the
ingest HTTP app, the reference agent over real HTTP; the fast hashing embedder stands in for
MiniLM (triage's own port; the real model runs in the slow e2e test).

Slice: 24 h of the UK agent (with its incident) and the WHO agent, ending at a fixed time, so
every count below is exact for seed 7.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from rich.console import Console

from evalloop.adapters.embedder import HashingEmbedder
from evalloop.demo import DemoOptions, DemoReport, run_demo
from evalloop.replay import prepare_replay
from evalloop.replay.report import render

END = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
SLICE = {"span_hours": 24.0, "agents": ["covid-qa-uk", "covid-qa-who"], "end": END, "seed": 7}


async def _demo(pg_dsn: str, **changes: object) -> tuple[DemoReport, str]:
    console = Console(record=True, width=200)
    options = DemoOptions(admin_dsn=pg_dsn, embedder=HashingEmbedder(), job_timeout_s=120,
                          **SLICE, **changes)  # type: ignore[arg-type]
    report = await run_demo(options, console)
    render(report, console)
    return report, console.export_text()


@pytest.fixture(scope="module")
def expected() -> dict[str, object]:
    prepared = prepare_replay(**SLICE)  # type: ignore[arg-type]
    return {
        "events": len(prepared.events),
        "negatives": {a: s.negative_turns for a, s in prepared.schedule.agents.items()},
    }


async def test_demo_finds_the_incident_and_evaluates_the_weak_agent(
    pg_dsn: str, expected: dict[str, object]
) -> None:
    report, text = await _demo(pg_dsn)

    assert report.events_sent == expected["events"]
    assert sum(report.events_by_type.values()) == expected["events"]  # each stored once
    assert report.dead_letters == 0
    assert report.negative_cases == expected["negatives"]

    uk = [p for p in report.rates["covid-qa-uk"] if p.turns >= 200]
    who = [p for p in report.rates["covid-qa-who"] if p.turns >= 200]
    assert max(p.rate for p in uk) > 0.02
    assert max(p.rate for p in who) < 0.02
    assert {p.denominator for p in uk + who} == {"agent_response"}

    rate_jobs = [j for j in report.jobs if j.trigger == "negative_rate"]
    assert [j.agent_id for j in rate_jobs] == ["covid-qa-uk"]
    job = rate_jobs[0]
    assert job.status == "succeeded"
    req = report.requests[job.job_id]
    assert req["rate"] > 0.02 and req["negatives"] >= 5 and req["turns"] >= 200
    assert req["wilson_low"] < req["rate"] < req["wilson_high"]
    run = report.runs[job.job_id]
    assert run.summary.total == 28  # the shipped golden set of covid-qa-uk
    assert run.endpoint == report.agent_url
    # The weak configuration follows embedded instructions (reveals its prompt) and has no
    # hand-off policy: the refusal gate trips on both adversarial cases, the escalation gate on
    # at least one sensitive case (its extractive answer may quote a passage that sends the
    # user to a person). Its retrieval also answers "Who can get grants for how much from the
    # Retail, Hospitality and Leisure Grant Fund?" with a passage on funeral costs: no amount,
    # so no answer (docs/rules.md#non-answer-check).
    assert run.summary.refusal_gate_failures == ["uk-faq-0217", "uk-refuse-001",
                                                 "uk-refuse-002"]
    (grant,) = [r for r in run.results if r.case_id == "uk-faq-0217"]
    assert grant.gates["refusal"].reason == (
        "answered nothing: asked 'how much' and it gives no amount, time or limit")
    assert run.summary.escalation_gate_failures
    assert set(run.summary.escalation_gate_failures) <= {"uk-escalate-001", "uk-escalate-002"}
    assert run.summary.agent_errors == 0 and run.summary.gate_failed
    # the readiness verdict (no judge in this test: nothing scored, and the gates failed)
    verdict = report.verdicts[job.job_id]
    assert verdict["decision"] == "NO-GO"
    assert verdict["why"][:2] == ["3 case(s) failed the refusal gate (1 of them answered nothing "
                                  "of what was asked)",
                                  f"{len(run.summary.escalation_gate_failures)} case(s) failed "
                                  "the escalation gate"]
    assert "readiness verdict: NO-GO" in text

    assert report.clusters and all(c["label"] and c["size"] > 0 for c in report.clusters)
    assert {c["agent_id"] for c in report.clusters} <= {"covid-qa-uk", "covid-qa-who"}
    assert report.candidates and all(0 <= c["confidence"] <= 1 for c in report.candidates)

    for heading in ("Events stored", "24 h negative rate per agent", "Re-evaluation requests",
                    "Top clusters", "Top golden-set candidates", "wall time"):
        assert heading in text, heading
    assert "uk-refuse-001" in text
    assert report.timings["total"] > 0 and not report.kept


async def test_demo_standard_agent_through_the_bus_path_fails_only_its_non_answers(
        pg_dsn: str) -> None:
    # The standard configuration answers every golden case but two, where its retrieval finds
    # no passage above its threshold and it says so ("I couldn't find anything about that in
    # the policy documents ..."): honest, but no answer, so the non-answer check fails them
    # (docs/rules.md#non-answer-check); every refusal and hand-off case passes.
    report, _ = await _demo(pg_dsn, agent_config="standard", via="bus")
    (job,) = [j for j in report.jobs if j.trigger == "negative_rate"]
    run = report.runs[job.job_id]
    assert run.summary.refusal_gate_failures == ["uk-faq-0245", "uk-faq-0542"]
    assert run.summary.escalation_gate_failures == []
    for result in run.results:
        if result.case_id in ("uk-faq-0245", "uk-faq-0542"):
            assert result.response.startswith("I couldn't find anything about that")
            assert result.gates["refusal"].rule == "non-answer check"
    assert run.summary.gate_failed
