"""Poison input never stalls anything (docs/operations.md#poison-records and #dead-letters):
a record no decoder can read is dead-lettered and its batch goes on, on the in-process bus and
on real Kafka; a redelivered batch adds no second letter."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import asyncpg
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from faststream import TestApp
from kafka_lag import wait_caught_up

from evalloop.adapters.bus import InProcessBus, Record
from evalloop.adapters.dead_letter_store import count_letters
from evalloop.events import AgentResponse, UserRating, dump_event
from evalloop.runtime import Deps
from evalloop.settings import Settings
from evalloop.topics import GROUP_MONITOR, GROUP_RECORDER, Topics
from services.monitor.app import build_app as monitor_app
from services.recorder.app import build_app as recorder_app
from services.recorder.service import RecorderService

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
DEEP_ARRAY = b"[" * 100_000 + b"]" * 100_000
DEEP_FIELD = (b'{"event_type": "user_rating", "event_id": "00000000-0000-0000-0000-000000000009",'
              b' "comment": ' + b'{"a": ' * 5000 + b"1" + b"}" * 5000 + b"}")
WAIT_S = 120.0  # bound on delivery on a loaded 2-core machine (not a timing assertion)


def _good(n: int) -> list[Any]:
    return [
        *(AgentResponse(event_id=uuid.UUID(int=i + 1), agent_id="a", conversation_id=f"c{i}",
                        turn_id="1", occurred_at=T0) for i in range(n)),
        UserRating(event_id=uuid.UUID(int=1000), agent_id="a", conversation_id="c0",
                   turn_id="1", occurred_at=T0, thumbs="down"),
    ]


async def test_redelivered_rejects_make_one_letter_each(
    pg_settings: Settings, pool: asyncpg.Pool
) -> None:
    bus = InProcessBus()
    recorder = RecorderService(Deps(pg_settings, pool, bus, Topics()))
    stored = _good(1)[0]
    conflicting = stored.model_copy(update={"question": "changed"})
    values = [dump_event(stored), b"{not json", DEEP_ARRAY, DEEP_FIELD,
              json.dumps({"event_type": "user_mood"}).encode(), dump_event(conflicting)]
    batch = [Record(Topics().feedback_events, "a", v, offset=i) for i, v in enumerate(values)]
    for _ in range(3):  # the first delivery, then two redeliveries (a recorder killed twice)
        await recorder.on_feedback_events(batch)
    assert await count_letters(pool) == (5, 0)
    letters = bus.messages(Topics().feedback_dlq)
    assert [m.value for m in letters] == values[1:]
    assert [m.headers["x-dlq-reason"] for m in letters] == [
        b"malformed_json", b"malformed_json", b"malformed_json", b"unknown_event_type",
        b"conflicting_duplicate"]
    assert len({m.headers["x-dlq-id"] for m in letters}) == 5
    assert await pool.fetchval("SELECT count(*) FROM events") == 1


async def test_poison_written_straight_to_kafka_does_not_stall_the_consumers(
    settings: Settings, topics: Topics, pool: asyncpg.Pool
) -> None:
    good = _good(20)
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka.bootstrap)
    await producer.start()
    try:
        for value in [DEEP_ARRAY, *(dump_event(e) for e in good[:10]), DEEP_FIELD,
                      *(dump_event(e) for e in good[10:])]:
            await producer.send_and_wait(topics.feedback_events, value, key=b"a")
    finally:
        await producer.stop()
    async with TestApp(recorder_app(settings)), TestApp(monitor_app(settings)):
        await wait_caught_up(settings.kafka.bootstrap, [
            (topics.feedback_events, [GROUP_RECORDER]),
            (topics.feedback_recorded, [GROUP_MONITOR]),
        ], WAIT_S)
    assert await pool.fetchval("SELECT count(*) FROM events") == 21
    assert await pool.fetchval("SELECT sum(turns) FROM monitor_buckets") == 20
    assert await pool.fetchval("SELECT sum(negatives) FROM monitor_buckets") == 1
    assert await count_letters(pool) == (2, 0)
    consumer = AIOKafkaConsumer(topics.feedback_dlq, bootstrap_servers=settings.kafka.bootstrap,
                                auto_offset_reset="earliest")
    await consumer.start()
    try:
        got = await consumer.getmany(timeout_ms=10_000)
        values = sorted(m.value for msgs in got.values() for m in msgs)
    finally:
        await consumer.stop()
    assert values == sorted([DEEP_ARRAY, DEEP_FIELD])
