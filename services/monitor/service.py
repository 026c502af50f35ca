"""Monitor: watches each agent's 24 h negative rate and requests re-evaluations.

Consumes ``feedback.recorded.v1`` (group ``evalloop-monitor``): the events the recorder accepted,
so the monitor counts exactly what the recorder stored and nothing it rejected
(``docs/operations.md#the-recorded-stream``); publishes ``reeval.requested.v1`` keyed by
``agent_id`` when

* the negative rate over the 24 h of event time ending at the agent's newest event exceeds 2%
  with a minimum volume, once per crossing (``docs/rules.md#feedback-loop-trigger``;
  :mod:`evalloop.core.trigger`),
* an ``agent_changed`` event says the system prompt, model or knowledge base changed, and
* once per ``weekly_interval_s`` per agent (a seeded sample; ``docs/rules.md#eval-cadence``).

Each batch is one PostgreSQL transaction: lock the agents' state rows, read the stored flags of
the batch's turns, fold the batch in order (the trigger is evaluated after every event, so the
decision does not depend on how the bus batched), write turn flags, bucket deltas, states and
the requested jobs, commit; then publish the jobs from the outbox (``reeval_jobs.published_at``
NULL) and mark them. A redelivered batch finds its effects stored and changes nothing; a crash
between commit and publish is repaired by re-publishing the outbox at start and on the next
batch. The window is exact, ``(t - 24 h, t]`` (``docs/operations.md#the-window``). In memory:
one :class:`AgentWindow` per agent (<= 289 buckets and the turns of its edge bucket), validated
against the state row's ``seq`` at every batch, so a restart or another instance's work is
picked up.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import asyncpg
from cachetools import LRUCache

from evalloop.adapters import monitor_store as store
from evalloop.adapters.bus import Record
from evalloop.core.fusion import FusionWeights, classify
from evalloop.core.trigger import TriggerConfig, TriggerState, step
from evalloop.core.window import AgentWindow, TurnFlags, TurnKey, TurnLedger, turn_flags
from evalloop.errors import BusError, InvalidEvent, StorageError
from evalloop.events import (
    AgentChanged,
    FeedbackEvent,
    ReevalRequested,
    dump_event,
    parse_event,
    utc_now,
)
from evalloop.runtime import Consumes, Deps, Publishes, Service
from evalloop.topics import GROUP_MONITOR
from services.monitor.requests import change_request, negative_rate_request, weekly_request

__all__ = ["MonitorService"]

log = logging.getLogger("evalloop.monitor")


class MonitorService(Service):
    """Monitor: the 24 h negative rate per agent -> ``reeval.requested.v1`` (once per crossing),
    plus re-evaluations on agent changes and a weekly seeded sample.

    Attributes:
        skipped: records that could not be decoded (the recorder dead-letters them).
        requested: jobs this instance recorded (all triggers).
        published: job requests this instance published.
        cooled_down: agent changes not re-evaluated because of the change cooldown.
    """

    name = "monitor"
    consumes = (
        Consumes("feedback_recorded", GROUP_MONITOR, "on_feedback_events", FeedbackEvent, 1000),
    )
    publishes = (
        Publishes(
            "reeval_requested", ReevalRequested,
            "a re-evaluation job: negative rate > 2% over 24 h, agent change, weekly sample",
        ),
    )

    def __init__(self, deps: Deps) -> None:
        """Build the trigger configuration and the signal classifier from ``deps.settings``.

        ``deps.clock`` (a ``() -> datetime`` UTC) may replace the wall clock used
        for ``requested_at`` and the weekly schedule (tests, replays).

        Raises:
            ValueError: inconsistent monitor or fusion settings.
        """
        super().__init__(deps)
        m = deps.settings.monitor
        self.settings = m
        self.trigger_config = TriggerConfig(
            threshold=m.threshold, clear_below=m.clear_below, min_turns=m.min_turns,
            min_negatives=m.min_negatives, cooldown_s=m.cooldown_s,
        )
        AgentWindow(window_s=m.window_s, bucket_s=m.bucket_s)  # validates the sizes now
        weights = FusionWeights.from_mapping(deps.settings.fusion.model_dump())
        self._weights = weights
        self.clock: Callable[[], datetime] = deps.clock or utc_now
        # bounded: an agent evicted is rebuilt from its stored buckets on its next batch
        self._windows: LRUCache[str, tuple[int, AgentWindow]] = LRUCache(
            maxsize=m.max_cached_agents
        )
        self._outbox_lock = asyncio.Lock()
        self._outbox_dirty = True
        self.skipped = 0
        self.requested = 0
        self.published = 0
        self.cooled_down = 0

    @property
    def pool(self) -> asyncpg.Pool:
        """The PostgreSQL pool."""
        return self.deps.pool

    def _is_negative(self, event: FeedbackEvent) -> bool:
        signal = classify(event, self._weights)
        return signal is not None and signal.negative

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Re-publish jobs left unpublished by a previous process, then start the schedule."""
        try:
            await self.flush_outbox()
        except (BusError, StorageError):
            log.exception("monitor: re-publishing the outbox failed; retrying on the next batch")
        self.start_background(self._schedule_loop, name="monitor-schedule")

    async def _schedule_loop(self) -> None:
        while True:
            try:
                await self.request_weekly_samples()
            except (BusError, StorageError):
                log.exception("monitor: weekly schedule failed; retrying next tick")
            await asyncio.sleep(self.settings.schedule_tick_s)

    # ------------------------------------------------------------------ the handler

    async def on_feedback_events(self, records: list[Record]) -> None:
        """Handle one batch of ``feedback.recorded.v1`` records (see the module docs).

        Records that do not decode (none should: the recorder validated them) are skipped and
        counted (``skipped``); one never stops the batch.

        Raises:
            StorageError: PostgreSQL failed; nothing of the batch was stored (redeliver it).
            BusError: a request could not be published; it stays in the outbox.
        """
        events: list[FeedbackEvent] = []
        for r in records:
            try:
                events.append(parse_event(r.value))
            except InvalidEvent as exc:
                self.skipped += 1
                log.debug("monitor: skipping %s@%s/%s: %s", r.topic, r.partition, r.offset, exc)
        if events and await self._apply(events):
            self._outbox_dirty = True
        if self._outbox_dirty:
            await self.flush_outbox()

    async def _apply(self, events: list[FeedbackEvent]) -> list[UUID]:
        m = self.settings
        observations: list[tuple[datetime, TurnKey, TurnFlags]] = []
        changes: list[AgentChanged] = []
        for e in events:
            flags = turn_flags(e, m.bucket_s, self._is_negative)
            if flags is None:
                assert isinstance(e, AgentChanged)
                changes.append(e)
            else:
                observations.append((e.occurred_at, (e.agent_id, e.conversation_id, e.turn_id),
                                     flags))
        turn_agents = sorted({k[0] for _, k, _ in observations})
        now = self.clock()
        try:
            async with store.transaction(self.pool, "monitor batch") as conn:
                states = await store.lock_states(
                    conn, set(turn_agents) | {c.agent_id for c in changes}
                )
                previous = await store.fetch_turns(conn, {k for _, k, _ in observations})
                windows = await self._windows_for(conn, {a: states[a] for a in turn_agents})
                ledger = TurnLedger(previous)
                trig = {a: states[a].trigger for a in turn_agents}
                jobs = [
                    *await self._fold(conn, observations, ledger, windows, trig, now),
                    *await self._change_requests(conn, changes, now),
                ]
                await store.upsert_turns(conn, ledger.changed())
                await store.add_bucket_deltas(conn, ledger.net_deltas())
                new_states = [self._state(states[a], trig[a], windows[a]) for a in turn_agents]
                await store.save_states(conn, new_states)
                inserted = await store.insert_jobs(conn, jobs)
        except BaseException:
            for a in turn_agents:  # the cache may hold uncommitted deltas: rebuild next time
                self._windows.pop(a, None)
            raise
        for s in new_states:
            self._windows[s.agent_id] = (s.seq, windows[s.agent_id])
        self.requested += len(inserted)
        return inserted

    async def _fold(
        self,
        conn: asyncpg.Connection,
        observations: list[tuple[datetime, TurnKey, TurnFlags]],
        ledger: TurnLedger,
        windows: dict[str, AgentWindow],
        trig: dict[str, TriggerState],
        now: datetime,
    ) -> list[ReevalRequested]:
        """Apply the batch event by event and evaluate the trigger after each one (the window
        exact: ``(t - 24 h, t]``, its edge bucket read turn by turn when it moves,
        ``docs/operations.md#the-window``)."""
        jobs: list[ReevalRequested] = []
        for occurred_at, key, flags in observations:
            agent = key[0]
            w = windows[agent]
            w.advance(occurred_at)
            if w.edge_needed is not None:
                await self._supply_edge(conn, agent, w, ledger)
            for contribution in ledger.observe_exact(key, flags):
                w.add(*contribution)
            assert w.newest is not None
            totals = w.totals
            decision = step(
                trig[agent], negatives=totals.negatives, turns=totals.turns, at=w.newest,
                config=self.trigger_config,
            )
            trig[agent] = decision.state
            if decision.fire:
                report = w.report()
                assert report is not None
                job = negative_rate_request(
                    agent, report, threshold=self.trigger_config.threshold, requested_at=now
                )
                log.info("monitor: %s: re-evaluation requested: %s", agent, job.reason)
                jobs.append(job)
            elif decision.rearmed:
                log.info("monitor: %s: %s", agent, decision.why)
        return jobs

    async def _change_requests(
        self, conn: asyncpg.Connection, changes: list[AgentChanged], now: datetime
    ) -> list[ReevalRequested]:
        """One job per (agent, change kind, new version), and none for a change of a kind
        whose previous job is younger than ``change_cooldown_s`` (wall clock, so forged event
        times cannot shorten it): ``docs/security.md#cost-amplification``."""
        if not changes:
            return []
        cooldown = timedelta(seconds=self.settings.change_cooldown_s)
        last = await store.last_change_jobs(conn, {(c.agent_id, c.change_kind) for c in changes})
        out: dict[UUID, ReevalRequested] = {}
        for c in changes:
            job = change_request(c, requested_at=now)
            if job.job_id in out:
                continue
            pair = (c.agent_id, c.change_kind)
            previous = last.get(pair)
            if previous is not None and now - previous < cooldown:
                self.cooled_down += 1
                log.info("monitor: %s: %s change to %s not re-evaluated: the previous %s job "
                         "was requested at %s, within the %d s cooldown", c.agent_id,
                         c.change_kind, c.new_version, c.change_kind, previous.isoformat(),
                         self.settings.change_cooldown_s)
                continue
            out[job.job_id] = job
            last[pair] = now
        return list(out.values())

    @staticmethod
    async def _supply_edge(
        conn: asyncpg.Connection, agent: str, w: AgentWindow, ledger: TurnLedger | None
    ) -> None:
        """Give ``w`` the turns of its edge bucket: as stored, overridden by what this batch
        changed so far (``ledger``)."""
        bucket = w.edge_needed
        assert bucket is not None
        turns = await store.turns_in_bucket(conn, agent, bucket)
        if ledger is not None:
            turns.update((k, f) for k, f in ledger.current.items() if k[0] == agent)
        w.set_edge(bucket, [(f.time, f.counts()) for f in turns.values() if f.bucket == bucket])

    @staticmethod
    def _state(old: store.AgentState, trig: TriggerState, w: AgentWindow) -> store.AgentState:
        r = w.report()
        return store.AgentState(
            agent_id=old.agent_id, trigger=trig, newest_event_at=w.newest, seq=old.seq + 1,
            last_report=(r.negatives, r.turns, r.rate, r.denominator) if r else None,
        )

    async def _windows_for(
        self, conn: asyncpg.Connection, states: dict[str, store.AgentState]
    ) -> dict[str, AgentWindow]:
        """Cached windows still valid for ``states`` (same ``seq``), others rebuilt from the
        stored buckets."""
        m = self.settings
        out: dict[str, AgentWindow] = {}
        since: dict[str, datetime] = {}
        for agent, st in states.items():
            cached = self._windows.get(agent)
            if cached is not None and cached[0] == st.seq:
                out[agent] = cached[1]
                continue
            w = AgentWindow(window_s=m.window_s, bucket_s=m.bucket_s, newest=st.newest_event_at)
            out[agent] = w
            bounds = w.bounds()
            if bounds is not None:
                since[agent] = bounds[0]
        for agent, buckets in (await store.load_buckets(conn, since)).items():
            out[agent].load(buckets)
            if out[agent].edge_needed is not None:
                await self._supply_edge(conn, agent, out[agent], None)
        return out

    def window(self, agent_id: str) -> AgentWindow | None:
        """The cached window of ``agent_id`` (``None`` until a batch of it was handled)."""
        cached = self._windows.get(agent_id)
        return cached[1] if cached else None

    # ------------------------------------------------------------------ outbox and schedule

    async def flush_outbox(self) -> int:
        """Publish every recorded job whose request is not yet published, oldest first, and
        mark each once the bus acked it. Returns how many were published.

        Raises:
            BusError: the bus refused a request (it stays in the outbox for the next try).
            StorageError: PostgreSQL failed.
        """
        topic = self.deps.topics.reeval_requested
        count = 0
        async with self._outbox_lock:
            self._outbox_dirty = False
            while True:
                jobs = await store.unpublished_jobs(self.pool, limit=500)
                done: list[UUID] = []
                try:
                    for job in jobs:
                        await self.deps.bus.publish(topic, dump_event(job), key=job.agent_id)
                        done.append(job.job_id)
                except BaseException:
                    self._outbox_dirty = True
                    raise
                finally:
                    await store.mark_published(self.pool, done)
                count += len(done)
                if len(jobs) < 500:
                    break
        self.published += count
        return count

    async def request_weekly_samples(self, now: datetime | None = None) -> list[UUID]:
        """Request the weekly sampled re-evaluation of every agent that is due.

        An agent is due ``weekly_interval_s`` after its previous sample (or after the monitor
        first saw it). The due time is moved in the same transaction that records the job,
        and the job id derives from the previous due time, so restarts and concurrent
        instances cannot request one period twice.

        Args:
            now: the current time (UTC); default the service clock.

        Returns:
            Ids of the jobs recorded (and published).

        Raises:
            StorageError: PostgreSQL failed (nothing recorded).
            BusError: publishing failed (the jobs stay in the outbox).
        """
        m = self.settings
        now = now or self.clock()
        async with store.transaction(self.pool, "weekly schedule") as conn:
            due = await store.lock_weekly_due(
                conn, now - timedelta(seconds=m.weekly_interval_s)
            )
            jobs = [
                weekly_request(
                    agent, previous_at=previous, interval_s=m.weekly_interval_s,
                    sample_size=m.weekly_sample_size, base_seed=m.weekly_seed, requested_at=now,
                )
                for agent, previous in due
            ]
            await store.set_weekly(conn, [agent for agent, _ in due], now)
            inserted = await store.insert_jobs(conn, jobs)
        if inserted:
            self.requested += len(inserted)
            self._outbox_dirty = True
            await self.flush_outbox()
        return inserted

    def describe(self) -> dict[str, Any]:
        """Counters for health checks and the demo: agents cached, skipped, requested,
        published."""
        return {
            "agents": len(self._windows), "skipped": self.skipped,
            "requested": self.requested, "published": self.published,
        }
