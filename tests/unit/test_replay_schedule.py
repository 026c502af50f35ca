"""The replay schedule: seeded, mostly unrated, one incident that the monitor's pure window logic
sees crossing 2% while every other agent stays under, ratings shortly after turns, late events
that land in the window of their event time."""

from __future__ import annotations

import collections
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from evalloop.core.fusion import FusionWeights, classify
from evalloop.core.trigger import TriggerConfig, TriggerState, step
from evalloop.core.window import (
    TurnLedger,
    WindowReplay,
    bucket_start,
    turn_flags,
)
from evalloop.events import AgentResponse, UserRating
from evalloop.replay.corpus import load_sample
from evalloop.replay.schedule import (
    DEFAULT_PLAN,
    IncidentPlan,
    Schedule,
    ScheduledEvent,
    build_schedule,
    rate_track,
)
from evalloop.replay.turns import Turn
from evalloop.settings import MonitorSettings

END = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def turns() -> list[Turn]:
    return load_sample()


@pytest.fixture(scope="module")
def schedule(turns: list[Turn]) -> Schedule:
    return build_schedule(turns, DEFAULT_PLAN, end=END, seed=7)


def simulate_monitor(
    events: list[ScheduledEvent],
) -> tuple[dict[str, list[datetime]], TurnLedger, dict[str, float]]:
    """Feed events in delivery order through the monitor's pure logic (core.window/trigger),
    exactly as MonitorService._fold does; return firing times, the ledger and peak rates."""
    m = MonitorSettings()
    weights = FusionWeights()
    config = TriggerConfig(
        threshold=m.threshold, clear_below=m.clear_below, min_turns=m.min_turns,
        min_negatives=m.min_negatives, cooldown_s=m.cooldown_s,
    )

    def negative(e: object) -> bool:
        sig = classify(e, weights)  # type: ignore[arg-type]
        return sig is not None and sig.negative

    replay = WindowReplay(window_s=m.window_s, bucket_s=m.bucket_s)
    ledger = replay.ledger
    states: dict[str, TriggerState] = collections.defaultdict(TriggerState)
    fires: dict[str, list[datetime]] = collections.defaultdict(list)
    peaks: dict[str, float] = collections.defaultdict(float)
    for s in events:
        e = s.event
        flags = turn_flags(e, m.bucket_s, negative)
        if flags is None:
            continue
        w = replay.observe((e.agent_id, e.conversation_id, e.turn_id), flags, e.occurred_at)
        t = w.totals
        assert w.newest is not None
        if t.turns >= m.min_turns:
            peaks[e.agent_id] = max(peaks[e.agent_id], t.negatives / t.turns)
        d = step(states[e.agent_id], negatives=t.negatives, turns=t.turns, at=w.newest,
                 config=config)
        states[e.agent_id] = d.state
        if d.fire:
            fires[e.agent_id].append(w.newest)
    return dict(fires), ledger, dict(peaks)


def _dump(s: Schedule) -> list[tuple[datetime, str]]:
    return [(x.arrival, x.event.model_dump_json()) for x in s.events]


def test_same_seed_same_replay(turns: list[Turn], schedule: Schedule) -> None:
    again = build_schedule(list(reversed(turns)), DEFAULT_PLAN, end=END, seed=7)
    assert _dump(again) == _dump(schedule)


def test_other_seed_other_times_same_shape(turns: list[Turn], schedule: Schedule) -> None:
    other = build_schedule(turns, DEFAULT_PLAN, end=END, seed=8)
    assert [x.event.occurred_at for x in other.events[:50]] != [
        x.event.occurred_at for x in schedule.events[:50]
    ]
    assert {a: s.turns for a, s in other.agents.items()} == {
        a: s.turns for a, s in schedule.agents.items()
    }


