"""The evaluator's side of ``reeval_jobs`` (migration 0002): record, claim, heartbeat, finish.

Exactly-once-ish execution of re-evaluation jobs on at-least-once delivery:

* :func:`record_request` inserts a job that arrived on the bus but is not in the table yet
  (``ON CONFLICT DO NOTHING``: the monitor's outbox usually wrote it first).
* :func:`claim` is one atomic ``UPDATE``: a job is claimed when it is ``requested``, or
  ``running`` with a heartbeat older than the lease (its worker died). A redelivered or
  duplicated request finds the job ``running`` (fresh heartbeat) or finished and does nothing.
* :func:`heartbeat` keeps the claim alive during the run and reports a lost claim.
* :func:`finish` runs inside the transaction that stores the run, after :func:`lock_claim`
  re-checked (``FOR UPDATE``) that this worker still owns the job: a worker that lost its claim
  (it stalled past the lease and another took over) stores nothing, so a job finishes once.
* :func:`due_jobs` / :func:`give_up_exhausted` are the periodic sweep; :func:`release` hands a
  job back on a graceful shutdown.

All times are the database's ``now()`` (one clock for every worker). asyncpg errors become
:class:`evalloop.errors.StorageError`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from evalloop.adapters.postgres import storage_errors
from evalloop.events import ReevalRequested

__all__ = [
    "ClaimedJob",
    "claim",
    "due_jobs",
    "finish",
    "give_up_exhausted",
    "heartbeat",
    "lock_claim",
    "pin_version",
    "record_request",
    "release",
]


def _storage(what: str) -> contextlib.AbstractContextManager[None]:
    return storage_errors(f"reeval_jobs: {what}")


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    """A job this worker now owns.

    Attributes:
        request: the original ``reeval.requested.v1`` message.
        attempts: claims so far including this one (1 on the first run).
        golden_set_version_id: the version pinned by an earlier attempt, if any (a retried job
            runs the version it started with).
    """

    request: ReevalRequested
    attempts: int
    golden_set_version_id: UUID | None


async def record_request(pool: asyncpg.Pool, request: ReevalRequested) -> bool:
    """Insert ``request`` as a ``requested`` job unless its ``job_id`` exists.

    ``published_at`` is set (the request evidently was published). Returns whether a row was
    inserted.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("insert"):
        row = await pool.fetchval(
            """
            INSERT INTO reeval_jobs (job_id, agent_id, trigger, reason, requested_at, request,
                                     published_at)
            VALUES ($1, $2, $3, $4, $5, $6, now())
            ON CONFLICT (job_id) DO NOTHING
            RETURNING job_id
            """,
            request.job_id, request.agent_id, request.trigger, request.reason,
            request.requested_at, request.model_dump(mode="json"),
        )
    return row is not None


async def claim(
    pool: asyncpg.Pool, job_id: UUID, worker: str, *, lease_s: float, max_attempts: int
) -> ClaimedJob | None:
    """Atomically claim ``job_id`` for ``worker``.

    Claimable: ``status = 'requested'``, or ``status = 'running'`` with ``heartbeat_at`` older
    than ``lease_s`` seconds (the previous worker died), and fewer than ``max_attempts`` claims
    so far.

    Returns:
        The claimed job, or ``None`` when it is unknown, finished, running elsewhere, or out of
        attempts.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("claim"):
        row = await pool.fetchrow(
            """
            UPDATE reeval_jobs
               SET status = 'running', claimed_by = $2, claimed_at = now(),
                   heartbeat_at = now(), attempts = attempts + 1
             WHERE job_id = $1
               AND attempts < $4
               AND (status = 'requested'
                    OR (status = 'running'
                        AND heartbeat_at < now() - make_interval(secs => $3)))
            RETURNING request, attempts, golden_set_version_id
            """,
            job_id, worker, float(lease_s), max_attempts,
        )
    if row is None:
        return None
    return ClaimedJob(
        request=ReevalRequested.model_validate(row["request"]),
        attempts=row["attempts"],
        golden_set_version_id=row["golden_set_version_id"],
    )


async def heartbeat(pool: asyncpg.Pool, job_id: UUID, worker: str) -> bool:
    """Refresh the claim's heartbeat; ``False`` when ``worker`` no longer owns the job.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("heartbeat"):
        row = await pool.fetchval(
            "UPDATE reeval_jobs SET heartbeat_at = now()"
            " WHERE job_id = $1 AND claimed_by = $2 AND status = 'running' RETURNING 1",
            job_id, worker,
        )
    return row is not None


