"""Event-time negative-rate windows: turn flags, 5-minute buckets, 24 h sums, Wilson intervals.

The monitor's arithmetic, free of I/O (``docs/rules.md#feedback-loop-trigger``: "the negative
feedback rate exceeds 2% over a 24-hour window"):

* Every feedback event about a turn is folded into that turn's :class:`TurnFlags` (served: an
  ``agent_response`` was seen; negative: a negative signal was seen; signalled: any feedback
  signal was seen). Folding is an OR over flags and a MIN over event times, so it is idempotent
  and order-independent: a re-delivered or duplicated event changes nothing.
* A turn lives in the bucket of its earliest ``agent_response`` (else of its earliest signal),
  the time the recorder gives its negative case; a late event lands in the bucket it belongs
  to, and an earlier event of a known turn moves the turn to the earlier bucket.
  :class:`TurnLedger` turns each observation into per-bucket deltas.
* :class:`AgentWindow` counts one agent's turns in the 24 h of event time ending at the newest
  event seen for that agent, exactly: ``(t - 24 h, t]`` to the microsecond, whatever UTC offset
  the events were sent with (``docs/operations.md#the-window``). Buckets are an index, not the
  boundary: the buckets wholly inside the window are summed, and the one bucket the window's
  start cuts through (the *edge*) is counted turn by turn, from the turns' exact times (memory:
  at most ``window_s / bucket_s + 1`` buckets per agent, plus the edge bucket's turns).
* :func:`wilson_interval` is the Wilson (1927) score interval reported with every rate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from statistics import NormalDist
from typing import Literal, NamedTuple

from evalloop.events import AgentChanged, AgentResponse, FeedbackEvent

__all__ = [
    "AgentWindow",
    "BucketCounts",
    "Contribution",
    "Denominator",
    "TurnFlags",
    "TurnKey",
    "TurnLedger",
    "WindowReplay",
    "WindowReport",
    "bucket_start",

    "rolling_reports",
    "turn_flags",
    "wilson_interval",
]

#: Which turns the rate is taken over (every report says which denominator).
Denominator = Literal["agent_response", "signalled_turns"]
#: ``(agent_id, conversation_id, turn_id)``: the natural key of a turn.
TurnKey = tuple[str, str, str]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@lru_cache(maxsize=8)
def _z(confidence: float) -> float:
    # the standard library's inverse normal CDF (Wichura 1988, AS241: ~1e-16 relative error),
    # the same quantile as scipy.stats.norm.ppf without importing scipy.stats (~1.4 s)
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``k / n``.

    Wilson, E. B. (1927), "Probable inference, the law of succession, and statistical
    inference", JASA 22(158): 209-212; no continuity correction (Newcombe 1998, method 3).
    ``z`` is the standard normal quantile ``inv_cdf(0.5 + confidence / 2)`` (1.95996 for 95%).

    Args:
        k: successes (here: negative turns), ``0 <= k <= n``.
        n: trials (here: turns in the window), ``n >= 0``.
        confidence: two-sided coverage, ratio in (0, 1).

    Returns:
        ``(low, high)``, ratios 0-1; ``(0.0, 1.0)`` when ``n == 0`` (nothing is known).

    Raises:
        ValueError: ``k`` or ``n`` out of range, or ``confidence`` not in (0, 1).
    """
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"expected 0 <= k <= n, got k={k}, n={n}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"expected a confidence in (0, 1), got {confidence}")
    if n == 0:
        return 0.0, 1.0
    z = _z(confidence)
    p = k / n
    z2n = z * z / n
    centre = (p + z2n / 2) / (1 + z2n)
    half = z * math.sqrt(p * (1 - p) / n + z2n / (4 * n)) / (1 + z2n)
    # Clamp rounding noise: the exact interval is inside [0, 1] and contains 0 (k=0) / 1 (k=n).
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return low, high


