"""``evalloop up``: services together in one process on real Kafka + PostgreSQL, clean stop."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import Callable

import asyncpg
import httpx
import pytest
import typer

from evalloop.adapters.key_store import create_key
from evalloop.cli.up import SERVICES, available_services, load_service, run_services
from evalloop.settings import (
    HealthSettings,
    IngestSettings,
    KafkaSettings,
    PostgresSettings,
    Settings,
)
from services.monitor.service import MonitorService

WAIT_S = 60.0  # bound on the whole flow (not a timing assertion)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _event(agent: str, turn: str) -> dict[str, object]:
    return {
        "event_type": "agent_response", "event_id": str(uuid.uuid4()), "agent_id": agent,
        "conversation_id": "c1", "turn_id": turn, "occurred_at": "2026-01-05T10:00:00Z",
        "question": "How many vacation days do I get?", "answer": "25 days.",
    }


async def test_ingest_recorder_monitor_run_together_report_health_and_stop(
    settings: Settings, pool: asyncpg.Pool
) -> None:
    port = _free_port()
    settings = settings.model_copy(update={"ingest": IngestSettings(port=port)})
    stop = asyncio.Event()
    events = [_event("agent-up", f"t{i}") for i in range(3)]

    token, _ = await create_key(pool, "up test", agent_ids=["agent-up"])

    async def drive() -> int:
        headers = {"Authorization": f"Bearer {token.token}"}
        base = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(base_url=base, headers=headers) as client:
            async with asyncio.timeout(WAIT_S):
                while True:  # wait for uvicorn to bind
                    try:
                        if (await client.get("/healthz")).status_code == 200:
                            break
                    except httpx.TransportError:
                        await asyncio.sleep(0.1)
                resp = await client.post("/v1/events", json=events)
                assert resp.status_code == 202, resp.text
                conn = await asyncpg.connect(settings.postgres.dsn)
                try:
                    # PostgreSQL has no event to wait on here: poll (bounded by the timeout).
                    while (n := await conn.fetchval("SELECT count(*) FROM events")) < 3:  # noqa: ASYNC110
                        await asyncio.sleep(0.1)
                finally:
                    await conn.close()
                # every service of the process reports its health (docs/operations.md)
                ready = await client.get("/readyz")
                health = await client.get("/healthz")
        stop.set()
        assert ready.status_code == 200, ready.text
        body = ready.json()
        assert (body["status"], body["ready"]) == ("ok", True)
        assert [(s["service"], s["status"], s["ready"]) for s in body["services"]] == [
            ("recorder", "ok", True), ("monitor", "ok", True)]
        assert [(h["name"], h["state"], h["restarts"]) for h in body["services"][1]["loops"]] \
            == [("monitor._schedule_loop", "running", 0)]
        assert health.status_code == 200 and health.json()["status"] == "ok"
        return int(n)

    async with asyncio.timeout(WAIT_S * 2):
        async with asyncio.TaskGroup() as tg:
            runner = tg.create_task(
                run_services(["ingest", "recorder", "monitor"], settings, stop))
            stored = tg.create_task(drive())
    assert stored.result() == 3
    assert runner.done() and runner.exception() is None
    conn = await asyncpg.connect(settings.postgres.dsn)
    try:
        ids = {str(r["event_id"]) for r in await conn.fetch("SELECT event_id FROM events")}
    finally:
        await conn.close()
    assert ids == {e["event_id"] for e in events}


async def _standalone_health(
    settings: Settings, until: Callable[[httpx.Response], bool] | None = None
) -> tuple[httpx.Response, httpx.Response]:
    """Run ``evalloop up --service monitor``'s services (no ingest) and read the health port.

    Polls ``/readyz`` until ``until(body)`` holds (default: the answer is 200), then returns
    ``(readyz, healthz)`` and stops the process.
    """
    port = _free_port()
    settings = settings.model_copy(update={"health": HealthSettings(port=port)})
    stop = asyncio.Event()

    async def probe() -> tuple[httpx.Response, httpx.Response]:
        done = until or (lambda r: r.status_code == 200)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            try:
                async with asyncio.timeout(WAIT_S):
                    while True:  # the state is owned by the service's tasks: poll it
                        try:
                            ready = await client.get("/readyz")
                            if done(ready):
                                return ready, await client.get("/healthz")
                        except httpx.TransportError:
                            pass
                        await asyncio.sleep(0.1)
            finally:
                stop.set()

    async with asyncio.timeout(WAIT_S * 2):
        async with asyncio.TaskGroup() as tg:
            runner = tg.create_task(run_services(["monitor"], settings, stop))
            answers = tg.create_task(probe())
    assert runner.exception() is None
    return answers.result()


async def test_a_service_run_alone_serves_healthz_and_readyz(settings: Settings) -> None:
    def loop_started(r: httpx.Response) -> bool:  # the service starts its loop after binding
        services = r.json().get("services") or [{}]
        return bool(services[0].get("loops"))

    ready, health = await _standalone_health(settings, until=loop_started)
    assert ready.status_code == 200
    body = ready.json()
    assert (body["status"], body["ready"]) == ("ok", True)
    assert [(s["service"], s["status"], s["ready"]) for s in body["services"]] == [
        ("monitor", "ok", True)]
    assert [(h["name"], h["state"], h["restarts"], h["last_error"])
            for h in body["services"][0]["loops"]] == [
        ("monitor._schedule_loop", "running", 0, None)]
    assert health.status_code == 200
    assert (health.json()["status"], health.json()["ready"]) == ("ok", True)


async def test_a_service_run_alone_whose_loop_keeps_failing_is_not_ready(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def _schedule_loop(self: MonitorService) -> None:
        raise RuntimeError("schedule store down")

    monkeypatch.setattr(MonitorService, "_schedule_loop", _schedule_loop)
    monkeypatch.setattr(MonitorService, "RESTART_BACKOFF_S", 0.01)

    def failed_three_times(r: httpx.Response) -> bool:
        loops = r.json()["services"][0]["loops"]
        return bool(loops) and loops[0]["restarts"] >= 3

    ready, health = await _standalone_health(settings, until=failed_three_times)
    assert ready.status_code == 503
    body = ready.json()
    assert (body["status"], body["ready"]) == ("degraded", False)
    assert [(s["service"], s["status"], s["ready"]) for s in body["services"]] == [
        ("monitor", "degraded", False)]
    (loop,) = body["services"][0]["loops"]
    assert (loop["name"], loop["state"], loop["last_error"]) == (
        "monitor._schedule_loop", "restarting", "RuntimeError: schedule store down")
    assert loop["restarts"] >= 3
    # /healthz: the process still serves, so 200, and says which service is degraded
    assert health.status_code == 200
    assert [(s["service"], s["status"]) for s in health.json()["services"]] == [
        ("monitor", "degraded")]


async def test_a_failing_service_stops_the_others_and_raises(db_dsn: str) -> None:
    settings = Settings(
        postgres=PostgresSettings(dsn=db_dsn),
        kafka=KafkaSettings(bootstrap="127.0.0.1:1", topic_prefix="nowhere."),
    )
    with pytest.raises(ExceptionGroup) as info:
        await asyncio.wait_for(run_services(["recorder"], settings), WAIT_S)
    assert "cannot create topics on 127.0.0.1:1" in str(info.value.exceptions[0])


def test_every_existing_service_builds_without_connecting() -> None:
    settings = Settings(kafka=KafkaSettings(bootstrap="127.0.0.1:1"))
    names = available_services()
    assert {"ingest", "recorder", "monitor"} <= set(names)
    loaded = [load_service(n, settings) for n in names]
    assert [(s.name, s.kind) for s in loaded] == [
        (n, "http" if n in ("ingest", "web") else "stream") for n in names
    ]
    assert set(names) <= set(SERVICES)


def test_unknown_service_is_refused_naming_the_choices() -> None:
    with pytest.raises(typer.BadParameter, match="expected one of ingest, recorder"):
        load_service("reviewer", Settings())
