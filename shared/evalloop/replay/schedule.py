"""Give untimed turns event times: a realistic baseline and one incident (pure, seeded).

FeedbackQA and tau-bench carry no timestamps, so the replay assigns them (and says so). The
default plan (:data:`DEFAULT_PLAN`) spreads 4 days of traffic ending "now":

* every FeedbackQA agent serves ``turns_per_day`` turns with a diurnal shape (peak at 14:00 in
  the agent's local time, ``diurnal_amplitude`` of the mean), most of them unrated (drawn from
  the ``faq_base`` examples, repeated as real FAQ traffic repeats);
* a small share of turns is rated: ``p_negative`` unanimous-negative records, ``p_mixed``
  records where raters disagree (still a negative case: core.fusion), ``p_positive``
  unanimous-positive ones. Rated turns are placed by jittered systematic sampling (an
  accumulator with a random threshold in 0.75-1.25, not a coin per turn), so a baseline of 0.9%
  negatives does not randomly clump above 2% in the first hours of a cold replay;
* one incident: for ``duration_h`` hours from ``start_fraction`` of the span, the incident
  agent's negative share jumps to ``incident.p_negative``. With the defaults the UK agent's
  24 h rate crosses the 2% threshold ~3 h in (MonitorSettings: min_turns 200, min_negatives 5),
  peaks near 7% and falls below ``clear_below`` again before the span ends, while every other
  agent peaks near 1%;
* the 200 tau-bench episodes are spread over the span (~50 a day, below min_turns: the monitor
  reports their rate but never fires on it);
* ratings arrive seconds to minutes after their turn (log-normal, median 45 s, at most 20
  min); escalations 20-110 s and outcomes 2-15 min after the episode's turn;
* ``late_fraction`` of turns are delivered 1-6 h after their event time (a client flushing an
  offline buffer): their events come later in the stream than newer events, and must land in
  the window of their event time.

Every random draw comes from ``random.Random`` seeded with ``f"{seed}|<purpose>|<agent>"``.
"""

from __future__ import annotations

import bisect
import math
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from evalloop.events import (
    AgentResponse,
    ContextChunk,
    ConversationOutcome,
    Escalation,
    FeedbackEvent,
    UserRating,
)
from evalloop.replay.turns import Turn, TurnPool, event_id_for

__all__ = [
    "DEFAULT_PLAN",
    "AgentPlan",
    "AgentSummary",
    "IncidentPlan",
    "Schedule",
    "SchedulePlan",
    "ScheduledEvent",
    "build_schedule",
    "rate_track",
    "turn_events",
]

_RATED: tuple[TurnPool, ...] = ("negative", "mixed", "positive")
_FALLBACK: dict[TurnPool, tuple[TurnPool, ...]] = {
    "negative": ("negative", "mixed"),
    "mixed": ("mixed", "negative"),
    "positive": ("positive",),
    "served": ("served",),
}
#: Turns are placed this long before the span's end so that their ratings still fall in it.
_TAIL = timedelta(minutes=20)


@dataclass(frozen=True, slots=True)
class AgentPlan:
    """Traffic of one FeedbackQA agent.

    Attributes:
        agent_id: the agent (``covid-qa-uk``, ...).
        turns_per_day: mean served turns per 24 h (every one an ``agent_response``).
        utc_offset_h: the users' time zone, hours (shapes the diurnal curve).
        p_negative: share of turns rated negative by every rater (ratio 0-1).
        p_mixed: share rated by raters who disagree (ratio 0-1; a negative case too).
        p_positive: share rated positive by every rater (ratio 0-1).
    """

    agent_id: str
    turns_per_day: float
    utc_offset_h: float = 0.0
    p_negative: float = 0.006
    p_mixed: float = 0.0015
    p_positive: float = 0.015


@dataclass(frozen=True, slots=True)
class IncidentPlan:
    """A period in which one agent's answers go bad.

    Attributes:
        agent_id: the agent affected.
        start_fraction: start, as a fraction 0-1 of the span.
        duration_h: length, hours (cut at the span's end).
        p_negative: share of its turns rated negative meanwhile (ratio 0-1).
    """

    agent_id: str = "covid-qa-uk"
    start_fraction: float = 0.45
    duration_h: float = 16.0
    p_negative: float = 0.08


