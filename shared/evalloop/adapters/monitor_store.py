"""PostgreSQL side of the monitor: turn flags, buckets, trigger state, the job outbox, timelines.

Tables: migration ``0002_monitor``. Every write is idempotent or applied inside the caller's
transaction together with the reads it depends on:

* :func:`lock_states` takes the per-agent row lock (``SELECT ... FOR UPDATE``) first, so two
  consumers of the same agent (e.g. during a Kafka rebalance) serialise on it;
* :func:`fetch_turns` reads the stored flags of a batch's turns, the caller folds the batch in
  Python (:class:`evalloop.core.window.TurnLedger`), then :func:`upsert_turns` writes the final
  flags with OR/earliest semantics and :func:`add_bucket_deltas` the per-bucket deltas;
* :func:`insert_jobs` records requested jobs (``ON CONFLICT (job_id) DO NOTHING``) in the same
  transaction; :func:`unpublished_jobs` / :func:`mark_published` are the outbox.

Public helpers for other components: :func:`rate_timeline` (the demo's per-agent rate over time)
and :func:`list_jobs` (``evalloop jobs list``). asyncpg errors become
:class:`evalloop.errors.StorageError` here.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from evalloop.adapters.postgres import storage_errors
from evalloop.core.trigger import TriggerState
from evalloop.core.window import BucketCounts, TurnFlags, TurnKey, WindowReport, rolling_reports
from evalloop.events import ReevalRequested
from evalloop.settings import MonitorSettings

__all__ = [
    "AgentSnapshot",
    "AgentState",
    "JobRow",
    "ReevalMarker",
    "add_bucket_deltas",
    "agent_snapshots",
    "fetch_turns",
    "insert_jobs",
    "list_jobs",
    "load_buckets",
    "lock_states",
    "lock_weekly_due",
    "mark_published",
    "rate_timeline",
    "reeval_markers",
    "save_states",
    "set_weekly",
    "storage_errors",
    "transaction",
    "turns_in_bucket",
    "unpublished_jobs",
    "upsert_turns",
]


@contextlib.asynccontextmanager
async def transaction(pool: asyncpg.Pool, what: str) -> AsyncIterator[asyncpg.Connection]:
    """Acquire a connection and run the block in one transaction (rolled back on error).

    Raises:
        StorageError: PostgreSQL failed (the transaction was rolled back).
    """
    with storage_errors(what):
        async with pool.acquire() as conn, conn.transaction():
            yield conn



# --------------------------------------------------------------------------- weekly schedule


async def lock_weekly_due(
    conn: asyncpg.Connection, before: datetime
) -> list[tuple[str, datetime]]:
    """Lock and return ``(agent_id, last_weekly_at)`` of the agents whose last weekly sample
    is at or before ``before`` (rows locked by another transaction are skipped), by agent.
    Call inside a transaction."""
    rows = await conn.fetch(
        "SELECT agent_id, last_weekly_at FROM monitor_state"
        " WHERE last_weekly_at <= $1 ORDER BY agent_id FOR UPDATE SKIP LOCKED",
        before,
    )
    return [(r["agent_id"], r["last_weekly_at"]) for r in rows]


async def set_weekly(conn: asyncpg.Connection, agents: list[str], at: datetime) -> None:
    """Record ``at`` as the last weekly sample of ``agents``."""
    await conn.execute(
        "UPDATE monitor_state SET last_weekly_at = $2 WHERE agent_id = ANY($1::text[])",
        agents, at,
    )

# --------------------------------------------------------------------------- trigger state


@dataclass(frozen=True, slots=True)
class AgentState:
    """One ``monitor_state`` row.

    Attributes:
        agent_id: the agent.
        trigger: phase and last firing (event time, UTC).
        newest_event_at: newest event time seen for the agent (the window end), or ``None``.
        seq: batch counter; a cache of the agent's window is valid while it holds this value.
        last_weekly_at: wall-clock time of the last weekly sample (or of first sighting).
        last_report: the last window observed, as ``(negatives, turns, rate, denominator)``.
    """

    agent_id: str
    trigger: TriggerState
    newest_event_at: datetime | None
    seq: int
    last_weekly_at: datetime | None = None
    last_report: tuple[int, int, float, str] | None = None


async def lock_states(conn: asyncpg.Connection, agents: Iterable[str]) -> dict[str, AgentState]:
    """Create missing ``monitor_state`` rows and lock every row of ``agents`` (in agent order,
    so that concurrent batches cannot deadlock). A new row starts armed, with the weekly
    schedule's clock at ``now()``. Call inside a transaction."""
    names = sorted(set(agents))
    if not names:
        return {}
    await conn.execute(
        "INSERT INTO monitor_state (agent_id, last_weekly_at) "
        "SELECT unnest($1::text[]), now() ON CONFLICT (agent_id) DO NOTHING",
        names,
    )
    rows = await conn.fetch(
        "SELECT agent_id, phase, fired_at, newest_event_at, seq, last_weekly_at FROM monitor_state"
        " WHERE agent_id = ANY($1::text[]) ORDER BY agent_id FOR UPDATE",
        names,
    )
    return {
        r["agent_id"]: AgentState(
            agent_id=r["agent_id"],
            trigger=TriggerState(phase=r["phase"], fired_at=r["fired_at"]),
            newest_event_at=r["newest_event_at"],
            seq=r["seq"],
            last_weekly_at=r["last_weekly_at"],
        )
        for r in rows
    }


