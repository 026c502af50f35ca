"""Every consumer agrees with the recorder (docs/operations.md#the-recorded-stream): events the
recorder rejects are counted by no one, on the in-process bus and on real Kafka alike.

The observed case: 240 turns served, 200 of them rated thumbs-up; then 6 of the same rating
``event_id``s re-sent as thumbs-down. The recorder keeps the first copies and dead-letters the
6 as conflicting duplicates; the monitor, which used to read the raw stream, counted them
(6/240 = 2.5% > 2%) and requested a re-evaluation."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
from faststream import TestApp
from kafka_lag import wait_caught_up

from evalloop.adapters.kafka import KafkaBus, build_broker
from evalloop.adapters.postgres import connect_pool
from evalloop.events import AgentResponse, UserRating, dump_event
from evalloop.replay.loop import in_process_loop
from evalloop.settings import MonitorSettings, Settings
from evalloop.topics import GROUP_MONITOR, GROUP_RECORDER, Topics
from services.monitor.app import build_app as monitor_app
from services.monitor.service import MonitorService
from services.recorder.app import build_app as recorder_app
from services.recorder.service import RecorderService

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
AGENT = "hr-bot"
WAIT_S = 120.0  # bound on delivery on a loaded 2-core machine (not a timing assertion)
MONITOR = MonitorSettings(min_turns=100, min_negatives=5, threshold=0.02)


def _batches() -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes]]]:
    """(first sending: 240 responses + 200 thumbs-up, re-sent: 6 ratings turned down)."""
    first: list[Any] = [
        AgentResponse(event_id=uuid.UUID(int=i + 1), agent_id=AGENT, conversation_id=f"c{i}",
                      turn_id="1", occurred_at=T0 + timedelta(minutes=i), question="q?",
                      answer="a.")
        for i in range(240)
    ]
    ratings = [
        UserRating(event_id=uuid.UUID(int=10_000 + i), agent_id=AGENT, conversation_id=f"c{i}",
                   turn_id="1", occurred_at=T0 + timedelta(minutes=i, seconds=30), thumbs="up")
        for i in range(200)
    ]
    resent = [r.model_copy(update={"thumbs": "down"}) for r in ratings[:6]]
    return ([(AGENT, dump_event(e)) for e in first + ratings],
            [(AGENT, dump_event(e)) for e in resent])


async def _counts(dsn: str) -> dict[str, Any]:
    conn = await asyncpg.connect(dsn)
    try:
        row = await conn.fetchrow(
            "SELECT coalesce(sum(served), 0) AS served, coalesce(sum(negatives), 0) AS neg,"
            " coalesce(sum(signalled), 0) AS sig, coalesce(sum(turns), 0) AS turns"
            " FROM monitor_buckets WHERE agent_id = $1", AGENT)
        assert row is not None
        return {
            "events": await conn.fetchval("SELECT count(*) FROM events"),
            "down_stored": await conn.fetchval(
                "SELECT count(*) FROM events WHERE payload->>'thumbs' = 'down'"),
            "letters": await conn.fetch(
                "SELECT reason, count(*) AS n FROM dead_letters GROUP BY reason"),
            "monitor": dict(row),
            "negative_turns": await conn.fetchval(
                "SELECT count(*) FROM monitor_turns WHERE negative"),
            "jobs": await conn.fetchval("SELECT count(*) FROM reeval_jobs"),
            "state": await conn.fetchval(
                "SELECT last_negatives || '/' || last_turns FROM monitor_state"
                " WHERE agent_id = $1", AGENT),
        }
    finally:
        await conn.close()


EXPECTED = {
    "events": 440, "down_stored": 0,
    "monitor": {"served": 240, "neg": 0, "sig": 200, "turns": 240},
    "negative_turns": 0, "jobs": 0, "state": "0/240",
}


def _check(counts: dict[str, Any]) -> None:
    letters = {r["reason"]: r["n"] for r in counts.pop("letters")}
    assert letters == {"conflicting_duplicate": 6}
    assert counts == EXPECTED


async def test_in_process_rejected_duplicates_are_counted_by_no_one(
    settings: Settings, db_dsn: str
) -> None:
    cfg = settings.model_copy(update={"monitor": MONITOR})
    first, resent = _batches()
    pool = await connect_pool(db_dsn, min_size=1, max_size=4)
    try:
        async with in_process_loop(cfg, pool, [RecorderService, MonitorService]) as loop:
            topics = loop.deps.topics
            await loop.bus.publish_batch(topics.feedback_events, first)
            await loop.drain(timeout_s=WAIT_S)
            await loop.bus.publish_batch(topics.feedback_events, resent)
            await loop.drain(timeout_s=WAIT_S)
            assert loop.bus.topic_size(topics.feedback_recorded) == 440
            assert loop.bus.topic_size(topics.feedback_dlq) == 6
            assert loop.bus.topic_size(topics.reeval_requested) == 0
    finally:
        await pool.close()
    _check(await _counts(db_dsn))


async def test_kafka_rejected_duplicates_are_counted_by_no_one(
    settings: Settings, topics: Topics, db_dsn: str
) -> None:
    cfg = settings.model_copy(update={"monitor": MONITOR})
    first, resent = _batches()
    producer = build_broker(cfg.kafka)
    async with TestApp(recorder_app(cfg)), TestApp(monitor_app(cfg)):
        await producer.connect()
        try:
            bus = KafkaBus(producer)
            subscriptions = [(topics.feedback_events, [GROUP_RECORDER]),
                             (topics.feedback_recorded, [GROUP_MONITOR])]
            await bus.publish_batch(topics.feedback_events, first)
            await wait_caught_up(cfg.kafka.bootstrap, subscriptions, WAIT_S)
            await bus.publish_batch(topics.feedback_events, resent)
            await wait_caught_up(cfg.kafka.bootstrap, subscriptions, WAIT_S)
        finally:
            await producer.stop()
    _check(await _counts(db_dsn))
