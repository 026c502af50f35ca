"""Kafka settings against a broker that requires SASL (PLAIN over SASL_PLAINTEXT).

This module starts its OWN broker (``local_kafka.start(..., sasl=True)``: a SASL_PLAINTEXT client
listener next to the PLAINTEXT one), never the shared test broker, and stops it at the end
(``docs/security.md#kafka``). Services connect with ``ensure_topics`` and ``build_broker``;
those are the paths tested here.
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import SecretStr

from evalloop.adapters import local_kafka
from evalloop.adapters.bus import Record
from evalloop.adapters.kafka import KafkaBus, build_broker, ensure_topics, subscribe_batch
from evalloop.errors import BusError
from evalloop.events import UserRating, dump_event, parse_event
from evalloop.settings import KafkaSettings
from evalloop.topics import Topics

pytestmark = pytest.mark.kafka

KAFKA_POM = Path(__file__).resolve().parents[2] / "deploy" / "kafka" / "pom.xml"
WAIT_S = 60.0  # upper bound for a delivery on a loaded 2-core machine (not a timing assertion)


@pytest.fixture(scope="module")
async def sasl_broker() -> AsyncIterator[local_kafka.LocalKafka]:
    """A broker of this module's own with a SASL_PLAINTEXT (PLAIN) listener; stopped after."""
    libs = local_kafka.fetch(KAFKA_POM)
    with tempfile.TemporaryDirectory(prefix="evalloop-kafka-sasl-", dir="/var/tmp") as home:
        server = await local_kafka.start(libs, Path(home) / "broker", sasl=True)
        try:
            yield server
        finally:
            local_kafka.stop(server.home, grace_s=10.0)
            assert not local_kafka.is_running(server.pid)


def _settings(server: local_kafka.LocalKafka, password: str) -> KafkaSettings:
    assert server.sasl_bootstrap is not None and server.sasl_user is not None
    return KafkaSettings(
        bootstrap=server.sasl_bootstrap, security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN", sasl_username=server.sasl_user[0],
        sasl_password=SecretStr(password), topic_prefix=f"sasl{uuid.uuid4().hex[:8]}.",
    )


def test_credentials_stay_out_of_the_state_file_and_repr(
    sasl_broker: local_kafka.LocalKafka,
) -> None:
    assert sasl_broker.sasl_user is not None
    password = sasl_broker.sasl_user[1]
    assert len(password) >= 32
    assert password not in (sasl_broker.home / "state.json").read_text()
    assert password not in repr(sasl_broker)
    assert password not in sasl_broker.log_path.read_text(errors="replace")
    assert (sasl_broker.home / "server.properties").stat().st_mode & 0o777 == 0o600
    state = local_kafka.read_state(sasl_broker.home)
    assert state is not None and state.sasl_bootstrap == sasl_broker.sasl_bootstrap


async def test_right_credentials_publish_and_consume_a_feedback_event(
    sasl_broker: local_kafka.LocalKafka,
) -> None:
    assert sasl_broker.sasl_user is not None
    settings = _settings(sasl_broker, sasl_broker.sasl_user[1])
    topics = Topics.with_prefix(settings.topic_prefix)
    await ensure_topics(settings, topics)
    event = UserRating(
        event_id=uuid.UUID("0b5e6c9e-3f1d-4c39-9d7e-1f3a2b4c5d6e"), agent_id="support-bot",
        conversation_id="c-1", turn_id="t-1",
        occurred_at=datetime(2026, 11, 30, 12, 0, tzinfo=UTC), thumbs="down",
        comment="wrong refund amount",
    )
    publisher = build_broker(settings)
    await publisher.connect()
    try:
        await KafkaBus(publisher).publish(topics.feedback_events, dump_event(event),
                                          key=event.agent_id)
    finally:
        await publisher.stop()

    got: list[Record] = []
    done = asyncio.Event()

    async def handler(records: list[Record]) -> None:
        got.extend(records)
        done.set()

    consumer = build_broker(settings)
    subscribe_batch(consumer, topics.feedback_events, f"g-{uuid.uuid4().hex}", handler)
    await consumer.start()
    try:
        await asyncio.wait_for(done.wait(), WAIT_S)
    finally:
        await consumer.stop()
    assert len(got) == 1
    assert got[0].key == "support-bot"
    assert got[0].value == dump_event(event)
    assert parse_event(got[0].value) == event


async def test_a_wrong_password_is_a_clear_sasl_error_without_the_password(
    sasl_broker: local_kafka.LocalKafka,
) -> None:
    wrong = "not-the-password-" + uuid.uuid4().hex
    settings = _settings(sasl_broker, wrong)
    with pytest.raises(BusError) as caught:
        await ensure_topics(settings, Topics.with_prefix(settings.topic_prefix))
    message = str(caught.value)
    assert message.startswith(f"SASL authentication failed on {sasl_broker.sasl_bootstrap} as user "
                              f"'{settings.sasl_username}' (mechanism PLAIN): ")
    assert message.endswith("check kafka.sasl_username and EVALLOOP_KAFKA__SASL_PASSWORD")
    assert wrong not in message
    assert sasl_broker.sasl_user is not None and sasl_broker.sasl_user[1] not in message