async def save_states(conn: asyncpg.Connection, states: Iterable[AgentState]) -> None:
    """Write trigger phase, last firing, newest event time, ``seq`` and the last report."""
    rows = list(states)
    if not rows:
        return
    reports = [s.last_report or (None, None, None, None) for s in rows]
    await conn.execute(
        """
        UPDATE monitor_state AS m SET
            phase = u.phase, fired_at = u.fired_at, newest_event_at = u.newest_event_at,
            seq = u.seq, last_negatives = u.negatives, last_turns = u.turns,
            last_rate = u.rate, last_denominator = u.denominator, updated_at = now()
        FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::bigint[],
                    $6::int[], $7::int[], $8::float8[], $9::text[])
             AS u(agent_id, phase, fired_at, newest_event_at, seq, negatives, turns, rate,
                  denominator)
        WHERE m.agent_id = u.agent_id
        """,
        [s.agent_id for s in rows],
        [s.trigger.phase for s in rows],
        [s.trigger.fired_at for s in rows],
        [s.newest_event_at for s in rows],
        [s.seq for s in rows],
        [r[0] for r in reports],
        [r[1] for r in reports],
        [r[2] for r in reports],
        [r[3] for r in reports],
    )


# --------------------------------------------------------------------------- turns and buckets


_TURN_COLUMNS = "t.agent_id, t.conversation_id, t.turn_id, t.served_bucket, t.signal_bucket," \
    " t.negative, t.served_at, t.signal_at"


def _turns(rows: Iterable[Any]) -> dict[TurnKey, TurnFlags]:
    return {
        (r["agent_id"], r["conversation_id"], r["turn_id"]): TurnFlags(
            served_bucket=r["served_bucket"], signal_bucket=r["signal_bucket"],
            negative=r["negative"], served_at=r["served_at"], signal_at=r["signal_at"],
        )
        for r in rows
    }


async def fetch_turns(
    conn: asyncpg.Connection, keys: Iterable[TurnKey]
) -> dict[TurnKey, TurnFlags]:
    """Stored flags of the given turns (absent keys were never seen)."""
    ks = list(keys)
    if not ks:
        return {}
    rows = await conn.fetch(
        f"""
        SELECT {_TURN_COLUMNS}
        FROM monitor_turns t
        JOIN unnest($1::text[], $2::text[], $3::text[]) AS k(a, c, u)
          ON t.agent_id = k.a AND t.conversation_id = k.c AND t.turn_id = k.u
        """,
        [k[0] for k in ks], [k[1] for k in ks], [k[2] for k in ks],
    )
    return _turns(rows)


async def turns_in_bucket(
    conn: asyncpg.Connection, agent_id: str, bucket: datetime
) -> dict[TurnKey, TurnFlags]:
    """Stored flags of every turn of ``agent_id`` counted in ``bucket`` (the window's edge
    bucket, read turn by turn: ``docs/operations.md#the-window``)."""
    rows = await conn.fetch(
        f"SELECT {_TURN_COLUMNS} FROM monitor_turns t"
        " WHERE t.agent_id = $1 AND t.bucket_start = $2",
        agent_id, bucket,
    )
    return _turns(rows)