@dataclass(frozen=True, slots=True)
class SchedulePlan:
    """The shape of a replay. Units: hours, seconds, ratios 0-1.

    Attributes:
        span_hours: event times cover ``[end - span_hours, end]``.
        agents: the FeedbackQA agents' traffic (agents without turns in the corpus are skipped).
        incident: the incident, or ``None`` for a baseline-only replay.
        episodes: whether to schedule the tau-bench episodes (each once).
        late_fraction: share of turns delivered late.
        late_delay_s: (min, max) lateness, seconds.
        diurnal_amplitude: day/night swing of traffic around its mean (0 = flat).
        agent_version: ``agent_version`` stamped on every event.
    """

    span_hours: float = 96.0
    agents: tuple[AgentPlan, ...] = (
        AgentPlan("covid-qa-uk", 3600, utc_offset_h=0),
        AgentPlan("covid-qa-cdc", 2800, utc_offset_h=-5),
        AgentPlan("covid-qa-australia", 2400, utc_offset_h=10),
        AgentPlan("covid-qa-who", 1400, utc_offset_h=2),
    )
    incident: IncidentPlan | None = IncidentPlan()
    episodes: bool = True
    late_fraction: float = 0.002
    late_delay_s: tuple[float, float] = (3600.0, 6 * 3600.0)
    diurnal_amplitude: float = 0.6
    agent_version: str = "2024.05.1"

    def only(self, agent_ids: Sequence[str]) -> SchedulePlan:
        """This plan restricted to ``agent_ids`` (the incident is dropped if its agent is)."""
        keep = set(agent_ids)
        incident = self.incident if self.incident and self.incident.agent_id in keep else None
        return replace(
            self,
            agents=tuple(a for a in self.agents if a.agent_id in keep),
            incident=incident,
            episodes=self.episodes and "airline-support" in keep,
        )


DEFAULT_PLAN = SchedulePlan()


@dataclass(frozen=True, slots=True)
class ScheduledEvent:
    """An event and when the replay delivers it (``arrival`` > ``occurred_at`` only if late)."""

    arrival: datetime
    event: FeedbackEvent


@dataclass(frozen=True, slots=True)
class AgentSummary:
    """What the schedule holds for one agent (negative = the turn has a negative signal).

    ``peak_rate`` and ``first_crossing`` come from :func:`rate_track` at 5-minute steps with the
    monitor's defaults (24 h window, rate > 0.02, >= 200 turns, >= 5 negatives).
    """

    agent_id: str
    turns: int
    rated_turns: int
    negative_turns: int
    events: int
    late_turns: int
    reused_records: int
    peak_rate: float
    peak_at: datetime | None
    first_crossing: datetime | None
    max_window_turns: int = 0


@dataclass(frozen=True)
class Schedule:
    """The replay: events in delivery order, the span, and per-agent expectations."""

    start: datetime
    end: datetime
    seed: int
    events: list[ScheduledEvent]
    agents: dict[str, AgentSummary] = field(default_factory=dict)
    incident: tuple[datetime, datetime, str] | None = None

    def describe(self) -> list[str]:
        """Human-readable lines: the assigned span (the sources have no timestamps) and agents."""
        lines = [
            f"event times assigned by the replay (FeedbackQA and tau-bench carry none): "
            f"{self.start:%Y-%m-%d %H:%M} -> {self.end:%Y-%m-%d %H:%M} UTC "
            f"({(self.end - self.start).total_seconds() / 3600:.0f} h, seed {self.seed})"
        ]
        if self.incident:
            s, e, agent = self.incident
            lines.append(f"incident: {agent} from {s:%Y-%m-%d %H:%M} to {e:%Y-%m-%d %H:%M} UTC")
        late = sum(a.late_turns for a in self.agents.values())
        if late:
            lines.append(
                f"late: {late} turns delivered 1-6 h after their event time (they count in "
                "the window of their event time)"
            )
        for a in self.agents.values():
            crossing = f"{a.first_crossing:%m-%d %H:%M}" if a.first_crossing else "never"
            peak = (
                f"peak 24 h rate {a.peak_rate:.2%} (window ends every 5 min); expected "
                f"crossing {crossing}"
                if a.peak_at
                else f"at most {a.max_window_turns} turns per 24 h (window ends every 5 min; "
                "below the minimum volume)"
            )
            lines.append(
                f"{a.agent_id}: {a.turns} turns, {a.rated_turns} rated, {a.negative_turns} "
                f"negative; {peak}"
            )
        return lines


# --------------------------------------------------------------------------- time sampling