def test_volumes_and_span(schedule: Schedule) -> None:
    assert schedule.start == END - timedelta(hours=96)
    types = collections.Counter(x.event.event_type for x in schedule.events)
    # 96 h x (3600 + 2800 + 2400 + 1400) turns a day + the 200 tau-bench episodes.
    assert types["agent_response"] == 40_800 + 200
    assert types["escalation"] == 48 and types["conversation_outcome"] == 200
    assert 20_000 <= len(schedule.events) <= 60_000
    assert all(schedule.start <= x.event.occurred_at <= schedule.end for x in schedule.events)
    assert len({x.event.event_id for x in schedule.events}) == len(schedule.events)
    negatives = sum(a.negative_turns for a in schedule.agents.values())
    assert 400 <= negatives <= 2000  # what triage embeds: bounded for a demo on 2 cores
    for agent in ("covid-qa-uk", "covid-qa-cdc", "covid-qa-australia", "covid-qa-who"):
        a = schedule.agents[agent]
        assert a.rated_turns / a.turns < 0.05, agent  # real traffic is mostly unrated
        assert a.reused_records == 0, agent  # the sample covers the default plan


def test_incident_agent_crosses_and_the_others_stay_under(schedule: Schedule) -> None:
    fires, _, peaks = simulate_monitor(schedule.events)
    assert set(fires) == {"covid-qa-uk"}
    assert len(fires["covid-qa-uk"]) == 1  # once per crossing
    assert schedule.incident is not None
    start, stop, agent = schedule.incident
    assert agent == "covid-qa-uk"
    fired = fires["covid-qa-uk"][0]
    assert start < fired < stop
    # The schedule's own expectation (rate_track at 5-minute steps) agrees within a bucket.
    expected = schedule.agents["covid-qa-uk"].first_crossing
    assert expected is not None and abs(expected - fired) <= timedelta(minutes=10)
    assert peaks["covid-qa-uk"] > 0.04
    for other in ("covid-qa-cdc", "covid-qa-australia", "covid-qa-who"):
        assert peaks[other] < 0.02, other
    # airline-support never reaches the minimum volume (200 turns in 24 h).
    assert schedule.agents["airline-support"].peak_at is None
    assert schedule.agents["airline-support"].max_window_turns < 200


@pytest.mark.parametrize("seed", [1, 2])
def test_crossing_holds_for_other_seeds(turns: list[Turn], seed: int) -> None:
    s = build_schedule(turns, DEFAULT_PLAN, end=END + timedelta(hours=5 * seed), seed=seed)
    fires, _, peaks = simulate_monitor(s.events)
    assert {a: len(f) for a, f in fires.items()} == {"covid-qa-uk": 1}
    assert max(v for a, v in peaks.items() if a != "covid-qa-uk") < 0.02


def test_no_incident_no_crossing(turns: list[Turn]) -> None:
    s = build_schedule(turns, replace(DEFAULT_PLAN, incident=None), end=END, seed=7)
    fires, _, _ = simulate_monitor(s.events)
    assert fires == {}
    assert s.incident is None


