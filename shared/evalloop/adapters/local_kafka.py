"""A local Apache Kafka 4.x broker from Maven Central jars (no Docker, no Apache mirrors).

Used by ``deploy/kafka.py`` (the command line), ``tests/conftest.py`` (a broker per test session)
and ``.ci/run``. Only the standard library and aiokafka are imported, so the script runs wherever
evalloop is installed.

Steps (``docs/local-servers.md#kafka-from-maven-central``):

1. :func:`fetch` resolves ``deploy/kafka/pom.xml`` (``org.apache.kafka:kafka_2.13`` plus a log4j2
   SLF4J binding) with ``mvn dependency:copy-dependencies`` into ``<cache>/kafka-<version>/libs``.
2. :func:`start` writes ``server.properties`` for one combined broker+controller on 127.0.0.1 with
   free ports and a static quorum (optionally SASL_PLAINTEXT, SSL and SASL_SSL client listeners
   with the PLAIN and SCRAM-SHA-256/512 mechanisms and credentials generated for this start:
   ``docs/security.md#kafka``),
   formats KRaft storage (``kafka.tools.StorageTool``), launches
   ``java -cp 'libs/*' kafka.Kafka server.properties`` in its own session, and waits until an
   aiokafka admin client's ``describe_cluster()`` answers (the broker serves requests only once
   unfenced). It fails at once, with the log's tail, if the JVM exits first.
3. :func:`stop` sends SIGTERM, then SIGKILL after a grace period.

State (bootstrap address, pid, paths) is kept in ``<state dir>/state.json`` so that ``stop`` and
``status`` work from another process.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import uuid
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = [
    "DEFAULT_CACHE",
    "SASL_MECHANISMS",
    "SCRAM_ITERATIONS",
    "KafkaLaunchError",
    "LocalKafka",
    "fetch",
    "is_running",
    "kafka_version",
    "read_state",
    "restart",
    "scram_credentials",
    "start",
    "stop",
]

DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "evalloop"
_STATE = "state.json"
# docs/local-servers.md: a 512 MB heap is plenty for one test broker; the 128 MB default dedupe
# buffer is allocated at start, so it is cut to 8 MB.
_JVM_OPTS = (
    "-Xms256m",
    "-Xmx512m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-Djava.awt.headless=true",
)
_LOG4J2 = """\
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = STDOUT
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.config.name = org.apache.kafka.common.config.AbstractConfig
logger.config.level = WARN
"""


class KafkaLaunchError(RuntimeError):
    """The jars could not be fetched, or the broker did not start or stop."""


@dataclass(frozen=True, slots=True)
class LocalKafka:
    """A broker started by :func:`start`.

    Attributes:
        bootstrap: ``127.0.0.1:<port>`` of the PLAINTEXT listener.
        pid: the JVM's process id.
        home: the state directory (``server.properties``, ``data/``, ``kafka.log``, ``state.json``).
        log_path: the JVM's combined stdout/stderr (log4j2 writes to stdout).
        started_s: seconds from launch to the first answered ``describe_cluster()``.
        sasl_bootstrap: ``127.0.0.1:<port>`` of the SASL_PLAINTEXT listener (mechanisms
            :data:`SASL_MECHANISMS`), or ``None`` when :func:`start` was not asked for one.
        sasl_user: ``(username, password)`` accepted by the SASL listeners with every mechanism,
            generated per start; kept out of ``repr`` and of ``state.json`` (so never logged),
            so only the caller of :func:`start` knows it.
        ssl_bootstrap: ``127.0.0.1:<port>`` of the SSL (TLS) listener, or ``None`` when
            :func:`start` was given no certificate.
        sasl_ssl_bootstrap: ``127.0.0.1:<port>`` of the SASL_SSL listener (SASL over that
            certificate), or ``None`` unless :func:`start` had both ``sasl`` and ``tls``.
    """

    bootstrap: str
    pid: int
    home: Path
    log_path: Path
    started_s: float
    sasl_bootstrap: str | None = None
    sasl_user: tuple[str, str] | None = field(default=None, repr=False)
    ssl_bootstrap: str | None = None
    sasl_ssl_bootstrap: str | None = None

    def to_json(self) -> str:
        """The state file's content (paths as strings; no credentials)."""
        d = asdict(self)
        del d["sasl_user"]
        d["home"], d["log_path"] = str(self.home), str(self.log_path)
        return json.dumps(d, indent=2, sort_keys=True)


