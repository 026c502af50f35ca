"""The recorder's FastStream app through REAL Kafka into REAL PostgreSQL, and ingest in front of it.

Good and bad records are produced to ``feedback.events.v1``; the test checks the stored rows, the
dead-letter topic (original bytes + reason headers), ``feedback.negative.v1``, that offsets were
committed (a restarted recorder re-reads nothing), and that a re-sent event is not counted twice.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable
from typing import Any
from uuid import UUID

import asyncpg
import httpx
import pytest
import uvicorn
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from faststream import TestApp

from evalloop.adapters.key_store import create_key
from evalloop.events import NegativeCase
from evalloop.settings import Settings
from evalloop.topics import Topics
from services.ingest.app import build_http_app
from services.recorder.app import build_app

pytestmark = pytest.mark.slow


def eid(n: int) -> str:
    return f"00000000-0000-0000-0000-{n:012d}"


def event(n: int, event_type: str = "user_rating", *, agent: str = "cdc", turn: str = "t1",
          **fields: Any) -> dict[str, Any]:
    return {
        "event_type": event_type, "event_id": eid(n), "agent_id": agent,
        "conversation_id": "c1", "turn_id": turn, "occurred_at": "2025-03-01T12:00:00Z",
        **fields,
    }


async def produce(bootstrap: str, topic: str, items: list[tuple[str, bytes]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for key, value in items:
            await producer.send_and_wait(topic, value=value, key=key.encode())
    finally:
        await producer.stop()


async def consume_all(bootstrap: str, topic: str, expected: int, timeout_s: float = 30.0,
                      until: Callable[[list[Any]], bool] | None = None) -> list[Any]:
    """Read ``topic`` from the start until ``expected`` messages arrived and ``until`` holds,
    then 1 s more (to catch anything unexpected)."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                enable_auto_commit=False, group_id=None)
    await consumer.start()
    out: list[Any] = []
    try:
        async with asyncio.timeout(timeout_s):
            while len(out) < expected or (until is not None and not until(out)):
                batches = await consumer.getmany(timeout_ms=500)
                for msgs in batches.values():
                    out.extend(msgs)
        batches = await consumer.getmany(timeout_ms=1000)  # nothing more should come
        for msgs in batches.values():
            out.extend(msgs)
    finally:
        await consumer.stop()
    return out


async def wait_for(check: Callable[[], Awaitable[bool]], timeout_s: float = 60.0) -> None:
    async with asyncio.timeout(timeout_s):
        while True:  # polling PostgreSQL: there is nothing to wait on
            if await check():
                return
            await asyncio.sleep(0.2)


async def count(pool: asyncpg.Pool, table: str) -> int:
    async with pool.acquire() as conn:
        return int(await conn.fetchval(f"SELECT count(*) FROM {table}"))


