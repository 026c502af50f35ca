"""A handler that keeps failing on one batch never stalls its consumer
(docs/operations.md#a-handler-that-keeps-failing): after ``max_handler_failures`` deliveries
in a row the batch's records are dead-lettered once (reason ``handler_failed``), later batches
are processed, lag reaches 0, and ``/readyz`` names the failing service, topic and error
meanwhile. The same on the in-process bus and on real Kafka with PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar

import asyncpg
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from faststream import TestApp
from kafka_lag import wait_caught_up

from evalloop.adapters.bus import InProcessBus, Record
from evalloop.adapters.dead_letter_store import count_letters
from evalloop.errors import StorageError
from evalloop.runtime import (
    Consumes,
    Deps,
    Service,
    build_faststream_app,
    handler_letter_id,
    health_answer,
    mount_in_process,
)
from evalloop.settings import ConsumerSettings, Settings
from evalloop.topics import Topics

GROUP = "evalloop-test-guard"
ERROR = "RuntimeError: clustering failed on this batch"
WAIT_S = 120.0  # bound on delivery on a loaded 2-core machine (not a timing assertion)


class Clustering(Service):
    """A consumer whose handler raises on the record ``b"poison"``: always, or only on its
    first ``FAIL_TIMES`` deliveries. Class attributes, so a test sees what the instance
    built inside a FastStream app did."""

    name = "clustering"
    consumes = (Consumes("feedback_events", GROUP, "on_events", bytes, max_records=1),)
    FAIL_TIMES: ClassVar[int] = 10**9
    ERROR: ClassVar[type[Exception]] = RuntimeError
    processed: ClassVar[list[bytes]] = []
    poison_calls: ClassVar[int] = 0
    readyz: ClassVar[list[tuple[int, dict[str, Any]]]] = []

    @classmethod
    def reset(cls, fail_times: int, error: type[Exception] = RuntimeError) -> None:
        cls.FAIL_TIMES, cls.processed, cls.poison_calls, cls.readyz = fail_times, [], 0, []
        cls.ERROR = error

    async def on_events(self, records: list[Record]) -> None:
        for r in records:
            if r.value == b"poison":
                type(self).poison_calls += 1
                type(self).readyz.append(health_answer(True, [self.health()], readiness=True))
                if type(self).poison_calls <= self.FAIL_TIMES:
                    raise self.ERROR("clustering failed on this batch")
            type(self).processed.append(r.value)


VALUES = [b"ok1", b"poison", b"ok2", b"ok3"]


def _guarded(settings: Settings) -> Settings:
    return settings.model_copy(update={"consumer": ConsumerSettings(
        max_handler_failures=3, handler_retry_backoff_s=0.0)})


def _failing(topic: str, failures: int) -> tuple[int, dict[str, Any]]:
    """The ``/readyz`` answer while the handler has failed ``failures`` times in a row."""
    return 503, {"status": "degraded", "ready": False, "services": [{
        "service": "clustering", "status": "degraded", "ready": False, "loops": [],
        "consumers": [{"topic": topic, "group": GROUP, "state": "failing",
                       "failures": failures, "last_error": ERROR,
                       "batches_dead_lettered": 0}]}]}


def _assert_letter(headers: dict[str, bytes], topic: str, partition: int, offset: int) -> None:
    assert headers["x-dlq-reason"] == b"handler_failed"
    assert json.loads(headers["x-dlq-detail"]) == {
        "reason": "handler_failed", "service": "clustering", "group": GROUP,
        "error_type": "RuntimeError", "error": "clustering failed on this batch",
        "attempts": 3}
    assert headers["x-dlq-source-topic"] == topic.encode()
    assert headers["x-dlq-source-partition"] == str(partition).encode()
    assert headers["x-dlq-source-offset"] == str(offset).encode()
    assert headers["x-dlq-id"] == str(handler_letter_id(
        GROUP, Record(topic, "a", b"poison", partition=partition, offset=offset))).encode()


async def _run_in_process(
    settings: Settings, pool: asyncpg.Pool, max_attempts: int = 5
) -> tuple[InProcessBus, Clustering]:
    bus = InProcessBus(retry_delay_s=0.0, max_attempts=max_attempts)
    service = Clustering(Deps(_guarded(settings), pool, bus, Topics()))
    mount_in_process(bus, service)
    for v in VALUES:
        await bus.publish(Topics().feedback_events, v, key="a")
    runner = asyncio.create_task(bus.run())
    try:
        await bus.drain(WAIT_S)
    finally:
        bus.stop()
        await runner
    return bus, service


async def test_in_process_a_batch_failing_every_time_is_dead_lettered_once(
    pg_settings: Settings, pool: asyncpg.Pool
) -> None:
    Clustering.reset(fail_times=10**9)
    bus, service = await _run_in_process(pg_settings, pool)
    topic = Topics().feedback_events
    assert Clustering.poison_calls == 3
    assert Clustering.processed == [b"ok1", b"ok2", b"ok3"]
    assert bus.lag() == 0
    assert Clustering.readyz == [(200, {"status": "ok", "ready": True, "services": [{
        "service": "clustering", "status": "ok", "ready": True, "loops": [],
        "consumers": [{"topic": topic, "group": GROUP, "state": "ok", "failures": 0,
                       "last_error": None, "batches_dead_lettered": 0}]}]}),
        _failing(topic, 1), _failing(topic, 2)]
    assert service.health()["ready"] is True
    assert service.health()["consumers"][0]["batches_dead_lettered"] == 1
    assert await count_letters(pool) == (1, 0)
    letters = bus.messages(Topics().feedback_dlq)
    assert [m.value for m in letters] == [b"poison"]
    _assert_letter(dict(letters[0].headers), topic, 0, 1)

    # The same batch delivered again (a consumer killed before its commit): no second letter.
    guarded = service.guarded_handler(service.consumes[0])
    batch = [bus.messages(topic)[1]]
    for _ in range(3):
        try:
            await guarded(batch)
        except RuntimeError:
            pass
    assert Clustering.poison_calls == 6
    assert await count_letters(pool) == (1, 0)
    assert len(bus.messages(Topics().feedback_dlq)) == 1


async def test_in_process_a_batch_failing_once_is_not_dead_lettered(
    pg_settings: Settings, pool: asyncpg.Pool
) -> None:
    Clustering.reset(fail_times=1)
    bus, service = await _run_in_process(pg_settings, pool)
    assert Clustering.poison_calls == 2
    assert Clustering.processed == [b"ok1", b"poison", b"ok2", b"ok3"]
    assert bus.lag() == 0
    assert Clustering.readyz[1] == _failing(Topics().feedback_events, 1)
    assert service.health()["ready"] is True
    assert service.health()["consumers"][0]["batches_dead_lettered"] == 0
    assert await count_letters(pool) == (0, 0)
    assert bus.messages(Topics().feedback_dlq) == []


async def test_in_process_infrastructure_failures_never_dead_letter(
    pg_settings: Settings, pool: asyncpg.Pool
) -> None:
    """PostgreSQL or the broker being away says nothing about the batch: 5 failures in a row
    (more than ``max_handler_failures``), then success, and nothing is dead-lettered."""
    Clustering.reset(fail_times=5, error=StorageError)
    bus, service = await _run_in_process(pg_settings, pool, max_attempts=10)
    assert Clustering.poison_calls == 6
    assert Clustering.processed == [b"ok1", b"poison", b"ok2", b"ok3"]
    assert bus.lag() == 0
    assert [body["services"][0]["consumers"][0]["failures"]
            for _, body in Clustering.readyz] == [0, 1, 2, 3, 4, 5]
    assert Clustering.readyz[5][1]["services"][0]["consumers"][0]["last_error"] == \
        "StorageError: clustering failed on this batch"
    assert service.health()["consumers"][0]["batches_dead_lettered"] == 0
    assert await count_letters(pool) == (0, 0)
    assert bus.messages(Topics().feedback_dlq) == []


async def _run_on_kafka(settings: Settings, topics: Topics) -> int:
    """Produce :data:`VALUES` with one key (one partition, offsets 0..3), run the consumer
    until its lag is 0; returns the partition."""
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka.bootstrap)
    await producer.start()
    try:
        sent = [await producer.send_and_wait(topics.feedback_events, v, key=b"a")
                for v in VALUES]
    finally:
        await producer.stop()
    assert [m.offset for m in sent] == [0, 1, 2, 3]
    async with TestApp(build_faststream_app(Clustering, _guarded(settings))):
        await wait_caught_up(settings.kafka.bootstrap, [(topics.feedback_events, [GROUP])],
                             WAIT_S)
    return sent[1].partition


async def _dlq(settings: Settings, topics: Topics, expect: int) -> list[Any]:
    consumer = AIOKafkaConsumer(topics.feedback_dlq, bootstrap_servers=settings.kafka.bootstrap,
                                auto_offset_reset="earliest")
    await consumer.start()
    try:
        got = await consumer.getmany(timeout_ms=5_000 if expect else 2_000)
        return [m for msgs in got.values() for m in msgs]
    finally:
        await consumer.stop()


async def test_kafka_a_batch_failing_every_time_is_dead_lettered_once(
    settings: Settings, topics: Topics, pool: asyncpg.Pool
) -> None:
    Clustering.reset(fail_times=10**9)
    partition = await _run_on_kafka(settings, topics)
    assert Clustering.poison_calls == 3
    assert Clustering.processed == [b"ok1", b"ok2", b"ok3"]
    assert [code for code, _ in Clustering.readyz] == [200, 503, 503]
    assert Clustering.readyz[1:] == [_failing(topics.feedback_events, 1),
                                     _failing(topics.feedback_events, 2)]
    assert await count_letters(pool) == (1, 0)
    letters = await _dlq(settings, topics, 1)
    assert [m.value for m in letters] == [b"poison"]
    _assert_letter(dict(letters[0].headers), topics.feedback_events, partition, 1)


async def test_kafka_a_batch_failing_once_is_not_dead_lettered(
    settings: Settings, topics: Topics, pool: asyncpg.Pool
) -> None:
    Clustering.reset(fail_times=1)
    await _run_on_kafka(settings, topics)
    assert Clustering.poison_calls == 2
    assert Clustering.processed == [b"ok1", b"poison", b"ok2", b"ok3"]
    assert Clustering.readyz[1] == _failing(topics.feedback_events, 1)
    assert await count_letters(pool) == (0, 0)
    assert await _dlq(settings, topics, 0) == []
