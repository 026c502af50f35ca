"""Pure window arithmetic: Wilson interval, buckets, turn folding, late events, timelines."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from uuid import uuid4

import pytest

from evalloop.core.fusion import FusionWeights, classify
from evalloop.core.window import (
    AgentWindow,
    BucketCounts,
    TurnFlags,
    TurnLedger,
    WindowReport,
    bucket_start,
    rolling_reports,
    turn_flags,
    wilson_interval,
)
from evalloop.events import AgentChanged, AgentResponse, Escalation, UserRating

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
B = 300  # bucket width, s
DAY = 24 * 3600
DAY_TD = timedelta(seconds=DAY)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


# --------------------------------------------------------------------------- Wilson


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        # Newcombe (1998), Stat. Med. 17:857-872, Table I, method 3 (Wilson score, no CC).
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0000, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_matches_newcombe_table(k: int, n: int, low: float, high: float) -> None:
    lo, hi = wilson_interval(k, n)
    assert round(lo, 4) == low
    assert round(hi, 4) == high


def test_wilson_edges() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert wilson_interval(5, 5)[1] == 1.0
    assert wilson_interval(0, 5)[0] == 0.0
    lo, hi = wilson_interval(31, 1000)
    assert (round(lo, 4), round(hi, 4)) == (0.0219, 0.0437)
    # 99% is wider than 95%
    lo99, hi99 = wilson_interval(31, 1000, confidence=0.99)
    assert lo99 < lo and hi99 > hi


@pytest.mark.parametrize(("k", "n", "conf"), [(-1, 3, 0.95), (4, 3, 0.95), (1, 3, 1.0)])
def test_wilson_rejects_bad_input(k: int, n: int, conf: float) -> None:
    with pytest.raises(ValueError, match="expected"):
        wilson_interval(k, n, conf)


# --------------------------------------------------------------------------- buckets


def test_bucket_start_floors_to_epoch_aligned_buckets() -> None:
    assert bucket_start(datetime(2026, 3, 2, 10, 4, 59, 999999, tzinfo=UTC), B) == T0
    assert bucket_start(datetime(2026, 3, 2, 10, 5, tzinfo=UTC), B) == at(5)
    # other time zones normalise to UTC
    cet = timezone(timedelta(hours=1))
    assert bucket_start(datetime(2026, 3, 2, 11, 7, tzinfo=cet), B) == at(5)
    assert bucket_start(datetime(2026, 3, 2, 10, 7, tzinfo=UTC), 3600) == T0


def test_bucket_start_rejects_naive_time() -> None:
    with pytest.raises(ValueError, match="naive"):
        bucket_start(datetime(2026, 3, 2, 10, 0), B)


def test_bucket_counts_arithmetic() -> None:
    a = BucketCounts(3, 1, 2, 4)
    assert a + BucketCounts(1, 1, 1, 1) == BucketCounts(4, 2, 3, 5)
    assert a - a == BucketCounts()
    assert not BucketCounts() and a


# --------------------------------------------------------------------------- turns


WEIGHTS = FusionWeights()


def _flags(event):  # type: ignore[no-untyped-def]
    return turn_flags(event, B, lambda e: (s := classify(e, WEIGHTS)) is not None and s.negative)


def _common(minutes: float, turn: str = "t1") -> dict:  # type: ignore[type-arg]
    return {
        "event_id": uuid4(), "agent_id": "a", "conversation_id": "c", "turn_id": turn,
        "occurred_at": at(minutes),
    }


def test_turn_flags_per_event_type() -> None:
    assert _flags(AgentResponse(**_common(1))) == TurnFlags(served_bucket=T0, served_at=at(1))
    assert _flags(UserRating(**_common(7), thumbs="down")) == TurnFlags(
        signal_bucket=at(5), negative=True, signal_at=at(7)
    )
    assert _flags(UserRating(**_common(7), thumbs="up")) == TurnFlags(
        signal_bucket=at(5), signal_at=at(7))
    # a user asking for a human is not by itself a failure (docs/rules.md#negative-cases)
    assert _flags(Escalation(**_common(7), requested_by="user")).negative is False
    assert _flags(Escalation(**_common(7), requested_by="agent")).negative is True
    change = AgentChanged(**_common(1), change_kind="system_prompt", new_version="v2")
    assert _flags(change) is None


def test_turn_flags_merge_is_or_and_earliest() -> None:
    served = TurnFlags(served_bucket=at(10))
    neg = TurnFlags(signal_bucket=at(30), negative=True)
    late_response = TurnFlags(served_bucket=at(5))
    merged = served.merge(neg)
    assert merged == TurnFlags(at(10), at(30), True)
    assert merged.bucket == at(10)
    assert merged.merge(neg) == merged  # idempotent
    assert neg.merge(served) == merged  # commutative
    assert merged.merge(late_response).bucket == at(5)
    assert neg.bucket == at(30)  # no agent_response: the signal's bucket
    with pytest.raises(ValueError, match="both buckets None"):
        TurnFlags()


def test_ledger_counts_each_turn_once_and_replays_to_nothing() -> None:
    ledger = TurnLedger(previous={})
    k1, k2 = ("a", "c", "t1"), ("a", "c", "t2")
    assert ledger.observe(k1, TurnFlags(served_bucket=T0)) == [(T0, BucketCounts(1, 0, 0, 1))]
    assert ledger.observe(k1, TurnFlags(served_bucket=T0)) == []  # duplicate
    bad = TurnFlags(signal_bucket=at(5), negative=True)
    assert ledger.observe(k1, bad) == [(T0, BucketCounts(0, 1, 1, 0))]
    assert ledger.observe(k1, bad) == []  # duplicate thumbs down
    assert ledger.observe(k2, bad) == [(at(5), BucketCounts(0, 1, 1, 1))]
    assert ledger.net_deltas() == {
        ("a", T0): BucketCounts(1, 1, 1, 1),
        ("a", at(5)): BucketCounts(0, 1, 1, 1),
    }
    changed = ledger.changed()
    assert changed == {k1: TurnFlags(T0, at(5), True), k2: bad}

    # Redelivery: the same observations against the stored flags change nothing.
    again = TurnLedger(previous=changed)
    for key, flags in [(k1, TurnFlags(served_bucket=T0)), (k1, bad), (k2, bad)]:
        assert again.observe(key, flags) == []
    assert again.changed() == {} and again.net_deltas() == {}


def test_ledger_moves_a_turn_when_its_agent_response_arrives_late() -> None:
    key = ("a", "c", "t1")
    stored = {key: TurnFlags(signal_bucket=at(40), negative=True)}
    ledger = TurnLedger(previous=stored)
    assert ledger.observe(key, TurnFlags(served_bucket=at(10))) == [
        (at(40), BucketCounts(0, -1, -1, -1)),
        (at(10), BucketCounts(1, 1, 1, 1)),
    ]
    assert ledger.net_deltas() == {
        ("a", at(40)): BucketCounts(0, -1, -1, -1),
        ("a", at(10)): BucketCounts(1, 1, 1, 1),
    }


# --------------------------------------------------------------------------- the window


def test_window_ends_at_the_newest_event_and_drops_old_buckets() -> None:
    w = AgentWindow(window_s=DAY, bucket_s=B)
    assert w.report() is None
    w.advance(at(2))
    early, late = BucketCounts(9, 1, 1, 9), BucketCounts(1, 0, 0, 1)
    w.add(T0, early, at(0.5))
    w.add(T0, late, at(3))
    assert w.bounds() == (at(2) - timedelta(days=1), at(2))
    w.advance(at(60 * 24 - 1))  # 23:59 later: T0's bucket still wholly inside
    w.add(at(60 * 24 - 5), BucketCounts(5, 0, 0, 5), at(60 * 24 - 2))
    assert w.totals == BucketCounts(15, 1, 1, 15)
    w.advance(at(60 * 24 + 1))  # the start (at 1 min) cuts T0's bucket: known only as a sum
    assert (w.edge_needed, w.totals) == (T0, BucketCounts(15, 1, 1, 15))
    w.set_edge(T0, [(at(0.5), early), (at(3), late)])  # its turns, as the store has them
    assert (w.edge_needed, w.totals) == (None, BucketCounts(6, 0, 0, 6))
    w.advance(at(60 * 24 + 3))  # a turn exactly 24 h old is out: the window is (t - 24 h, t]
    assert w.totals == BucketCounts(5, 0, 0, 5)
    w.advance(at(60 * 24 + 5))  # the start reaches the next bucket: T0's is gone
    assert w.totals == BucketCounts(5, 0, 0, 5)
    assert len(w) == 1


def test_window_late_event_counts_only_if_inside() -> None:
    w = AgentWindow(window_s=DAY, bucket_s=B)
    w.advance(at(60 * 30))  # newest event: 30 h after T0
    w.add(at(60 * 29), BucketCounts(0, 1, 1, 1), at(60 * 29 + 1))  # 1 h late: inside
    w.add(at(60 * 2), BucketCounts(0, 1, 1, 1), at(60 * 2))  # 28 h late: before, ignored
    w.add(at(60 * 6 - 5), BucketCounts(0, 1, 1, 1), at(60 * 6 - 1))  # 24 h 1 min: ignored
    w.advance(at(60 * 20))  # an older event does not move the end back
    assert w.bounds() == (at(60 * 6), at(60 * 30))
    assert w.totals == BucketCounts(0, 1, 1, 1)


def _fold(w: AgentWindow, ledger: TurnLedger, events: list[AgentResponse]) -> None:
    for e in events:
        flags = _flags(e)
        assert flags is not None
        w.advance(e.occurred_at)
        for c in ledger.observe_exact((e.agent_id, e.conversation_id, e.turn_id), flags):
            w.add(*c)


def test_exact_window_counts_a_turn_23h56m_old_when_the_newest_is_1s_into_its_bucket() -> None:
    # The newest event is 1 s into its 5-min bucket; whole buckets left out a turn 23 h 56 min
    # old (its bucket started before the first whole bucket of the window).
    newest = at(5) + timedelta(seconds=1)
    india, brazil = timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-3))

    def served(turn: str, t: datetime) -> AgentResponse:
        return AgentResponse(**{**_common(0, turn), "occurred_at": t})

    events = [
        served("old", (newest - timedelta(hours=23, minutes=56)).astimezone(india)),
        served("edge-in", (newest - DAY_TD + timedelta(milliseconds=1)).astimezone(brazil)),
        served("edge-out", (newest - DAY_TD).astimezone(india)),
        served("newest", newest.astimezone(brazil)),
    ]
    w, ledger = AgentWindow(window_s=DAY, bucket_s=B), TurnLedger(previous={})
    _fold(w, ledger, events[3:] + events[:3])  # the newest first, the others late
    assert w.bounds() == (newest - DAY_TD, newest)
    assert w.totals == BucketCounts(3, 0, 0, 3)  # old, edge-in (1 ms inside), newest
    assert w.edge_needed is None

    # The same turns folded before the edge reached their bucket (in time order): the bucket
    # is then known only as a sum (4 turns) until its owner supplies its turns.
    w2, ledger2 = AgentWindow(window_s=DAY, bucket_s=B), TurnLedger(previous={})
    _fold(w2, ledger2, events)
    assert (w2.edge_needed, w2.totals.turns) == (at(5) - DAY_TD, 4)
    w2.set_edge(w2.edge_needed, [(f.time, f.counts()) for f in ledger2.current.values()
                                 if f.bucket == w2.edge_needed])
    assert w2.totals == BucketCounts(3, 0, 0, 3)


def test_window_report_and_denominators() -> None:
    w = AgentWindow(window_s=DAY, bucket_s=B)
    w.advance(at(1))
    w.add(T0, BucketCounts(0, 3, 100, 100))
    r = w.report()
    assert r is not None
    assert (r.denominator, r.negatives, r.turns, r.rate) == ("signalled_turns", 3, 100, 0.03)
    w.add(T0, BucketCounts(1000, 0, 0, 900))
    r = w.report()
    assert r is not None
    assert (r.denominator, r.negatives, r.turns, r.served) == ("agent_response", 3, 1000, 1000)
    assert r.describe(0.02) == (
        "negative rate 0.3% [0.1%, 0.9%] over 24 h ending 2026-03-02T10:01:00Z, "
        "3/1000 turns served <= 2%"
    )


def test_report_reason_text_for_a_crossing() -> None:
    r = WindowReport.of(at(5) - timedelta(days=1), at(5), BucketCounts(1000, 31, 40, 1000))
    assert r.describe(0.02) == (
        "negative rate 3.1% [2.2%, 4.4%] over 24 h ending 2026-03-02T10:05:00Z, "
        "31/1000 turns served > 2%"
    )


def test_window_rejects_a_length_not_a_multiple_of_buckets() -> None:
    with pytest.raises(ValueError, match="multiple"):
        AgentWindow(window_s=1000, bucket_s=300)


def test_rolling_reports_hourly_timeline() -> None:
    buckets = {
        T0: BucketCounts(100, 1, 1, 100),
        at(65): BucketCounts(100, 5, 5, 100),
        T0 + timedelta(hours=25): BucketCounts(50, 0, 0, 50),
    }
    points = rolling_reports(buckets, window_s=DAY, bucket_s=B, step_s=3600)
    assert points[0].window_end == at(60)
    assert (points[0].negatives, points[0].turns) == (1, 100)
    assert (points[1].negatives, points[1].turns) == (6, 200)  # ends 12:00
    by_end = {p.window_end: p for p in points}
    assert (by_end[T0 + timedelta(hours=24)].negatives, by_end[T0 + timedelta(hours=24)].turns) == (
        6, 200
    )
    # 11:00 on the next day: T0's bucket left the window, 11:05's is still in
    p = by_end[T0 + timedelta(hours=25)]
    assert (p.negatives, p.turns) == (5, 100)
    last = points[-1]
    assert last.window_end == T0 + timedelta(hours=26)
    # 12:00 on the next day: only the 11:00 bucket of that day is left
    assert (last.negatives, last.turns, last.rate, last.denominator) == (
        0, 50, 0.0, "agent_response"
    )
    assert rolling_reports({}, window_s=DAY, bucket_s=B, step_s=3600) == []
    with pytest.raises(ValueError, match="multiples"):
        rolling_reports(buckets, window_s=DAY, bucket_s=B, step_s=1000)