def bucket_start(t: datetime, bucket_s: int) -> datetime:
    """Start of the ``bucket_s``-second bucket holding ``t`` (buckets aligned to the Unix epoch).

    Args:
        t: a timezone-aware time (any zone; the result is UTC).
        bucket_s: bucket width, seconds, > 0.

    Raises:
        ValueError: ``t`` is naive or ``bucket_s`` is not positive.
    """
    if t.tzinfo is None:
        raise ValueError(f"expected a timezone-aware time, got naive {t.isoformat()}")
    if bucket_s <= 0:
        raise ValueError(f"expected a positive bucket width in seconds, got {bucket_s}")
    micros = (t - _EPOCH) // timedelta(microseconds=1)
    width = bucket_s * 1_000_000
    return _EPOCH + timedelta(microseconds=micros - micros % width)


# --------------------------------------------------------------------------- turns


@dataclass(frozen=True, slots=True)
class TurnFlags:
    """What is known about one turn.

    Attributes:
        served_bucket: bucket of the turn's earliest ``agent_response`` (UTC), or ``None`` if
            none was seen (``served`` is ``served_bucket is not None``).
        signal_bucket: bucket of the turn's earliest feedback signal (any event but
            ``agent_response``), or ``None`` (``signalled`` is ``signal_bucket is not None``).
        negative: at least one negative signal for the turn was seen.
        served_at: the exact time of that earliest ``agent_response`` (UTC), or ``None``
            (not served, or a turn stored before exact times were kept: its bucket stands in).
        signal_at: the exact time of the earliest signal (UTC), or ``None`` (likewise).

    The turn counts in :attr:`bucket` at :attr:`time`: its ``agent_response``'s, else its first
    signal's (the time the recorder's fused negative case carries,
    ``evalloop.core.fusion.fuse``).
    """

    served_bucket: datetime | None = None
    signal_bucket: datetime | None = None
    negative: bool = False
    served_at: datetime | None = None
    signal_at: datetime | None = None

    def __post_init__(self) -> None:
        if self.served_bucket is None and self.signal_bucket is None:
            raise ValueError("a turn needs an agent_response or a signal (both buckets None)")

    @property
    def bucket(self) -> datetime:
        """The bucket the turn counts in."""
        b = self.served_bucket or self.signal_bucket
        assert b is not None
        return b

    @property
    def time(self) -> datetime:
        """The exact time the turn counts at (its bucket's start when the time is unknown)."""
        if self.served_bucket is not None:
            return self.served_at or self.served_bucket
        return self.signal_at or self.bucket

    @property
    def served(self) -> bool:
        """An ``agent_response`` was seen."""
        return self.served_bucket is not None

    @property
    def signalled(self) -> bool:
        """A feedback signal was seen."""
        return self.signal_bucket is not None

    def merge(self, other: TurnFlags) -> TurnFlags:
        """Earliest buckets and times, OR of ``negative``: idempotent, commutative,
        associative."""
        return TurnFlags(
            served_bucket=_min(self.served_bucket, other.served_bucket),
            signal_bucket=_min(self.signal_bucket, other.signal_bucket),
            negative=self.negative or other.negative,
            served_at=_min(self.served_at, other.served_at),
            signal_at=_min(self.signal_at, other.signal_at),
        )

    def counts(self) -> BucketCounts:
        """This turn's contribution to its bucket (0/1 each; ``turns`` is always 1)."""
        return BucketCounts(int(self.served), int(self.negative), int(self.signalled), 1)


