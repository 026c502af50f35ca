"""Monitor benchmark: crossing -> ``reeval.requested.v1`` latency at 1,000 events/s, and memory.

Target: latency from the crossing event's arrival to the request's publication,
p99 < 1 s at 1,000 events/s; memory bounded by agents x buckets, not by events.

Run: ``python benchmarks/monitor.py`` (``--help`` for sizes; ``--kafka`` adds the same load
through a real Kafka broker: ``EVALLOOP_TEST_KAFKA_BOOTSTRAP`` or one started by
``evalloop.adapters.local_kafka``). PostgreSQL: ``EVALLOOP_TEST_PG_DSN`` (admin DSN) or the
embedded server; each phase gets a fresh, migrated database.

Phases, all in one run (ratios against baselines measured in the same run):

1. *In-process*: events are published on the in-process bus at a fixed rate; the monitor's
   handler runs on real PostgreSQL. Which event crosses the threshold for each agent is
   predicted beforehand by the pure core (the decision does not depend on batching), and the
   run checks the monitor requested exactly those. Latency = time the request was published
   minus time the crossing event was appended to the input topic. Baselines: a bare SQL round
   trip (``SELECT 1``) and a bare bus hop (publish -> handler).
2. *Kafka* (``--kafka``): the FastStream app on a real broker; latency = the request record's
   timestamp minus the time the broker acked the crossing event. Baseline: a bare produce ->
   consume hop of a small record.
3. *Memory*: events fed straight to the handler with ``tracemalloc`` on; traced memory and the
   number of buckets held after every slice of events, with event time advancing so the 24 h
   window slides: the buckets held stay <= agents x 288 however many events arrive.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # services/ when run from a checkout

from evalloop.adapters.bus import InProcessBus, Record  # noqa: E402
from evalloop.adapters.postgres import (  # noqa: E402
    connect_pool,
    create_database,
    migrate,
    start_embedded,
)
from evalloop.core.fusion import FusionWeights, classify  # noqa: E402
from evalloop.core.trigger import TriggerConfig, TriggerState, step  # noqa: E402
from evalloop.core.window import (  # noqa: E402
    WindowReplay,
    turn_flags,
)
from evalloop.events import AgentResponse, ReevalRequested, UserRating, dump_event  # noqa: E402
from evalloop.runtime import Deps, mount_in_process  # noqa: E402
from evalloop.settings import (  # noqa: E402
    KafkaSettings,
    MonitorSettings,
    PostgresSettings,
    Settings,
)
from evalloop.topics import Topics  # noqa: E402
from services.monitor.service import MonitorService  # noqa: E402

T0 = datetime(2026, 3, 2, 0, 0, tzinfo=UTC)
MONITOR = MonitorSettings(min_turns=100, min_negatives=5)


# --------------------------------------------------------------------------- workload


def workload(agents: int, per_agent: int, seed: int) -> list[Any]:
    """Interleaved events of ``agents`` agents: served turns one minute apart (event time),
    a background of ~1% thumbs-down, then an incident (every 4th turn rated down) starting at
    a random turn, so each agent crosses 2% once. Seeded."""
    rng = random.Random(seed)
    streams: list[list[Any]] = []
    for a in range(agents):
        agent = f"agent-{a:04d}"
        incident = rng.randrange(per_agent // 2, per_agent * 3 // 4)
        events: list[Any] = []
        for i in range(per_agent):
            t = T0 + timedelta(minutes=i)
            common = {"agent_id": agent, "conversation_id": f"c{i}", "turn_id": "1"}
            events.append(AgentResponse(event_id=uuid.uuid4(), occurred_at=t, **common))
            bad = rng.random() < 0.01 if i < incident else i % 4 == 0
            if bad:
                events.append(UserRating(event_id=uuid.uuid4(), occurred_at=t + timedelta(
                    seconds=20), thumbs="down", **common))
        streams.append(events)
    # merge, keeping each agent's order (as one Kafka partition per key would)
    out: list[Any] = []
    cursors = [0] * agents
    live = list(range(agents))
    while live:
        k = rng.randrange(len(live))
        a = live[k]
        out.append(streams[a][cursors[a]])
        cursors[a] += 1
        if cursors[a] == len(streams[a]):
            live[k] = live[-1]
            live.pop()
    return out


def predict_crossings(events: list[Any], monitor: MonitorSettings) -> dict[str, int]:
    """Index (in ``events``) of the event after which each agent's trigger fires (pure core)."""
    weights = FusionWeights()
    cfg = TriggerConfig(threshold=monitor.threshold, clear_below=monitor.clear_below,
                        min_turns=monitor.min_turns, min_negatives=monitor.min_negatives,
                        cooldown_s=monitor.cooldown_s)

    def negative(e: Any) -> bool:
        s = classify(e, weights)
        return s is not None and s.negative

    replay = WindowReplay(window_s=monitor.window_s, bucket_s=monitor.bucket_s)
    states: dict[str, TriggerState] = {}
    fired: dict[str, int] = {}
    for i, e in enumerate(events):
        flags = turn_flags(e, monitor.bucket_s, negative)
        assert flags is not None
        w = replay.observe((e.agent_id, e.conversation_id, e.turn_id), flags, e.occurred_at)
        assert w.newest is not None
        d = step(states.get(e.agent_id, TriggerState()), negatives=w.totals.negatives,
                 turns=w.totals.turns, at=w.newest, config=cfg)
        states[e.agent_id] = d.state
        if d.fire:
            assert e.agent_id not in fired, "the workload crosses once per agent"
            fired[e.agent_id] = i
    return fired


