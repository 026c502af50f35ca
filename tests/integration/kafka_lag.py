"""Waiting on consumer lag instead of sleeping: a test knows a Kafka consumer is done when its
group has committed every record of its topic (and none arrives in a fixed pause)."""

from __future__ import annotations

import asyncio
import time

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient


async def lag(bootstrap: str, topic: str, groups: list[str]) -> int:
    """Records of ``topic`` not yet committed by each of ``groups``, summed."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await consumer.start()
    await admin.start()
    try:
        (described,) = await admin.describe_topics([topic])
        parts = [TopicPartition(topic, p["partition"]) for p in described["partitions"]]
        assert parts, f"topic {topic} has no partitions in the broker's metadata"
        ends = await consumer.end_offsets(parts)
        total = 0
        for g in groups:
            committed = await admin.list_consumer_group_offsets(g, partitions=parts)
            for tp in parts:
                meta = committed.get(tp)
                total += ends[tp] - (meta.offset if meta is not None and meta.offset >= 0 else 0)
        return total
    finally:
        await admin.close()
        await consumer.stop()


async def wait_caught_up(
    bootstrap: str, subscriptions: list[tuple[str, list[str]]], timeout_s: float
) -> None:
    """Wait until every ``(topic, groups)`` has lag 0 (checked in the order given, so a
    downstream topic is measured after its producer caught up), at most ``timeout_s``.

    Raises:
        AssertionError: still behind after ``timeout_s`` seconds.
    """
    deadline = time.monotonic() + timeout_s
    behind = -1
    while time.monotonic() < deadline:
        behind = 0
        for topic, groups in subscriptions:
            behind += await lag(bootstrap, topic, groups)
        if behind == 0:
            return
        await asyncio.sleep(0.5)
    raise AssertionError(f"Kafka consumers still {behind} records behind after {timeout_s} s")