def kafka_version(pom: Path) -> str:
    """The ``kafka.version`` property of ``pom`` (the single place the version is pinned).

    Raises:
        KafkaLaunchError: the POM has no ``<kafka.version>`` property.
    """
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    node = ET.parse(pom).getroot().find("m:properties/m:kafka.version", ns)
    if node is None or not (node.text or "").strip():
        raise KafkaLaunchError(f"{pom}: expected a <kafka.version> property, found none")
    return (node.text or "").strip()


def fetch(pom: Path, cache_dir: Path = DEFAULT_CACHE) -> Path:
    """Copy Kafka's runtime jars into ``cache_dir/kafka-<version>/libs``; skip when present.

    Returns:
        The ``libs`` directory.

    Raises:
        KafkaLaunchError: Maven is missing or failed (its output is in the message).
    """
    libs = cache_dir.expanduser() / f"kafka-{kafka_version(pom)}" / "libs"
    if (libs / ".complete").exists():
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaLaunchError("Maven ('mvn') is not on PATH: install it (apt-get install maven)")
    tmp = libs.with_name("libs.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    proc = subprocess.run(
        [mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
         "-DincludeScope=runtime", f"-DoutputDirectory={tmp}"],
        capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        raise KafkaLaunchError(f"mvn failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    (tmp / ".complete").write_text(kafka_version(pom) + "\n")
    shutil.rmtree(libs, ignore_errors=True)
    tmp.rename(libs)  # atomic: a half-fetched folder is never taken for a complete one
    return libs


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cluster_id() -> str:
    """A random KRaft cluster id (Kafka's ``Uuid`` text form), never starting with ``-``.

    docs/local-servers.md: a leading ``-`` is taken for an option by StorageTool's argument parser.
    """
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


def _jaas_plain(users: dict[str, str]) -> str:
    """The broker's PLAIN login module line: ``user_<name>="<password>"`` per accepted user."""
    entries = " ".join(f'user_{name}="{pw}"' for name, pw in users.items())
    return f"org.apache.kafka.common.security.plain.PlainLoginModule required {entries};"


#: SASL mechanisms every SASL listener of a local broker enables (docs/security.md#kafka).
SASL_MECHANISMS: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: PBKDF2 rounds of the SCRAM credentials written at format time (Kafka's minimum).
SCRAM_ITERATIONS = 4096
#: The broker side of SCRAM needs a login module entry; its users live in the metadata log.
_JAAS_SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


def _sasl_listener(name: str, users: dict[str, str]) -> dict[str, object]:
    """Login module entries of every mechanism in :data:`SASL_MECHANISMS` on listener ``name``
    (the broker refuses to start a SASL listener with a mechanism that has none)."""
    return {
        f"listener.name.{name}.{mech.lower()}.sasl.jaas.config":
            _jaas_plain(users) if mech == "PLAIN" else _JAAS_SCRAM
        for mech in SASL_MECHANISMS
    }


def scram_credentials(user: str, password: str, *, salt: bytes | None = None) -> list[str]:
    """``kafka-storage format --add-scram`` values for ``user``, one per SCRAM mechanism, in
    the salted form (``iterations``, ``salt``, ``saltedpassword``; RFC 5802's
    ``Hi(password, salt, i)`` = PBKDF2-HMAC), so the password itself is never on a command line.

    Args:
        user: the SCRAM user name.
        password: its password (UTF-8).
        salt: 16 random bytes when ``None`` (tests pass one to get a fixed output).

    Returns:
        ``['SCRAM-SHA-256=[name=<user>,iterations=4096,salt="<b64>",saltedpassword="<b64>"]',
        'SCRAM-SHA-512=[...]']``.
    """
    salt = secrets.token_bytes(16) if salt is None else salt
    out = []
    for mech, digest in (("SCRAM-SHA-256", "sha256"), ("SCRAM-SHA-512", "sha512")):
        salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, SCRAM_ITERATIONS)
        out.append(f'{mech}=[name={user},iterations={SCRAM_ITERATIONS},'
                   f'salt="{base64.b64encode(salt).decode()}",'
                   f'saltedpassword="{base64.b64encode(salted).decode()}"]')
    return out


def _pem_value(pem: str) -> str:
    """A PEM text as one ``.properties`` value (Java's loader turns ``\\n`` into newlines)."""
    return "\\n".join(pem.strip().splitlines())


def _server_properties(home: Path, port: int, cport: int,
                       sasl: tuple[int, dict[str, str]] | None = None,
                       tls: tuple[int, str, str] | None = None,
                       sasl_ssl_port: int | None = None) -> str:
    """``server.properties``; ``sasl`` = (port, {user: password}) adds a SASL_PLAINTEXT
    listener for clients (mechanisms :data:`SASL_MECHANISMS`: PLAIN users from the dict, SCRAM
    users from the metadata log); ``tls`` = (port, certificate chain PEM, unencrypted PKCS#8 key
    PEM) adds an SSL listener; with both, ``sasl_ssl_port`` adds a SASL_SSL listener (the same
    mechanisms and users over the same certificate). Controller and inter-broker traffic stay on
    PLAINTEXT."""
    listeners = f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}"
    advertised = f"PLAINTEXT://127.0.0.1:{port}"
    protocols = "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
    extra: dict[str, object] = {}
    if sasl is not None:
        sport, users = sasl
        listeners += f",SASL_PLAINTEXT://127.0.0.1:{sport}"
        advertised += f",SASL_PLAINTEXT://127.0.0.1:{sport}"
        protocols += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
        extra = {
            "sasl.enabled.mechanisms": ",".join(SASL_MECHANISMS),
            **_sasl_listener("sasl_plaintext", users),
        }
    if tls is not None:
        tport, chain, key = tls
        listeners += f",SSL://127.0.0.1:{tport}"
        advertised += f",SSL://127.0.0.1:{tport}"
        protocols += ",SSL:SSL"
        for name in ("ssl", "sasl_ssl") if sasl is not None and sasl_ssl_port else ("ssl",):
            extra |= {
                f"listener.name.{name}.ssl.keystore.type": "PEM",
                f"listener.name.{name}.ssl.keystore.certificate.chain": _pem_value(chain),
                f"listener.name.{name}.ssl.keystore.key": _pem_value(key),
            }
        if sasl is not None and sasl_ssl_port:
            listeners += f",SASL_SSL://127.0.0.1:{sasl_ssl_port}"
            advertised += f",SASL_SSL://127.0.0.1:{sasl_ssl_port}"
            protocols += ",SASL_SSL:SASL_SSL"
            extra |= _sasl_listener("sasl_ssl", sasl[1])
    rf1 = {
        f"{p}.{k}": 1
        for p in ("offsets.topic", "transaction.state.log", "share.coordinator.state.topic")
        for k in ("replication.factor", "min.isr")
    }
    props: dict[str, object] = {
        "process.roles": "broker,controller",
        "node.id": 1,
        "controller.quorum.voters": f"1@127.0.0.1:{cport}",
        "listeners": listeners,
        "advertised.listeners": advertised,
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": protocols,
        **extra,
        "log.dirs": str(home / "data"),
        **rf1,
        # 50 partitions (the default) make the first consumer group wait for 50 creations.
        "offsets.topic.num.partitions": 5,
        "transaction.state.log.num.partitions": 5,
        "share.coordinator.state.topic.num.partitions": 5,
        "group.initial.rebalance.delay.ms": 0,
        "log.cleaner.dedupe.buffer.size": 8 * 1024 * 1024,
        "num.partitions": 1,
    }
    return "".join(f"{k}={v}\n" for k, v in props.items())


# StorageTool runs for about a second: the quick-start JIT and serial GC save a third of it.
_TOOL_JVM_OPTS = ("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def _java(libs: Path, home: Path, main: str, *args: str,
          jvm_opts: tuple[str, ...] = _JVM_OPTS) -> list[str]:
    java = shutil.which("java")
    if java is None:
        raise KafkaLaunchError("'java' is not on PATH: Kafka 4 needs Java 17+")
    return [
        java, *jvm_opts,
        f"-Dlog4j2.configurationFile={home / 'log4j2.properties'}",
        f"-Dkafka.logs.dir={home / 'logs'}",
        "-cp", f"{libs}/*", main, *args,
    ]


class _Quiet:
    """Raise a logger's level to CRITICAL inside ``with`` (restored on exit)."""

    def __init__(self, name: str) -> None:
        self._logger = logging.getLogger(name)
        self._level = self._logger.level

    def __enter__(self) -> None:
        self._level = self._logger.level
        self._logger.setLevel(logging.CRITICAL)

    def __exit__(self, *exc: object) -> None:
        self._logger.setLevel(self._level)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


async def _wait_ready(bootstrap: str, proc: subprocess.Popen[bytes], log_path: Path,
                      timeout_s: float) -> None:
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.errors import KafkaError

    deadline = time.monotonic() + timeout_s
    last: BaseException | None = None
    quiet = _Quiet("aiokafka")  # "Unable connect" is expected while the JVM boots
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise KafkaLaunchError(
                f"Kafka exited with code {proc.returncode} before it was ready; "
                f"last lines of {log_path}:\n{_tail(log_path)}"
            )
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
        try:
            with quiet:
                await admin.start()
                await admin.describe_cluster()
            return
        except (KafkaError, OSError) as exc:
            last = exc
        finally:
            await admin.close()
        await asyncio.sleep(0.25)
    raise KafkaLaunchError(
        f"Kafka at {bootstrap} not ready after {timeout_s:.0f} s ({last!r}); "
        f"last lines of {log_path}:\n{_tail(log_path)}"
    )


def _distinct_ports(n: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < n:
        p = _free_port()
        if p not in ports:
            ports.append(p)
    return ports


def _format_and_launch(
    libs: Path, home: Path, sasl_users: dict[str, str] | None = None,
    tls: tuple[str, str] | None = None, scram: list[str] | None = None,
) -> tuple[str, str | None, str | None, str | None, subprocess.Popen[bytes]]:
    """Blocking part of :func:`start`: config files, StorageTool (with ``scram``: its
    ``--add-scram`` values), the JVM launch."""
    shutil.rmtree(home, ignore_errors=True)
    (home / "logs").mkdir(parents=True)
    port, cport, sport, tport, ssport = _distinct_ports(5)
    both = sasl_users is not None and tls is not None
    props = home / "server.properties"
    props.touch(mode=0o600)  # may hold SASL passwords and a TLS key: owner only
    props.write_text(_server_properties(
        home, port, cport, (sport, sasl_users) if sasl_users is not None else None,
        (tport, *tls) if tls is not None else None, ssport if both else None))
    (home / "log4j2.properties").write_text(_LOG4J2)
    add_scram = [a for value in scram or () for a in ("--add-scram", value)]
    fmt = subprocess.run(
        _java(libs, home, "kafka.tools.StorageTool", "format", "-t", _cluster_id(),
              "-c", str(props), "--ignore-formatted", *add_scram, jvm_opts=_TOOL_JVM_OPTS),
        capture_output=True, text=True, check=False,
    )
    if fmt.returncode != 0:
        raise KafkaLaunchError(f"StorageTool format failed:\n{fmt.stdout}\n{fmt.stderr}")
    with (home / "kafka.log").open("ab") as log:
        proc = subprocess.Popen(
            _java(libs, home, "kafka.Kafka", str(props)),
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, cwd=home,
        )
    sasl_bootstrap = f"127.0.0.1:{sport}" if sasl_users is not None else None
    ssl_bootstrap = f"127.0.0.1:{tport}" if tls is not None else None
    sasl_ssl_bootstrap = f"127.0.0.1:{ssport}" if both else None
    return f"127.0.0.1:{port}", sasl_bootstrap, ssl_bootstrap, sasl_ssl_bootstrap, proc


async def start(libs: Path, home: Path, *, timeout_s: float = 90.0,
                sasl: bool = False, tls: tuple[str, str] | None = None) -> LocalKafka:
    """Format fresh KRaft storage in ``home`` and start a broker; return once it serves.

    ``home`` is wiped first (a test broker keeps no data between starts). The JVM runs in its own
    session, so it outlives the caller (``deploy/kafka.py start`` returns, the broker stays).

    Args:
        libs: the jar folder from :func:`fetch`.
        home: state directory (created; its previous content is removed).
        timeout_s: seconds to wait for ``describe_cluster()`` to answer.
        sasl: also open a SASL_PLAINTEXT listener for clients (mechanisms
            :data:`SASL_MECHANISMS`), accepting one user with a random name and password made
            for this start (returned in :attr:`LocalKafka.sasl_user`, never logged): a PLAIN
            entry in ``server.properties`` and SCRAM-SHA-256/512 credentials written into the
            metadata log at format time (salted: :func:`scram_credentials`);
            ``docs/security.md#kafka``.
        tls: ``(certificate chain PEM, unencrypted PKCS#8 private key PEM)``: also open an SSL
            listener serving that certificate (clients verify it against their CA file); with
            ``sasl``, a SASL_SSL listener as well.

    Raises:
        KafkaLaunchError: formatting failed, the JVM exited, or it was not ready in time
            (then it is killed); the message carries the log's last lines.
    """
    t0 = time.monotonic()
    home = home.expanduser().resolve()  # noqa: ASYNC240 (a path computation, no I/O)
    user: tuple[str, str] | None = None
    users: dict[str, str] | None = None
    if sasl:
        user = (f"evalloop{secrets.token_hex(4)}", secrets.token_urlsafe(24))
        # Kafka's PLAIN login module wants an entry for the (unused) broker side as well.
        users = {"admin": secrets.token_urlsafe(24), user[0]: user[1]}
    scram = scram_credentials(*user) if user is not None else None
    bootstrap, sasl_bootstrap, ssl_bootstrap, sasl_ssl_bootstrap, proc = await asyncio.to_thread(
        _format_and_launch, libs, home, users, tls, scram)
    log_path = home / "kafka.log"
    try:
        await _wait_ready(bootstrap, proc, log_path, timeout_s)
    except BaseException:
        _terminate(proc.pid, grace_s=2.0)
        raise
    server = LocalKafka(bootstrap, proc.pid, home, log_path, round(time.monotonic() - t0, 2),
                        sasl_bootstrap, user, ssl_bootstrap, sasl_ssl_bootstrap)
    (home / _STATE).write_text(server.to_json())
    return server


def _launch(libs: Path, home: Path) -> subprocess.Popen[bytes]:
    """Launch the broker JVM on ``home``'s existing ``server.properties`` and data."""
    with (home / "kafka.log").open("ab") as log:
        return subprocess.Popen(
            _java(libs, home, "kafka.Kafka", str(home / "server.properties")),
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, cwd=home,
        )


async def restart(libs: Path, home: Path, *, grace_s: float = 20.0, kill: bool = False,
                  timeout_s: float = 90.0) -> LocalKafka:
    """Stop the broker recorded in ``home`` and start it again on the same ports and data (a
    broker restart, as opposed to :func:`start`, which formats fresh storage).

    Args:
        libs: the jar folder from :func:`fetch`.
        home: the state directory of a broker :func:`start` launched.
        grace_s: seconds to wait for a clean shutdown before SIGKILL.
        kill: SIGKILL at once (a crash) instead of a clean shutdown.
        timeout_s: seconds to wait for ``describe_cluster()`` to answer after the launch.

    Raises:
        KafkaLaunchError: no broker is recorded in ``home``, or it did not come back in time.
    """
    home = home.expanduser().resolve()  # noqa: ASYNC240 (a path computation, no I/O)
    old = read_state(home)
    if old is None:
        raise KafkaLaunchError(f"no broker recorded in {home}: start one first")
    t0 = time.monotonic()
    if kill and is_running(old.pid):
        os.kill(old.pid, signal.SIGKILL)
        for _ in range(100):
            _reap(old.pid)
            if not is_running(old.pid):
                break
            await asyncio.sleep(0.05)
    else:
        await asyncio.to_thread(_terminate, old.pid, grace_s)
    proc = await asyncio.to_thread(_launch, libs, home)
    try:
        await _wait_ready(old.bootstrap, proc, old.log_path, timeout_s)
    except BaseException:
        _terminate(proc.pid, grace_s=2.0)
        raise
    server = LocalKafka(old.bootstrap, proc.pid, home, old.log_path,
                        round(time.monotonic() - t0, 2), old.sasl_bootstrap,
                        ssl_bootstrap=old.ssl_bootstrap,
                        sasl_ssl_bootstrap=old.sasl_ssl_bootstrap)
    (home / _STATE).write_text(server.to_json())
    return server


def read_state(home: Path) -> LocalKafka | None:
    """The broker recorded in ``home/state.json``, or ``None`` when there is none."""
    try:
        d = json.loads((home.expanduser() / _STATE).read_text())
    except (OSError, ValueError):
        return None
    return LocalKafka(d["bootstrap"], d["pid"], Path(d["home"]), Path(d["log_path"]),
                      d["started_s"], d.get("sasl_bootstrap"),
                      ssl_bootstrap=d.get("ssl_bootstrap"),
                      sasl_ssl_bootstrap=d.get("sasl_ssl_bootstrap"))


def is_running(pid: int) -> bool:
    """Whether ``pid`` is a live (not zombie) Kafka JVM (checked in /proc, guarding reuse)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[-1].split()[0]
    return b"kafka.Kafka" in cmdline and state != "Z"


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass  # not our child: init reaps it


def _terminate(pid: int, grace_s: float) -> bool:
    """SIGTERM ``pid``, SIGKILL after ``grace_s`` seconds; True when it had to be killed."""
    if not is_running(pid):
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        _reap(pid)
        if not is_running(pid):
            return False
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    for _ in range(50):
        _reap(pid)
        if not is_running(pid):
            break
        time.sleep(0.1)
    return True


def stop(home: Path, *, grace_s: float = 20.0, remove: bool = False) -> LocalKafka | None:
    """Stop the broker recorded in ``home`` (SIGTERM, then SIGKILL after ``grace_s`` seconds).

    Args:
        home: the state directory given to :func:`start`.
        grace_s: seconds to wait for a clean shutdown before SIGKILL.
        remove: also delete ``home`` (data and logs).

    Returns:
        The stopped broker's state, or ``None`` when none was recorded.
    """
    server = read_state(home)
    if server is not None:
        _terminate(server.pid, grace_s)
        (home.expanduser() / _STATE).unlink(missing_ok=True)
    if remove:
        shutil.rmtree(home.expanduser(), ignore_errors=True)
    return server
