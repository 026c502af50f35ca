"""``build_faststream_app`` on real Kafka and PostgreSQL: lifespan, injection, handlers, publish."""

from __future__ import annotations

import asyncio
import uuid
from typing import ClassVar

import asyncpg
from aiokafka.admin import AIOKafkaAdminClient
from faststream import TestApp

from evalloop.adapters.bus import Record
from evalloop.adapters.kafka import KafkaBus, build_broker, subscribe_batch
from evalloop.adapters.postgres import create_database
from evalloop.events import NegativeCase
from evalloop.runtime import Consumes, Publishes, Service, build_faststream_app
from evalloop.settings import KafkaSettings, PostgresSettings, Settings
from evalloop.topics import Topics

WAIT_S = 60.0  # bound on a delivery (not a timing assertion)


def _echo_service(
    received: list[Record], counts: list[int], started: list[str],
    got_three: asyncio.Event | None = None,
) -> type[Service]:
    class Echo(Service):
        """Test service: re-publishes each feedback event to the negative topic."""

        name: ClassVar[str] = "echo"
        consumes: ClassVar[tuple[Consumes, ...]] = (
            Consumes("feedback_events", "evalloop-test-echo", "on_events", NegativeCase),
        )
        publishes: ClassVar[tuple[Publishes, ...]] = (
            Publishes("feedback_negative", NegativeCase, "echoed"),
        )

        async def start(self) -> None:
            started.append("started")
            # A service may publish as soon as it starts (e.g. a schedule's first tick).
            await self.deps.bus.publish(self.deps.topics.feedback_negative, b"hello", key="boot")

        async def stop(self) -> None:
            started.append("stopped")

        async def on_events(self, records: list[Record]) -> None:
            counts.append(await self.deps.pool.fetchval("SELECT count(*) FROM events"))
            await self.deps.bus.publish_batch(
                self.deps.topics.feedback_negative, [(r.key, r.value.upper()) for r in records]
            )
            received.extend(records)
            if got_three is not None and len(received) >= 3:
                got_three.set()

    return Echo


async def test_app_lifespan_migrates_creates_topics_injects_and_handles(
    pg_dsn: str, kafka_bootstrap: str
) -> None:
    # An empty database and topics that do not exist yet: the lifespan must create both.
    db_name = f"evalloop_rt_{uuid.uuid4().hex[:10]}"
    dsn = await create_database(pg_dsn, db_name)
    try:
        await _run_echo_app(dsn, kafka_bootstrap)
    finally:
        admin_conn = await asyncpg.connect(pg_dsn)
        try:
            await admin_conn.execute(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
        finally:
            await admin_conn.close()


async def _run_echo_app(dsn: str, kafka_bootstrap: str) -> None:
    prefix = f"rt{uuid.uuid4().hex[:8]}."
    settings = Settings(
        postgres=PostgresSettings(dsn=dsn),
        kafka=KafkaSettings(bootstrap=kafka_bootstrap, topic_prefix=prefix),
    )
    topics = Topics.with_prefix(prefix)
    received: list[Record] = []
    counts: list[int] = []
    lifecycle: list[str] = []
    got_three = asyncio.Event()
    app = build_faststream_app(_echo_service(received, counts, lifecycle, got_three), settings)

    async with TestApp(app):
        assert lifecycle == ["started"]
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
        await admin.start()
        try:
            assert set(topics.all()) <= set(await admin.list_topics())
        finally:
            await admin.close()
        conn = await asyncpg.connect(dsn)
        try:
            assert await conn.fetchval("SELECT version_num FROM alembic_version") is not None
        finally:
            await conn.close()

        producer = build_broker(settings.kafka)
        await producer.connect()
        try:
            await KafkaBus(producer).publish_batch(
                topics.feedback_events, [("a1", b"x"), ("a1", b"y"), ("a2", b"z")]
            )
        finally:
            await producer.stop()
        await asyncio.wait_for(got_three.wait(), WAIT_S)
    assert lifecycle == ["started", "stopped"]
    assert sorted((r.key, r.value) for r in received) == [("a1", b"x"), ("a1", b"y"), ("a2", b"z")]
    assert set(counts) == {0}  # the injected pool reached the migrated database

    echoed: list[Record] = []
    done = asyncio.Event()

    async def collect(records: list[Record]) -> None:
        echoed.extend(records)
        if len(echoed) >= 4:
            done.set()

    reader = build_broker(settings.kafka)
    subscribe_batch(reader, topics.feedback_negative, f"g-{uuid.uuid4().hex}", collect)
    await reader.start()
    try:
        await asyncio.wait_for(done.wait(), WAIT_S)
    finally:
        await reader.stop()
    assert sorted((r.key, r.value) for r in echoed) == [
        ("a1", b"X"), ("a1", b"Y"), ("a2", b"Z"), ("boot", b"hello")
    ]


def test_app_declares_its_channels_for_asyncapi() -> None:
    # Building the app and its document touches no server.
    settings = Settings(kafka=KafkaSettings(bootstrap="127.0.0.1:1", topic_prefix="p."))
    app = build_faststream_app(_echo_service([], [], []), settings)
    doc = app.schema.to_specification().to_jsonable()
    channels = doc["channels"]
    assert {c["address"] for c in channels.values()} == {
        "p.feedback.events.v1", "p.feedback.negative.v1"
    }
    assert doc["info"]["title"] == "evalloop echo"