def _min(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def turn_flags(
    event: FeedbackEvent, bucket_s: int, is_negative: Callable[[FeedbackEvent], bool]
) -> TurnFlags | None:
    """The flags one event contributes to its turn, or ``None`` for ``agent_changed``
    (a change of the agent, not a turn; it drives its own re-evaluation triggers).

    Args:
        event: a validated feedback event.
        bucket_s: bucket width, seconds.
        is_negative: the signal classifier, e.g. ``classify(e, weights)`` of
            ``evalloop.core.fusion`` returning a negative signal.
    """
    if isinstance(event, AgentChanged):
        return None
    t = event.occurred_at.astimezone(UTC)
    b = bucket_start(t, bucket_s)
    if isinstance(event, AgentResponse):
        return TurnFlags(served_bucket=b, served_at=t)
    return TurnFlags(signal_bucket=b, negative=is_negative(event), signal_at=t)


# --------------------------------------------------------------------------- buckets


@dataclass(frozen=True, slots=True)
class BucketCounts:
    """Counts of one bucket (or a sum of buckets); a delta may be negative.

    Attributes:
        served: turns with an ``agent_response``.
        negatives: negative turns.
        signalled: turns with any feedback signal.
        turns: distinct turns (served or signalled).
    """

    served: int = 0
    negatives: int = 0
    signalled: int = 0
    turns: int = 0

    def __add__(self, other: BucketCounts) -> BucketCounts:
        return BucketCounts(
            self.served + other.served,
            self.negatives + other.negatives,
            self.signalled + other.signalled,
            self.turns + other.turns,
        )

    def __sub__(self, other: BucketCounts) -> BucketCounts:
        return BucketCounts(
            self.served - other.served,
            self.negatives - other.negatives,
            self.signalled - other.signalled,
            self.turns - other.turns,
        )

    def __bool__(self) -> bool:
        return bool(self.served or self.negatives or self.signalled or self.turns)


ZERO = BucketCounts()


class Contribution(NamedTuple):
    """A signed contribution of one turn: ``delta`` in ``bucket``, at exact ``time`` (UTC);
    ``window.add(*contribution)`` applies it."""

    bucket: datetime
    delta: BucketCounts
    time: datetime


@dataclass
class TurnLedger:
    """Folds a batch of observations into turns whose previous flags are known.

    ``previous`` holds the stored flags of the batch's turns (absent: never seen). Each
    :meth:`observe` returns the per-bucket deltas it causes, so a caller can evaluate the
    trigger after every event; :meth:`changed` gives the final flags to store and
    :meth:`net_deltas` the per-bucket sums to add to the stored buckets. Replaying a batch whose
    effects are already stored yields no deltas and no changes.
    """

    previous: Mapping[TurnKey, TurnFlags]
    current: dict[TurnKey, TurnFlags] = field(default_factory=dict)
    _net: dict[tuple[str, datetime], BucketCounts] = field(default_factory=dict)

    def observe(self, key: TurnKey, flags: TurnFlags) -> list[tuple[datetime, BucketCounts]]:
        """Fold ``flags`` into turn ``key``; return ``[(bucket, delta), ...]`` (maybe empty)."""
        before = self.current.get(key) or self.previous.get(key)
        if not self.observe_exact(key, flags):
            return []
        return turn_delta(before, self.current[key])

    def observe_exact(self, key: TurnKey, flags: TurnFlags) -> list[Contribution]:
        """Fold ``flags`` into turn ``key``; return the turn's old contribution withdrawn and
        its new one added, each at its exact time (empty when nothing changed): what
        :meth:`AgentWindow.add` needs to count the window's edge bucket turn by turn."""
        before = self.current.get(key) or self.previous.get(key)
        after = flags if before is None else before.merge(flags)
        if after == before:
            return []
        self.current[key] = after
        for b, d in turn_delta(before, after):
            k = (key[0], b)
            self._net[k] = self._net.get(k, ZERO) + d
        out = [] if before is None else [
            Contribution(before.bucket, ZERO - before.counts(), before.time)]
        out.append(Contribution(after.bucket, after.counts(), after.time))
        return out

    def changed(self) -> dict[TurnKey, TurnFlags]:
        """Turns whose flags differ from ``previous``, with their final flags."""
        return {k: v for k, v in self.current.items() if self.previous.get(k) != v}

    def net_deltas(self) -> dict[tuple[str, datetime], BucketCounts]:
        """``{(agent_id, bucket): delta}`` summed over the batch, zero deltas dropped."""
        return {k: d for k, d in self._net.items() if d}


def turn_delta(
    before: TurnFlags | None, after: TurnFlags
) -> list[tuple[datetime, BucketCounts]]:
    """Per-bucket deltas of replacing ``before`` (``None``: unseen) by ``after``."""
    if before is None:
        return [(after.bucket, after.counts())]
    if before.bucket == after.bucket:
        d = after.counts() - before.counts()
        return [(after.bucket, d)] if d else []
    return [(before.bucket, ZERO - before.counts()), (after.bucket, after.counts())]


# --------------------------------------------------------------------------- the window


@dataclass(frozen=True, slots=True)
class WindowReport:
    """The negative rate of one agent over one window (what a request and a timeline carry).

    Attributes:
        window_start: start of the window, exclusive (UTC): ``window_end - 24 h`` for the
            monitor's window (``docs/operations.md#the-window``), a step boundary in a timeline.
        window_end: end of the window, inclusive (UTC): the newest event time for the monitor's
            window; the window is ``window_end - window_start`` long (24 h by default).
        negatives: negative turns in the window.
        turns: the denominator's turns (see ``denominator``).
        served: turns with an ``agent_response`` in the window.
        signalled: turns with any feedback signal in the window.
        denominator: ``"agent_response"`` when any turn of the window was served (then
            ``turns`` counts every turn seen, which equals ``served`` once every turn's
            ``agent_response`` has arrived, and keeps ``negatives <= turns`` while one is
            late); ``"signalled_turns"`` when the producer sends no ``agent_response`` events.
        rate: ``negatives / turns``, ratio 0-1 (0 when ``turns == 0``).
        wilson_low: lower bound of the Wilson 95% interval, ratio 0-1.
        wilson_high: upper bound of the Wilson 95% interval, ratio 0-1.
    """

    window_start: datetime
    window_end: datetime
    negatives: int
    turns: int
    served: int
    signalled: int
    denominator: Denominator
    rate: float
    wilson_low: float
    wilson_high: float

    @classmethod
    def of(cls, start: datetime, end: datetime, totals: BucketCounts) -> WindowReport:
        """Build the report of ``totals`` over the window from ``start`` to ``end``."""
        denominator: Denominator = "agent_response" if totals.served else "signalled_turns"
        n, k = totals.turns, totals.negatives
        low, high = wilson_interval(k, n)
        return cls(
            window_start=start, window_end=end, negatives=k, turns=n, served=totals.served,
            signalled=totals.signalled, denominator=denominator, rate=k / n if n else 0.0,
            wilson_low=low, wilson_high=high,
        )

    def describe(self, threshold: float) -> str:
        """One line for people, e.g. ``negative rate 3.1% [2.4%, 4.0%] over 24 h ending
        2026-03-02T10:05:00Z, 31/1000 turns served > 2%``."""
        hours = (self.window_end - self.window_start).total_seconds() / 3600
        what = "turns served" if self.denominator == "agent_response" else "signalled turns"
        cmp = ">" if self.rate > threshold else "<="
        return (
            f"negative rate {self.rate:.1%} [{self.wilson_low:.1%}, {self.wilson_high:.1%}] "
            f"over {hours:g} h ending {self.window_end.strftime('%Y-%m-%dT%H:%M:%SZ')}, "
            f"{self.negatives}/{self.turns} {what} {cmp} {threshold:.0%}"
        )


class AgentWindow:
    """One agent's turns in the window ``(t - window_s, t]`` ending at its newest event time
    ``t``, counted exactly, with running totals (``docs/operations.md#the-window``).

    Buckets are an index, not the boundary. The buckets wholly inside the window are held as
    sums; the bucket the window's start ``t - window_s`` falls in (the *edge* bucket) is held
    turn by turn, as :class:`Contribution` values at exact times, and only those after the
    start count. When ``t`` moves the edge into a bucket held only as a sum, :attr:`edge_needed`
    names that bucket: its owner supplies the bucket's turns with :meth:`set_edge` (the monitor
    reads them from PostgreSQL); until then the bucket's sum stands in. Memory: at most
    ``window_s / bucket_s + 1`` buckets and the edge bucket's turns, however many events
    arrive. Contributions before the window are ignored (the stored buckets keep them for the
    timeline).
    """

    def __init__(self, *, window_s: int, bucket_s: int, newest: datetime | None = None) -> None:
        """Create an empty window.

        Args:
            window_s: window length, seconds (24 h: ``docs/rules.md#feedback-loop-trigger``), a
                multiple of ``bucket_s``.
            bucket_s: bucket width, seconds.
            newest: the newest event time already seen (restored state), or ``None``.

        Raises:
            ValueError: ``window_s`` is not a positive multiple of ``bucket_s``.
        """
        if bucket_s <= 0 or window_s <= 0 or window_s % bucket_s:
            raise ValueError(
                f"expected window_s a positive multiple of bucket_s, got {window_s}, {bucket_s}"
            )
        self.window_s = window_s
        self.bucket_s = bucket_s
        self._length = timedelta(seconds=window_s)
        self.newest: datetime | None = newest
        self._buckets: dict[datetime, BucketCounts] = {}  # buckets after the edge bucket
        self._edge: list[tuple[datetime, BucketCounts]] = []  # edge turns inside the window
        self._edge_sum = ZERO  # edge counts known only as a bucket sum (until set_edge)
        self._totals = ZERO
        #: The edge bucket whose turns the owner should supply (:meth:`set_edge`), or None.
        self.edge_needed: datetime | None = None

    def bounds(self) -> tuple[datetime, datetime] | None:
        """``(window_start, window_end)``: the window is ``(start, end]``, ``end`` the newest
        event time; ``None`` before any event."""
        if self.newest is None:
            return None
        return self.newest - self._length, self.newest

    def _edge_bucket(self) -> datetime | None:
        bounds = self.bounds()
        return None if bounds is None else bucket_start(bounds[0], self.bucket_s)

    def load(self, buckets: Iterable[tuple[datetime, BucketCounts]]) -> None:
        """Add stored bucket counts (restoring after a restart); out-of-window ones are ignored.
        The edge bucket's sum is kept until :meth:`set_edge` supplies its turns."""
        for b, counts in buckets:
            self.add(b, counts)

    def advance(self, t: datetime) -> None:
        """Note an event at ``t``: the window end moves forward if ``t`` is the newest so far;
        what falls out of the window is dropped."""
        if self.newest is not None and t <= self.newest:
            return
        old_edge = self._edge_bucket()
        self.newest = t
        start = t - self._length
        edge = bucket_start(start, self.bucket_s)
        if edge == old_edge:
            gone = [c for c in self._edge if c[0] <= start]
            if gone:
                self._edge = [c for c in self._edge if c[0] > start]
                for _, d in gone:
                    self._totals = self._totals - d
            return
        for _, d in self._edge:
            self._totals = self._totals - d
        self._totals = self._totals - self._edge_sum
        self._edge, self._edge_sum = [], ZERO
        for b in [b for b in self._buckets if b < edge]:
            self._totals = self._totals - self._buckets.pop(b)
        self._edge_sum = self._buckets.pop(edge, ZERO)  # still in the totals
        self.edge_needed = edge if self._edge_sum else None

    def add(self, bucket: datetime, delta: BucketCounts, time: datetime | None = None) -> None:
        """Apply ``delta`` (a turn's contribution in ``bucket`` at exact ``time``) if it falls
        inside the window. Without ``time`` a contribution to the edge bucket counts as part
        of the bucket's sum (see :attr:`edge_needed`)."""
        bounds = self.bounds()
        if bounds is None:
            return
        edge = bucket_start(bounds[0], self.bucket_s)
        if bucket < edge:
            return
        if bucket == edge:
            if time is None:
                self._edge_sum = self._edge_sum + delta
                self.edge_needed = edge if self._edge_sum else None
            elif time > bounds[0]:
                self._edge.append((time, delta))
            else:
                return
        else:
            value = self._buckets.get(bucket, ZERO) + delta
            if value:
                self._buckets[bucket] = value
            else:
                self._buckets.pop(bucket, None)
        self._totals = self._totals + delta

    def set_edge(self, bucket: datetime, turns: Iterable[tuple[datetime, BucketCounts]]) -> None:
        """Replace what is known of the edge ``bucket`` by its turns, ``(exact time, counts)``
        each (all of the bucket's turns, as stored and as changed since); ignored when
        ``bucket`` is no longer the edge."""
        bounds = self.bounds()
        if bounds is None or bucket != bucket_start(bounds[0], self.bucket_s):
            return
        for _, d in self._edge:
            self._totals = self._totals - d
        self._totals = self._totals - self._edge_sum
        self._edge = [(t, d) for t, d in turns if t > bounds[0]]
        self._edge_sum = ZERO
        for _, d in self._edge:
            self._totals = self._totals + d
        self.edge_needed = None

    @property
    def totals(self) -> BucketCounts:
        """Sums over the current window."""
        return self._totals

    def __len__(self) -> int:
        """Number of buckets held: non-empty whole buckets, plus the edge bucket if it holds
        anything (at most ``window_s / bucket_s + 1``)."""
        return len(self._buckets) + int(bool(self._edge or self._edge_sum))

    def report(self) -> WindowReport | None:
        """The current window's :class:`WindowReport`, or ``None`` before any event."""
        bounds = self.bounds()
        if bounds is None:
            return None
        return WindowReport.of(bounds[0], bounds[1], self._totals)


class WindowReplay:
    """The monitor's window arithmetic over a whole input, in memory (a pure replay:
    benchmarks and tests predict the monitor's decisions with it). Where the monitor reads an
    edge bucket's turns from PostgreSQL, the replay takes them from its own ledger.

    Attributes:
        ledger: every turn seen, with its flags (``ledger.current``).
        windows: one :class:`AgentWindow` per agent.
    """

    def __init__(self, *, window_s: int, bucket_s: int) -> None:
        """Start empty; ``window_s`` / ``bucket_s`` as for :class:`AgentWindow`."""
        self.window_s, self.bucket_s = window_s, bucket_s
        self.ledger = TurnLedger(previous={})
        self.windows: dict[str, AgentWindow] = {}
        self._by_bucket: dict[tuple[str, datetime], set[TurnKey]] = {}

    def observe(self, key: TurnKey, flags: TurnFlags, at: datetime) -> AgentWindow:
        """Fold one event at time ``at`` into its agent's window, as the monitor does; return
        the window."""
        agent = key[0]
        w = self.windows.get(agent)
        if w is None:
            w = self.windows[agent] = AgentWindow(window_s=self.window_s, bucket_s=self.bucket_s)
        w.advance(at)
        edge = w.edge_needed
        if edge is not None:
            current = self.ledger.current
            turns = (current[k] for k in self._by_bucket.get((agent, edge), ()))
            w.set_edge(edge, [(f.time, f.counts()) for f in turns if f.bucket == edge])
        for c in self.ledger.observe_exact(key, flags):
            w.add(*c)
            self._by_bucket.setdefault((agent, c.bucket), set()).add(key)
        return w


def rolling_reports(
    buckets: Mapping[datetime, BucketCounts],
    *,
    window_s: int,
    bucket_s: int,
    step_s: int,
    start: datetime | None = None,
    end: datetime | None = None,
) -> list[WindowReport]:
    """The rate over the ``window_s`` ending at every ``step_s`` boundary (a timeline).

    Args:
        buckets: ``{bucket_start: counts}`` of one agent (e.g. from ``monitor_buckets``).
        window_s: window length, seconds (a multiple of ``bucket_s``).
        bucket_s: bucket width, seconds.
        step_s: spacing of the points, seconds (a multiple of ``bucket_s``).
        start: first window end (default: the first step boundary after the first bucket).
        end: last window end (default: the first step boundary at or after the last bucket's
            end).

    Returns:
        One report per point, oldest first; empty when ``buckets`` is empty.

    Raises:
        ValueError: ``window_s`` or ``step_s`` is not a positive multiple of ``bucket_s``.
    """
    if step_s <= 0 or step_s % bucket_s or window_s <= 0 or window_s % bucket_s:
        raise ValueError(
            f"expected window_s and step_s positive multiples of bucket_s={bucket_s}, "
            f"got {window_s}, {step_s}"
        )
    if not buckets:
        return []
    first, last = min(buckets), max(buckets)
    step = timedelta(seconds=step_s)
    width = timedelta(seconds=bucket_s)
    window = timedelta(seconds=window_s)
    t = start or bucket_start(first, step_s) + step
    stop = end or bucket_start(last + width - timedelta(microseconds=1), step_s) + step
    ordered = sorted(buckets.items())
    out: list[WindowReport] = []
    lo = hi = 0  # ordered[lo:hi] are the buckets inside [t - window, t)
    totals = ZERO
    while t <= stop:
        while hi < len(ordered) and ordered[hi][0] < t:
            totals = totals + ordered[hi][1]
            hi += 1
        while lo < hi and ordered[lo][0] < t - window:
            totals = totals - ordered[lo][1]
            lo += 1
        out.append(WindowReport.of(t - window, t, totals))
        t += step
    return out
