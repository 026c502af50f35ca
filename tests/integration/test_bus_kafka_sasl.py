"""Kafka settings against a broker that requires SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512),
TLS, or both (SASL_SSL).

This module starts its OWN broker (``local_kafka.start(..., sasl=True, tls=...)``: SASL_PLAINTEXT,
SSL and SASL_SSL client listeners next to the PLAINTEXT one; the certificate is signed by a CA
made here; SCRAM credentials are written at format time), never the shared test broker, and
stops it at the end (``docs/security.md#kafka``). One broker serves every case. Services
connect with ``ensure_topics`` (aiokafka admin, ``client_security``), ``build_broker``
(FastStream, ``broker_security``) and ``build_producer`` (aiokafka, ``client_security``);
those are the paths tested here.
"""

from __future__ import annotations

import asyncio
import ipaddress
import tempfile
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from pydantic import SecretStr

from evalloop.adapters import local_kafka
from evalloop.adapters.bus import Record
from evalloop.adapters.kafka import (
    KafkaBus,
    build_broker,
    build_producer,
    ensure_topics,
    subscribe_batch,
)
from evalloop.errors import BusError
from evalloop.events import UserRating, dump_event, parse_event
from evalloop.settings import KafkaSettings
from evalloop.topics import Topics

pytestmark = pytest.mark.kafka

KAFKA_POM = Path(__file__).resolve().parents[2] / "deploy" / "kafka" / "pom.xml"
WAIT_S = 60.0  # upper bound for a delivery on a loaded 2-core machine (not a timing assertion)


