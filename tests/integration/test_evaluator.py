"""The evaluator service on real PostgreSQL + the in-process bus, against the reference agent
over real HTTP: requested job -> run stored -> job succeeded -> reeval.completed published."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest
import pytest_asyncio

from evalloop.adapters import job_store
from evalloop.adapters.bus import InProcessBus
from evalloop.adapters.golden_store import AgentRecord, import_golden_set, upsert_agent
from evalloop.agent import AgentConfig, serve_agent
from evalloop.cli.eval_cmd import bundled_evals
from evalloop.core.evaluation.cases import load_eval_file
from evalloop.events import ReevalCompleted, ReevalRequested, dump_event
from evalloop.runtime import Deps, mount_in_process
from evalloop.settings import EvaluatorSettings, PostgresSettings, Settings
from evalloop.topics import Topics
from services.evaluator.service import EvaluatorService, run_id_for

HR = load_eval_file(bundled_evals())
AGENT = "hr-qa-agent"
WAIT_S = 120.0  # bound on one job (not a timing assertion)
#: The bundled HR set's cases whose context chunks lie under hr-policy/leave (pinned).
LEAVE_CASES = ["r001", "r004", "r005", "r011", "r012", "e001", "e003", "a004", "s006", "s011",
               "s012"]


@dataclass
class Env:
    pool: asyncpg.Pool
    bus: InProcessBus
    topics: Topics
    settings: Settings
    version_id: uuid.UUID
    agent_url: str
    services: list[EvaluatorService]

    def service(self, **evaluator: Any) -> EvaluatorService:
        cfg = self.settings.evaluator.model_copy(update=evaluator)
        svc = EvaluatorService(Deps(self.settings.model_copy(update={"evaluator": cfg}),
                                    self.pool, self.bus, self.topics))
        self.services.append(svc)
        return svc

    def completed(self) -> list[ReevalCompleted]:
        return [ReevalCompleted.model_validate_json(r.value)
                for r in self.bus.messages(self.topics.reeval_completed)]

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        async with asyncio.timeout(WAIT_S):
            while not predicate():  # noqa: ASYNC110 - polls state owned by other tasks
                await asyncio.sleep(0.05)


def _request(**kw: Any) -> ReevalRequested:
    base: dict[str, Any] = {"job_id": uuid.uuid4(), "agent_id": AGENT,
                            "requested_at": datetime.now(UTC), "trigger": "manual",
                            "reason": "test"}
    return ReevalRequested.model_validate(base | kw)


@pytest_asyncio.fixture
async def env(pool: asyncpg.Pool, db_dsn: str) -> AsyncIterator[Env]:
    settings = Settings(
        postgres=PostgresSettings(dsn=db_dsn),
        evaluator=EvaluatorSettings(concurrency=8, timeout_s=10, retries=1, lease_s=5,
                                    heartbeat_s=0.5, sweep_interval_s=0.2, request_grace_s=30),
    )
    version = (await import_golden_set(pool, HR, agent_id=AGENT, created_by="test")).version
    bus = InProcessBus(retry_delay_s=0.05)
    async with serve_agent(AgentConfig(kb="hr"), default_format="openai") as url:
        await upsert_agent(pool, AgentRecord(agent_id=AGENT, endpoint_url=url))
        e = Env(pool, bus, Topics(), settings, version.version_id, url, [])
        async with asyncio.TaskGroup() as tg:
            runner = tg.create_task(bus.run())
            try:
                yield e
            finally:
                for svc in e.services:
                    await svc.stop()
                bus.stop()
                await runner


async def _started(env: Env, **evaluator: Any) -> EvaluatorService:
    svc = env.service(**evaluator)
    mount_in_process(env.bus, svc)
    await svc.start()
    return svc


async def _job(pool: asyncpg.Pool, job_id: uuid.UUID) -> asyncpg.Record:
    return await pool.fetchrow("SELECT * FROM reeval_jobs WHERE job_id = $1", job_id)


async def test_requested_job_runs_the_pinned_version_and_completes(env: Env) -> None:
    await _started(env)
    req = _request(reason="negative rate 3.1% > 2% over 24 h", trigger="negative_rate")
    await env.bus.publish(env.topics.reeval_requested, dump_event(req), key=AGENT)
    await env.wait_for(lambda: len(env.completed()) == 1)

    done = env.completed()[0]
    assert (done.job_id, done.status, done.run_id, done.golden_set_version_id, done.error) == (
        req.job_id, "succeeded", run_id_for(req.job_id), env.version_id, None)
    s = done.summary
    assert (s["total"], s["passed"], s["failed"], s["agent_errors"], s["gate_failures"],
            s["exit_code"], s["selected"], s["golden_set_cases"]) == (36, 36, 0, 0, 0, 0, 36, 36)
    assert s["rule"] == "negative_rate: full set (docs/rules.md#eval-cadence)"
    assert s["golden_set"] == f"{AGENT}/hr-qa-agent-evals@1"

    job = await _job(env.pool, req.job_id)
    assert (job["status"], job["run_id"], job["golden_set_version_id"], job["attempts"]) == (
        "succeeded", done.run_id, env.version_id, 1)
    assert job["result"] == s
    assert job["published_at"] is not None  # recorded from the bus (no outbox row before)
    run = await env.pool.fetchrow("SELECT * FROM eval_runs WHERE run_id = $1", done.run_id)
    assert (run["job_id"], run["agent_id"], run["golden_set_version_id"], run["status"],
            run["endpoint"]) == (req.job_id, AGENT, env.version_id, "passed", env.agent_url)
    assert await env.pool.fetchval(
        "SELECT count(*) FROM eval_results WHERE run_id = $1", done.run_id) == 36


async def test_duplicated_and_redelivered_requests_run_once(env: Env) -> None:
    await _started(env)
    req = _request()
    # The monitor's outbox wrote the job; the request then arrives three times.
    await job_store.record_request(env.pool, req)
    for _ in range(3):
        await env.bus.publish(env.topics.reeval_requested, dump_event(req), key=AGENT)
    await env.wait_for(lambda: len(env.completed()) >= 1)
    await env.bus.drain()
    await env.bus.publish(env.topics.reeval_requested, dump_event(req), key=AGENT)  # late dup
    await env.bus.drain()
    await asyncio.sleep(1.0)  # give a wrong second run the chance to happen

    assert len(env.completed()) == 1
    assert (await _job(env.pool, req.job_id))["attempts"] == 1
    assert await env.pool.fetchval("SELECT count(*) FROM eval_runs") == 1


async def test_job_of_a_dead_worker_is_picked_up_and_finishes_once(env: Env) -> None:
    req = _request(trigger="model_version", reason="model gpt-x -> gpt-y")
    await job_store.record_request(env.pool, req)
    dead = await job_store.claim(env.pool, req.job_id, "dead-worker", lease_s=5, max_attempts=3)
    assert dead is not None
    await job_store.pin_version(env.pool, req.job_id, "dead-worker", env.version_id)
    await env.pool.execute(
        "UPDATE reeval_jobs SET heartbeat_at = now() - interval '1 minute' WHERE job_id = $1",
        req.job_id)

    svc = await _started(env)  # no bus message: the start-up sweep finds the stale job
    await env.wait_for(lambda: len(env.completed()) == 1)
    job = await _job(env.pool, req.job_id)
    assert (job["status"], job["attempts"], job["claimed_by"]) == ("succeeded", 2, svc.worker_id)
    assert await env.pool.fetchval("SELECT count(*) FROM eval_runs") == 1
    await asyncio.sleep(1.0)  # several more sweeps: nothing runs again
    assert len(env.completed()) == 1


async def test_a_stalled_worker_loses_its_claim_and_stores_nothing(env: Env) -> None:
    req = _request()
    await job_store.record_request(env.pool, req)
    async with serve_agent(AgentConfig(kb="hr"), delay_s=0.1) as slow_url:
        await upsert_agent(env.pool, AgentRecord(agent_id=AGENT, endpoint_url=slow_url))
        # Worker A never heartbeats (a stalled process): lease 1 s, 36 cases x 0.1 s at
        # concurrency 1 take ~3.6 s. Worker B's sweep takes the job over after the lease.
        stalled = env.service(lease_s=1.0, concurrency=1)
        stalled.cfg = stalled.cfg.model_copy(update={"heartbeat_s": 3600.0})
        a = asyncio.create_task(stalled.run_job(req.job_id))
        try:
            await env.wait_for(lambda: req.job_id in stalled._in_flight)
            b = await _started(env, lease_s=1.0, heartbeat_s=0.2, concurrency=1)
            await env.wait_for(lambda: len(env.completed()) == 1)
            assert await a is None  # A finished its run but found the job taken over
        finally:
            await asyncio.gather(a, return_exceptions=True)
    job = await _job(env.pool, req.job_id)
    assert (job["status"], job["claimed_by"], job["attempts"]) == ("succeeded", b.worker_id, 2)
    assert await env.pool.fetchval("SELECT count(*) FROM eval_runs") == 1
    assert len(env.completed()) == 1


async def test_knowledge_base_update_runs_only_the_touched_cases(env: Env) -> None:
    await _started(env)
    req = _request(trigger="knowledge_base", reason="leave policy revised",
                   changed_documents=["hr-policy/leave"])
    await env.bus.publish(env.topics.reeval_requested, dump_event(req), key=AGENT)
    await env.wait_for(lambda: len(env.completed()) == 1)
    done = env.completed()[0]
    assert done.summary["selected_case_ids"] == LEAVE_CASES
    assert done.summary["total"] == 11
    assert done.summary["rule"] == "knowledge_base: 11 of 36 cases touch hr-policy/leave"
    ids = await env.pool.fetch(
        "SELECT case_id FROM eval_results WHERE run_id = $1 ORDER BY position", done.run_id)
    assert [r["case_id"] for r in ids] == LEAVE_CASES


async def test_weekly_sample_is_seeded(env: Env) -> None:
    await _started(env)
    req = _request(trigger="weekly_sample", reason="weekly", sample_size=10, sample_seed=42)
    await env.bus.publish(env.topics.reeval_requested, dump_event(req), key=AGENT)
    await env.wait_for(lambda: len(env.completed()) == 1)
    s = env.completed()[0].summary
    assert s["selected_case_ids"] == ["r002", "r004", "r005", "r008", "e003", "e004", "e006",
                                      "a004", "a006", "s006"]
    assert (s["sample_seed"], s["total"]) == (42, 10)


async def test_the_weak_agent_regresses_and_the_job_reports_it(env: Env) -> None:
    async with serve_agent(AgentConfig(kb="hr", weak=True), default_format="anthropic") as url:
        await upsert_agent(env.pool, AgentRecord(agent_id=AGENT, endpoint_url=url))
        await _started(env)
        req = _request(trigger="system_prompt", reason="prompt v4")
        await env.bus.publish(env.topics.reeval_requested, dump_event(req), key=AGENT)
        await env.wait_for(lambda: len(env.completed()) == 1)
    s = env.completed()[0].summary
    # (and e001: its retrieval quotes clause 3.5, on working for another employer while on
    # leave, to "Can I use up my annual leave during my notice period?" -- neither yes nor no,
    # docs/rules.md#non-answer-check; and r009: clauses on taxi fares to "How long do I have to
    # submit receipts …?", no duration)
    assert s["refusal_gate_failures"] == ["r009", "e001"] + [c.id for c in HR.cases
                                                             if c.should_refuse]
    assert s["escalation_gate_failures"] == [c.id for c in HR.cases if c.should_escalate]
    assert (s["exit_code"], s["gate_failed"]) == (1, True)
    assert await env.pool.fetchval("SELECT status FROM eval_runs") == "failed"


@pytest.mark.parametrize(
    ("agent", "error"),
    [
        ("unknown-agent", "no endpoint registered for agent 'unknown-agent'"),
        ("no-golden-agent", "agent 'no-golden-agent' has no golden set"),
    ],
)
async def test_a_job_that_cannot_run_fails_with_the_reason(
    env: Env, agent: str, error: str
) -> None:
    await upsert_agent(env.pool, AgentRecord(agent_id="no-golden-agent",
                                             endpoint_url=env.agent_url))
    await _started(env)
    req = _request(agent_id=agent)
    await env.bus.publish(env.topics.reeval_requested, dump_event(req), key=agent)
    await env.wait_for(lambda: len(env.completed()) == 1)
    done = env.completed()[0]
    assert (done.status, done.run_id) == ("failed", None)
    assert done.error is not None and done.error.startswith(error)
    job = await _job(env.pool, req.job_id)
    assert (job["status"], job["error"]) == ("failed", done.error)


async def test_an_undecodable_request_is_dropped_and_counted(env: Env) -> None:
    svc = await _started(env)
    await env.bus.publish(env.topics.reeval_requested, b'{"job_id": "not-a-uuid"}', key=AGENT)
    await env.bus.drain()
    assert svc.skipped == 1
    assert await env.pool.fetchval("SELECT count(*) FROM reeval_jobs") == 0


async def test_a_graceful_stop_hands_the_job_back(env: Env) -> None:
    req = _request()
    async with serve_agent(AgentConfig(kb="hr"), delay_s=0.2) as slow_url:
        await upsert_agent(env.pool, AgentRecord(agent_id=AGENT, endpoint_url=slow_url))
        first = await _started(env, concurrency=1, drain_s=0)  # no drain: release at once
        await env.bus.publish(env.topics.reeval_requested, dump_event(req), key=AGENT)
        await env.wait_for(lambda: req.job_id in first._in_flight)
        await first.stop()
        env.services.remove(first)
        job = await _job(env.pool, req.job_id)
        assert (job["status"], job["claimed_by"], job["attempts"]) == ("requested", None, 0)
        assert env.completed() == []
        await upsert_agent(env.pool, AgentRecord(agent_id=AGENT, endpoint_url=env.agent_url))
    # the next process's start-up sweep takes it (no grace: it was requested long enough ago)
    second = await _started(env, request_grace_s=0)
    await env.wait_for(lambda: len(env.completed()) == 1)
    job = await _job(env.pool, req.job_id)
    assert (job["status"], job["claimed_by"], job["attempts"]) == (
        "succeeded", second.worker_id, 1)


async def test_the_sweep_and_the_bus_queue_a_job_once(env: Env) -> None:
    """Before: every sweep (every 0.2 s here) queued every due job again, so a job waiting
    behind a long run was queued hundreds of times. Now it is queued once until a worker
    takes it."""
    svc = env.service(request_grace_s=0)  # not started: nothing takes jobs off the queue
    req = _request(requested_at=datetime(2026, 1, 1, tzinfo=UTC))
    assert await job_store.record_request(env.pool, req)
    assert [await svc.sweep() for _ in range(3)] == [[req.job_id]] * 3
    await svc.on_reeval_requested([_record(env, req), _record(env, req)])
    assert svc._queue.qsize() == 1
    assert svc.enqueue(req.job_id) is False


def _record(env: Env, req: ReevalRequested) -> Any:
    from evalloop.adapters.bus import Record

    return Record(topic=env.topics.reeval_requested, partition=0, offset=0, key=AGENT,
                  value=dump_event(req))
