"""Ingest does bounded work per request (docs/operations.md#bounded-work-per-request): a body
of many empty records is refused by count, errors are capped, deep nesting is a 422 (not a
500), and validation runs off the event loop."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest

import services.ingest.app as ingest_app
from evalloop.adapters.bus import InProcessBus
from evalloop.adapters.key_store import create_key
from evalloop.events import BatchLimits, FeedbackEvent
from evalloop.settings import IngestSettings, Settings
from evalloop.topics import Topics
from services.ingest.app import build_http_app

TOPIC = Topics().feedback_events
REJECTED = "nothing of this batch was published: fix the listed records and send it again"
JSON = {"content-type": "application/json"}


@pytest.fixture
def bus() -> InProcessBus:
    return InProcessBus()


@pytest.fixture
async def client(bus: InProcessBus, pool: asyncpg.Pool) -> AsyncIterator[httpx.AsyncClient]:
    new, _ = await create_key(pool, "test_limits", agent_ids=None, rate_limit="100000/second")
    app = build_http_app(Settings(), bus=bus, pool=pool)  # the default limits
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://ingest",
                                 headers={"Authorization": f"Bearer {new.token}"}) as c:
        yield c


async def test_a_third_of_a_megabyte_of_empty_records_is_refused_by_count(
    client: httpx.AsyncClient, bus: InProcessBus
) -> None:
    # The observed attack: 0.3 MB of `{}` records got a 26.6 MB answer after 6.3 s.
    body = b"[" + b",".join([b"{}"] * 100_000) + b"]"
    assert len(body) == 300_001
    r = await client.post("/v1/events", content=body, headers=JSON)
    assert r.status_code == 413
    assert r.json() == {
        "error": "payload_too_large",
        "message": "too_many_records: (body): expected at most 1000 records per batch, "
                   "received 100000 records; " + REJECTED,
        "errors": [{"index": None, "event_id": None, "reason": "too_many_records",
                    "problems": [{"field": "(body)",
                                  "expected": "at most 1000 records per batch",
                                  "received": "100000 records"}]}],
    }
    assert len(r.content) == 385
    assert bus.topic_size(TOPIC) == 0


async def test_a_full_batch_of_bad_records_lists_at_most_100(
    client: httpx.AsyncClient, bus: InProcessBus
) -> None:
    body = b"[" + b",".join([b"{}"] * 1000) + b"]"
    r = await client.post("/v1/events", content=body, headers=JSON)
    assert r.status_code == 422
    answer = r.json()
    assert answer["message"] == (
        "1000 invalid record(s) (100 listed, 900 more not); " + REJECTED)
    assert answer["omitted"] == 900
    assert [e["index"] for e in answer["errors"]] == list(range(100))
    assert {e["reason"] for e in answer["errors"]} == {"unknown_event_type"}
    assert len(r.content) == 26_482  # 100 records described, ~265 bytes each
    assert bus.topic_size(TOPIC) == 0


@pytest.mark.parametrize("body", [
    b"[" * 100_000 + b"]" * 100_000,
    b'{"event_type": "user_rating", "comment": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    b'[{"a": ' * 3000 + b"1" + b"}]" * 3000,
])
async def test_deep_nesting_is_422_not_a_crash(
    client: httpx.AsyncClient, bus: InProcessBus, body: bytes
) -> None:
    r = await client.post("/v1/events", content=body, headers=JSON)
    assert r.status_code == 422
    answer = r.json()
    assert answer["error"] in ("invalid_body", "invalid_events")
    assert answer["errors"][0]["reason"] in ("malformed_json", "undecodable")
    assert bus.topic_size(TOPIC) == 0


async def test_validation_runs_in_a_worker_thread(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[int] = []
    original = ingest_app.decode_body

    def recording(body: bytes, limits: BatchLimits) -> list[FeedbackEvent]:
        threads.append(threading.get_ident())
        return original(body, limits)

    monkeypatch.setattr(ingest_app, "decode_body", recording)
    event: dict[str, Any] = {
        "event_type": "user_rating", "event_id": "00000000-0000-0000-0000-000000000001",
        "agent_id": "who", "conversation_id": "c1", "turn_id": "t1",
        "occurred_at": "2025-03-01T14:00:00+02:00", "thumbs": "down",
    }
    r = await client.post("/v1/events", content=json.dumps(event), headers=JSON)
    assert r.status_code == 202
    assert len(threads) == 1 and threads[0] != threading.get_ident()


def test_one_limit_in_one_place() -> None:
    # ingest's settings and parse_events' default are the same limits
    assert Settings().ingest.limits() == BatchLimits()
    assert BatchLimits().max_body_bytes == 10 * 1024 * 1024


class SilentBus:
    """A bus (our own port) whose broker never acknowledges: a stopped broker, as the
    producer sees it while it waits for the broker to come back."""

    async def publish(self, topic: str, value: bytes, *, key: str | None = None,
                      headers: Any = None) -> None:
        await asyncio.Event().wait()

    async def publish_batch(self, topic: str, items: list[tuple[str | None, bytes]]) -> None:
        await asyncio.Event().wait()


async def _client_for(app: Any, pool: asyncpg.Pool) -> httpx.AsyncClient:
    new, _ = await create_key(pool, "limits", agent_ids=None, rate_limit="100000/second")
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ingest",
                             headers={"Authorization": f"Bearer {new.token}"})


async def test_a_stopped_broker_is_503_within_the_publish_timeout(pool: asyncpg.Pool) -> None:
    settings = Settings(ingest=IngestSettings(publish_timeout_s=0.3))
    app = build_http_app(settings, bus=SilentBus(), pool=pool)
    event = {"event_type": "user_rating", "event_id": "00000000-0000-0000-0000-000000000001",
             "agent_id": "who", "conversation_id": "c1", "turn_id": "t1",
             "occurred_at": "2025-03-01T14:00:00+02:00", "thumbs": "down"}
    async with await _client_for(app, pool) as client:
        t0 = time.monotonic()
        r = await client.post("/v1/events", content=json.dumps(event), headers=JSON)
        took = time.monotonic() - t0
    assert r.status_code == 503
    assert r.json() == {
        "error": "bus_unavailable",
        "message": "the events could not be published (the broker did not acknowledge them "
                   "within 0.3 s); send the batch again: an event_id already stored is not "
                   "counted twice",
    }
    assert 0.3 <= took < 10.0  # bounded by the timeout, not by the producer's own wait


async def test_a_slow_body_is_408_after_the_body_timeout(
    pool: asyncpg.Pool, bus: InProcessBus
) -> None:
    # slowloris: the body trickles in; the connection is not held for ever
    settings = Settings(ingest=IngestSettings(body_timeout_s=0.3))
    app = build_http_app(settings, bus=bus, pool=pool)

    async def trickle() -> AsyncIterator[bytes]:
        yield b"["
        await asyncio.sleep(5.0)
        yield b"]"

    async with await _client_for(app, pool) as client:
        t0 = time.monotonic()
        r = await client.post("/v1/events", content=trickle(), headers=JSON)
        took = time.monotonic() - t0
    assert r.status_code == 408
    assert r.json() == {
        "error": "request_timeout",
        "message": "expected the whole body within 0.3 s, received part of it; send it again, "
                   "faster",
    }
    assert took < 5.0
    assert bus.topic_size(TOPIC) == 0