def test_ratings_arrive_seconds_to_minutes_after_their_turn(schedule: Schedule) -> None:
    served = {
        (x.event.conversation_id, x.event.turn_id): x.event.occurred_at
        for x in schedule.events if isinstance(x.event, AgentResponse)
    }
    delays = [
        (x.event.occurred_at - served[(x.event.conversation_id, x.event.turn_id)]).total_seconds()
        for x in schedule.events if isinstance(x.event, UserRating)
    ]
    assert delays and min(delays) >= 3 and max(delays) <= 1200
    assert 20 <= sorted(delays)[len(delays) // 2] <= 120  # median about 45 s


def test_late_events_land_in_their_window(schedule: Schedule) -> None:
    newest = schedule.start
    late = []
    for x in schedule.events:
        if x.event.occurred_at < newest - timedelta(minutes=30):
            late.append(x)
        newest = max(newest, x.event.occurred_at)
    assert 20 <= len(late) <= 300  # "a few": 0.2% of turns
    assert all(x.arrival - x.event.occurred_at >= timedelta(hours=1) for x in late)
    _, ledger, _ = simulate_monitor(schedule.events)
    flags = ledger.changed()
    for x in late:
        if isinstance(x.event, AgentResponse):
            key = (x.event.agent_id, x.event.conversation_id, x.event.turn_id)
            assert flags[key].served_bucket == bucket_start(x.event.occurred_at, 300)


def test_rate_track_counts_a_sliding_window() -> None:
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    turns = [t0 + timedelta(minutes=m) for m in (1, 2, 3, 61, 62)]
    negs = [t0 + timedelta(minutes=2)]
    track = rate_track(turns, negs, start=t0, end=t0 + timedelta(minutes=120),
                       window=timedelta(minutes=60), step=timedelta(minutes=30))
    assert [(t - t0, n, k) for t, n, k in track] == [
        (timedelta(minutes=30), 3, 1), (timedelta(minutes=60), 3, 1),
        (timedelta(minutes=90), 2, 0), (timedelta(minutes=120), 2, 0),
    ]


def test_plan_restricted_to_agents(turns: list[Turn]) -> None:
    plan = DEFAULT_PLAN.only(["covid-qa-who"])
    assert plan.incident is None and not plan.episodes
    s = build_schedule(turns, replace(plan, span_hours=24), end=END, seed=7)
    assert {x.event.agent_id for x in s.events} == {"covid-qa-who"}
    assert s.agents["covid-qa-who"].turns == 1400


def test_incident_on_another_agent(turns: list[Turn]) -> None:
    plan = replace(DEFAULT_PLAN, incident=IncidentPlan(agent_id="covid-qa-cdc"))
    fires, _, _ = simulate_monitor(build_schedule(turns, plan, end=END, seed=7).events)
    assert set(fires) == {"covid-qa-cdc"}


def test_naive_end_is_refused(turns: list[Turn]) -> None:
    with pytest.raises(ValueError, match="timezone-aware end"):
        build_schedule(turns, DEFAULT_PLAN, end=datetime(2025, 1, 1), seed=1)


def test_same_seed_and_end_same_counts_and_the_end_is_what_moves_them() -> None:
    """Why two demos with one seed can differ: the span ends "now" and the daily traffic curve
    moves with it; pinned to one end, the replay is identical (README, "Same seed")."""
    from evalloop.replay import prepare_replay

    def counts(end: datetime) -> tuple[int, int, int, int]:
        r = prepare_replay(seed=7, end=end, agents=["covid-qa-uk"])
        a = r.schedule.agents["covid-qa-uk"]
        return a.turns, a.rated_turns, a.negative_turns, len(r.events)

    end = datetime(2026, 11, 30, 17, 0, tzinfo=UTC)
    assert counts(end) == counts(end) == (14400, 505, 291, 15687)
    assert counts(end + timedelta(minutes=4)) == (14400, 499, 290, 15672)


def test_describe_says_its_peaks_come_from_window_ends_every_five_minutes() -> None:
    # the demo's header said "at most 73 turns per 24 h" and the rate table "at most 72": both
    # true, at window ends every 5 minutes and every hour; each now says which
    from datetime import UTC, datetime

    from evalloop.replay.schedule import AgentSummary, Schedule

    t0 = datetime(2026, 11, 29, 14, 21, tzinfo=UTC)
    t1 = datetime(2026, 12, 3, 14, 21, tzinfo=UTC)
    quiet = AgentSummary("airline-support", 200, 0, 143, 400, 0, 0, 0.0, None, None, 73)
    busy = AgentSummary("covid-qa-uk", 14400, 533, 320, 15000, 0, 0, 0.0644,
                        datetime(2026, 12, 2, 6, 0, tzinfo=UTC),
                        datetime(2026, 12, 1, 12, 26, tzinfo=UTC), 3716)
    lines = Schedule(t0, t1, 7, [], {"airline-support": quiet, "covid-qa-uk": busy}).describe()
    assert lines[1:] == [
        "airline-support: 200 turns, 0 rated, 143 negative; at most 73 turns per 24 h (window "
        "ends every 5 min; below the minimum volume)",
        "covid-qa-uk: 14400 turns, 533 rated, 320 negative; peak 24 h rate 6.44% (window ends "
        "every 5 min); expected crossing 12-01 12:26",
    ]
