"""The monitor app through real Kafka and PostgreSQL: events in until the crossing,
``reeval.requested.v1`` out (once), the job recorded and marked published."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
from faststream import TestApp
from kafka_lag import wait_caught_up

from evalloop.adapters.bus import Record
from evalloop.adapters.kafka import KafkaBus, build_broker, subscribe_batch
from evalloop.events import AgentResponse, ReevalRequested, UserRating, dump_event
from evalloop.settings import MonitorSettings, Settings
from evalloop.topics import GROUP_MONITOR, Topics
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
    group = f"g-{uuid.uuid4().hex}"
    subscribe_batch(listener, topics.reeval_requested, group, collect)
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
            # no second (wrong) request: the monitor handled every event, and the listener
            # consumed every request it published
            await wait_caught_up(cfg.kafka.bootstrap, [
                (topics.feedback_recorded, [GROUP_MONITOR]),
                (topics.reeval_requested, [group]),
            ], WAIT_S)
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


async def test_a_flood_of_agent_changes_over_kafka_is_one_job_per_version_and_cooldown(
    settings: Settings, topics: Topics, db_dsn: str
) -> None:
    """200 agent_changed events announcing one version, then 100 each naming a new version,
    through real Kafka: one job for the first version, none for the rest (cooldown), one for
    another agent. Waits on the monitor group's consumer lag, not on a sleep."""
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient

    from evalloop.events import AgentChanged
    from evalloop.topics import GROUP_MONITOR

    def change(agent: str, version: str) -> tuple[str, bytes]:
        return agent, dump_event(AgentChanged(
            event_id=uuid.uuid4(), agent_id=agent, conversation_id="-", turn_id="-",
            occurred_at=T0, change_kind="system_prompt", new_version=version))

    async def ends(consumer: AIOKafkaConsumer, topic: str) -> dict[TopicPartition, int]:
        parts = [TopicPartition(topic, p) for p in range(settings.kafka.num_partitions)]
        return await consumer.end_offsets(parts)

    flood = [change("hr", "p-1") for _ in range(200)]
    flood += [change("hr", f"p-{n}") for n in range(2, 102)] + [change("cdc", "c-1")]
    producer = build_broker(settings.kafka)
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.kafka.bootstrap)
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka.bootstrap)
    async with TestApp(build_app(settings)):
        await producer.connect()
        await consumer.start()
        await admin.start()
        try:
            # the monitor reads what the recorder accepted (docs/operations.md)
            await KafkaBus(producer).publish_batch(topics.feedback_recorded, flood)
            end = await ends(consumer, topics.feedback_recorded)
            assert sum(end.values()) == 301
            async with asyncio.timeout(WAIT_S):
                while True:
                    done = await admin.list_consumer_group_offsets(GROUP_MONITOR,
                                                                    partitions=list(end))
                    if all(done.get(tp) and done[tp].offset == end[tp] for tp in end):
                        break
                    await asyncio.sleep(0.2)
            published = sum((await ends(consumer, topics.reeval_requested)).values())
        finally:
            await admin.close()
            await consumer.stop()
            await producer.stop()
    assert published == 2
    conn = await asyncpg.connect(db_dsn)
    try:
        rows = await conn.fetch("SELECT agent_id, reason, published_at FROM reeval_jobs"
                                " ORDER BY agent_id")
    finally:
        await conn.close()
    assert [(r["agent_id"], r["reason"].split(" at ")[0]) for r in rows] == [
        ("cdc", "system prompt changed to c-1"), ("hr", "system prompt changed to p-1")]
    assert all(r["published_at"] is not None for r in rows)