async def upsert_turns(conn: asyncpg.Connection, turns: Mapping[TurnKey, TurnFlags]) -> None:
    """Store turn flags; on conflict keep the earliest buckets and times and OR ``negative``
    (idempotent: the stored row never loses what it knew)."""
    if not turns:
        return
    items = list(turns.items())
    await conn.execute(
        """
        INSERT INTO monitor_turns AS t
            (agent_id, conversation_id, turn_id, served_bucket, signal_bucket, negative,
             served_at, signal_at)
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[],
                             $5::timestamptz[], $6::bool[], $7::timestamptz[],
                             $8::timestamptz[])
        ON CONFLICT (agent_id, conversation_id, turn_id) DO UPDATE SET
            served_bucket = LEAST(t.served_bucket, EXCLUDED.served_bucket),
            signal_bucket = LEAST(t.signal_bucket, EXCLUDED.signal_bucket),
            negative = t.negative OR EXCLUDED.negative,
            served_at = LEAST(t.served_at, EXCLUDED.served_at),
            signal_at = LEAST(t.signal_at, EXCLUDED.signal_at),
            updated_at = now()
        """,
        [k[0] for k, _ in items], [k[1] for k, _ in items], [k[2] for k, _ in items],
        [f.served_bucket for _, f in items], [f.signal_bucket for _, f in items],
        [f.negative for _, f in items], [f.served_at for _, f in items],
        [f.signal_at for _, f in items],
    )


async def add_bucket_deltas(
    conn: asyncpg.Connection, deltas: Mapping[tuple[str, datetime], BucketCounts]
) -> None:
    """Add ``{(agent_id, bucket_start): delta}`` to ``monitor_buckets`` (one statement)."""
    if not deltas:
        return
    items = list(deltas.items())
    await conn.execute(
        """
        INSERT INTO monitor_buckets AS b
            (agent_id, bucket_start, served, negatives, signalled, turns)
        SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::int[], $4::int[], $5::int[],
                             $6::int[])
        ON CONFLICT (agent_id, bucket_start) DO UPDATE SET
            served = b.served + EXCLUDED.served,
            negatives = b.negatives + EXCLUDED.negatives,
            signalled = b.signalled + EXCLUDED.signalled,
            turns = b.turns + EXCLUDED.turns
        """,
        [k[0] for k, _ in items], [k[1] for k, _ in items],
        [d.served for _, d in items], [d.negatives for _, d in items],
        [d.signalled for _, d in items], [d.turns for _, d in items],
    )


async def load_buckets(
    conn: asyncpg.Connection | asyncpg.Pool, since: Mapping[str, datetime]
) -> dict[str, list[tuple[datetime, BucketCounts]]]:
    """Stored buckets of each agent from ``since[agent]`` on (restoring a window cache)."""
    if not since:
        return {}
    rows = await conn.fetch(
        """
        SELECT b.agent_id, b.bucket_start, b.served, b.negatives, b.signalled, b.turns
        FROM monitor_buckets b
        JOIN unnest($1::text[], $2::timestamptz[]) AS w(agent_id, since)
          ON b.agent_id = w.agent_id AND b.bucket_start >= w.since
        ORDER BY b.agent_id, b.bucket_start
        """,
        list(since), list(since.values()),
    )
    out: dict[str, list[tuple[datetime, BucketCounts]]] = {a: [] for a in since}
    for r in rows:
        out[r["agent_id"]].append(
            (r["bucket_start"],
             BucketCounts(r["served"], r["negatives"], r["signalled"], r["turns"]))
        )
    return out


# --------------------------------------------------------------------------- jobs (outbox)


async def insert_jobs(conn: asyncpg.Connection, jobs: Iterable[ReevalRequested]) -> list[UUID]:
    """Record requested jobs (``status='requested'``, ``published_at`` NULL); a job whose id
    exists already is left alone. Returns the ids actually inserted."""
    items = list(jobs)
    if not items:
        return []
    rows = await conn.fetch(
        """
        INSERT INTO reeval_jobs (job_id, agent_id, trigger, reason, requested_at, request)
        SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[],
                             $5::timestamptz[], $6::jsonb[])
        ON CONFLICT (job_id) DO NOTHING
        RETURNING job_id
        """,
        [j.job_id for j in items], [j.agent_id for j in items], [j.trigger for j in items],
        [j.reason for j in items], [j.requested_at for j in items],
        [j.model_dump(mode="json") for j in items],
    )
    return [r["job_id"] for r in rows]