# --------------------------------------------------------------------------- helpers


@dataclass
class Stats:
    """Latency summary, milliseconds."""

    n: int
    p50: float
    p99: float
    max: float

    @classmethod
    def of(cls, seconds: list[float]) -> Stats:
        ms = sorted(s * 1000 for s in seconds)
        if len(ms) < 2:
            v = ms[0] if ms else float("nan")
            return cls(len(ms), v, v, v)
        q = statistics.quantiles(ms, n=100, method="inclusive")
        return cls(len(ms), q[49], q[98], ms[-1])

    def __str__(self) -> str:
        return f"p50 {self.p50:8.2f} ms   p99 {self.p99:8.2f} ms   max {self.max:8.2f} ms" \
               f"   (n={self.n})"


async def fresh_database(admin_dsn: str) -> str:
    """Create and migrate a uniquely named database on the server of ``admin_dsn``; its DSN."""
    dsn = await create_database(admin_dsn, f"evalloop_bench_monitor_{uuid.uuid4().hex[:8]}")
    await migrate(dsn)
    return dsn


async def drop_database(admin_dsn: str, dsn: str) -> None:
    """Drop the database of ``dsn`` (forcing out connections)."""
    name = dsn.rsplit("/", 1)[1].split("?")[0]
    conn = await asyncpg.connect(admin_dsn)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


def settings_for(dsn: str, kafka: KafkaSettings | None = None) -> Settings:
    """Settings of one phase: its database, the benchmark's monitor thresholds, Kafka."""
    return Settings(postgres=PostgresSettings(dsn=dsn), monitor=MONITOR,
                    kafka=kafka or KafkaSettings())


class TimedBus(InProcessBus):
    """The in-process bus, noting when each message was appended (perf_counter seconds)."""

    def __init__(self) -> None:
        super().__init__()
        self.appended: dict[str, list[float]] = {}

    async def publish(self, topic: str, value: bytes, *, key: str | None = None,
                      headers: Mapping[str, str] | None = None) -> None:
        await super().publish(topic, value, key=key, headers=headers)
        self.appended.setdefault(topic, []).append(time.perf_counter())


async def paced(n: int, rate: float, send: Any) -> float:
    """Call ``await send(i)`` for i in 0..n-1 at ``rate`` per second; return achieved rate."""
    start = time.perf_counter()
    i = 0
    while i < n:
        due = min(n, int((time.perf_counter() - start) * rate) + 1)
        while i < due:
            await send(i)
            i += 1
        await asyncio.sleep(0.005)
    return n / (time.perf_counter() - start)


# --------------------------------------------------------------------------- phase 1


