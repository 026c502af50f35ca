"""The Kafka adapter on a real broker: batches, commit-after-success, restart, order per key."""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.structs import TopicPartition
from faststream.kafka import KafkaBroker

from evalloop.adapters.bus import Record
from evalloop.adapters.kafka import (
    KafkaBus,
    build_broker,
    build_producer,
    ensure_topics,
    subscribe_batch,
)
from evalloop.errors import BusError
from evalloop.settings import KafkaSettings
from evalloop.topics import Topics

WAIT_S = 60.0  # upper bound for a delivery on a loaded 2-core machine (not a timing assertion)


@pytest.fixture(params=["faststream", "aiokafka"])
async def producer(kafka_bootstrap: str, request: pytest.FixtureRequest) -> AsyncIterator[KafkaBus]:
    """A connected KafkaBus for publishing test input: through FastStream's public publish,
    and through an aiokafka producer (record batches per partition: what services use)."""
    settings = KafkaSettings(bootstrap=kafka_bootstrap)
    if request.param == "aiokafka":
        raw = build_producer(settings)
        await raw.start()
        try:
            yield KafkaBus(producer=raw)
        finally:
            await raw.stop()
        return
    broker = build_broker(settings)
    await broker.connect()
    try:
        yield KafkaBus(broker)
    finally:
        await broker.stop()


async def _committed(bootstrap: str, group: str) -> dict[TopicPartition, int]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group)
    finally:
        await admin.close()
    return {tp: meta.offset for tp, meta in offsets.items() if meta.offset >= 0}


async def _consume_until(
    bootstrap: str, topic: str, group: str, handler: Callable[[list[Record]], Awaitable[None]],
    done: asyncio.Event, **kwargs: int,
) -> None:
    """Run a broker with one batch subscriber until ``done`` is set, then stop it."""
    broker: KafkaBroker = build_broker(KafkaSettings(bootstrap=bootstrap))
    subscribe_batch(broker, topic, group, handler, **kwargs)
    await broker.start()
    try:
        await asyncio.wait_for(done.wait(), WAIT_S)
    finally:
        await broker.stop()


async def test_handler_gets_a_batch_with_keys_headers_and_positions(
    kafka_bootstrap: str, topics: Topics, producer: KafkaBus
) -> None:
    topic = topics.feedback_events
    await producer.publish(topic, b'{"n":1}', key="agent-a", headers={"x-source": "test"})
    await producer.publish(topic, b'{"n":2}', key="agent-a")
    await producer.publish(topic, b'{"n":3}', key=None)
    got: list[Record] = []
    done = asyncio.Event()

    async def handler(records: list[Record]) -> None:
        assert isinstance(records, list)
        got.extend(records)
        if len(got) >= 3:
            done.set()

    await _consume_until(kafka_bootstrap, topic, f"g-{uuid.uuid4().hex}", handler, done)
    by_value = {r.value: r for r in got}
    assert sorted(by_value) == [b'{"n":1}', b'{"n":2}', b'{"n":3}']
    assert len(got) == 3
    first, second, third = (by_value[v] for v in sorted(by_value))
    assert (first.key, second.key, third.key) == ("agent-a", "agent-a", None)
    assert first.headers["x-source"] == b"test"
    assert {r.topic for r in got} == {topic}
    assert first.partition == second.partition  # one key, one partition
    assert second.offset == first.offset + 1
    assert all(r.timestamp_ms and r.timestamp_ms > 1_600_000_000_000 for r in got)


async def test_offsets_commit_only_after_success_and_survive_a_restart(
    kafka_bootstrap: str, topics: Topics, producer: KafkaBus
) -> None:
    topic = topics.feedback_events
    group = f"g-{uuid.uuid4().hex}"
    await producer.publish_batch(topic, [("agent-a", f"m{i}".encode()) for i in range(5)])
    deliveries: list[list[bytes]] = []
    handled: list[bytes] = []
    committed_during_failure: list[dict[TopicPartition, int]] = []
    done = asyncio.Event()

    async def flaky(records: list[Record]) -> None:
        deliveries.append([r.value for r in records])
        if len(deliveries) == 1:
            committed_during_failure.append(await _committed(kafka_bootstrap, group))
            raise RuntimeError("transient failure: the batch must come back")
        handled.extend(r.value for r in records)
        if len(handled) >= 5:
            done.set()

    await _consume_until(kafka_bootstrap, topic, group, flaky, done)
    assert committed_during_failure == [{}]
    first = deliveries[0]
    assert deliveries[1][: len(first)] == first  # the failed batch, re-delivered in order
    assert handled == [f"m{i}".encode() for i in range(5)]  # each handled once after success

    committed = await _committed(kafka_bootstrap, group)
    assert sum(committed.values()) == 5
    assert {tp.topic for tp in committed} == {topic}

    # A new consumer of the same group sees only what was published after the commit.
    await producer.publish(topic, b"after-restart", key="agent-a")
    after: list[bytes] = []
    done2 = asyncio.Event()

    async def collect(records: list[Record]) -> None:
        after.extend(r.value for r in records)
        if b"after-restart" in after:
            done2.set()

    await _consume_until(kafka_bootstrap, topic, group, collect, done2)
    assert after == [b"after-restart"]


