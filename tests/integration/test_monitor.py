"""The monitor on real PostgreSQL (in-process bus): exact counts, firing once per crossing,
late events, restarts, the outbox, agent changes and the weekly schedule."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from uuid import UUID, uuid4, uuid5

import asyncpg
import pytest

from evalloop.adapters import monitor_store as store
from evalloop.adapters.bus import InProcessBus, Record
from evalloop.errors import BusError, StorageError
from evalloop.events import (
    AgentChanged,
    AgentResponse,
    ConversationOutcome,
    Escalation,
    ReevalRequested,
    UserRating,
    dump_event,
)
from evalloop.runtime import Deps, mount_in_process
from evalloop.settings import MonitorSettings, PostgresSettings, Settings
from evalloop.topics import Topics
from services.monitor.requests import JOB_NAMESPACE
from services.monitor.service import MonitorService

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
TOPICS = Topics()
MONITOR = MonitorSettings(min_turns=100, min_negatives=5, threshold=0.02, clear_below=0.015,
                          cooldown_s=6 * 3600)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def served(agent: str, turn: int, t: datetime) -> AgentResponse:
    return AgentResponse(event_id=uuid4(), agent_id=agent, conversation_id=f"c{turn}",
                         turn_id=f"t{turn}", occurred_at=t, question="q?", answer="a.")


def down(agent: str, turn: int, t: datetime) -> UserRating:
    return UserRating(event_id=uuid4(), agent_id=agent, conversation_id=f"c{turn}",
                      turn_id=f"t{turn}", occurred_at=t, thumbs="down")


def up(agent: str, turn: int, t: datetime) -> UserRating:
    return UserRating(event_id=uuid4(), agent_id=agent, conversation_id=f"c{turn}",
                      turn_id=f"t{turn}", occurred_at=t, thumbs="up")


def records(events: Sequence[Any]) -> list[Record]:
    return [
        Record(topic=TOPICS.feedback_recorded, key=e.agent_id, value=dump_event(e), offset=i)
        for i, e in enumerate(events)
    ]


class FailingBus(InProcessBus):
    """The in-process bus with its publisher down (a fault at our own port)."""

    async def publish(self, topic: str, value: bytes, *, key: str | None = None,
                      headers: Mapping[str, str] | None = None) -> None:
        raise BusError(f"publish to {topic} failed: broker unreachable (test)")


def make(pool: asyncpg.Pool, bus: InProcessBus | None = None,
         monitor: MonitorSettings = MONITOR, **extras: Any) -> MonitorService:
    settings = Settings(postgres=PostgresSettings(dsn="postgresql://unused@localhost/x"),
                        monitor=monitor)
    return MonitorService(Deps(settings=settings, pool=pool, bus=bus or InProcessBus(),
                               topics=TOPICS, extras=extras))


def requests_on(bus: InProcessBus) -> list[ReevalRequested]:
    return [ReevalRequested.model_validate_json(r.value)
            for r in bus.messages(TOPICS.reeval_requested)]


async def bucket_sums(pool: asyncpg.Pool, agent: str) -> tuple[int, int, int, int]:
    row = await pool.fetchrow(
        "SELECT coalesce(sum(served),0) s, coalesce(sum(negatives),0) n,"
        " coalesce(sum(signalled),0) g, coalesce(sum(turns),0) t"
        " FROM monitor_buckets WHERE agent_id = $1", agent)
    assert row is not None
    return row["s"], row["n"], row["g"], row["t"]


async def handle(svc: MonitorService, events: Sequence[Any], batch: int = 1000) -> None:
    recs = records(events)
    for i in range(0, len(recs), batch):
        await svc.on_feedback_events(recs[i:i + batch])


# --------------------------------------------------------------------------- exact counts


async def test_counts_are_exact_under_duplicates_and_redelivery(pool: asyncpg.Pool) -> None:
    bus = InProcessBus()
    svc = make(pool, bus)
    events: list[Any] = [served("a", i, at(i)) for i in range(300)]
    events += [down("a", i, at(i + 2)) for i in range(0, 20, 4)]  # 5 negatives
    events += [up("a", i, at(i + 3)) for i in range(100, 110)]  # 10 positive signals
    events += [Escalation(event_id=uuid4(), agent_id="a", conversation_id="c1", turn_id="t1",
                          occurred_at=at(5), requested_by="user")]  # signal, not negative
    doubled = events + events  # every event sent twice (re-sent by the producer)
    random.Random(7).shuffle(doubled)
    await handle(svc, doubled, batch=97)
    expected = (300, 5, 16, 300)
    assert await bucket_sums(pool, "a") == expected
    assert await pool.fetchval("SELECT count(*) FROM monitor_turns WHERE agent_id='a'") == 300
    # redelivery of everything, by a fresh process (no cache): nothing changes
    await handle(make(pool, bus), doubled, batch=1000)
    assert await bucket_sums(pool, "a") == expected
    assert await pool.fetchval("SELECT last_negatives || '/' || last_turns FROM monitor_state"
                               " WHERE agent_id = 'a'") == "5/300"
    assert requests_on(bus) == []  # 5/300 = 1.7% <= 2%
    assert await pool.fetchval("SELECT count(*) FROM reeval_jobs") == 0


async def test_fires_once_per_crossing_with_exact_window_and_interval(
    pool: asyncpg.Pool,
) -> None:
    bus = InProcessBus()
    svc = make(pool, bus, clock=lambda: datetime(2026, 3, 3, tzinfo=UTC))
    await handle(svc, [served("a", i, at(i * 3)) for i in range(200)])  # 10:00 .. 19:57
    negatives = [down("a", i, at(600 + i)) for i in range(10)]  # 20:00 ..
    await handle(svc, negatives[:4])
    assert requests_on(bus) == []  # 4/200 = 2.0%: not above
    await handle(svc, negatives[4:])  # the 5th negative crosses: 5/200 = 2.5%
    (r,) = requests_on(bus)
    assert (r.trigger, r.agent_id, r.negatives, r.turns, r.denominator) == (
        "negative_rate", "a", 5, 200, "agent_response"
    )
    assert r.rate == 0.025
    assert (round(r.wilson_low or 0, 4), round(r.wilson_high or 0, 4)) == (0.0107, 0.0572)
    # the exact window (t - 24 h, t] ending at the crossing event (docs/operations.md#the-window)
    assert (r.window_start, r.window_end) == (at(604) - timedelta(days=1), at(604))
    assert r.reason == (
        "negative rate 2.5% [1.1%, 5.7%] over 24 h ending 2026-03-02T20:04:00Z, "
        "5/200 turns served > 2%"
    )
    assert r.job_id == uuid5(JOB_NAMESPACE, f"negative_rate/a/{at(604).isoformat()}")
    # a burst of duplicates of every negative, and more negatives: still the same crossing
    await handle(svc, negatives * 5 + [down("a", i, at(620 + i)) for i in range(10, 20)])
    assert len(requests_on(bus)) == 1
    job = await pool.fetchrow("SELECT * FROM reeval_jobs")
    assert job is not None
    assert (job["job_id"], job["trigger"], job["status"], job["reason"]) == (
        r.job_id, "negative_rate", "requested", r.reason
    )
    assert job["published_at"] is not None
    assert job["request"] == json.loads(r.model_dump_json())
    assert await pool.fetchval("SELECT phase FROM monitor_state WHERE agent_id='a'") == "fired"


async def test_quiet_night_and_min_negatives_do_not_fire(pool: asyncpg.Pool) -> None:
    bus = InProcessBus()
    svc = make(pool, bus)
    # 1 of 3 bad on a quiet night
    await handle(svc, [served("night", i, at(i)) for i in range(3)] + [down("night", 0, at(5))])
    # 4 of 120 bad (3.3%): above the rate, under min_negatives=5
    await handle(svc, [served("few", i, at(i)) for i in range(120)]
                 + [down("few", i, at(200)) for i in range(4)])
    assert requests_on(bus) == []
    rows = await pool.fetch("SELECT agent_id, phase, last_negatives, last_turns FROM"
                            " monitor_state ORDER BY agent_id")
    assert [tuple(r) for r in rows] == [("few", "armed", 4, 120), ("night", "armed", 1, 3)]


async def test_decision_does_not_depend_on_batching(pool: asyncpg.Pool) -> None:
    bus = InProcessBus()
    svc = make(pool, bus)
    rng = random.Random(3)
    bad = {i for i in range(400) if rng.random() < 0.04}
    for size in (1, 7, 1000):
        agent = f"b{size}"
        events: list[Any] = []
        for i in range(400):
            events.append(served(agent, i, at(i)))
            if i in bad:
                events.append(down(agent, i, at(i + 1)))
        await handle(svc, events, batch=size)
    reqs = {r.agent_id: r for r in requests_on(bus)}
    assert sorted(reqs) == ["b1", "b1000", "b7"]
    shape = {(r.negatives, r.turns, r.window_end, r.rate) for r in reqs.values()}
    assert len(shape) == 1  # the same crossing, however the bus batched


async def test_fallback_denominator_is_signalled_turns(pool: asyncpg.Pool) -> None:
    bus = InProcessBus()
    svc = make(pool, bus)
    # a producer that sends ratings only: 95 up, 5 down
    events = [up("r", i, at(i)) for i in range(95)] + [down("r", i, at(i)) for i in range(95, 100)]
    await handle(svc, events)
    (r,) = requests_on(bus)
    assert (r.denominator, r.negatives, r.turns, r.rate) == ("signalled_turns", 5, 100, 0.05)
    assert r.reason.endswith("5/100 signalled turns > 2%")


async def test_weak_negative_outcome_counts_once_per_turn(pool: asyncpg.Pool) -> None:
    svc = make(pool)
    e = [served("w", 1, at(0)),
         ConversationOutcome(event_id=uuid4(), agent_id="w", conversation_id="c1", turn_id="t1",
                             occurred_at=at(9), resolved=False, abandoned=True),
         down("w", 1, at(3))]
    await handle(svc, e)
    assert await bucket_sums(pool, "w") == (1, 1, 1, 1)


# --------------------------------------------------------------------------- event time


async def test_late_event_lands_in_the_window_it_belongs_to(pool: asyncpg.Pool) -> None:
    svc = make(pool)
    await handle(svc, [served("l", i, at(i * 6)) for i in range(300)])  # 10:00 .. +29.9 h
    newest = at(299 * 6)
    # late negative for a turn 2 h before the newest event: inside the window
    await handle(svc, [down("l", 280, at(280 * 6 + 1))])
    w = svc.window("l")
    assert w is not None and w.newest == newest
    assert (w.totals.negatives, w.totals.turns) == (1, 240)
    # late negative for a turn 28 h before the newest: stored in its bucket, outside the window
    await handle(svc, [down("l", 10, at(61))])
    assert (w.totals.negatives, w.totals.turns) == (1, 240)
    assert await pool.fetchval(
        "SELECT negatives FROM monitor_buckets WHERE agent_id='l' AND bucket_start=$1", at(60)
    ) == 1
    # its agent_response arriving after its rating: the turn moves to the response's bucket
    await handle(svc, [down("l", 999, at(290 * 6))])
    await handle(svc, [served("l", 999, at(285 * 6))])
    assert await pool.fetchval(
        "SELECT bucket_start FROM monitor_turns WHERE agent_id='l' AND turn_id='t999'"
    ) == at(285 * 6)
    assert await bucket_sums(pool, "l") == (301, 3, 3, 301)
    # the timeline shows the late negative in the hours whose window holds it
    points = await store.rate_timeline(pool, "l", settings=MONITOR)
    by_end = {p.window_end: p for p in points}
    assert (by_end[at(120)].negatives, by_end[at(120)].turns) == (1, 20)  # 12:00: t10 at 11:01
    assert by_end[at(120)].denominator == "agent_response"
    assert (by_end[at(60)].negatives, by_end[at(60)].turns) == (0, 10)
    last = points[-1]
    assert last.window_end == at(30 * 60)
    assert (last.negatives, last.turns) == (2, 241)


# --------------------------------------------------------------------------- restarts, outbox


async def test_restart_restores_state_without_double_firing(pool: asyncpg.Pool) -> None:
    bus = InProcessBus()
    first = make(pool, bus)
    await handle(first, [served("r", i, at(i)) for i in range(200)]
                 + [down("r", i, at(i + 1)) for i in range(6)])
    assert len(requests_on(bus)) == 1
    # a new process on the same database: more negatives above the threshold
    second = make(pool, bus)
    await second.start()
    try:
        await handle(second, [down("r", i, at(i + 1)) for i in range(6, 12)])
        assert len(requests_on(bus)) == 1  # same crossing: no second request
        w = second.window("r")
        assert w is not None and (w.totals.negatives, w.totals.turns) == (12, 200)
        # the rate clears (1.2% < 1.5%): re-armed, persisted
        await handle(second, [served("r", i, at(200 + (i - 200) / 10)) for i in range(200, 1000)])
        assert await pool.fetchval("SELECT phase FROM monitor_state WHERE agent_id='r'") == "armed"
    finally:
        await second.stop()
    # a third process: a new crossing within the 6 h cooldown (event time) does not fire...
    third = make(pool, bus)
    # (it fired at 13:19, the newest event time then; now it is 14:41)
    await handle(third, [down("r", i, at(281)) for i in range(200, 220)])  # 32/1000
    assert len(requests_on(bus)) == 1
    await handle(third, [served("r", 5000, at(199 + 6 * 60 - 1))])
    assert len(requests_on(bus)) == 1
    # ...once the cooldown has passed it does
    await handle(third, [served("r", 5001, at(199 + 6 * 60))])
    reqs = requests_on(bus)
    assert len(reqs) == 2
    assert (reqs[1].negatives, reqs[1].turns) == (32, 1002)
    assert reqs[1].window_end == at(199 + 6 * 60)  # the event that fired it


async def test_two_instances_alternating_on_one_agent_stay_exact(pool: asyncpg.Pool) -> None:
    # e.g. a Kafka rebalance moving the agent's partition back and forth
    bus = InProcessBus()
    a, b = make(pool, bus), make(pool, bus)
    events: list[Any] = [served("x", i, at(i)) for i in range(90)]
    events += [down("x", i, at(i)) for i in range(0, 90, 30)]
    await handle(a, events[:40])
    await handle(b, events[40:80])
    await handle(a, events[80:])  # a's cached window is stale (seq moved on): reloaded
    w = a.window("x")
    assert w is not None and (w.totals.served, w.totals.negatives, w.totals.turns) == (90, 3, 90)
    assert await bucket_sums(pool, "x") == (90, 3, 3, 90)


async def test_a_failed_batch_changes_nothing_and_its_redelivery_counts_once(
    pool: asyncpg.Pool,
) -> None:
    bus = InProcessBus()
    svc = make(pool, bus)
    first = [served("f", i, at(i)) for i in range(50)]
    await handle(svc, first)
    second = [served("f", i, at(i)) for i in range(50, 100)] + [down("f", 1, at(1))]
    await pool.execute("ALTER TABLE monitor_buckets RENAME TO monitor_buckets_away")
    try:
        with pytest.raises(StorageError, match="monitor batch failed"):
            await handle(svc, second)
    finally:
        await pool.execute("ALTER TABLE monitor_buckets_away RENAME TO monitor_buckets")
    assert await pool.fetchval("SELECT count(*) FROM monitor_turns") == 50  # rolled back
    assert svc.window("f") is None  # the cache saw uncommitted deltas: dropped
    await handle(svc, second)  # the redelivery
    await handle(svc, second)  # and a duplicate of it
    w = svc.window("f")
    assert w is not None and (w.totals.served, w.totals.negatives, w.totals.turns) == (100, 1, 100)
    assert await bucket_sums(pool, "f") == (100, 1, 1, 100)


async def test_outbox_republishes_after_a_failed_publish(pool: asyncpg.Pool) -> None:
    down_bus = FailingBus()
    svc = make(pool, down_bus)
    with pytest.raises(BusError, match="broker unreachable"):
        await handle(svc, [served("o", i, at(i)) for i in range(100)]
                     + [down("o", i, at(i)) for i in range(5)])
    # committed before the publish: the job is recorded, unpublished
    row = await pool.fetchrow("SELECT job_id, published_at FROM reeval_jobs")
    assert row is not None and row["published_at"] is None
    # restart with a working bus: start() publishes the outbox once
    bus = InProcessBus()
    again = make(pool, bus)
    await again.start()
    await again.stop()
    assert [r.job_id for r in requests_on(bus)] == [row["job_id"]]
    assert await pool.fetchval("SELECT published_at IS NOT NULL FROM reeval_jobs")
    # the redelivered batch neither records nor publishes anything new
    await handle(again, [served("o", i, at(i)) for i in range(100)]
                 + [down("o", i, at(i)) for i in range(5)])
    await make(pool, bus).start()
    assert len(requests_on(bus)) == 1
    assert await pool.fetchval("SELECT count(*) FROM reeval_jobs") == 1


async def test_through_the_in_process_bus(pool: asyncpg.Pool) -> None:
    bus = InProcessBus()
    svc = make(pool, bus)
    mount_in_process(bus, svc)
    events: list[Any] = [served("p", i, at(i)) for i in range(150)]
    events += [down("p", i, at(i)) for i in range(4)]
    for e in events:
        await bus.publish(TOPICS.feedback_recorded, dump_event(e), key=e.agent_id)
    await bus.publish(TOPICS.feedback_recorded, b"{not json", key="p")  # skipped, counted
    await bus.publish(TOPICS.feedback_recorded, dump_event(down("p", 4, at(4))), key="p")
    runner = asyncio.create_task(bus.run())
    try:
        await bus.drain(timeout_s=60)
    finally:
        bus.stop()
        await runner
    (r,) = requests_on(bus)
    assert (r.negatives, r.turns) == (5, 150)
    assert bus.messages(TOPICS.reeval_requested)[0].key == "p"
    assert svc.skipped == 1


# --------------------------------------------------------------------------- cadence triggers


def change(agent: str, kind: str, version: str, docs: list[str] | None = None) -> AgentChanged:
    return AgentChanged(event_id=uuid4(), agent_id=agent, conversation_id="-", turn_id="-",
                        occurred_at=at(0), change_kind=kind,  # type: ignore[arg-type]
                        new_version=version, changed_documents=docs or [])


async def test_agent_changes_request_jobs_once_per_version(pool: asyncpg.Pool) -> None:
    bus = InProcessBus()
    svc = make(pool, bus)
    prompt = change("hr", "system_prompt", "p-7")
    model = change("hr", "model_version", "gpt-x-2")
    kb = change("hr", "knowledge_base", "kb-12", ["leave-policy.pdf", "transport.pdf"])
    await handle(svc, [prompt, model, kb])
    await handle(svc, [kb, prompt, model])  # redelivered / re-sent
    await handle(make(pool, bus), [model])  # and seen by a restarted process
    reqs = requests_on(bus)
    assert [(r.trigger, r.job_id) for r in reqs] == [
        ("system_prompt", uuid5(JOB_NAMESPACE, "agent_changed/hr/system_prompt/p-7")),
        ("model_version", uuid5(JOB_NAMESPACE, "agent_changed/hr/model_version/gpt-x-2")),
        ("knowledge_base", uuid5(JOB_NAMESPACE, "agent_changed/hr/knowledge_base/kb-12")),
    ]
    assert reqs[0].reason == (
        "system prompt changed to p-7 at 2026-03-02T10:00:00Z: runs the full golden set "
        "(docs/rules.md#eval-cadence)"
    )
    assert reqs[2].changed_documents == ["leave-policy.pdf", "transport.pdf"]
    assert reqs[2].reason == (
        "knowledge base updated to kb-12 at 2026-03-02T10:00:00Z: 2 changed document(s) "
        "(leave-policy.pdf, transport.pdf); runs the cases relevant to the changed content "
        "(docs/rules.md#eval-cadence)"
    )
    assert await pool.fetchval("SELECT count(*) FROM reeval_jobs") == 3
    assert await pool.fetchval("SELECT count(*) FROM monitor_turns") == 0  # not turns


async def test_weekly_sample_once_per_period_across_restarts(pool: asyncpg.Pool) -> None:
    bus = InProcessBus()
    svc = make(pool, bus)
    await handle(svc, [served("wk", 1, at(0))])
    seen = await pool.fetchval("SELECT last_weekly_at FROM monitor_state WHERE agent_id='wk'")
    week = timedelta(days=7)
    assert await svc.request_weekly_samples(now=seen + week - timedelta(seconds=1)) == []
    (job_id,) = await svc.request_weekly_samples(now=seen + week)
    assert await svc.request_weekly_samples(now=seen + week + timedelta(hours=1)) == []
    restarted = make(pool, bus)
    assert await restarted.request_weekly_samples(now=seen + week + timedelta(days=1)) == []
    (next_id,) = await restarted.request_weekly_samples(now=seen + 2 * week)
    reqs = requests_on(bus)
    assert [r.job_id for r in reqs] == [job_id, next_id]
    assert job_id == uuid5(JOB_NAMESPACE, f"weekly_sample/wk/{seen.isoformat()}")
    assert [(r.trigger, r.sample_size) for r in reqs] == [("weekly_sample", 10)] * 2
    assert reqs[0].sample_seed != reqs[1].sample_seed
    assert reqs[0].reason == (
        f"scheduled production monitoring (every week): random sample of 10 cases, seed "
        f"{reqs[0].sample_seed} (docs/rules.md#eval-cadence)"
    )


async def test_jobs_are_listed_newest_first_with_filters(pool: asyncpg.Pool) -> None:
    bus = InProcessBus()
    svc = make(pool, bus)
    await handle(svc, [change("x", "system_prompt", "v1")])
    await handle(svc, [served("y", i, at(i)) for i in range(100)]
                 + [down("y", i, at(i)) for i in range(5)])
    await pool.execute("UPDATE reeval_jobs SET status='succeeded', result=$1 WHERE agent_id='x'",
                       {"gates": {"passed": 28, "failed": 1}})
    jobs = await store.list_jobs(pool)
    assert [j.agent_id for j in jobs] == ["y", "x"]
    assert [j.trigger for j in await store.list_jobs(pool, status="succeeded")] == [
        "system_prompt"
    ]
    (x,) = await store.list_jobs(pool, agent_id="x")
    assert x.result == {"gates": {"passed": 28, "failed": 1}}
    assert isinstance(x.job_id, UUID)


# --------------------------------------------------------------------------- cost amplification


async def test_a_flood_of_change_events_for_one_version_is_one_job(pool: asyncpg.Pool) -> None:
    """500 agent_changed events (new ids each) announcing one version: one full run, not 500."""
    bus = InProcessBus()
    svc = make(pool, bus)
    flood = [change("hr", "system_prompt", "p-8") for _ in range(500)]
    await handle(svc, flood, batch=100)
    await handle(make(pool, bus), flood[:3])  # another process, same version
    reqs = requests_on(bus)
    assert [(r.trigger, r.job_id) for r in reqs] == [
        ("system_prompt", uuid5(JOB_NAMESPACE, "agent_changed/hr/system_prompt/p-8")),
    ]
    assert await pool.fetchval("SELECT count(*) FROM reeval_jobs") == 1


async def test_new_versions_within_the_cooldown_are_not_re_evaluated(
    pool: asyncpg.Pool,
) -> None:
    """New version ids every event (the attacker's variant): one job per (agent, kind) per
    cooldown; other kinds and other agents are not held back."""
    now = [datetime(2026, 3, 2, 12, 0, tzinfo=UTC)]
    bus = InProcessBus()
    svc = make(pool, bus, MonitorSettings(**{**MONITOR.model_dump(), "change_cooldown_s": 3600}),
               clock=lambda: now[0])
    await handle(svc, [change("hr", "system_prompt", f"p-{i}") for i in range(50)], batch=10)
    await handle(svc, [change("hr", "model_version", "m-1"), change("cdc", "system_prompt", "c")])
    now[0] += timedelta(seconds=3599)
    await handle(svc, [change("hr", "system_prompt", "p-late")])
    now[0] += timedelta(seconds=1)
    await handle(svc, [change("hr", "system_prompt", "p-after")])
    assert [(r.agent_id, r.trigger, r.reason.split(" at ")[0]) for r in requests_on(bus)] == [
        ("hr", "system_prompt", "system prompt changed to p-0"),
        ("hr", "model_version", "model version changed to m-1"),
        ("cdc", "system_prompt", "system prompt changed to c"),
        ("hr", "system_prompt", "system prompt changed to p-after"),
    ]
    assert svc.cooled_down == 50  # p-1..p-49 and p-late


async def test_the_window_cache_is_bounded(pool: asyncpg.Pool) -> None:
    svc = make(pool, monitor=MonitorSettings(**{**MONITOR.model_dump(), "max_cached_agents": 3}))
    await handle(svc, [served(f"agent-{i}", 1, at(i)) for i in range(10)])
    assert svc.describe()["agents"] == 3
    assert svc.window("agent-9") is not None and svc.window("agent-0") is None
    # an evicted agent is rebuilt from its stored buckets: its counts are intact
    await handle(svc, [served("agent-0", 2, at(20))])
    w = svc.window("agent-0")
    assert w is not None and w.totals.turns == 2


# --------------------------------------------------------------------------- the exact window


async def test_window_is_exact_to_the_millisecond_whatever_the_offset(pool: asyncpg.Pool) -> None:
    # docs/operations.md#the-window: (t - 24 h, t]. The newest event is 1 s into its 5-min
    # bucket; a turn 23 h 56 min old was left out when the window was whole buckets.
    newest = at(5) + timedelta(seconds=1)
    day = timedelta(days=1)
    india, brazil = timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-3))
    older = [
        served("w", 1, (newest - timedelta(hours=23, minutes=56)).astimezone(india)),
        served("w", 2, (newest - day + timedelta(milliseconds=1)).astimezone(brazil)),
        served("w", 3, (newest - day).astimezone(india)),  # exactly 24 h old: out
        served("w", 4, (newest - day - timedelta(minutes=3)).astimezone(brazil)),  # out
    ]
    await handle(make(pool), older)
    # a restarted monitor (no cache) reads the edge bucket's turns from PostgreSQL
    svc = make(pool)
    await handle(svc, [served("w", 5, newest.astimezone(brazil))])
    w = svc.window("w")
    assert w is not None and w.bounds() == (newest - day, newest)
    assert (w.totals.turns, w.totals.served) == (3, 3)  # turns 1, 2 and 5
    assert await pool.fetchval(
        "SELECT last_turns FROM monitor_state WHERE agent_id = 'w'") == 3
    # the same events in one process, newest first: the same count
    await handle(make(pool), [served("x", 5, newest)] + [
        served("x", int(e.conversation_id[1:]), e.occurred_at) for e in older])
    assert await pool.fetchval(
        "SELECT last_turns FROM monitor_state WHERE agent_id = 'x'") == 3
