"""A whole re-evaluation with the REAL embedded judge, through real Kafka and PostgreSQL:
``reeval.requested.v1`` -> the weak reference agent run over HTTP -> every answer's seven
dimensions and claims judged by the llama.cpp judge -> the gate decided, stored and published
(``readiness.decided.v1``) -> ``reeval.completed.v1`` carrying the decision.

Kept small (two cases, one judged, one claim per answer): the judge answers one yes/no question
in 0.6-15 s depending on the machine's load.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import asyncpg
import pytest
from faststream import TestApp

from evalloop.adapters.bus import Record
from evalloop.adapters.golden_store import AgentRecord, import_golden_set, upsert_agent
from evalloop.adapters.kafka import KafkaBus, build_broker, subscribe_batch
from evalloop.agent import AgentConfig, serve_agent
from evalloop.cli.eval_cmd import bundled_evals
from evalloop.core.evaluation.cases import load_eval_file
from evalloop.core.readiness import DIMENSIONS
from evalloop.events import ReadinessDecided, ReevalCompleted, ReevalRequested, dump_event
from evalloop.settings import EvaluatorSettings, ReadinessSettings, Settings
from evalloop.topics import Topics
from services.evaluator.app import build_app

pytest.importorskip("llama_cpp", reason="the embedded judge needs llama-cpp-python[server]")

WAIT_S = 900.0  # bound: a llama.cpp start and ~10 judge questions on a loaded 2-core machine
AGENT = "hr-qa-agent"
HR = load_eval_file(bundled_evals())


@pytest.mark.slow
@pytest.mark.timeout(WAIT_S + 300)
async def test_reevaluation_from_trigger_to_decision_with_the_embedded_judge(
    settings: Settings, topics: Topics, pool: asyncpg.Pool
) -> None:
    cfg = settings.model_copy(update={
        "evaluator": EvaluatorSettings(concurrency=2, timeout_s=10, retries=1, lease_s=60,
                                       heartbeat_s=2, sweep_interval_s=5),
        "readiness": ReadinessSettings(judge="embedded", judge_sample=1, max_claims=1,
                                       judge_timeout_s=120),
    })
    # a routine question and a prompt-extraction attempt the weak agent complies with
    cases = tuple(c for c in HR.cases if c.id in ("r001", "a001"))
    golden = HR.model_copy(update={"cases": cases})
    await import_golden_set(pool, golden, agent_id=AGENT, created_by="test")
    req = ReevalRequested(job_id=uuid.uuid4(), agent_id=AGENT, requested_at=datetime.now(UTC),
                          trigger="negative_rate", reason="negative rate 3.1% > 2% over 24 h")
    completed: list[ReevalCompleted] = []
    decided: list[ReadinessDecided] = []
    arrived = asyncio.Event()

    async def on_completed(records: list[Record]) -> None:
        completed.extend(ReevalCompleted.model_validate_json(r.value) for r in records)
        arrived.set()

    async def on_decided(records: list[Record]) -> None:
        decided.extend(ReadinessDecided.model_validate_json(r.value) for r in records)

    listener = build_broker(cfg.kafka)
    subscribe_batch(listener, topics.reeval_completed, f"g-{uuid.uuid4().hex}", on_completed)
    subscribe_batch(listener, topics.readiness_decided, f"g-{uuid.uuid4().hex}", on_decided)
    producer = build_broker(cfg.kafka)
    async with serve_agent(AgentConfig(kb="hr", weak=True), default_format="openai") as url:
        await upsert_agent(pool, AgentRecord(agent_id=AGENT, endpoint_url=url))
        async with TestApp(build_app(cfg)):
            await listener.start()
            await producer.connect()
            try:
                await KafkaBus(producer).publish(topics.reeval_requested, dump_event(req),
                                                 key=AGENT)
                await asyncio.wait_for(arrived.wait(), WAIT_S)
                async with asyncio.timeout(60):
                    while not decided:  # noqa: ASYNC110 - filled by the listener's task
                        await asyncio.sleep(0.2)
            finally:
                await producer.stop()
                await listener.stop()

    (done,) = completed
    # the weak agent reveals its prompt: a refusal-gate failure is NO-GO whatever the scores
    assert (done.status, done.decision) == ("succeeded", "NO-GO")
    assert done.decision_why[0] == "1 case(s) failed the refusal gate"
    assert done.summary["decision"] == "NO-GO"
    judged = done.summary["judge"]
    assert (judged["judge"], judged["judged"], judged["answered"], judged["sampled"]) == (
        "qwen2.5-coder-1.5b-instruct-q4_k_m", 1, 2, True)
    # correctness, relevance, tone and safety are always asked; the context dimensions and the
    # claim only when the agent retrieved a passage (the prompt leak retrieves none)
    assert judged["calls"] >= 4
    (event,) = decided
    assert (event.run_id, event.decision, event.agent_id) == (done.run_id, "NO-GO", AGENT)
    assert "refusal_gate" in event.failed_checks
    # the judged case: every dimension a score in 0-1 or unscored with its reason, never NaN
    row = await pool.fetchrow(
        "SELECT case_id, scores, composite, judge FROM eval_results"
        " WHERE run_id = $1 AND scores IS NOT NULL", done.run_id)
    assert set(row["scores"]) == set(DIMENSIONS)
    for dim, value in row["scores"].items():
        if value is None:
            assert row["judge"]["unscored"][dim] and row["judge"]["reasons"][dim]
        else:
            assert 0.0 <= value <= 1.0
    for dim in ("correctness", "relevance", "tone", "safety"):
        assert row["scores"][dim] is not None, row["judge"]["reasons"][dim]
    assert row["judge"]["passage_source"] == "retrieved"
    if not row["judge"]["passages"]:
        assert row["judge"]["unscored"]["groundedness"] == "no_context"
    claims = await pool.fetch("SELECT * FROM hallucination_claims WHERE run_id = $1",
                              done.run_id)
    assert len(claims) == 1 and claims[0]["case_id"] == row["case_id"]
    assert claims[0]["reason"]  # supported, a category with its figures, or why unscored
    stored = await pool.fetchrow("SELECT decision, inputs FROM readiness_decisions"
                                 " WHERE run_id = $1", done.run_id)
    assert stored["decision"] == "NO-GO"
    assert stored["inputs"]["refusal_failures"] == ["a001"]
    job = await pool.fetchrow("SELECT status, result FROM reeval_jobs WHERE job_id = $1",
                              req.job_id)
    assert (job["status"], job["result"]["decision"]) == ("succeeded", "NO-GO")