async def sql_baseline(pool: asyncpg.Pool, n: int = 2000) -> Stats:
    """Latency of ``n`` bare ``SELECT 1`` round trips on ``pool``."""
    out = []
    for _ in range(n):
        t = time.perf_counter()
        await pool.fetchval("SELECT 1")
        out.append(time.perf_counter() - t)
    return Stats.of(out)


async def bus_baseline(n: int, rate: float) -> Stats:
    """Latency of a bare in-process bus hop (publish -> handler) at ``rate`` per second."""
    bus = TimedBus()
    got: list[float] = []

    async def handler(records: list[Record]) -> None:
        now = time.perf_counter()
        got.extend(now for _ in records)

    bus.subscribe("x", "g", handler)
    runner = asyncio.create_task(bus.run())
    await paced(n, rate, lambda i: bus.publish("x", b"{}", key="k"))
    await bus.drain()
    bus.stop()
    await runner
    sent = bus.appended["x"]
    return Stats.of([g - s for g, s in zip(got, sent, strict=True)])


async def in_process_phase(admin_dsn: str, events: list[Any], rate: float,
                           predicted: dict[str, int]) -> dict[str, Any]:
    """Phase 1: paced events on the in-process bus, the monitor on real PostgreSQL."""
    dsn = await fresh_database(admin_dsn)
    pool = await connect_pool(dsn, min_size=2, max_size=4)
    try:
        bus = TimedBus()
        topics = Topics()
        svc = MonitorService(Deps(settings=settings_for(dsn), pool=pool, bus=bus, topics=topics))
        mount_in_process(bus, svc)
        await svc.start()
        runner = asyncio.create_task(bus.run())
        payloads = [(e.agent_id, dump_event(e)) for e in events]
        achieved = await paced(
            len(payloads), rate,
            lambda i: bus.publish(topics.feedback_recorded, payloads[i][1], key=payloads[i][0]),
        )
        await bus.drain()
        bus.stop()
        await runner
        await svc.stop()
        arrived = bus.appended[topics.feedback_recorded]
        published = dict(zip(
            (ReevalRequested.model_validate_json(r.value).agent_id
             for r in bus.messages(topics.reeval_requested)),
            bus.appended.get(topics.reeval_requested, []), strict=True,
        ))
        assert sorted(published) == sorted(predicted), "requested agents differ from predicted"
        latency = Stats.of([published[a] - arrived[i] for a, i in predicted.items()])
        sql = await sql_baseline(pool)
        return {"achieved": achieved, "latency": latency, "sql": sql,
                "requests": len(published)}
    finally:
        await pool.close()
        await drop_database(admin_dsn, dsn)


# --------------------------------------------------------------------------- phase 2 (Kafka)


def _quiet_faststream() -> None:
    """FastStream logs two INFO lines per batch (set up when the broker starts): keep WARNING."""
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("faststream"):
            logging.getLogger(name).setLevel(logging.WARNING)


