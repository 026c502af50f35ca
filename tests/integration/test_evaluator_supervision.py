"""The evaluator never stops in silence and drains on stop (docs/operations.md#supervision).

Observed: one ``httpx.DecodingError`` inside a job (an agent answering with a broken gzip body)
ended the evaluator's workers and sweep; jobs kept queueing. The agent client now reports that
body as the agent's error; the kind -- any surprising exception of one job -- is tried here with
a job row whose stored request no longer validates (pydantic's ``ValidationError`` at the
claim). Agents are real local HTTP servers (a test double at our own port)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import asyncpg

from evalloop.adapters import job_store
from evalloop.adapters.bus import InProcessBus
from evalloop.adapters.golden_store import AgentRecord, import_golden_set, upsert_agent
from evalloop.cli.eval_cmd import bundled_evals
from evalloop.core.evaluation.cases import load_eval_file
from evalloop.events import ReevalCompleted, ReevalRequested, dump_event
from evalloop.runtime import Deps, mount_in_process
from evalloop.settings import EvaluatorSettings, PostgresSettings, Settings
from evalloop.topics import Topics
from services.evaluator.service import EvaluatorService

HR = load_eval_file(bundled_evals())
TWO = HR.model_copy(update={"cases": HR.cases[:2]})
WAIT_S = 60.0  # bound on one job (not a timing assertion)


@contextlib.asynccontextmanager
async def raw_agent(*, delay_s: float = 0.0) -> AsyncIterator[str]:
    """An agent endpoint: answers in OpenAI format after ``delay_s``."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            m = re.search(rb"content-length:\s*(\d+)", head, re.I)
            await reader.readexactly(int(m.group(1)) if m else 0)
            await asyncio.sleep(delay_s)
            body = json.dumps({"choices": [{"message": {
                "role": "assistant", "content": "Please see the leave policy."}}]}).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Connection: close\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\n\r\n" + body)
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.close()


def _settings(db_dsn: str, **evaluator: Any) -> Settings:
    cfg = {"concurrency": 4, "timeout_s": 10, "retries": 0, "lease_s": 5, "heartbeat_s": 0.5,
           "sweep_interval_s": 0.2, "request_grace_s": 30} | evaluator
    return Settings(postgres=PostgresSettings(dsn=db_dsn), evaluator=EvaluatorSettings(**cfg))


def _request(agent: str) -> ReevalRequested:
    return ReevalRequested(job_id=uuid.uuid4(), agent_id=agent, requested_at=datetime.now(UTC),
                           trigger="manual", reason="test")


async def _status(pool: asyncpg.Pool, job_id: uuid.UUID) -> tuple[str, int]:
    row = await pool.fetchrow("SELECT status, attempts FROM reeval_jobs WHERE job_id = $1",
                              job_id)
    return (row["status"], row["attempts"]) if row else ("missing", 0)


async def _until(predicate: Any) -> None:
    async with asyncio.timeout(WAIT_S):
        while not await predicate():  # noqa: ASYNC110 - polls PostgreSQL and other tasks
            await asyncio.sleep(0.05)


async def test_a_surprising_exception_in_one_job_does_not_end_the_workers(
    pool: asyncpg.Pool, db_dsn: str
) -> None:
    bus = InProcessBus(retry_delay_s=0.05)
    svc = EvaluatorService(Deps(_settings(db_dsn, max_attempts=1), pool, bus, Topics()))
    mount_in_process(bus, svc)
    bad, good = _request("good-agent"), _request("good-agent")
    await job_store.record_request(pool, bad)
    await pool.execute("UPDATE reeval_jobs SET request = request - 'trigger' WHERE job_id = $1",
                       bad.job_id)  # what an old or hand-edited row may hold
    async with raw_agent() as good_url:
        await import_golden_set(pool, TWO, agent_id="good-agent", created_by="test")
        await upsert_agent(pool, AgentRecord(agent_id="good-agent", endpoint_url=good_url))
        async with asyncio.TaskGroup() as tg:
            runner = tg.create_task(bus.run())
            await svc.start()
            try:
                await bus.publish(Topics().reeval_requested, dump_event(bad), key=bad.agent_id)
                await _until(lambda: _job_errors(svc, 1))
                await bus.publish(Topics().reeval_requested, dump_event(good),
                                  key=good.agent_id)
                await _until(lambda: _completed(bus, 2))  # the good one, then the given-up one
                health = svc.health()
            finally:
                await svc.stop()
                bus.stop()
                await runner
    done = {c.job_id: c for c in _messages(bus)}
    assert (done[good.job_id].status, done[good.job_id].summary["total"]) == ("succeeded", 2)
    assert (done[bad.job_id].status, done[bad.job_id].error) == (
        "failed", "gave up after 1 attempts")
    assert svc.job_errors == 1
    assert health["status"] == "ok"
    assert [(h["name"], h["state"], h["restarts"]) for h in health["loops"]] == [
        ("evaluator._sweep_loop", "running", 0), ("evaluator._worker", "running", 0)]


async def _job_errors(svc: EvaluatorService, n: int) -> bool:
    return svc.job_errors >= n


def _messages(bus: InProcessBus) -> list[ReevalCompleted]:
    return [ReevalCompleted.model_validate_json(r.value)
            for r in bus.messages(Topics().reeval_completed)]


async def _completed(bus: InProcessBus, n: int) -> bool:
    return len(_messages(bus)) >= n


async def _run_until_stopped(
    pool: asyncpg.Pool, db_dsn: str, *, delay_s: float, drain_s: float
) -> tuple[ReevalRequested, InProcessBus]:
    bus = InProcessBus(retry_delay_s=0.05)
    svc = EvaluatorService(Deps(_settings(db_dsn, drain_s=drain_s), pool, bus, Topics()))
    mount_in_process(bus, svc)
    async with raw_agent(delay_s=delay_s) as url:
        await import_golden_set(pool, TWO, agent_id="slow-agent", created_by="test")
        await upsert_agent(pool, AgentRecord(agent_id="slow-agent", endpoint_url=url))
        async with asyncio.TaskGroup() as tg:
            runner = tg.create_task(bus.run())
            await svc.start()
            req = _request("slow-agent")
            try:
                await bus.publish(Topics().reeval_requested, dump_event(req), key=req.agent_id)
                await _until(lambda: _is(pool, req.job_id, "running"))
            finally:
                await svc.stop()  # while the job is in flight
                bus.stop()
                await runner
    return req, bus


async def _is(pool: asyncpg.Pool, job_id: uuid.UUID, status: str) -> bool:
    return (await _status(pool, job_id))[0] == status


async def test_stop_lets_a_job_in_flight_finish_within_the_drain_deadline(
    pool: asyncpg.Pool, db_dsn: str
) -> None:
    req, bus = await _run_until_stopped(pool, db_dsn, delay_s=1.0, drain_s=30.0)
    assert await _status(pool, req.job_id) == ("succeeded", 1)
    assert [(c.job_id, c.status) for c in _messages(bus)] == [(req.job_id, "succeeded")]


async def test_stop_releases_a_job_still_running_after_the_deadline(
    pool: asyncpg.Pool, db_dsn: str
) -> None:
    req, bus = await _run_until_stopped(pool, db_dsn, delay_s=8.0, drain_s=0.3)
    assert await _status(pool, req.job_id) == ("requested", 0)  # released, not an attempt
    assert _messages(bus) == []
