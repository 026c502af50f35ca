"""The evaluator app end to end through real Kafka and PostgreSQL :
``reeval.requested.v1`` in -> the reference agent evaluated over HTTP -> run and job stored ->
``reeval.completed.v1`` out, once, even when the request is delivered twice."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import asyncpg
from faststream import TestApp
from kafka_lag import wait_caught_up

from evalloop.adapters.bus import Record
from evalloop.adapters.golden_store import AgentRecord, import_golden_set, upsert_agent
from evalloop.adapters.kafka import KafkaBus, build_broker, subscribe_batch
from evalloop.agent import AgentConfig, serve_agent
from evalloop.cli.eval_cmd import bundled_evals
from evalloop.core.evaluation.cases import load_eval_file
from evalloop.events import ReevalCompleted, ReevalRequested, dump_event
from evalloop.settings import EvaluatorSettings, Settings
from evalloop.topics import GROUP_EVALUATOR, Topics
from services.evaluator.app import build_app
from services.evaluator.service import run_id_for

WAIT_S = 120.0  # bound on delivery + a 36-case run on a loaded 2-core machine (not a timing test)
AGENT = "hr-qa-agent"


async def test_reeval_request_through_kafka_runs_and_completes_once(
    settings: Settings, topics: Topics, pool: asyncpg.Pool
) -> None:
    cfg = settings.model_copy(update={"evaluator": EvaluatorSettings(
        concurrency=8, timeout_s=10, retries=1, lease_s=10, heartbeat_s=1, sweep_interval_s=1)})
    version = (await import_golden_set(pool, load_eval_file(bundled_evals()), agent_id=AGENT,
                                       created_by="test")).version
    req = ReevalRequested(job_id=uuid.uuid4(), agent_id=AGENT, requested_at=datetime.now(UTC),
                          trigger="knowledge_base", reason="leave policy revised",
                          changed_documents=["hr-policy/leave"])
    got: list[ReevalCompleted] = []
    arrived = asyncio.Event()

    async def collect(records: list[Record]) -> None:
        got.extend(ReevalCompleted.model_validate_json(r.value) for r in records)
        arrived.set()

    listener = build_broker(cfg.kafka)
    group = f"g-{uuid.uuid4().hex}"
    subscribe_batch(listener, topics.reeval_completed, group, collect)
    producer = build_broker(cfg.kafka)
    async with serve_agent(AgentConfig(kb="hr"), default_format="openai-sse") as url:
        await upsert_agent(pool, AgentRecord(agent_id=AGENT, endpoint_url=url))
        async with TestApp(build_app(cfg)):
            await listener.start()
            await producer.connect()
            try:
                # the request twice (a producer retry): one run, one completion
                await KafkaBus(producer).publish_batch(
                    topics.reeval_requested, [(AGENT, dump_event(req))] * 2)
                await asyncio.wait_for(arrived.wait(), WAIT_S)
                # no second (wrong) completion: both requests were handled, the job is
                # finished, and the listener consumed every completion published
                await wait_caught_up(cfg.kafka.bootstrap, [
                    (topics.reeval_requested, [GROUP_EVALUATOR]),
                    (topics.reeval_completed, [group]),
                ], WAIT_S)
            finally:
                await producer.stop()
                await listener.stop()

    assert len(got) == 1
    done = got[0]
    assert (done.job_id, done.status, done.run_id, done.golden_set_version_id) == (
        req.job_id, "succeeded", run_id_for(req.job_id), version.version_id)
    assert (done.summary["total"], done.summary["passed"], done.summary["exit_code"]) == (
        11, 11, 0)
    job = await pool.fetchrow("SELECT * FROM reeval_jobs WHERE job_id = $1", req.job_id)
    assert (job["status"], job["attempts"], job["run_id"], job["golden_set_version_id"]) == (
        "succeeded", 1, done.run_id, version.version_id)
    assert await pool.fetchval("SELECT count(*) FROM eval_runs") == 1
    assert await pool.fetchval(
        "SELECT count(*) FROM eval_results WHERE run_id = $1", done.run_id) == 11