async def last_change_jobs(
    conn: asyncpg.Connection, pairs: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], datetime]:
    """When the newest job of each (agent, change kind) was requested (absent: never).

    Backs the change cooldown (``docs/security.md#cost-amplification``).
    """
    items = sorted(set(pairs))
    if not items:
        return {}
    rows = await conn.fetch(
        """
        SELECT j.agent_id, j.trigger, max(j.requested_at) AS at
          FROM reeval_jobs j
          JOIN unnest($1::text[], $2::text[]) AS p(agent_id, trigger)
            ON j.agent_id = p.agent_id AND j.trigger = p.trigger
         GROUP BY j.agent_id, j.trigger
        """,
        [a for a, _ in items], [k for _, k in items],
    )
    return {(r["agent_id"], r["trigger"]): r["at"] for r in rows}


async def unpublished_jobs(pool: asyncpg.Pool, limit: int = 1000) -> list[ReevalRequested]:
    """Jobs whose request was not yet published, in the order they were recorded.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with storage_errors("reading the job outbox"):
        rows = await pool.fetch(
            "SELECT request FROM reeval_jobs WHERE published_at IS NULL"
            " ORDER BY seq LIMIT $1",
            limit,
        )
    return [ReevalRequested.model_validate(r["request"]) for r in rows]


async def mark_published(pool: asyncpg.Pool, job_ids: Iterable[UUID]) -> None:
    """Set ``published_at = now()`` on the given jobs.

    Raises:
        StorageError: PostgreSQL failed.
    """
    ids = list(job_ids)
    if ids:
        with storage_errors("marking jobs published"):
            await pool.execute(
                "UPDATE reeval_jobs SET published_at = now()"
                " WHERE job_id = ANY($1::uuid[]) AND published_at IS NULL",
                ids,
            )


@dataclass(frozen=True, slots=True)
class JobRow:
    """One ``reeval_jobs`` row as ``evalloop jobs list`` shows it (times UTC)."""

    job_id: UUID
    agent_id: str
    trigger: str
    reason: str
    requested_at: datetime
    published_at: datetime | None
    status: str
    attempts: int
    finished_at: datetime | None
    result: dict[str, Any] | None
    error: str | None


async def list_jobs(
    pool: asyncpg.Pool,
    *,
    agent_id: str | None = None,
    status: str | None = None,
    limit: int = 100,
) -> list[JobRow]:
    """The newest ``limit`` jobs, optionally of one agent and/or one status, newest first.

    Raises:
        StorageError: PostgreSQL failed (e.g. the database is not migrated).
    """
    with storage_errors("listing re-evaluation jobs"):
        rows = await pool.fetch(
            """
            SELECT job_id, agent_id, trigger, reason, requested_at, published_at, status,
                   attempts, finished_at, result, error
            FROM reeval_jobs
            WHERE ($1::text IS NULL OR agent_id = $1) AND ($2::text IS NULL OR status = $2)
            ORDER BY requested_at DESC, job_id
            LIMIT $3
            """,
            agent_id, status, limit,
        )
    return [JobRow(**dict(r)) for r in rows]


# --------------------------------------------------------------------------- timeline


async def rate_timeline(
    pool: asyncpg.Pool,
    agent_id: str,
    *,
    step_s: int = 3600,
    settings: MonitorSettings | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> list[WindowReport]:
    """The agent's negative rate over time, for reports (``evalloop demo``).

    Each point is the 24 h window (``settings.window_s``) ending at a multiple of ``step_s``
    (hourly by default), computed from ``monitor_buckets``: the same numbers the trigger saw.

    Args:
        pool: asyncpg pool on a database migrated to 0002+.
        agent_id: the agent.
        step_s: seconds between points (a multiple of ``settings.bucket_s``).
        settings: window and bucket sizes (default ``MonitorSettings()``: 24 h, 5 min).
        start: first window end (UTC; default: the first step after the agent's first bucket).
        end: last window end (UTC; default: the step at or after the agent's last bucket).

    Returns:
        :class:`WindowReport` points, oldest first: ``window_end``, ``negatives``, ``turns``,
        ``rate``, ``wilson_low``, ``wilson_high``, ``denominator`` (+ ``served``,
        ``signalled``, ``window_start``). Empty for an agent the monitor has not seen.

    Raises:
        StorageError: PostgreSQL failed.
        ValueError: ``step_s`` is not a positive multiple of the bucket width.
    """
    cfg = settings or MonitorSettings()
    with storage_errors("reading the rate timeline"):
        rows = await pool.fetch(
            "SELECT bucket_start, served, negatives, signalled, turns FROM monitor_buckets"
            " WHERE agent_id = $1 AND turns <> 0 ORDER BY bucket_start",
            agent_id,
        )
    buckets = {
        r["bucket_start"]: BucketCounts(r["served"], r["negatives"], r["signalled"], r["turns"])
        for r in rows
    }
    return rolling_reports(
        buckets, window_s=cfg.window_s, bucket_s=cfg.bucket_s, step_s=step_s, start=start, end=end
    )


# --------------------------------------------------------------------------- web app reads


@dataclass(frozen=True, slots=True)
class AgentSnapshot:
    """An agent's current state as the monitor last saw it (the web app's overview).

    Attributes:
        agent_id: the agent.
        phase: ``armed`` or ``fired``; fired_at: last firing (event time, UTC) or ``None``.
        newest_event_at: the end of the current window (UTC), or ``None``.
        negatives, turns, rate, denominator: the last window observed (``None`` before the
            first); ``rate`` ratio 0-1.
        jobs: re-evaluation jobs ever requested for the agent.
    """

    agent_id: str
    phase: str
    fired_at: datetime | None
    newest_event_at: datetime | None
    negatives: int | None
    turns: int | None
    rate: float | None
    denominator: str | None
    jobs: int


async def agent_snapshots(pool: asyncpg.Pool) -> list[AgentSnapshot]:
    """Every agent the monitor has seen, with its last window, by agent id (agents below the
    minimum volume included: their rate is stored like any other).

    Raises:
        StorageError: PostgreSQL failed.
    """
    with storage_errors("reading agent states"):
        rows = await pool.fetch(
            """
            SELECT m.agent_id, m.phase, m.fired_at, m.newest_event_at, m.last_negatives,
                   m.last_turns, m.last_rate, m.last_denominator,
                   (SELECT count(*) FROM reeval_jobs j WHERE j.agent_id = m.agent_id)::int AS jobs
            FROM monitor_state m ORDER BY m.agent_id
            """
        )
    return [AgentSnapshot(r["agent_id"], r["phase"], r["fired_at"], r["newest_event_at"],
                          r["last_negatives"], r["last_turns"], r["last_rate"],
                          r["last_denominator"], r["jobs"]) for r in rows]


@dataclass(frozen=True, slots=True)
class ReevalMarker:
    """A re-evaluation request of one agent, placed on its timeline.

    Attributes:
        job_id, trigger, reason, status: the job (``reeval_jobs``).
        requested_at: wall-clock time of the request (UTC).
        window_end: the event-time end of the window that fired (UTC; ``None`` for triggers
            without a window, e.g. a weekly sample: place those at ``requested_at``).
        rate: the window's negative rate (ratio 0-1), ``None`` without a window.
        run_id: the evaluation run it produced, or ``None`` while it has none.
    """

    job_id: UUID
    trigger: str
    reason: str
    status: str
    requested_at: datetime
    window_end: datetime | None
    rate: float | None
    run_id: UUID | None


async def reeval_markers(pool: asyncpg.Pool, agent_id: str) -> list[ReevalMarker]:
    """Every re-evaluation request of ``agent_id``, oldest first, with its run.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with storage_errors("reading re-evaluation requests"):
        rows = await pool.fetch(
            """
            SELECT job_id, trigger, reason, status, requested_at,
                   (request->>'window_end')::timestamptz AS window_end,
                   (request->>'rate')::float8 AS rate, run_id
            FROM reeval_jobs WHERE agent_id = $1 ORDER BY requested_at, seq
            """,
            agent_id,
        )
    return [ReevalMarker(**dict(r)) for r in rows]