def _ca(name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5)).not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), critical=True)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _server_cert(ca_key: ec.EllipticCurvePrivateKey, ca: x509.Certificate) -> tuple[str, str]:
    """(chain PEM, PKCS#8 key PEM) for 127.0.0.1, signed by ``ca``."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5)).not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    chain = (cert.public_bytes(serialization.Encoding.PEM)
             + ca.public_bytes(serialization.Encoding.PEM)).decode()
    pem_key = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    return chain, pem_key


@pytest.fixture(scope="module")
def ca_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, tuple[str, str]]:
    """(CA file that signed the broker's cert, an unrelated CA file, the broker's cert+key)."""
    folder = tmp_path_factory.mktemp("kafka-tls")
    ca_key, ca = _ca("evalloop test CA")
    _, other = _ca("some other CA")
    right, wrong = folder / "ca.pem", folder / "other-ca.pem"
    right.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    wrong.write_bytes(other.public_bytes(serialization.Encoding.PEM))
    return right, wrong, _server_cert(ca_key, ca)


@pytest.fixture(scope="module")
async def sasl_broker(
    ca_files: tuple[Path, Path, tuple[str, str]],
) -> AsyncIterator[local_kafka.LocalKafka]:
    """A broker of this module's own with SASL_PLAINTEXT (PLAIN) and SSL listeners; stopped
    after."""
    libs = local_kafka.fetch(KAFKA_POM)
    with tempfile.TemporaryDirectory(prefix="evalloop-kafka-sasl-", dir="/var/tmp") as home:
        server = await local_kafka.start(libs, Path(home) / "broker", sasl=True,
                                         tls=ca_files[2])
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


async def _round_trip(settings: KafkaSettings, *, via_producer: bool = False) -> None:
    """Publish one feedback event through ``build_broker``/``KafkaBus`` (``via_producer``:
    through ``build_producer``/``KafkaBus``, ingest's and the recorder's fast path) and consume
    it back through ``subscribe_batch`` (the services' path); assert the exact event returns."""
    topics = Topics.with_prefix(settings.topic_prefix)
    await ensure_topics(settings, topics)
    event = UserRating(
        event_id=uuid.UUID("0b5e6c9e-3f1d-4c39-9d7e-1f3a2b4c5d6e"), agent_id="support-bot",
        conversation_id="c-1", turn_id="t-1",
        occurred_at=datetime(2026, 11, 30, 12, 0, tzinfo=UTC), thumbs="down",
        comment="wrong refund amount",
    )
    if via_producer:
        producer = build_producer(settings)
        await producer.start()
        try:
            await KafkaBus(producer=producer).publish(topics.feedback_events, dump_event(event),
                                                      key=event.agent_id)
        finally:
            await producer.stop()
    else:
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


async def test_right_credentials_publish_and_consume_a_feedback_event(
    sasl_broker: local_kafka.LocalKafka,
) -> None:
    assert sasl_broker.sasl_user is not None
    await _round_trip(_settings(sasl_broker, sasl_broker.sasl_user[1]))


def _tls_settings(server: local_kafka.LocalKafka, cafile: Path) -> KafkaSettings:
    assert server.ssl_bootstrap is not None
    return KafkaSettings(bootstrap=server.ssl_bootstrap, security_protocol="SSL",
                         ssl_cafile=cafile, topic_prefix=f"tls{uuid.uuid4().hex[:8]}.")


async def test_tls_with_the_ca_file_publishes_and_consumes_a_feedback_event(
    sasl_broker: local_kafka.LocalKafka, ca_files: tuple[Path, Path, tuple[str, str]],
) -> None:
    await _round_trip(_tls_settings(sasl_broker, ca_files[0]))


async def test_tls_with_another_ca_is_refused(
    sasl_broker: local_kafka.LocalKafka, ca_files: tuple[Path, Path, tuple[str, str]],
) -> None:
    settings = _tls_settings(sasl_broker, ca_files[1])
    # the broker sends its certificate and the (foreign) CA's: OpenSSL names the self-signed root
    with pytest.raises(BusError) as caught:
        await ensure_topics(settings, Topics.with_prefix(settings.topic_prefix))
    assert str(caught.value) == (
        f"TLS certificate of {settings.bootstrap} not trusted: self-signed certificate "
        f"in certificate chain; check kafka.ssl_cafile ({ca_files[1]})"
    )


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


def _sasl_ssl_settings(server: local_kafka.LocalKafka, mechanism: str, password: str,
                       cafile: Path) -> KafkaSettings:
    assert server.sasl_ssl_bootstrap is not None and server.sasl_user is not None
    return KafkaSettings(
        bootstrap=server.sasl_ssl_bootstrap, security_protocol="SASL_SSL",
        sasl_mechanism=mechanism, sasl_username=server.sasl_user[0],
        sasl_password=SecretStr(password), ssl_cafile=cafile,
        topic_prefix=f"scram{uuid.uuid4().hex[:8]}.",
    )


async def test_sasl_ssl_with_scram_sha_512_publishes_and_consumes_a_feedback_event(
    sasl_broker: local_kafka.LocalKafka, ca_files: tuple[Path, Path, tuple[str, str]],
) -> None:
    assert sasl_broker.sasl_user is not None
    settings = _sasl_ssl_settings(sasl_broker, "SCRAM-SHA-512", sasl_broker.sasl_user[1],
                                  ca_files[0])
    await _round_trip(settings, via_producer=True)


async def test_sasl_ssl_with_scram_sha_256_publishes_and_consumes_a_feedback_event(
    sasl_broker: local_kafka.LocalKafka, ca_files: tuple[Path, Path, tuple[str, str]],
) -> None:
    assert sasl_broker.sasl_user is not None
    await _round_trip(_sasl_ssl_settings(sasl_broker, "SCRAM-SHA-256", sasl_broker.sasl_user[1],
                                         ca_files[0]))


async def test_sasl_ssl_scram_sha_512_with_a_wrong_password_is_a_clear_error(
    sasl_broker: local_kafka.LocalKafka, ca_files: tuple[Path, Path, tuple[str, str]],
) -> None:
    wrong = "not-the-password-" + uuid.uuid4().hex
    settings = _sasl_ssl_settings(sasl_broker, "SCRAM-SHA-512", wrong, ca_files[0])
    with pytest.raises(BusError) as caught:
        await ensure_topics(settings, Topics.with_prefix(settings.topic_prefix))
    assert sasl_broker.sasl_user is not None
    assert str(caught.value) == (
        f"SASL authentication failed on {sasl_broker.sasl_ssl_bootstrap} as user "
        f"'{sasl_broker.sasl_user[0]}' (mechanism SCRAM-SHA-512): [Error 58] "
        "SaslAuthenticationFailed: Authentication failed during authentication due to invalid "
        "credentials with SASL mechanism SCRAM-SHA-512; check kafka.sasl_username and "
        "EVALLOOP_KAFKA__SASL_PASSWORD"
    )
    assert caught.type is BusError
