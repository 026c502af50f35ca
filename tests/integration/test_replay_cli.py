"""`evalloop replay` as a user runs it: to the real Kafka broker (keyed by agent id, in order) and
to an ingest service listening on a real port (POST /v1/events in batches)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime

import asyncpg
import pytest
import uvicorn
from aiokafka import AIOKafkaConsumer
from typer.testing import CliRunner

from evalloop.adapters.bus import InProcessBus
from evalloop.adapters.key_store import create_key
from evalloop.cli.main import app
from evalloop.replay import prepare_replay
from evalloop.settings import Settings
from evalloop.topics import Topics
from services.ingest.app import build_http_app

END = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
ARGS = ["--agents", "covid-qa-who,airline-support", "--span-hours", "12", "--seed", "3",
        "--end", "2025-06-01T12:00:00Z"]


def _expected(limit: int) -> list[str]:
    prepared = prepare_replay(agents=["covid-qa-who", "airline-support"], span_hours=12,
                              seed=3, end=END, limit=limit)
    return [str(s.event.event_id) for s in prepared.events]


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:  # leave pytest's signal handlers alone
        yield


@contextlib.asynccontextmanager
async def _serve(asgi: object) -> AsyncIterator[str]:
    server = _Server(uvicorn.Config(asgi, host="127.0.0.1", port=0, log_level="warning",  # type: ignore[arg-type]
                                    lifespan="off"))
    async with asyncio.TaskGroup() as tg:
        tg.create_task(server.serve())
        for _ in range(1000):  # up to 10 s
            if server.started:
                break
            await asyncio.sleep(0.01)
        else:
            raise RuntimeError("the ingest server did not start within 10 s")
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True


async def test_replay_to_kafka(kafka_bootstrap: str, topics: Topics) -> None:
    prefix = topics.feedback_events.removesuffix(Topics().feedback_events)
    result = await asyncio.to_thread(
        CliRunner().invoke, app,
        ["replay", "--bootstrap", kafka_bootstrap, "--limit", "400", *ARGS],
        env={"EVALLOOP_KAFKA__TOPIC_PREFIX": prefix, "COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "event times assigned by the replay" in result.output
    assert "2025-06-01 00:00 -> 2025-06-01 12:00 UTC (12 h, seed 3)" in result.output
    assert f"delivered 400 events to Kafka {kafka_bootstrap}" in result.output

    consumer = AIOKafkaConsumer(topics.feedback_events, bootstrap_servers=kafka_bootstrap,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    got: dict[int, list[tuple[str, dict[str, object]]]] = {}
    try:
        async with asyncio.timeout(60):
            while sum(len(v) for v in got.values()) < 400:
                batch = await consumer.getmany(timeout_ms=1000)
                for tp, records in batch.items():
                    got.setdefault(tp.partition, []).extend(
                        (r.key.decode(), json.loads(r.value)) for r in records
                    )
    finally:
        await consumer.stop()
    records = [r for part in got.values() for r in part]
    assert len(records) == 400
    assert all(key == value["agent_id"] for key, value in records)  # keyed by agent_id
    expected = _expected(400)
    assert sorted(v["event_id"] for _, v in records) == sorted(expected)
    # order per key (one agent = one partition) is the replay's delivery order
    for agent in ("covid-qa-who", "airline-support"):
        mine = [v["event_id"] for k, v in records if k == agent]
        position = {e: i for i, e in enumerate(expected)}
        assert mine == sorted(mine, key=position.__getitem__), agent


async def test_replay_to_the_ingest_service_over_http(pool: asyncpg.Pool) -> None:
    bus = InProcessBus()
    token, _ = await create_key(pool, "replay", agent_ids=["covid-qa-who", "airline-support"])
    async with _serve(build_http_app(Settings(), bus=bus, pool=pool)) as url:
        result = await asyncio.to_thread(
            CliRunner().invoke, app,
            ["replay", "--ingest-url", url, "--limit", "700", "--batch-size", "250", *ARGS],
            env={"COLUMNS": "200", "EVALLOOP_API_KEY": token.token},
        )
    assert result.exit_code == 0, result.output
    assert f"delivered 700 events to {url}" in result.output
    published = [json.loads(r.value) for r in bus.messages(Topics().feedback_events)]
    assert [p["event_id"] for p in published] == _expected(700)
    assert all(p["received_at"] for p in published)  # stamped by ingest


def test_replay_to_ingest_needs_the_key_in_the_environment() -> None:
    result = CliRunner().invoke(
        app, ["replay", "--ingest-url", "http://127.0.0.1:1", "--api-key-env", "NO_SUCH_VAR_X",
              *ARGS], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "needs an API key in the environment variable NO_SUCH_VAR_X" in result.output


def test_replay_refuses_unknown_agents() -> None:
    result = CliRunner().invoke(app, ["replay", "--agents", "nobody", "--bootstrap", "x:1"])
    assert result.exit_code == 2
    assert "unknown agent(s) ['nobody']" in result.output


def test_unreachable_ingest_exits_3_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from runner_fake_agent import free_port

    monkeypatch.setenv("EVALLOOP_API_KEY", "a-key-nobody-checks")  # ingest is not even up
    result = CliRunner().invoke(app, ["replay", "--ingest-url",
                                      f"http://127.0.0.1:{free_port()}", "--limit", "5"])
    assert result.exit_code == 3
    last = result.stderr.splitlines()[-1]
    assert last.startswith("error: evalloop replay: POST http://127.0.0.1:")
    assert "Traceback" not in result.output
