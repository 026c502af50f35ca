"""The gate on real PostgreSQL: stored scores -> decision with every input, baseline chosen by
deployment or pin, checkpoints, a CONDITIONAL GO's scheduled re-evaluation (visible in ``jobs
list``), the CLI's exit codes. Scores are written as test data (what a judge stored); the judge
itself runs in ``test_readiness_reeval.py``."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from typer.testing import CliRunner

from evalloop.adapters import readiness_store as store
from evalloop.adapters.golden_store import import_golden_set, save_eval_run
from evalloop.adapters.monitor_store import list_jobs
from evalloop.cli.eval_cmd import bundled_evals
from evalloop.cli.main import app
from evalloop.core.evaluation.cases import load_eval_file
from evalloop.core.readiness import CHECKPOINTS, DIMENSIONS, CheckpointRecord, composite
from evalloop.evaluation.runner import load_responses_file, run_eval
from evalloop.readiness.verdict import UnknownRun, decide_run

HR = load_eval_file(bundled_evals())
AGENT = "hr-qa-agent"
RESPONSES = load_responses_file([Path(bundled_evals()).parent / "reference-responses.json"])
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


async def _run(pool: asyncpg.Pool, version_id: uuid.UUID, value: float,
               **case_values: float) -> uuid.UUID:
    """A stored run of the HR set (canned answers) whose judge scores are ``value`` on every
    dimension (``case_values``: a case's uniform score instead)."""
    run = await run_eval(list(HR.cases), RESPONSES, agent_id=AGENT,
                         golden_set_version_id=version_id, eval_source="test")
    await save_eval_run(pool, run)
    rows = []
    for case in HR.cases:
        v = case_values.get(case.id, value)
        scores: dict[str, float | None] = dict.fromkeys(DIMENSIONS, v)
        rows.append((case.id, scores, composite(scores).value,
                     {"model": "test-data", "reasons": dict.fromkeys(DIMENSIONS, "test")}))
    await store.save_scores(pool, run.run_id, rows)
    return run.run_id


async def _approve_all(pool: asyncpg.Pool, run_id: uuid.UUID) -> None:
    for name in CHECKPOINTS:
        await store.add_checkpoint(pool, run_id, CheckpointRecord(name, "approved", "ana", T0))


async def cli(args: list[str]) -> Any:
    """Invoke ``evalloop`` in a thread (the command runs its own event loop)."""
    return await asyncio.to_thread(CliRunner().invoke, app, args)


@pytest.fixture
async def version_id(pool: asyncpg.Pool) -> uuid.UUID:
    return (await import_golden_set(pool, HR, agent_id=AGENT, created_by="test")).version.version_id


async def test_conditional_go_is_stored_with_inputs_and_schedules_a_reevaluation(
        pool: asyncpg.Pool, version_id: uuid.UUID) -> None:
    run_id = await _run(pool, version_id, 0.95)
    v = await decide_run(pool, run_id, now=T0)
    # the HR set has 36 cases and no difficulty: care checks unmet; checkpoints pending
    assert v.gate.decision == "CONDITIONAL GO"
    assert v.gate.why[0] == "36 cases (at least 50)"
    assert v.report["regression"] == {
        "baseline_run_id": None,
        "baseline": "no deployed GO run of agent hr-qa-agent and no pinned run"}
    row = await store.latest_decision(pool, run_id)
    assert row is not None and row["decision"] == "CONDITIONAL GO"
    assert len(row["inputs"]["scores"]) == 36 and row["inputs"]["composite_bar"] == 0.8
    assert row["report"]["scores"]["safety"]["mean"] == 0.95
    # the re-evaluation: a requested job due in 7 days, listed by `jobs list`
    assert v.reeval is not None and row["reeval_job_id"] == v.reeval.job_id
    jobs = await list_jobs(pool, agent_id=AGENT)
    (job,) = [j for j in jobs if j.job_id == v.reeval.job_id]
    assert (job.trigger, job.status) == ("conditional_go", "requested")
    assert job.requested_at == T0 + timedelta(days=7)
    assert v.event.decision == "CONDITIONAL GO" and v.event.reeval_due_at == T0 + timedelta(days=7)


async def test_baseline_is_the_last_deployed_go_run_unless_one_is_pinned(
        pool: asyncpg.Pool, version_id: uuid.UUID) -> None:
    first = await _run(pool, version_id, 0.95)
    await _approve_all(pool, first)
    # an unmet care check keeps it CONDITIONAL: the baseline needs a GO, so pin instead first
    v1 = await decide_run(pool, first, now=T0)
    assert v1.gate.decision == "CONDITIONAL GO"
    await store.record_deployment(pool, agent_id=AGENT, run_id=first, deployed_at=T0,
                                  source="cli")
    assert (await store.find_baseline(pool, AGENT, exclude=uuid.uuid4())).run_id is None
    await store.pin_baseline(pool, AGENT, first, pinned_by="ana")
    second = await _run(pool, version_id, 0.95, r001=0.6, r004=0.7)
    v2 = await decide_run(pool, second, now=T0 + timedelta(hours=1))
    reg = v2.report["regression"]
    assert (reg["baseline_run_id"], reg["baseline"], reg["shared_cases"]) == (
        str(first), "pinned", 36)
    assert [r["case_id"] for r in reg["case_regressions"]] == ["r001", "r004"]
    assert reg["case_regressions"][0]["drop"] == pytest.approx(0.35, abs=1e-9)
    comp = reg["dimensions"]["composite"]
    assert comp["mean_diff"] == pytest.approx(-0.6 / 36, abs=1e-6)
    assert comp["significant"] is False  # two cases of 36 moved: p = 0.16
    assert "case_regressions" in v2.gate.monitoring_flags
    # unpinned: the deployed run is not GO, so there is no baseline
    assert await store.unpin_baseline(pool, AGENT)
    assert (await store.find_baseline(pool, AGENT, exclude=second)).how == (
        "no deployed GO run of agent hr-qa-agent and no pinned run")


async def test_a_required_minimum_missed_is_no_go_and_the_cli_exits_1(
        pool: asyncpg.Pool, version_id: uuid.UUID, db_dsn: str) -> None:
    run_id = await _run(pool, version_id, 0.95, r001=0.1, r002=0.1, r003=0.1, r004=0.1)
    await _approve_all(pool, run_id)
    res = await cli(["gate", str(run_id), "--no-judge", "--json", "--db", db_dsn])
    assert res.exit_code == 1, res.output
    report: dict[str, Any] = json.loads(res.stdout)
    assert report["decision"] == "NO-GO"
    # safety mean (32 * 0.95 + 4 * 0.1) / 36 = 0.8556 < 0.90
    assert report["why"] == [
        "safety: mean 0.856 (95% CI 0.764-0.947) over 36 cases < minimum 0.90; 4 case(s) below",
        "no regression check: no deployed GO run of agent hr-qa-agent and no pinned run"]
    safety = next(c for c in report["checks"] if c["name"] == "minimum:safety")
    assert safety["status"] == "fail" and safety["cases"] == ["r001", "r002", "r003", "r004"]
    fix = next(r for r in report["remediation"] if r["check"] == "minimum:safety")
    assert (fix["cause"], fix["cases"]) == ("answer", ["r001", "r002", "r003", "r004"])
    # text output, CONDITIONAL GO exit configurable, unknown run -> 2
    res = await cli(["gate", str(run_id), "--no-judge", "--db", db_dsn])
    assert res.exit_code == 1 and res.stdout.startswith(f"NO-GO  run {run_id}")
    res = await cli(["gate", str(uuid.uuid4()), "--no-judge", "--db", db_dsn])
    assert res.exit_code == 2 and "no evaluation run" in res.stderr


async def test_checkpoint_cli_records_reviewer_time_note_and_the_sample(
        pool: asyncpg.Pool, version_id: uuid.UUID, db_dsn: str) -> None:
    run_id = await _run(pool, version_id, 0.95)
    res = await cli(["gate", "checkpoint", str(run_id), "sample_review", "--approve",
                              "--note", "read all ten", "--reviewer", "ana", "--db", db_dsn])
    assert res.exit_code == 0, res.output
    cps = await store.checkpoints(pool, run_id)
    assert (cps["sample_review"].status, cps["sample_review"].reviewer,
            cps["sample_review"].note) == ("approved", "ana", "read all ten")
    sample = await pool.fetchval("SELECT sample FROM gate_checkpoints WHERE run_id = $1", run_id)
    assert len(sample) == 10 and res.stdout.count(",") == 9
    res = await cli(["gate", "checkpoint", str(run_id), "vibes", "--approve",
                              "--db", db_dsn])
    assert res.exit_code == 2
    res = await cli(["gate", "checkpoint", str(run_id), "edge_cases", "--db", db_dsn])
    assert res.exit_code == 2 and "exactly one of --approve or --reject" in res.output
    res = await cli(["gate", "decide", str(run_id), "--no-judge", "--json",
                              "--conditional-exit", "1", "--db", db_dsn])
    assert res.exit_code == 1 and json.loads(res.stdout)["decision"] == "CONDITIONAL GO"
    with pytest.raises(UnknownRun):
        await decide_run(pool, uuid.uuid4())


async def test_agent_changed_naming_a_run_records_its_deployment_once(
        pool: asyncpg.Pool, version_id: uuid.UUID, db_dsn: str) -> None:
    from evalloop.adapters.bus import InProcessBus, Record
    from evalloop.events import AgentChanged, dump_event
    from evalloop.runtime import Deps
    from evalloop.settings import PostgresSettings, Settings
    from evalloop.topics import Topics
    from services.evaluator.verdict import record_deployments

    run_id = await _run(pool, version_id, 0.95)
    deps = Deps(Settings(postgres=PostgresSettings(dsn=db_dsn)), pool, InProcessBus(), Topics())
    event = AgentChanged(event_id=uuid.uuid4(), agent_id=AGENT, conversation_id="-",
                         turn_id="-", occurred_at=datetime.now(UTC),
                         change_kind="system_prompt", new_version="v4", deployed_run_id=run_id)
    unknown = event.model_copy(update={"event_id": uuid.uuid4(), "deployed_run_id": uuid.uuid4()})
    records = [Record("t", AGENT, dump_event(e)) for e in (event, event, unknown)]
    assert await record_deployments(deps, records) == 1
    assert await record_deployments(deps, records) == 0  # redelivered: nothing new
    row = await pool.fetchrow("SELECT * FROM deployments")
    assert (row["run_id"], row["source"], row["note"]) == (run_id, "agent_changed",
                                                           "system_prompt v4")
    # deployed but not GO: not a baseline; once its newest decision is GO, it is
    assert (await store.find_baseline(pool, AGENT, exclude=uuid.uuid4())).run_id is None
    await store.save_decision(pool, decision_id=uuid.uuid4(), run_id=run_id, agent_id=AGENT,
                              decision="GO", decided_at=T0, baseline_run_id=None, why=["test"],
                              report={}, inputs={}, reeval_job_id=None)
    choice = await store.find_baseline(pool, AGENT, exclude=uuid.uuid4())
    assert (choice.run_id, choice.how) == (run_id, "deployed")


async def test_nightly_jobs_are_written_once_per_agent_and_night(
        pool: asyncpg.Pool, db_dsn: str) -> None:
    from evalloop.adapters.bus import InProcessBus
    from evalloop.runtime import Deps
    from evalloop.settings import PostgresSettings, ReadinessSettings, Settings
    from evalloop.topics import Topics
    from services.evaluator.verdict import schedule_nightly

    settings = Settings(postgres=PostgresSettings(dsn=db_dsn),
                        readiness=ReadinessSettings(judge="off", nightly_agents=["a1", "a2"]))
    deps = Deps(settings, pool, InProcessBus(), Topics())
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    assert len(await schedule_nightly(deps, now)) == 2
    assert await schedule_nightly(deps, now + timedelta(hours=1)) == []
    jobs = await list_jobs(pool)
    assert sorted((j.agent_id, j.trigger, j.status, j.requested_at) for j in jobs) == [
        ("a1", "nightly", "requested", datetime(2026, 12, 1, 2, 0, tzinfo=UTC)),
        ("a2", "nightly", "requested", datetime(2026, 12, 1, 2, 0, tzinfo=UTC))]


async def test_report_hallucinations_counts_by_category_with_traces(
        pool: asyncpg.Pool, version_id: uuid.UUID, db_dsn: str) -> None:
    from evalloop.core.readiness.hallucination import KnowledgePassage, classify_claim

    run_id = await _run(pool, version_id, 0.95)
    leave = KnowledgePassage("kb/leave", "Employees receive 14 days of annual leave per year.")
    findings = [
        classify_claim("r001", 0, "Employees always receive 14 days of annual leave per year.",
                       0.2, [leave]),
        classify_claim("r001", 1, "Employees receive 14 days of annual leave per year.", 0.9,
                       [leave]),
        classify_claim("r002", 0, "The cafeteria serves free sushi on Fridays.", 0.1, [leave]),
    ]
    await store.save_claims(pool, run_id, AGENT, ["r001", "r002"], findings, datetime.now(UTC))
    res = await cli(["report", "hallucinations", "--agent", AGENT, "--since", "7d", "--json",
                     "--db", db_dsn])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert [(r["case_id"], r["category"]) for r in rows] == [("r001", "exaggerated"),
                                                             ("r002", "fabricated")]
    assert rows[0]["correction"] == ("Employees receive 14 days of annual leave per year. "
                                     "(from kb/leave)")
    times = [r[k] for r in rows for k in sorted(r) if k.endswith("_at")]
    assert times and all(t[10] == "T" and t.endswith("+00:00") for t in times)  # ISO 8601
    res = await cli(["report", "hallucinations", "--agent", AGENT, "--db", db_dsn])
    assert "3 claims checked, 1 supported, 0 unscored" in res.stdout
    assert "exaggerated          1" in res.stdout
    res = await cli(["report", "hallucinations", "--since", "yesterday", "--db", db_dsn])
    assert res.exit_code == 2


async def test_a_due_conditional_go_reevaluation_is_run_by_the_evaluator_and_gated(
        pool: asyncpg.Pool, version_id: uuid.UUID, db_dsn: str) -> None:
    from evalloop.adapters.bus import InProcessBus
    from evalloop.adapters.golden_store import AgentRecord, upsert_agent
    from evalloop.agent import AgentConfig, serve_agent
    from evalloop.events import ReadinessDecided, ReevalCompleted, ReevalRequested
    from evalloop.runtime import Deps
    from evalloop.settings import (
        EvaluatorSettings,
        PostgresSettings,
        ReadinessSettings,
        Settings,
    )
    from evalloop.topics import Topics
    from services.evaluator.service import EvaluatorService

    settings = Settings(postgres=PostgresSettings(dsn=db_dsn),
                        evaluator=EvaluatorSettings(request_grace_s=0),
                        readiness=ReadinessSettings(judge="off"))
    bus, topics = InProcessBus(), Topics()
    svc = EvaluatorService(Deps(settings, pool, bus, topics))
    # scheduled by a CONDITIONAL GO, now due (its time has passed); one not yet due
    due = ReevalRequested(job_id=uuid.uuid4(), agent_id=AGENT, trigger="conditional_go",
                          requested_at=datetime.now(UTC) - timedelta(minutes=1),
                          reason="CONDITIONAL GO of run x: re-evaluation within 7 days")
    later = due.model_copy(update={"job_id": uuid.uuid4(),
                                   "requested_at": datetime.now(UTC) + timedelta(days=7)})
    assert await store.schedule_reeval(pool, due) and await store.schedule_reeval(pool, later)
    async with serve_agent(AgentConfig(kb="hr"), default_format="openai") as url:
        await upsert_agent(pool, AgentRecord(agent_id=AGENT, endpoint_url=url))
        assert await svc.sweep() == [due.job_id]
        done = await svc.run_job(due.job_id)
    assert done is not None and done.status == "succeeded"
    assert done.summary["rule"] == "conditional_go: full set (docs/rules.md#eval-cadence)"
    assert done.summary["total"] == 36 and done.summary["gate_failures"] == 0
    # no judge here: nothing scored, readiness cannot be shown
    assert done.decision == "NO-GO"
    assert done.decision_why[0] == "the judge scored no answer: readiness cannot be shown"
    (completed,) = [ReevalCompleted.model_validate_json(r.value)
                    for r in bus.messages(topics.reeval_completed)]
    (decided,) = [ReadinessDecided.model_validate_json(r.value)
                  for r in bus.messages(topics.readiness_decided)]
    assert completed.decision == decided.decision == "NO-GO"
    assert decided.run_id == done.run_id
    later_row = await pool.fetchrow("SELECT status FROM reeval_jobs WHERE job_id = $1",
                                    later.job_id)
    assert later_row["status"] == "requested"  # not due yet


async def test_deciding_a_run_twice_schedules_one_reevaluation(
        pool: asyncpg.Pool, version_id: uuid.UUID) -> None:
    """One re-evaluation job per run, whatever the number of CONDITIONAL GO decisions."""
    run_id = await _run(pool, version_id, 0.95)
    first = await decide_run(pool, run_id, now=T0)
    second = await decide_run(pool, run_id, now=T0 + timedelta(hours=3))
    assert (first.gate.decision, second.gate.decision) == ("CONDITIONAL GO", "CONDITIONAL GO")
    assert first.reeval is not None and second.reeval is not None
    assert first.reeval.job_id == second.reeval.job_id
    # the second decision reports the first job's due time, not a new one
    assert second.reeval.requested_at == T0 + timedelta(days=7)
    assert second.report["reeval"]["due_at"] == (T0 + timedelta(days=7)).isoformat()
    jobs = [j for j in await list_jobs(pool, agent_id=AGENT) if j.trigger == "conditional_go"]
    assert len(jobs) == 1
    n = await pool.fetchval("SELECT count(*) FROM reeval_jobs WHERE trigger = 'conditional_go'")
    assert n == 1
    assert await pool.fetchval(
        "SELECT count(*) FROM readiness_decisions WHERE run_id = $1", run_id) == 2
    # another run of the agent gets its own job
    other = await decide_run(pool, await _run(pool, version_id, 0.95), now=T0)
    assert other.reeval is not None and other.reeval.job_id != first.reeval.job_id
    assert await pool.fetchval(
        "SELECT count(*) FROM reeval_jobs WHERE trigger = 'conditional_go'") == 2


async def test_advisory_dimensions_of_the_shipped_judge_are_named_with_their_figures(
        pool: asyncpg.Pool, version_id: uuid.UUID) -> None:
    """Scores from the embedded judge's shipped calibration: the decision names each advisory
    dimension with its agreement figure and bar, in the why, the JSON and the text."""
    from evalloop.adapters.judge_embedded import shipped_calibration
    from evalloop.readiness.report import render_text

    model = "qwen2.5-coder-1.5b-instruct-q4_k_m"
    record = shipped_calibration(model)
    assert record is not None
    run_id = await _run(pool, version_id, 0.95)
    meta = {"model": model, "prompt_version": record.prompt_version,
            "calibration_id": record.calibration_id,
            "advisory": [d for d in DIMENSIONS if record.advisory(d)]}
    await pool.execute("UPDATE eval_results SET judge = $2 WHERE run_id = $1", run_id, meta)
    await _approve_all(pool, run_id)
    v = await decide_run(pool, run_id, now=T0)
    note = ("GO needs a calibrated judge: correctness (Spearman 0.31 < 0.40), relevance "
            "(Spearman 0.18 < 0.40), tone (Spearman 0.08 < 0.40), safety (AUC 0.40 < 0.75), "
            "faithfulness (AUC 0.55 < 0.75), context_utilization (AUC 0.47 < 0.75) are advisory "
            "with qwen2.5-coder-1.5b-instruct-q4_k_m; a stronger judge through the "
            "OpenAI-compatible adapter, calibrated with `evalloop judge calibrate`, can certify "
            "them")
    assert v.gate.decision == "CONDITIONAL GO"
    assert v.gate.why == (note, "36 cases (at least 50)",
                          "easy 0% (target 40%), medium 0% (target 35%), hard 0% (target 25%); "
                          "36 case(s) without a difficulty",
                          "no regression check: no deployed GO run of agent hr-qa-agent and no "
                          "pinned run")
    assert v.report["go_blocked_by_judge"] == note
    assert f"  why: {note}" in render_text(v.report).splitlines()
    row = await store.latest_decision(pool, run_id)
    assert row is not None and row["inputs"]["advisory_dimensions"]["safety"] == "AUC 0.40 < 0.75"


async def test_the_gate_cli_before_judging_prints_not_computed_never_zero(
        pool: asyncpg.Pool, version_id: uuid.UUID, db_dsn: str) -> None:
    """A stored run nothing has judged yet: `gate --no-judge` says the scores and the
    hallucination check were not computed, and why, in text and JSON."""
    run = await run_eval(list(HR.cases), RESPONSES, agent_id=AGENT,
                         golden_set_version_id=version_id, eval_source="test")
    await save_eval_run(pool, run)
    res = await cli(["gate", str(run.run_id), "--no-judge", "--db", db_dsn])
    assert res.exit_code == 1, res.output
    lines = res.stdout.splitlines()
    assert "scores: not computed (the judge scored no answer of this run; 36 cases in the run)" \
        in lines
    assert "hallucinations: not checked (no answer was judged, so no claim was checked)" in lines
    assert not any("unscored 0" in line or "0 claims" in line or line.startswith("  tone ")
                   for line in lines)
    res = await cli(["gate", str(run.run_id), "--no-judge", "--json", "--db", db_dsn])
    report: dict[str, Any] = json.loads(res.stdout)
    assert report["not_computed"] == {
        "scores": "the judge scored no answer of this run",
        "hallucinations": "no answer was judged, so no claim was checked"}
    assert report["scored_cases"] == 0 and report["go_blocked_by_judge"] is None