class _Diurnal:
    """Inverse-CDF sampler of times in [start, stop) with a daily sinusoid (peak 14:00 local)."""

    def __init__(self, start: datetime, stop: datetime, amplitude: float, offset_h: float):
        self.start = start
        minutes = max(1, int((stop - start).total_seconds() // 60))
        cum, total = [], 0.0
        for m in range(minutes):
            t = start + timedelta(minutes=m)
            hour = (t.hour + t.minute / 60 + offset_h) % 24
            total += 1.0 + amplitude * math.cos(2 * math.pi * (hour - 14.0) / 24)
            cum.append(total)
        self.cum, self.total = cum, total

    def draw(self, rng: random.Random, n: int) -> list[datetime]:
        out = []
        for _ in range(n):
            m = bisect.bisect_left(self.cum, rng.random() * self.total)
            out.append(self.start + timedelta(minutes=m, seconds=rng.random() * 60))
        return sorted(out)


def _systematic(rng: random.Random, probs: Sequence[float]) -> list[bool]:
    """Jittered systematic sampling: ~``sum(probs)`` hits, spaced ``1/p`` apart (+-25%)."""
    acc, threshold, hits = 0.0, rng.uniform(0.0, 1.0), []
    for p in probs:
        acc += p
        hit = acc >= threshold
        if hit:
            acc -= threshold
            threshold = rng.uniform(0.75, 1.25)
        hits.append(hit)
    return hits


# --------------------------------------------------------------------------- rates


def rate_track(
    turn_times: Sequence[datetime],
    negative_times: Sequence[datetime],
    *,
    start: datetime,
    end: datetime,
    window: timedelta = timedelta(hours=24),
    step: timedelta = timedelta(minutes=5),
) -> list[tuple[datetime, int, int]]:
    """Sliding-window counts ``(t, turns, negatives)`` in ``(t - window, t]`` every ``step``.

    Args:
        turn_times: event times of the served turns (the rate's denominator), any order.
        negative_times: event times of the negative turns, any order.
        start, end: the evaluated instants run from ``start + step`` to ``end`` inclusive.
    """
    turns, negs = sorted(turn_times), sorted(negative_times)
    out = []
    t = start + step
    while t <= end:
        lo = t - window
        n_t = bisect.bisect_right(turns, t) - bisect.bisect_right(turns, lo)
        n_n = bisect.bisect_right(negs, t) - bisect.bisect_right(negs, lo)
        out.append((t, n_t, n_n))
        t += step
    return out


def _expectations(
    track: list[tuple[datetime, int, int]],
    *,
    threshold: float = 0.02,
    min_turns: int = 200,
    min_negatives: int = 5,
) -> tuple[float, datetime | None, datetime | None]:
    peak, peak_at, crossing = 0.0, None, None
    for t, n_t, n_n in track:
        if n_t >= min_turns:
            rate = n_n / n_t
            if rate > peak:
                peak, peak_at = rate, t
            if crossing is None and rate > threshold and n_n >= min_negatives:
                crossing = t
    return peak, peak_at, crossing


# --------------------------------------------------------------------------- events


def _delay(rng: random.Random, median_s: float, sigma: float, lo: float, hi: float) -> timedelta:
    return timedelta(seconds=min(hi, max(lo, median_s * math.exp(rng.gauss(0.0, sigma)))))


def _context(turn: Turn, cache: dict[str, ContextChunk]) -> list[ContextChunk] | None:
    out = []
    for c in turn.chunks:
        chunk = cache.get(c.id)
        if chunk is None:
            chunk = cache[c.id] = ContextChunk(id=c.id, text=c.text, source=c.source)
        out.append(chunk)
    return out or None


def turn_events(
    turn: Turn,
    key: str,
    at: datetime,
    rng: random.Random,
    version: str,
    chunks: list[ContextChunk] | None = None,
) -> list[FeedbackEvent]:
    """The wire events of one turn served at ``at``.

    One ``agent_response`` (question, answer, context chunks, latency) at ``at``; one
    ``user_rating`` per rater (thumbs and the 1-5 score from the label, the explanation as
    comment) 3 s-20 min
    later (log-normal, median 45 s); for episodes an ``escalation`` 20-110 s and a
    ``conversation_outcome`` 2-15 min later. Event ids: :func:`event_id_for` of ``key``;
    ``conversation_id`` = ``key``, ``turn_id`` = ``"1"`` (single-turn conversations).

    Args:
        turn: the converted turn.
        key: its identity in this replay (``turn.key``, or ``turn.key~k`` for a re-use).
        at: the turn's event time (UTC).
        rng: source of the delays and the latency.
        version: ``agent_version`` of every event.
        chunks: the context chunks (default: built from ``turn.chunks``).
    """
    if chunks is None:
        chunks = _context(turn, {})
    common: dict[str, Any] = {
        "agent_id": turn.agent_id,
        "agent_version": version,
        "conversation_id": key,
        "turn_id": "1",
        "question": turn.question,
        "answer": turn.answer,
    }
    events: list[FeedbackEvent] = [
        AgentResponse(
            event_id=event_id_for(key, "agent_response"),
            occurred_at=at,
            context_chunks=chunks,
            latency_ms=round(_delay(rng, 0.9, 0.4, 0.1, 30).total_seconds() * 1000, 1),
            **common,
        )
    ]
    for i, rating in enumerate(turn.ratings):
        events.append(
            UserRating(
                event_id=event_id_for(key, f"rating/{i}"),
                occurred_at=at + _delay(rng, 45, 1.0, 3, 1200),
                thumbs=rating.thumbs,
                score=rating.score,
                comment=rating.comment,
                **common,
            )
        )
    if turn.escalation is not None:
        events.append(
            Escalation(
                event_id=event_id_for(key, "escalation"),
                occurred_at=at + timedelta(seconds=rng.uniform(20, 110)),
                requested_by=turn.escalation.requested_by,
                reason=turn.escalation.reason,
                **common,
            )
        )
    if turn.outcome is not None:
        events.append(
            ConversationOutcome(
                event_id=event_id_for(key, "outcome"),
                occurred_at=at + timedelta(seconds=rng.uniform(120, 900)),
                resolved=turn.outcome.resolved,
                follow_up_count=turn.outcome.follow_up_count,
                abandoned=turn.outcome.abandoned,
                **common,
            )
        )
    return events


def _is_negative(turn: Turn) -> bool:
    """Does the turn carry a negative signal (core.fusion.classify's rules)?"""
    if any(r.thumbs == "down" for r in turn.ratings):
        return True
    if turn.escalation is not None and turn.escalation.requested_by == "agent":
        return True
    return turn.outcome is not None and (turn.outcome.abandoned or not turn.outcome.resolved)


class _Pools:
    """Per (agent, pool): the turns in a seeded order, handed out in turn, cycling when used up.

    A record handed out for the k-th time (k >= 1) gets the key ``<key>~<k>``: a new
    conversation with the same content, so its event ids differ from the first use.
    """

    def __init__(self, turns: Sequence[Turn], seed: int) -> None:
        grouped: dict[tuple[str, TurnPool], list[Turn]] = defaultdict(list)
        for t in turns:
            grouped[(t.agent_id, t.pool)].append(t)
        self.pools: dict[tuple[str, TurnPool], list[Turn]] = {}
        for (agent, pool), items in grouped.items():
            items.sort(key=lambda t: t.key)
            random.Random(f"{seed}|pool|{agent}|{pool}").shuffle(items)
            self.pools[(agent, pool)] = items
        self.used: dict[tuple[str, TurnPool], int] = defaultdict(int)
        self.reused: dict[str, int] = defaultdict(int)

    def has(self, agent: str, pool: TurnPool) -> bool:
        return bool(self.pools.get((agent, pool)))

    def take(self, agent: str, pool: TurnPool) -> tuple[Turn, str]:
        for candidate in _FALLBACK[pool]:
            items = self.pools.get((agent, candidate))
            if items:
                n = self.used[(agent, candidate)]
                self.used[(agent, candidate)] = n + 1
                turn, k = items[n % len(items)], n // len(items)
                if k and candidate != "served":
                    self.reused[agent] += 1
                return turn, turn.key if k == 0 else f"{turn.key}~{k}"
        raise ValueError(
            f"agent {agent!r} has no {' or '.join(_FALLBACK[pool])} turns in the corpus to "
            f"schedule; expected FeedbackQA records of its source"
        )


def build_schedule(
    turns: Sequence[Turn],
    plan: SchedulePlan = DEFAULT_PLAN,
    *,
    end: datetime,
    seed: int = 7,
) -> Schedule:
    """Assign event times to ``turns`` following ``plan`` and emit the events.

    Args:
        turns: the converted corpus (any order; pools are sorted by key before shuffling, so
            the result depends only on the set of turns, the plan, ``end`` and ``seed``).
        plan: volumes, rates, incident (see :class:`SchedulePlan`).
        end: the span's end (timezone-aware; usually now, floored to the minute).
        seed: every random draw derives from it.

    Returns:
        The :class:`Schedule`, events sorted by delivery time (``arrival``, then event time,
        then event id).

    Raises:
        ValueError: ``end`` is naive, or a planned agent has no served turns in ``turns``.
    """
    if end.tzinfo is None:
        raise ValueError(f"expected a timezone-aware end time, got naive {end.isoformat()}")
    end = end.astimezone(UTC)
    start = end - timedelta(hours=plan.span_hours)
    pools = _Pools(turns, seed)
    incident = plan.incident
    inc_window = None
    if incident is not None:
        s = start + timedelta(hours=plan.span_hours * incident.start_fraction)
        inc_window = (s, min(end - _TAIL, s + timedelta(hours=incident.duration_h)))

    timed: list[tuple[datetime, Turn, str]] = []
    for ap in plan.agents:
        if not pools.has(ap.agent_id, "served"):
            continue
        rng = random.Random(f"{seed}|times|{ap.agent_id}")
        n = round(ap.turns_per_day * plan.span_hours / 24)
        times = _Diurnal(start, end - _TAIL, plan.diurnal_amplitude, ap.utc_offset_h).draw(rng, n)
        p_neg = [
            incident.p_negative
            if incident and inc_window and incident.agent_id == ap.agent_id
            and inc_window[0] <= t < inc_window[1]
            else ap.p_negative
            for t in times
        ]
        hits = {
            "negative": _systematic(random.Random(f"{seed}|negative|{ap.agent_id}"), p_neg),
            "mixed": _systematic(
                random.Random(f"{seed}|mixed|{ap.agent_id}"), [ap.p_mixed] * n
            ),
            "positive": _systematic(
                random.Random(f"{seed}|positive|{ap.agent_id}"), [ap.p_positive] * n
            ),
        }
        for i, t in enumerate(times):
            pool: TurnPool = next((p for p in _RATED if hits[p][i]), "served")
            turn, key = pools.take(ap.agent_id, pool)
            timed.append((t, turn, key))
    if plan.episodes:
        episodes = [t for (agent, pool), ts in pools.pools.items() if pool == "episode"
                    for t in ts if agent == "airline-support"]
        rng = random.Random(f"{seed}|times|airline-support")
        times = _Diurnal(start, end - _TAIL, plan.diurnal_amplitude, -5).draw(rng, len(episodes))
        timed.extend((t, turn, turn.key) for t, turn in zip(times, episodes, strict=True))

    chunk_cache: dict[str, ContextChunk] = {}
    late_rng = random.Random(f"{seed}|late")
    event_rng = random.Random(f"{seed}|events")
    out: list[ScheduledEvent] = []
    per_agent: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for t, turn, key in sorted(timed, key=lambda x: (x[0], x[2])):
        late = late_rng.random() < plan.late_fraction
        shift = timedelta(seconds=late_rng.uniform(*plan.late_delay_s)) if late else timedelta()
        events = turn_events(
            turn, key, t, event_rng, plan.agent_version, _context(turn, chunk_cache)
        )
        out.extend(ScheduledEvent(e.occurred_at + shift, e) for e in events)
        stats = per_agent[turn.agent_id]
        stats["turns"].append(t)
        if turn.ratings:
            stats["rated"].append(t)
        if _is_negative(turn):
            stats["negative"].append(t)
        if late:
            stats["late"].append(t)
        stats["events"].append(len(events))
    out.sort(key=lambda s: (s.arrival, s.event.occurred_at, str(s.event.event_id)))

    summaries = {}
    for agent, st in sorted(per_agent.items()):
        track = rate_track(st["turns"], st["negative"], start=start, end=end)
        peak, peak_at, crossing = _expectations(track)
        summaries[agent] = AgentSummary(
            agent_id=agent,
            turns=len(st["turns"]),
            rated_turns=len(st["rated"]),
            negative_turns=len(st["negative"]),
            events=sum(st["events"]),
            late_turns=len(st["late"]),
            reused_records=pools.reused.get(agent, 0),
            peak_rate=peak,
            peak_at=peak_at,
            first_crossing=crossing,
            max_window_turns=max((n for _, n, _ in track), default=0),
        )
    return Schedule(
        start=start,
        end=end,
        seed=seed,
        events=out,
        agents=summaries,
        incident=(inc_window[0], inc_window[1], incident.agent_id)
        if incident and inc_window and incident.agent_id in summaries
        else None,
    )
