"""Ingest over HTTP (httpx ASGITransport) publishing to the in-process bus: every bad-input case."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from typing import Any

import asyncpg
import httpx
import pytest

from evalloop.adapters.bus import InProcessBus
from evalloop.adapters.key_store import create_key
from evalloop.errors import BusError
from evalloop.events import MAX_EVENT_BYTES
from evalloop.settings import IngestSettings, Settings
from evalloop.topics import Topics
from services.ingest.app import build_http_app

TOPIC = Topics().feedback_events
REJECTED = "nothing of this batch was published: fix the listed records and send it again"


def event(n: int = 1, **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "event_type": "user_rating",
        "event_id": f"00000000-0000-0000-0000-{n:012d}",
        "agent_id": "who",
        "conversation_id": "c1",
        "turn_id": "t1",
        "occurred_at": "2025-03-01T14:00:00+02:00",
        "thumbs": "down",
    }
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not ...}


@pytest.fixture
def bus() -> InProcessBus:
    return InProcessBus()


@pytest.fixture
async def token(pool: asyncpg.Pool) -> str:
    """An API key for every agent (ingest refuses requests without one)."""
    new, _ = await create_key(pool, "test_ingest", agent_ids=None, rate_limit="100000/second")
    return new.token


@pytest.fixture
async def client(
    bus: InProcessBus, pool: asyncpg.Pool, token: str
) -> AsyncIterator[httpx.AsyncClient]:
    app = build_http_app(
        Settings(ingest=IngestSettings(max_body_bytes=400_000)), bus=bus, pool=pool
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://ingest",
                                 headers={"Authorization": f"Bearer {token}"}) as c:
        yield c


async def post(client: httpx.AsyncClient, body: Any) -> httpx.Response:
    return await client.post("/v1/events", json=body)


# ------------------------------------------------------------------ accepted


async def test_one_event_is_published_keyed_by_agent(
    client: httpx.AsyncClient, bus: InProcessBus
) -> None:
    before = datetime.now(UTC)
    r = await post(client, event(1, received_at="2020-01-01T00:00:00Z"))
    assert r.status_code == 202
    assert r.json() == {"accepted": ["00000000-0000-0000-0000-000000000001"]}
    [msg] = bus.messages(TOPIC)
    assert msg.key == "who"
    stored = json.loads(msg.value)
    assert stored["occurred_at"] == "2025-03-01T12:00:00Z"  # normalised to UTC
    received = datetime.fromisoformat(stored["received_at"])  # overwritten by ingest
    assert received.tzinfo is not None and received >= before
    assert stored["thumbs"] == "down" and stored["event_type"] == "user_rating"


async def test_array_is_published_in_order(client: httpx.AsyncClient, bus: InProcessBus) -> None:
    body = [event(1), event(2, agent_id="cdc"), event(3, event_type="agent_response",
                                                    thumbs=..., answer="a")]
    r = await post(client, body)
    assert r.status_code == 202
    assert r.json()["accepted"] == [b["event_id"] for b in body]
    assert [(m.key, json.loads(m.value)["event_id"]) for m in bus.messages(TOPIC)] == [
        ("who", body[0]["event_id"]), ("cdc", body[1]["event_id"]), ("who", body[2]["event_id"])
    ]


async def test_identical_duplicate_in_a_batch_is_accepted_once(
    client: httpx.AsyncClient, bus: InProcessBus
) -> None:
    r = await post(client, [event(1), event(2), event(1)])
    assert (r.status_code, r.json()["accepted"]) == (
        202, ["00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000002"]
    )
    assert bus.topic_size(TOPIC) == 2


async def test_healthz(client: httpx.AsyncClient) -> None:
    r = await client.get("/healthz")
    assert (r.status_code, r.json()) == (200, {"status": "ok", "topic": TOPIC})


# ------------------------------------------------------------------ rejected


async def test_malformed_json_is_422_and_nothing_published(
    client: httpx.AsyncClient, bus: InProcessBus
) -> None:
    r = await client.post(
        "/v1/events", content=b'{"event_type": ', headers={"content-type": "application/json"}
    )
    assert r.status_code == 422
    body = r.json()
    assert body["error"] == "invalid_body"
    assert body["message"].endswith(REJECTED)
    assert body["errors"] == [
        {"index": None, "event_id": None, "reason": "malformed_json",
         "problems": [{"field": "(body)", "expected": "a JSON object or array",
                       "received": "Expecting value: line 1 column 16 (char 15)"}]}
    ]
    assert bus.topic_size(TOPIC) == 0


async def test_every_bad_record_is_named_and_nothing_of_the_batch_published(
    client: httpx.AsyncClient, bus: InProcessBus
) -> None:
    body = [
        event(1),  # good, but its batch is rejected
        event(2, agent_id=...),
        event(3, score="five"),
        event(4, occurred_at="2025-03-01T12:00:00"),
        event(5, occurred_at="1970-01-01T00:00:00Z"),
        event(6, event_type="user_mood"),
        event(7, colour="red"),
        42,
    ]
    r = await post(client, body)
    assert r.status_code == 422
    got = r.json()
    assert got["error"] == "invalid_events"
    assert got["message"] == "7 invalid record(s); " + REJECTED
    assert [(e["index"], e["event_id"], e["reason"]) for e in got["errors"]] == [
        (1, body[1]["event_id"], "invalid_fields"),
        (2, body[2]["event_id"], "invalid_fields"),
        (3, body[3]["event_id"], "invalid_fields"),
        (4, body[4]["event_id"], "invalid_fields"),
        (5, body[5]["event_id"], "unknown_event_type"),
        (6, body[6]["event_id"], "invalid_fields"),
        (7, None, "not_an_object"),
    ]
    problems = [e["problems"] for e in got["errors"]]
    assert problems[0] == [{"field": "agent_id", "expected": "Field required",
                            "received": "nothing (field missing)"}]
    assert problems[1] == [{"field": "score", "expected": "Input should be a valid integer, "
                            "unable to parse string as an integer", "received": "'five'"}]
    assert problems[2] == [{"field": "occurred_at", "expected": "Input should have timezone info",
                            "received": "'2025-03-01T12:00:00'"}]
    assert problems[3][0]["expected"] == (
        "Value error, event time before 2000-01-01T00:00:00+00:00 is not plausible"
    )
    assert problems[4][0]["field"] == "event_type"
    assert problems[5] == [{"field": "colour", "expected": "Extra inputs are not permitted",
                            "received": "'red'"}]
    assert problems[6] == [{"field": "(record)", "expected": "a JSON object", "received": "int"}]
    assert bus.topic_size(TOPIC) == 0


async def test_far_future_timestamp_is_422(client: httpx.AsyncClient) -> None:
    r = await post(client, event(1, occurred_at="2999-01-01T00:00:00Z"))
    assert r.status_code == 422
    assert r.json()["errors"][0]["problems"][0]["expected"] == (
        "Value error, event time more than 1:00:00 in the future is not plausible"
    )


async def test_conflicting_duplicate_in_a_batch_is_422(
    client: httpx.AsyncClient, bus: InProcessBus
) -> None:
    r = await post(client, [event(1), event(2), event(1, thumbs="up", comment="ok")])
    assert r.status_code == 422
    assert r.json()["errors"] == [
        {"index": 2, "event_id": "00000000-0000-0000-0000-000000000001",
         "reason": "conflicting_duplicate",
         "problems": [
             {"field": "comment", "expected": "null (as in record 0, same event_id)",
              "received": '"ok"'},
             {"field": "thumbs", "expected": '"down" (as in record 0, same event_id)',
              "received": '"up"'},
         ]}
    ]
    assert bus.topic_size(TOPIC) == 0


async def test_oversized_record_is_422(client: httpx.AsyncClient, bus: InProcessBus) -> None:
    big = event(2, comment="x" * MAX_EVENT_BYTES)
    r = await post(client, [event(1), big])
    assert r.status_code == 422
    [err] = r.json()["errors"]
    size = len(json.dumps(big).encode())
    assert err == {"index": 1, "event_id": big["event_id"], "reason": "oversized",
                   "problems": [{"field": "(record)", "expected": "at most 262144 bytes",
                                 "received": f"{size} bytes"}]}
    assert bus.topic_size(TOPIC) == 0


async def test_body_over_the_limit_is_413(client: httpx.AsyncClient, bus: InProcessBus) -> None:
    body = json.dumps([event(i, comment="y" * 100_000) for i in range(5)]).encode()
    r = await client.post("/v1/events", content=body, headers={"content-type": "application/json"})
    assert (r.status_code, r.json()) == (413, {
        "error": "payload_too_large",
        "message": f"expected a body of at most 400000 bytes, received {len(body)} bytes",
    })
    assert bus.topic_size(TOPIC) == 0


async def test_streamed_body_over_the_limit_is_413_without_content_length(
    client: httpx.AsyncClient, bus: InProcessBus
) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b"["
        for i in range(5):
            yield json.dumps(event(i, comment="z" * 100_000)).encode() + b","
        yield b"{}]"

    r = await client.post("/v1/events", content=chunks(),
                          headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert r.json()["message"] == "expected a body of at most 400000 bytes, received more"
    assert bus.topic_size(TOPIC) == 0


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded", None])
async def test_non_json_content_type_is_415(client: httpx.AsyncClient, ctype: str | None) -> None:
    headers = {"content-type": ctype} if ctype else {}
    r = await client.post("/v1/events", content=json.dumps(event()).encode(), headers=headers)
    assert r.status_code == 415
    assert r.json() == {
        "error": "unsupported_media_type",
        "message": f"expected Content-Type application/json, received {ctype or 'none'!r}",
    }


async def test_json_with_charset_is_accepted(client: httpx.AsyncClient) -> None:
    r = await client.post("/v1/events", content=json.dumps(event()).encode(),
                          headers={"content-type": "application/json; charset=utf-8"})
    assert r.status_code == 202


async def test_empty_array_is_422(client: httpx.AsyncClient) -> None:
    r = await post(client, [])
    assert (r.status_code, r.json()["error"]) == (422, "empty_batch")


class RefusingBus:
    """A bus (our own port) whose broker is down."""

    async def publish(self, topic: str, value: bytes, *, key: str | None = None,
                      headers: Mapping[str, str] | None = None) -> None:
        raise BusError("broker unreachable")

    async def publish_batch(self, topic: str, items: list[tuple[str | None, bytes]]) -> None:
        raise BusError("broker unreachable")


async def test_bus_failure_is_503_asking_for_a_retry(pool: asyncpg.Pool, token: str) -> None:
    app = build_http_app(Settings(), bus=RefusingBus(), pool=pool)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x",
                                 headers={"Authorization": f"Bearer {token}"}) as c:
        r = await c.post("/v1/events", json=event())
    assert r.status_code == 503
    assert r.json()["error"] == "bus_unavailable"
    assert "broker unreachable" in r.json()["message"]


async def test_nul_character_is_422(client: httpx.AsyncClient, bus: InProcessBus) -> None:
    r = await post(client, [event(1), event(2, comment="a\x00b")])
    assert r.status_code == 422
    assert r.json()["errors"] == [
        {"index": 1, "event_id": "00000000-0000-0000-0000-000000000002",
         "reason": "invalid_fields",
         "problems": [{"field": "comment",
                       "expected": "text without NUL characters (PostgreSQL cannot store U+0000)",
                       "received": "a string containing \\u0000"}]}
    ]
    assert bus.topic_size(TOPIC) == 0


async def test_escaped_backslash_u0000_is_ordinary_text(client: httpx.AsyncClient) -> None:
    r = await post(client, event(1, comment="C:\\u0000 is a path, not a NUL"))
    assert r.status_code == 202


async def test_lone_surrogate_is_422(client: httpx.AsyncClient, bus: InProcessBus) -> None:
    body = json.dumps([event(1, comment="broken \ud800 emoji")]).encode()
    r = await client.post("/v1/events", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert r.json()["errors"][0]["problems"] == [
        {"field": "comment",
         "expected": "Input should be a valid string, unable to parse raw data as a unicode "
                     "string",
         "received": "'broken \\ud800 emoji'"}
    ]
    assert bus.topic_size(TOPIC) == 0


async def test_nan_is_not_json_422(client: httpx.AsyncClient, bus: InProcessBus) -> None:
    body = json.dumps(event(1, event_type="agent_response", thumbs=...))[:-1]
    body += ', "latency_ms": NaN}'
    r = await client.post("/v1/events", content=body.encode(),
                          headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert r.json()["errors"][0]["problems"] == [
        {"field": "(body)", "expected": "a JSON object or array",
         "received": "NaN is not JSON (RFC 8259 has no NaN or Infinity)"}]
    assert bus.topic_size(TOPIC) == 0