async def kafka_phase(admin_dsn: str, bootstrap: str, events: list[Any], rate: float,
                      predicted: dict[str, int]) -> dict[str, Any]:
    """Phase 2: paced events produced to real Kafka, the monitor's FastStream app."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from faststream import TestApp

    from evalloop.adapters.kafka import ensure_topics
    from services.monitor.app import build_app

    prefix = f"bench{uuid.uuid4().hex[:8]}."
    topics = Topics.with_prefix(prefix)
    kafka = KafkaSettings(bootstrap=bootstrap, topic_prefix=prefix)
    await ensure_topics(kafka, topics)
    dsn = await fresh_database(admin_dsn)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=0, acks="all")
    listener = AIOKafkaConsumer(topics.reeval_requested, bootstrap_servers=bootstrap,
                                group_id=f"bench-{uuid.uuid4().hex}",
                                auto_offset_reset="earliest")
    acked: dict[int, float] = {}
    requests: dict[str, float] = {}
    try:
        await producer.start()
        await listener.start()
        # baseline: produce -> consume of a small record on the same broker
        probe = AIOKafkaConsumer(topics.golden_set_published, bootstrap_servers=bootstrap,
                                 group_id=f"bench-{uuid.uuid4().hex}",
                                 auto_offset_reset="earliest")
        await probe.start()
        hop: list[float] = []
        for j in range(200):
            value = str(j).encode()
            t = time.time()
            await producer.send_and_wait(topics.golden_set_published, value, key=b"k")
            async with asyncio.timeout(30):
                seen = False
                while not seen:
                    batch = await probe.getmany(timeout_ms=1000)
                    seen = any(r.value == value for recs in batch.values() for r in recs)
            hop.append(time.time() - t)
        await probe.stop()
        app = build_app(settings_for(dsn, kafka))
        async with TestApp(app):
            _quiet_faststream()
            payloads = [(e.agent_id.encode(), dump_event(e)) for e in events]
            crossing = {i: a for a, i in predicted.items()}

            async def send(i: int) -> None:
                fut = await producer.send(topics.feedback_recorded, payloads[i][1],
                                          key=payloads[i][0])
                if i in crossing:
                    fut.add_done_callback(lambda _f, i=i: acked.__setitem__(i, time.time()))

            achieved = await paced(len(payloads), rate, send)
            await producer.flush()
            async with asyncio.timeout(120):
                while len(requests) < len(predicted):
                    batch = await listener.getmany(timeout_ms=1000)
                    for recs in batch.values():
                        for r in recs:
                            req = ReevalRequested.model_validate_json(r.value)
                            requests[req.agent_id] = r.timestamp / 1000
            await asyncio.sleep(1.0)
            batch = await listener.getmany(timeout_ms=500)
            extra = sum(len(v) for v in batch.values())
        assert sorted(requests) == sorted(predicted), "requested agents differ from predicted"
        assert extra == 0, f"{extra} unexpected extra requests"
        latency = Stats.of([requests[a] - acked[i] for a, i in predicted.items()])
        return {"achieved": achieved, "latency": latency, "hop": Stats.of(hop),
                "requests": len(requests)}
    finally:
        await producer.stop()
        await listener.stop()
        await drop_database(admin_dsn, dsn)


# --------------------------------------------------------------------------- phase 3 (memory)


async def memory_phase(admin_dsn: str, agents: int, total: int, slices: int) -> list[tuple]:
    """``[(events fed, buckets held, traced bytes)]`` after each of ``slices`` slices."""
    dsn = await fresh_database(admin_dsn)
    pool = await connect_pool(dsn, min_size=1, max_size=2)
    rows: list[tuple] = []
    try:
        svc = MonitorService(Deps(settings=settings_for(dsn), pool=pool, bus=InProcessBus(),
                                  topics=Topics()))
        rng = random.Random(11)
        per_slice = total // slices
        fed = 0
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(slices):
            batch: list[Record] = []
            for j in range(per_slice):
                n = fed + j
                agent = f"agent-{n % agents:04d}"
                # each agent's turns 2 minutes apart in event time: the window slides
                t = T0 + timedelta(minutes=2 * (n // agents))
                e: Any = AgentResponse(event_id=uuid.uuid4(), agent_id=agent,
                                       conversation_id=f"c{n}", turn_id="1", occurred_at=t)
                if rng.random() < 0.01:
                    e = UserRating(event_id=uuid.uuid4(), agent_id=agent,
                                   conversation_id=f"c{n - agents}", turn_id="1",
                                   occurred_at=t, thumbs="down")
                batch.append(Record("feedback", agent, dump_event(e)))
            for k in range(0, len(batch), 1000):
                await svc.on_feedback_events(batch[k:k + 1000])
            fed += per_slice
            del batch
            gc.collect()
            held = sum(len(w) for a in range(agents)
                       if (w := svc.window(f"agent-{a:04d}")) is not None)
            traced = tracemalloc.get_traced_memory()[0] - base
            rows.append((fed, held, traced))
        tracemalloc.stop()
        return rows
    finally:
        await pool.close()
        await drop_database(admin_dsn, dsn)


# --------------------------------------------------------------------------- main


async def main(args: argparse.Namespace) -> None:
    """Run every phase and print the figures."""
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # new groups: coordinator retries
    admin = os.environ.get("EVALLOOP_TEST_PG_DSN") or start_embedded(
        Path(f"/var/tmp/evalloop-test-{os.getuid()}/pg"))
    per_agent = args.per_agent
    events = workload(args.agents, per_agent, seed=args.seed)
    n = min(len(events), int(args.rate * args.seconds))
    events = events[:n]
    predicted = predict_crossings(events, MONITOR)
    print(f"monitor benchmark: {args.agents} agents, {n} events at {args.rate:g} events/s "
          f"(~{n / args.rate:.0f} s), {len(predicted)} crossings predicted by the core; "
          f"PostgreSQL 18, {os.cpu_count()} cores")
    print(f"trigger: rate > {MONITOR.threshold:.0%} with >= {MONITOR.min_turns} turns and "
          f">= {MONITOR.min_negatives} negatives over 24 h of event time")

    bus_base = await bus_baseline(2000, args.rate)
    r = await in_process_phase(admin, events, args.rate, predicted)
    print("\n[1] in-process bus + real PostgreSQL "
          f"(achieved {r['achieved']:.0f} events/s, {r['requests']} requests = predicted)")
    print(f"    crossing event -> reeval.requested.v1   {r['latency']}")
    print(f"    baseline: bare SQL round trip            {r['sql']}")
    print(f"    baseline: bare bus hop (publish->handler) {bus_base}")
    print(f"    p99 target < 1000 ms: {'MET' if r['latency'].p99 < 1000 else 'MISSED'}; "
          f"p50 = {r['latency'].p50 / r['sql'].p50:.1f} x a bare SQL round trip")

    if args.kafka:
        bootstrap = os.environ.get("EVALLOOP_TEST_KAFKA_BOOTSTRAP")
        home = None
        if not bootstrap:
            from evalloop.adapters import local_kafka

            libs = local_kafka.fetch(ROOT / "deploy" / "kafka" / "pom.xml")
            home = Path(tempfile.mkdtemp(prefix="evalloop-bench-kafka-", dir="/var/tmp"))
            server = await local_kafka.start(libs, home / "broker")
            bootstrap = server.bootstrap
        try:
            k = await kafka_phase(admin, bootstrap, events, args.rate, predicted)
        finally:
            if home is not None:
                local_kafka.stop(home / "broker", grace_s=10.0, remove=True)
        print(f"\n[2] real Kafka ({bootstrap}) + real PostgreSQL, FastStream app "
              f"(achieved {k['achieved']:.0f} events/s, {k['requests']} requests = predicted)")
        print(f"    crossing event acked -> request record   {k['latency']}")
        print(f"    baseline: bare produce->consume hop       {k['hop']}")
        print(f"    p99 target < 1000 ms: {'MET' if k['latency'].p99 < 1000 else 'MISSED'}; "
              f"p50 = {k['latency'].p50 / k['hop'].p50:.1f} x a bare Kafka hop "
              "(timestamps: ms resolution)")

    rows = await memory_phase(admin, args.mem_agents, args.mem_events, 5)
    bound = args.mem_agents * (MONITOR.window_s // MONITOR.bucket_s)
    print(f"\n[3] memory, {args.mem_agents} agents, event time advancing 2 min per turn per "
          f"agent (bound: {args.mem_agents} x 288 = {bound} buckets)")
    print("    events fed   buckets held   traced memory (tracemalloc, since start)")
    for fed, held, traced in rows:
        print(f"    {fed:>10}   {held:>12}   {traced / 1e6:8.2f} MB")
    growth = (rows[-1][2] - rows[2][2]) / max(1, rows[-1][0] - rows[2][0])
    print(f"    growth once the window is full (slice 3 to 5): {growth:.2f} bytes/event "
          "(a per-event or per-turn structure would add >= ~100 bytes/event)")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rate", type=float, default=1000.0, help="events per second")
    p.add_argument("--seconds", type=float, default=30.0, help="length of the paced phases")
    p.add_argument("--agents", type=int, default=150)
    p.add_argument("--per-agent", type=int, default=180, help="turns per agent")
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--kafka", action="store_true", help="also run the load through Kafka")
    p.add_argument("--mem-agents", type=int, default=50)
    p.add_argument("--mem-events", type=int, default=100_000)
    asyncio.run(main(p.parse_args()))