async def test_recorder_app_over_real_kafka(
    settings: Settings, topics: Topics, kafka_bootstrap: str, pool: asyncpg.Pool
) -> None:
    good = [
        ("cdc", json.dumps(event(1, "agent_response", question="Q?", answer="A.")).encode()),
        ("cdc", json.dumps(event(2, thumbs="down", comment="wrong")).encode()),
        ("who", json.dumps(event(3, "agent_response", agent="who", answer="fine")).encode()),
        ("who", json.dumps(event(4, agent="who", thumbs="up")).encode()),
    ]
    bad = [
        ("cdc", b"{not json"),
        ("cdc", json.dumps(event(5, occurred_at="2025-03-01T12:00:00", thumbs="down")).encode()),
        ("who", json.dumps(event(6, "user_mood")).encode()),
    ]
    await produce(kafka_bootstrap, topics.feedback_events, good + bad)

    async with TestApp(build_app(settings)):
        await wait_for(lambda: _at_least(pool, "events", 4))
        dead = await consume_all(kafka_bootstrap, topics.feedback_dlq, 3)
        negative = await consume_all(kafka_bootstrap, topics.feedback_negative, 1)

    async with pool.acquire() as conn:
        stored = sorted(str(r[0]) for r in await conn.fetch("SELECT event_id FROM events"))
        cases = await conn.fetch("SELECT agent_id, turn_id, confidence, comment "
                                 "FROM negative_cases")
    assert stored == [eid(1), eid(2), eid(3), eid(4)]
    assert [tuple(c) for c in cases] == [("cdc", "t1", 0.7, "wrong")]

    assert sorted(m.value for m in dead) == sorted(v for _, v in bad)  # original bytes, all
    reasons = {m.value: dict(m.headers) for m in dead}
    assert reasons[b"{not json"]["x-dlq-reason"] == b"malformed_json"
    assert reasons[bad[1][1]]["x-dlq-reason"] == b"invalid_fields"
    assert json.loads(reasons[bad[1][1]]["x-dlq-detail"])["problems"] == [
        {"field": "occurred_at", "expected": "Input should have timezone info",
         "received": "'2025-03-01T12:00:00'"}
    ]
    assert reasons[bad[2][1]]["x-dlq-reason"] == b"unknown_event_type"
    assert {dict(m.headers)["x-dlq-source-topic"] for m in dead} == {
        topics.feedback_events.encode()}

    [msg] = negative
    case = NegativeCase.model_validate_json(msg.value)
    assert (msg.key, case.agent_id, case.confidence, case.question) == (b"cdc", "cdc", 0.7, "Q?")

    # Offsets were committed after each batch: a restarted recorder re-reads nothing, and a
    # re-sent event (same event_id, same content) is not stored twice.
    await produce(kafka_bootstrap, topics.feedback_events, [good[1], (
        "cdc", json.dumps(event(7, "operator_correction", corrected_answer="B.")).encode())])
    async with TestApp(build_app(settings)):
        await wait_for(lambda: _at_least(pool, "events", 5))
        negative = await consume_all(
            kafka_bootstrap, topics.feedback_negative, 2,
            until=lambda ms: b'"expected_answer":"B."' in ms[-1].value,
        )
    assert await count(pool, "events") == 5
    dead_again = await consume_all(kafka_bootstrap, topics.feedback_dlq, 3, timeout_s=5)
    assert len(dead_again) == 3  # the bad records were not re-read
    latest = NegativeCase.model_validate_json(negative[-1].value)
    assert latest.expected_answer == "B." and latest.confidence == 0.985
    assert latest.case_id == case.case_id


async def _at_least(pool: asyncpg.Pool, table: str, n: int) -> bool:
    return await count(pool, table) >= n


async def _started(server: uvicorn.Server) -> bool:
    return bool(server.started)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_ingest_to_kafka_to_recorder(
    settings: Settings, topics: Topics, pool: asyncpg.Pool
) -> None:
    port = _free_port()
    token, _ = await create_key(pool, "recorder test", agent_ids=None)
    server = uvicorn.Server(uvicorn.Config(build_http_app(settings), host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="on"))
    async with asyncio.TaskGroup() as tg:
        tg.create_task(server.serve())
        await wait_for(lambda: _started(server), timeout_s=30)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}",
                                     headers={"Authorization": f"Bearer {token.token}"}) as client:
            ok = await client.post("/v1/events", json=[
                event(1, "agent_response", question="Q?", answer="A."),
                event(2, score=1, comment="no"),
                event(2, score=1, comment="no"),  # identical duplicate: accepted once
            ])
            bad = await client.post("/v1/events", json=[event(3, thumbs="down"),
                                                        event(4, thumbs="sideways")])
            resent = await client.post("/v1/events", json=event(2, score=1, comment="no"))
        server.should_exit = True
    assert (ok.status_code, ok.json()) == (202, {"accepted": [eid(1), eid(2)]})
    assert bad.status_code == 422 and [e["index"] for e in bad.json()["errors"]] == [1]
    assert resent.status_code == 202

    async with TestApp(build_app(settings)):
        await wait_for(lambda: _at_least(pool, "events", 2))
        negative = await consume_all(settings.kafka.bootstrap, topics.feedback_negative, 1)
    assert await count(pool, "events") == 2  # event 3 was in a rejected batch; 2 re-sent once
    assert await count(pool, "negative_cases") == 1
    assert {NegativeCase.model_validate_json(m.value).comment for m in negative} == {"no"}
    async with pool.acquire() as conn:
        received = await conn.fetchval("SELECT received_at FROM events WHERE event_id = $1",
                                       UUID(eid(2)))
    assert received is not None