async def test_publish_batch_keeps_order_per_key(
    kafka_bootstrap: str, topics: Topics, producer: KafkaBus
) -> None:
    topic = topics.feedback_negative
    keys = [f"agent-{k}" for k in range(5)]
    items = [(keys[i % 5], f"{keys[i % 5]}:{i // 5}".encode()) for i in range(500)]
    await producer.publish_batch(topic, items)
    await producer.publish_batch(topic, [])  # no-op
    got: list[Record] = []
    done = asyncio.Event()

    async def handler(records: list[Record]) -> None:
        got.extend(records)
        if len(got) >= 500:
            done.set()

    await _consume_until(
        kafka_bootstrap, topic, f"g-{uuid.uuid4().hex}", handler, done, max_records=64
    )
    assert len(got) == 500
    seqs: dict[str, list[int]] = defaultdict(list)
    partitions: dict[str, set[int]] = defaultdict(set)
    for r in got:
        assert r.key is not None
        key, seq = r.value.decode().rsplit(":", 1)
        assert key == r.key
        seqs[key].append(int(seq))
        partitions[key].add(r.partition)
    assert {k: v for k, v in seqs.items()} == {k: list(range(100)) for k in keys}
    assert all(len(p) == 1 for p in partitions.values())


async def test_ensure_topics_on_an_unreachable_cluster_raises_bus_error() -> None:
    with pytest.raises(BusError, match=r"cannot create topics on 127\.0\.0\.1:1"):
        await ensure_topics(KafkaSettings(bootstrap="127.0.0.1:1"), ("x",))


async def test_ensure_topics_reports_a_topic_the_broker_refuses(kafka_bootstrap: str) -> None:
    with pytest.raises(BusError, match=r"refused to create topics: bad name!: "):
        await ensure_topics(KafkaSettings(bootstrap=kafka_bootstrap), ("bad name!",))


async def test_ensure_topics_is_idempotent_and_uses_configured_partitions(
    kafka_bootstrap: str,
) -> None:
    settings = KafkaSettings(bootstrap=kafka_bootstrap, num_partitions=2)
    prefix = f"t{uuid.uuid4().hex[:8]}"
    names = (f"{prefix}.a", f"{prefix}.b")
    await ensure_topics(settings, names)
    await ensure_topics(settings, names)
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        # create_topics returns once the controller has the topics; the broker's metadata
        # cache may lag a moment behind, so poll (bounded) until both are visible.
        async with asyncio.timeout(WAIT_S):
            while True:
                described = await admin.describe_topics(list(names))
                if all(d["error_code"] == 0 and d["partitions"] for d in described):
                    break
                await asyncio.sleep(0.1)
        await admin.delete_topics(list(names))
    finally:
        await admin.close()
    assert sorted((d["topic"], len(d["partitions"])) for d in described) == [
        (names[0], 2), (names[1], 2)
    ]


async def test_records_from_raw_producers_reach_the_handler_as_they_are(
    kafka_bootstrap: str, topics: Topics
) -> None:
    """Producers may write to the topic directly: binary headers, null values, no key."""
    from aiokafka import AIOKafkaProducer

    topic = topics.feedback_events
    raw = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap)
    await raw.start()
    try:
        await raw.send_and_wait(topic, b"\xff\xfe not utf-8", key=b"k",
                                headers=[("bin", b"\xff\x00"), ("none", None)])
        await raw.send_and_wait(topic, None, key=b"k")
        await raw.send_and_wait(topic, b"{not json", key=None)
    finally:
        await raw.stop()
    got: list[Record] = []
    done = asyncio.Event()

    async def handler(records: list[Record]) -> None:
        got.extend(records)
        if len(got) >= 3:
            done.set()

    await _consume_until(kafka_bootstrap, topic, f"g-{uuid.uuid4().hex}", handler, done)
    by_value = {r.value: r for r in got}
    assert set(by_value) == {b"\xff\xfe not utf-8", b"", b"{not json"}
    assert dict(by_value[b"\xff\xfe not utf-8"].headers) == {"bin": b"\xff\x00", "none": b""}
    assert by_value[b"{not json"].key is None