async def pin_version(pool: asyncpg.Pool, job_id: UUID, worker: str, version_id: UUID) -> bool:
    """Record the golden-set version the job runs (first pin wins; later attempts reuse it).

    Returns:
        ``False`` when ``worker`` no longer owns the job.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("pin version"):
        row = await pool.fetchval(
            """
            UPDATE reeval_jobs
               SET golden_set_version_id = coalesce(golden_set_version_id, $3)
             WHERE job_id = $1 AND claimed_by = $2 AND status = 'running'
            RETURNING 1
            """,
            job_id, worker, version_id,
        )
    return row is not None


async def lock_claim(conn: asyncpg.Connection, job_id: UUID, worker: str) -> bool:
    """Inside a transaction: lock the job row and check ``worker`` still owns it (running).

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("lock"):
        row = await conn.fetchval(
            "SELECT 1 FROM reeval_jobs WHERE job_id = $1 AND claimed_by = $2"
            " AND status = 'running' FOR UPDATE",
            job_id, worker,
        )
    return row is not None


async def finish(
    conn: asyncpg.Connection,
    job_id: UUID,
    worker: str,
    *,
    status: str,
    run_id: UUID | None,
    result: dict[str, Any],
    error: str | None = None,
) -> bool:
    """Mark the job ``succeeded`` or ``failed`` with its run and result (call after
    :func:`lock_claim`, in the same transaction as storing the run).

    Returns:
        ``False`` when ``worker`` no longer owns the job (nothing changed).

    Raises:
        ValueError: ``status`` is not ``succeeded`` or ``failed``.
        StorageError: PostgreSQL failed.
    """
    if status not in ("succeeded", "failed"):
        raise ValueError(f"finish: status must be 'succeeded' or 'failed'; got {status!r}")
    with _storage("finish"):
        row = await conn.fetchval(
            """
            UPDATE reeval_jobs
               SET status = $3, run_id = $4, result = $5, error = $6, finished_at = now(),
                   heartbeat_at = now()
             WHERE job_id = $1 AND claimed_by = $2 AND status = 'running'
            RETURNING 1
            """,
            job_id, worker, status, run_id, result, error,
        )
    return row is not None


async def due_jobs(
    pool: asyncpg.Pool, *, lease_s: float, grace_s: float, max_attempts: int, limit: int = 100
) -> list[UUID]:
    """Jobs the sweep should try to claim, oldest first: ``requested`` for longer than
    ``grace_s`` seconds (the bus should have delivered them by then), or ``running`` with a
    heartbeat older than ``lease_s`` seconds (their worker died), with attempts left.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("sweep"):
        rows = await pool.fetch(
            """
            SELECT job_id FROM reeval_jobs
             WHERE attempts < $3
               AND ((status = 'requested' AND requested_at < now() - make_interval(secs => $2))
                    OR (status = 'running'
                        AND heartbeat_at < now() - make_interval(secs => $1)))
             ORDER BY requested_at, job_id
             LIMIT $4
            """,
            float(lease_s), float(grace_s), max_attempts, limit,
        )
    return [r["job_id"] for r in rows]


async def give_up_exhausted(
    pool: asyncpg.Pool, *, lease_s: float, max_attempts: int
) -> list[tuple[UUID, str, UUID | None]]:
    """Fail the jobs whose worker died on each of their ``max_attempts`` claims.

    Returns:
        ``(job_id, agent_id, golden_set_version_id)`` of each job marked ``failed``.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("give up"):
        rows = await pool.fetch(
            """
            UPDATE reeval_jobs
               SET status = 'failed', finished_at = now(),
                   error = format('gave up after %s attempts: the worker stopped heartbeating'
                                  ' each time', attempts),
                   result = jsonb_build_object('status', 'failed', 'attempts', attempts)
             WHERE status = 'running' AND attempts >= $2
               AND heartbeat_at < now() - make_interval(secs => $1)
            RETURNING job_id, agent_id, golden_set_version_id
            """,
            float(lease_s), max_attempts,
        )
    return [(r["job_id"], r["agent_id"], r["golden_set_version_id"]) for r in rows]


async def release(pool: asyncpg.Pool, job_id: UUID, worker: str) -> bool:
    """Hand a running job back (graceful shutdown): ``requested`` again, this claim not counted
    as an attempt. Returns ``False`` when ``worker`` did not own it.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("release"):
        row = await pool.fetchval(
            """
            UPDATE reeval_jobs
               SET status = 'requested', claimed_by = NULL, claimed_at = NULL,
                   heartbeat_at = NULL, attempts = greatest(attempts - 1, 0)
             WHERE job_id = $1 AND claimed_by = $2 AND status = 'running'
            RETURNING 1
            """,
            job_id, worker,
        )
    return row is not None
