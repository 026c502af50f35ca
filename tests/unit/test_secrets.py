"""Secrets out of logs, errors, stored URLs and settings (docs/security.md#secrets)."""

from __future__ import annotations

import pytest

from evalloop.adapters.kafka import broker_security, client_security
from evalloop.core.redaction import (
    has_credentials,
    is_loopback,
    known_default_password,
    redact_text,
    redact_url,
    strip_credentials,
)
from evalloop.errors import ConfigError
from evalloop.settings import KafkaSettings, PostgresSettings


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://app:s3cret@db:5432/x?sslmode=require",
     "postgresql://app:***@db:5432/x?sslmode=require"),
    ("https://agent.example/chat?api_key=k1&v=2&token=t", "https://agent.example/chat?api_key=***&v=2&token=***"),
    ("postgresql://app@db/x", "postgresql://app@db/x"),
    ("postgresql:///evalloop?host=/var/tmp/pg", "postgresql:///evalloop?host=/var/tmp/pg"),
    ("http://[::1]:8080/x", "http://[::1]:8080/x"),
    ("not a url", "not a url"),
    ("http://h:notaport/x", "<unparseable URL>"),
])
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_redact_text_masks_urls_inside_messages() -> None:
    msg = "cannot connect to postgresql://u:p4ss@h:5432/db: timeout; retry http://x/?token=abc"
    assert redact_text(msg) == (
        "cannot connect to postgresql://u:***@h:5432/db: timeout; retry http://x/?token=***")


@pytest.mark.parametrize(("url", "clean"), [
    ("https://bob:pw@agent.example/chat?api_key=k&v=2", "https://agent.example/chat?v=2"),
    ("https://agent.example:8443/v1?Token=x", "https://agent.example:8443/v1"),
    ("http://127.0.0.1:8000/chat", "http://127.0.0.1:8000/chat"),
])
def test_strip_credentials(url: str, clean: str) -> None:
    assert strip_credentials(url) == clean
    assert has_credentials(url) is (url != clean)


@pytest.mark.parametrize(("password", "user", "why"), [
    ("postgres", "postgres", "the well-known default 'postgres'"),
    ("changeme", None, "the well-known default 'changeme'"),
    ("Password", None, "the well-known default 'Password'"),
    ("evalloop-dev", "evalloop", "the well-known default 'evalloop-dev'"),
    ("alice", "alice", "the same as the user name"),
    ("r4nd0m-Long-Secret-91", "app", None),
    ("", "app", None),
])
def test_known_default_password(password: str, user: str | None, why: str | None) -> None:
    assert known_default_password(password, user=user) == why


@pytest.mark.parametrize(("host", "loop"), [
    ("localhost", True), ("127.0.0.1", True), ("127.8.9.1", True), ("::1", True),
    ("[::1]", True), ("db", False), ("10.0.0.5", False), ("evil-localhost.com", False),
])
def test_is_loopback(host: str, loop: bool) -> None:
    assert is_loopback(host) is loop


def test_default_postgres_password_is_refused_off_loopback() -> None:
    with pytest.raises(ConfigError) as info:
        PostgresSettings(dsn="postgresql://postgres:postgres@db.internal:5432/evalloop")
    assert str(info.value) == (
        "EVALLOOP_POSTGRES__DSN uses a known default password (the well-known default "
        "'postgres') for the non-loopback host db.internal: set a strong one "
        "(docs/security.md#secrets)")
    with pytest.raises(ConfigError, match="'changeme'"):
        PostgresSettings(dsn="postgresql://app:changeme@10.1.2.3/evalloop")


@pytest.mark.parametrize("dsn", [
    "postgresql://postgres:postgres@127.0.0.1:5432/evalloop",
    "postgresql://postgres:postgres@localhost/evalloop",
    "postgresql://postgres:password@/evalloop?host=/var/run/postgresql",
    "postgresql://app:Xk29-unique-Pw@db.internal/evalloop",
])
def test_loopback_sockets_and_strong_passwords_are_accepted(dsn: str) -> None:
    assert PostgresSettings(dsn=dsn).dsn == dsn


def test_a_placeholder_dsn_error_does_not_echo_the_password() -> None:
    with pytest.raises(ConfigError) as info:
        PostgresSettings(dsn="postgresql://app:<password>@db/x")
    assert "<password>" not in str(info.value) and "app:***@db" in str(info.value)


def test_kafka_sasl_settings_become_client_and_broker_security() -> None:
    k = KafkaSettings(bootstrap="kafka-1.internal:9093,kafka-2.internal:9093",
                      security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
                      sasl_username="evalloop", sasl_password="Xk29-unique-Pw")
    assert "Xk29" not in repr(k) and "Xk29" not in str(k.model_dump())
    kwargs = client_security(k)
    assert {key: v for key, v in kwargs.items() if key != "ssl_context"} == {
        "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "evalloop", "sasl_plain_password": "Xk29-unique-Pw"}
    assert type(kwargs["ssl_context"]).__name__ == "SSLContext"
    from faststream.kafka.security import parse_security

    parsed = parse_security(broker_security(k))
    assert (parsed["security_protocol"], parsed["sasl_mechanism"],
            parsed["sasl_plain_username"], parsed["sasl_plain_password"]) == (
        "SASL_SSL", "SCRAM-SHA-512", "evalloop", "Xk29-unique-Pw")
    assert client_security(KafkaSettings()) == {"security_protocol": "PLAINTEXT"}
    assert broker_security(KafkaSettings()) is None


def test_kafka_sasl_needs_credentials_and_refuses_defaults_off_loopback() -> None:
    with pytest.raises(ConfigError, match="needs sasl_mechanism, sasl_username and sasl_password"):
        KafkaSettings(security_protocol="SASL_SSL")
    with pytest.raises(ConfigError, match=r"known default .*'kafka-secret'.*kafka\.internal:9093"):
        KafkaSettings(bootstrap="kafka.internal:9093", security_protocol="SASL_PLAINTEXT",
                      sasl_mechanism="PLAIN", sasl_username="u", sasl_password="kafka-secret")
    local = KafkaSettings(bootstrap="127.0.0.1:9093", security_protocol="SASL_PLAINTEXT",
                          sasl_mechanism="PLAIN", sasl_username="u", sasl_password="kafka-secret")
    assert local.sasl_mechanism == "PLAIN"


def test_settings_reprs_hide_the_dsn_and_passwords() -> None:
    from evalloop.settings import Settings

    s = Settings(postgres=PostgresSettings(dsn="postgresql://a:Xk29-unique-Pw@db/x"),
                 kafka=KafkaSettings(security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                                     sasl_username="u", sasl_password="Zq81-unique-Pw"))
    assert "Xk29" not in repr(s) and "Zq81" not in repr(s) and "Zq81" not in str(s)
