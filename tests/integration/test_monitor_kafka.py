"""The monitor app through real Kafka and PostgreSQL: events in until the crossing,
``reeval.requested.v1`` out (once), the job recorded and marked published."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
from faststream import TestApp

from evalloop.adapters.bus import Record
from evalloop.adapters.kafka import KafkaBus, build_broker, subscribe_batch
from evalloop.events import AgentResponse, ReevalRequested, UserRating, dump_event
from evalloop.settings import MonitorSettings, Settings
from evalloop.topics import Topics
from services.monitor.app import build_app

WAIT_S = 90.0  # bound on delivery on a loaded 2-core machine (not a timing assertion)
T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


async def test_crossing_over_kafka_publishes_one_request(
    settings: Settings, topics: Topics, db_dsn: str
) -> None:
    cfg = settings.model_copy(
        update={"monitor": MonitorSettings(min_turns=100, min_negatives=5)}
    )
    got: list[ReevalRequested] = []
    arrived = asyncio.Event()

    async def collect(records: list[Record]) -> None:
        got.extend(ReevalRequested.model_validate_json(r.value) for r in records)
        arrived.set()

    listener = build_broker(cfg.kafka)
    subscribe_batch(listener, topics.reeval_requested, f"g-{uuid.uuid4().hex}", collect)
    producer = build_broker(cfg.kafka)
    async with TestApp(build_app(cfg)):
        await listener.start()
        await producer.connect()
        try:
            bus = KafkaBus(producer)
            served = [
                (f"agent-{k}", dump_event(AgentResponse(
                    event_id=uuid.uuid4(), agent_id=f"agent-{k}", conversation_id=f"c{i}",
                    turn_id="1", occurred_at=T0 + timedelta(minutes=i))))
                for k in ("bad", "good") for i in range(150)
            ]
            await bus.publish_batch(topics.feedback_recorded, served)
            # 4 negatives each: 2.7% but under min_negatives; then agent-bad's 5th crosses
            for i in range(5):
                for k in ("bad", "good")[: 2 if i < 4 else 1]:
                    rating = UserRating(
                        event_id=uuid.uuid4(), agent_id=f"agent-{k}", conversation_id=f"c{i}",
                        turn_id="1", occurred_at=T0 + timedelta(minutes=i, seconds=30),
                        thumbs="down",
                    )
                    # every rating twice: a re-sent event is the same event
                    await bus.publish_batch(
                        topics.feedback_recorded, [(f"agent-{k}", dump_event(rating))] * 2
                    )
            await asyncio.wait_for(arrived.wait(), WAIT_S)
            await asyncio.sleep(2.0)  # a second (wrong) request would arrive meanwhile
        finally:
            await producer.stop()
            await listener.stop()

    assert len(got) == 1
    r = got[0]
    assert (r.agent_id, r.trigger, r.negatives, r.turns, r.denominator) == (
        "agent-bad", "negative_rate", 5, 150, "agent_response"
    )
    assert r.reason.endswith("5/150 turns served > 2%")
    conn = await asyncpg.connect(db_dsn)
    try:
        rows = await conn.fetch("SELECT job_id, published_at FROM reeval_jobs")
        sums = await conn.fetch(
            "SELECT agent_id, sum(negatives) n, sum(turns) t FROM monitor_buckets"
            " GROUP BY agent_id ORDER BY agent_id"
        )
    finally:
        await conn.close()
    assert [(row["job_id"], row["published_at"] is not None) for row in rows] == [
        (r.job_id, True)
    ]
    assert [(s["agent_id"], s["n"], s["t"]) for s in sums] == [
        ("agent-bad", 5, 150), ("agent-good", 4, 150)
    ]
