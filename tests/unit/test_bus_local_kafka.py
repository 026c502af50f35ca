"""The local Kafka launcher's pure parts: version pin, cluster ids, broker properties, state."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

import pytest

from evalloop.adapters import local_kafka
from evalloop.adapters.local_kafka import KafkaLaunchError, LocalKafka

POM = Path(__file__).resolve().parents[2] / "deploy" / "kafka" / "pom.xml"


def test_version_comes_from_the_pom() -> None:
    assert local_kafka.kafka_version(POM).startswith("4.")


def test_a_pom_without_the_version_property_is_refused(tmp_path: Path) -> None:
    pom = tmp_path / "pom.xml"
    pom.write_text('<project xmlns="http://maven.apache.org/POM/4.0.0"><properties/></project>')
    with pytest.raises(KafkaLaunchError, match=r"expected a <kafka\.version> property"):
        local_kafka.kafka_version(pom)


def test_cluster_ids_are_kafka_uuids_never_starting_with_a_dash() -> None:
    ids = [local_kafka._cluster_id() for _ in range(2000)]
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)
    assert len(set(ids)) == 2000


def test_server_properties_single_node_static_quorum(tmp_path: Path) -> None:
    text = local_kafka._server_properties(tmp_path, 9100, 9101)
    props = dict(line.split("=", 1) for line in text.splitlines())
    assert props["process.roles"] == "broker,controller"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:9101"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9100"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9100,CONTROLLER://127.0.0.1:9101"
    assert props["offsets.topic.replication.factor"] == "1"
    assert props["share.coordinator.state.topic.min.isr"] == "1"
    assert props["group.initial.rebalance.delay.ms"] == "0"
    assert props["log.cleaner.dedupe.buffer.size"] == str(8 * 1024 * 1024)
    assert props["log.dirs"] == str(tmp_path / "data")
    assert "controller.quorum.bootstrap.servers" not in props  # never both (docs/local-servers.md)


def test_state_round_trips_and_stop_without_state_is_a_no_op(tmp_path: Path) -> None:
    server = LocalKafka("127.0.0.1:9100", 2**22 + 7, tmp_path, tmp_path / "kafka.log", 4.2)
    (tmp_path / "state.json").write_text(server.to_json())
    assert local_kafka.read_state(tmp_path) == server
    assert not local_kafka.is_running(server.pid)
    assert local_kafka.stop(tmp_path) == server  # a dead pid is not signalled
    assert local_kafka.read_state(tmp_path) is None
    assert local_kafka.stop(tmp_path) is None


async def test_start_with_missing_jars_fails_with_the_tools_output(tmp_path: Path) -> None:
    with pytest.raises(KafkaLaunchError, match="StorageTool format failed"):
        await local_kafka.start(tmp_path / "no-libs", tmp_path / "home", timeout_s=5)


def test_server_properties_with_a_sasl_plain_listener(tmp_path: Path) -> None:
    text = local_kafka._server_properties(tmp_path, 9100, 9101, (9102, {"admin": "a1", "u7": "p7"}))
    props = dict(line.split("=", 1) for line in text.splitlines())
    assert props["listeners"] == ("PLAINTEXT://127.0.0.1:9100,CONTROLLER://127.0.0.1:9101,"
                                  "SASL_PLAINTEXT://127.0.0.1:9102")
    assert props["advertised.listeners"] == ("PLAINTEXT://127.0.0.1:9100,"
                                             "SASL_PLAINTEXT://127.0.0.1:9102")
    assert props["listener.security.protocol.map"] == (
        "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT")
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    assert props["sasl.enabled.mechanisms"] == "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    assert props["listener.name.sasl_plaintext.plain.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'user_admin="a1" user_u7="p7";')
    for mech in ("scram-sha-256", "scram-sha-512"):
        assert props[f"listener.name.sasl_plaintext.{mech}.sasl.jaas.config"] == (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;")
    assert not any(k.startswith("listener.name.sasl_ssl.") for k in props)


def test_server_properties_with_sasl_and_tls_add_a_sasl_ssl_listener(tmp_path: Path) -> None:
    chain = "-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n"
    key = "-----BEGIN PRIVATE KEY-----\nCCC\n-----END PRIVATE KEY-----\n"
    text = local_kafka._server_properties(tmp_path, 9100, 9101, (9102, {"admin": "a1"}),
                                          (9103, chain, key), 9104)
    props = dict(line.split("=", 1) for line in text.splitlines())
    assert props["listeners"] == (
        "PLAINTEXT://127.0.0.1:9100,CONTROLLER://127.0.0.1:9101,SASL_PLAINTEXT://127.0.0.1:9102,"
        "SSL://127.0.0.1:9103,SASL_SSL://127.0.0.1:9104")
    assert props["advertised.listeners"] == (
        "PLAINTEXT://127.0.0.1:9100,SASL_PLAINTEXT://127.0.0.1:9102,SSL://127.0.0.1:9103,"
        "SASL_SSL://127.0.0.1:9104")
    assert props["listener.security.protocol.map"] == (
        "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,"
        "SASL_SSL:SASL_SSL")
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    assert props["listener.name.sasl_ssl.ssl.keystore.type"] == "PEM"
    assert props["listener.name.sasl_ssl.ssl.keystore.certificate.chain"] == (
        r"-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----")
    assert props["listener.name.sasl_ssl.ssl.keystore.key"] == (
        r"-----BEGIN PRIVATE KEY-----\nCCC\n-----END PRIVATE KEY-----")
    assert props["listener.name.sasl_ssl.plain.sasl.jaas.config"] == (
        'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="a1";')
    assert props["listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required;")


def _client_proof(digest: str, salted_b64: str, auth_message: str) -> str:
    """RFC 5802 section 3: ClientProof = ClientKey XOR HMAC(H(ClientKey), AuthMessage)."""
    salted = base64.b64decode(salted_b64)
    client_key = hmac.digest(salted, b"Client Key", digest)
    stored = hashlib.new(digest, client_key).digest()
    signature = hmac.digest(stored, auth_message.encode(), digest)
    return base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature,
                                                        strict=True))).decode()


def test_scram_credentials_are_salted_as_rfc_7677_computes_them() -> None:
    # RFC 7677 section 3: user "user", password "pencil", this salt, 4096 iterations.
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    sha256, sha512 = local_kafka.scram_credentials("user", "pencil", salt=salt)
    prefix = 'SCRAM-SHA-256=[name=user,iterations=4096,salt="W22ZaJ0SNY7soEsUEjb6gQ==",'
    assert sha256.startswith(prefix + 'saltedpassword="')
    assert sha512.startswith('SCRAM-SHA-512=[name=user,iterations=4096,'
                             'salt="W22ZaJ0SNY7soEsUEjb6gQ==",saltedpassword="')
    assert "pencil" not in sha256 + sha512
    salted = sha256[len(prefix) + len('saltedpassword="'):-2]
    auth = ("n=user,r=rOprNGfwEbeRWgbNEkqO,"
            "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,"
            "i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    assert _client_proof("sha256", salted, auth) == (
        "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")


def test_the_state_file_keeps_no_sasl_password(tmp_path: Path) -> None:
    server = LocalKafka("127.0.0.1:9100", 42, tmp_path, tmp_path / "kafka.log", 1.5,
                        "127.0.0.1:9102", ("u7", "secret-p7"))
    assert "secret-p7" not in server.to_json()
    assert "secret-p7" not in repr(server)
    (tmp_path / "state.json").write_text(server.to_json())
    back = local_kafka.read_state(tmp_path)
    assert back == LocalKafka("127.0.0.1:9100", 42, tmp_path, tmp_path / "kafka.log", 1.5,
                              "127.0.0.1:9102", None)


def test_server_properties_with_a_tls_listener_keep_pem_lines_escaped(tmp_path: Path) -> None:
    chain = "-----BEGIN CERTIFICATE-----\nAAA\nBBB\n-----END CERTIFICATE-----\n"
    key = "-----BEGIN PRIVATE KEY-----\nCCC\n-----END PRIVATE KEY-----\n"
    text = local_kafka._server_properties(tmp_path, 9100, 9101, None, (9103, chain, key))
    props = dict(line.split("=", 1) for line in text.splitlines())
    assert props["listeners"] == ("PLAINTEXT://127.0.0.1:9100,CONTROLLER://127.0.0.1:9101,"
                                  "SSL://127.0.0.1:9103")
    assert props["listener.security.protocol.map"] == (
        "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL")
    assert props["listener.name.ssl.ssl.keystore.type"] == "PEM"
    assert props["listener.name.ssl.ssl.keystore.certificate.chain"] == (
        r"-----BEGIN CERTIFICATE-----\nAAA\nBBB\n-----END CERTIFICATE-----")
    assert props["listener.name.ssl.ssl.keystore.key"] == (
        r"-----BEGIN PRIVATE KEY-----\nCCC\n-----END PRIVATE KEY-----")
