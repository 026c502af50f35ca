"""Retention and erasure over every table that holds a person's text.

Rules: ``docs/security.md#retention`` and ``docs/security.md#erasure``.

* :func:`prune` deletes rows older than the configured retention, table by table, in batches
  of ``batch_rows`` (short transactions: the services keep writing meanwhile).
* :func:`erase_conversations` deletes everything derived from the given conversations, in
  one transaction: events, fused negative cases, monitor turn flags, triage's embedded cases
  and the review queue (the candidate outbox); golden cases confirmed from those conversations
  are redacted in every version holding them, and so are the review audit rows of the erased
  candidates and cases and the eval results of runs over those cases. Returns an
  :class:`Erasure`.

Monitor tables are pruned in *event time* relative to each agent's newest event (the window
the monitor computes is in event time, and a replay of old history must not lose its window);
the others in wall-clock time of storage. asyncpg errors become :class:`StorageError`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import asyncpg

from evalloop.adapters.golden_store import redact_cases, redact_results
from evalloop.adapters.monitor_store import storage_errors
from evalloop.adapters.review_store import redact_audit
from evalloop.core.fusion import TurnKey, case_id_for
from evalloop.settings import RetentionSettings

__all__ = ["ERASED_TABLES", "REDACTED_TABLES", "Erasure", "conversations_of_user",
           "erase_conversations", "prune"]

#: Tables :func:`erase_conversations` reports on, in the order it deletes from them.
ERASED_TABLES = ("review_queue", "triage_cases", "monitor_turns", "negative_cases", "events")
#: Tables :func:`erase_conversations` redacts in place (rows stay, text becomes ``[erased]``).
REDACTED_TABLES = ("golden_cases", "review_actions", "eval_results")


@dataclass(frozen=True, slots=True)
class Erasure:
    """What one erase request did.

    Attributes:
        erase_id: the request's id (on each ``golden_redactions`` row it wrote).
        deleted: rows deleted per table of :data:`ERASED_TABLES`.
        redacted: rows redacted in place per table of :data:`REDACTED_TABLES`:
            ``golden_cases`` counts (version, case) pairs, ``review_actions`` audit rows,
            ``eval_results`` result rows of runs over a redacted case
            (``docs/security.md#erasure``).
    """

    erase_id: UUID
    deleted: dict[str, int]
    redacted: dict[str, int]


async def _delete_batches(pool: asyncpg.Pool, table: str, where: str, args: list[Any],
                          batch: int) -> int:
    """``DELETE FROM table WHERE where`` in batches of ``batch`` rows; returns the count."""
    total = 0
    sql = (f"DELETE FROM {table} WHERE ctid = ANY(ARRAY("
           f"SELECT ctid FROM {table} WHERE {where} LIMIT {int(batch)}))")
    while True:
        with storage_errors(f"pruning {table}"):
            status = await pool.execute(sql, *args)
        n = int(status.split()[-1])
        total += n
        if n < batch:
            return total


async def prune(
    pool: asyncpg.Pool, retention: RetentionSettings, *, now: datetime
) -> dict[str, int]:
    """Delete what is older than ``retention`` allows.

    Args:
        retention: days per family of tables (``None`` = keep for ever) and the batch size.
        now: the current time (UTC); cut-offs are ``now - days``.

    Returns:
        Rows deleted per table (every table considered is present, 0 included).

    Raises:
        StorageError: PostgreSQL failed (what was deleted so far stays deleted).
    """
    b = retention.batch_rows
    out: dict[str, int] = {}

    def cut(days: int | None) -> datetime | None:
        return None if days is None else now - timedelta(days=days)

    if (c := cut(retention.events_days)) is not None:
        out["events"] = await _delete_batches(pool, "events", "stored_at < $1", [c], b)
        out["negative_cases"] = await _delete_batches(
            pool, "negative_cases", "updated_at < $1", [c], b)
        # rejected records keep their text too (published letters only: the outbox keeps
        # what is still to be published; docs/operations.md#dead-letters)
        out["dead_letters"] = await _delete_batches(
            pool, "dead_letters", "created_at < $1 AND published_at IS NOT NULL", [c], b)
    if retention.monitor_turns_days is not None:
        age = timedelta(days=retention.monitor_turns_days)
        for table in ("monitor_turns", "monitor_buckets"):
            out[table] = await _delete_batches(
                pool, table,
                "bucket_start < (SELECT s.newest_event_at - $1::interval FROM monitor_state s"
                f" WHERE s.agent_id = {table}.agent_id)", [age], b)
    if (c := cut(retention.triage_days)) is not None:
        out["triage_cases"] = await _delete_batches(
            pool, "triage_cases", "updated_at < $1", [c], b)
        out["review_queue"] = await _delete_batches(
            pool, "review_queue", "updated_at < $1 AND status IN ('pending', 'rejected')",
            [c], b)
    if (c := cut(retention.results_days)) is not None:
        with storage_errors("pruning eval_runs"):
            async with pool.acquire() as conn, conn.transaction():
                # a kept run may name a pruned one as its baseline: forget the reference
                await conn.execute(
                    "UPDATE eval_runs SET baseline_run_id = NULL WHERE baseline_run_id IN"
                    " (SELECT run_id FROM eval_runs WHERE coalesce(finished_at, started_at)"
                    " < $1)", c)
                results = await conn.fetchval(
                    "SELECT count(*) FROM eval_results r JOIN eval_runs e USING (run_id)"
                    " WHERE coalesce(e.finished_at, e.started_at) < $1", c)
                status = await conn.execute(
                    "DELETE FROM eval_runs WHERE coalesce(finished_at, started_at) < $1", c)
        out["eval_runs"] = int(status.split()[-1])
        out["eval_results"] = int(results)
        out["reeval_jobs"] = await _delete_batches(
            pool, "reeval_jobs", "status IN ('succeeded', 'failed') AND finished_at < $1",
            [c], b)
    return out


async def conversations_of_user(pool: asyncpg.Pool, user_id: str) -> list[str]:
    """Conversation ids whose stored events carry ``user_id`` (sorted).

    Raises:
        StorageError: PostgreSQL failed.
    """
    with storage_errors("finding a user's conversations"):
        rows = await pool.fetch(
            "SELECT DISTINCT conversation_id FROM events WHERE payload->>'user_id' = $1"
            " ORDER BY 1", user_id)
    return [r["conversation_id"] for r in rows]


async def erase_conversations(
    pool: asyncpg.Pool, conversation_ids: Iterable[str], *, agent_id: str | None = None
) -> Erasure:
    """Delete every trace of ``conversation_ids`` (of ``agent_id`` only, when given).

    Triage cases and review-queue rows are found by their case id (derived from the turn,
    :func:`evalloop.core.fusion.case_id_for`, so they are found even when the events are gone)
    and by the event ids of their evidence. Before the review-queue rows go, the golden cases
    they were confirmed into (``golden_version_id``'s set, ``golden_case_id``) are redacted in
    every version of that set holding them (:func:`evalloop.adapters.golden_store.redact_cases`),
    the audit rows of those candidates and cases lose their text
    (:func:`evalloop.adapters.review_store.redact_audit`) and so do the eval results of runs
    over the redacted versions (:func:`evalloop.adapters.golden_store.redact_results`).

    Returns:
        The request's id, rows deleted per table of :data:`ERASED_TABLES` and rows redacted
        per table of :data:`REDACTED_TABLES`.

    Raises:
        StorageError: PostgreSQL failed (nothing was deleted: one transaction).
    """
    convs = sorted(set(conversation_ids))
    agent_sql = "" if agent_id is None else " AND agent_id = $2"
    args: list[Any] = [convs] if agent_id is None else [convs, agent_id]
    out: dict[str, int] = {}
    erase_id = uuid4()
    with storage_errors("erasing conversations"):
        async with pool.acquire() as conn, conn.transaction():
            keys: set[tuple[str, str, str]] = set()
            event_ids: list[Any] = []
            for table in ("events", "negative_cases", "monitor_turns"):
                rows = await conn.fetch(
                    f"SELECT agent_id, conversation_id, turn_id"
                    f"{', event_id' if table == 'events' else ''} FROM {table}"
                    f" WHERE conversation_id = ANY($1::text[]){agent_sql}", *args)
                keys.update((r["agent_id"], r["conversation_id"], r["turn_id"]) for r in rows)
                if table == "events":
                    event_ids = [r["event_id"] for r in rows]
            case_ids = [case_id_for(TurnKey(*k)) for k in sorted(keys)]
            # lock the queue rows first, in candidate order, as a confirm does (then the
            # golden set): a confirm racing the erasure either committed before (its case is
            # seen here and redacted) or waits and finds the candidate gone
            queued = await conn.fetch(
                "SELECT candidate_id, golden_version_id, golden_case_id FROM review_queue"
                " WHERE case_id = ANY($1::uuid[]) OR evidence_event_ids && $2::uuid[]"
                " ORDER BY candidate_id FOR UPDATE", case_ids, event_ids)
            links = [(r["golden_version_id"], r["golden_case_id"]) for r in queued
                     if r["golden_version_id"] is not None and r["golden_case_id"] is not None]
            confirmed = await conn.fetch(
                "SELECT v.agent_id, v.golden_set_id, l.case_id FROM golden_set_versions v"
                " JOIN unnest($1::uuid[], $2::text[]) AS l (version_id, case_id)"
                " USING (version_id)", [v for v, _ in links], [c for _, c in links])
            golden = {(r["agent_id"], r["golden_set_id"], r["case_id"]) for r in confirmed}
            redacted = {"golden_cases": await redact_cases(
                conn, golden, erase_id=erase_id, at=await conn.fetchval("SELECT now()"))}
            redacted["review_actions"] = await redact_audit(
                conn, candidate_ids=[r["candidate_id"] for r in queued],
                golden_cases=sorted(golden))
            redacted["eval_results"] = await redact_results(conn, erase_id=erase_id)
            for table in ("review_queue", "triage_cases"):
                status = await conn.execute(
                    f"DELETE FROM {table} WHERE case_id = ANY($1::uuid[])"
                    " OR evidence_event_ids && $2::uuid[]", case_ids, event_ids)
                out[table] = int(status.split()[-1])
            for table in ("monitor_turns", "negative_cases", "events"):
                status = await conn.execute(
                    f"DELETE FROM {table} WHERE conversation_id = ANY($1::text[])"
                    f"{agent_sql}", *args)
                out[table] = int(status.split()[-1])
    return Erasure(erase_id, {t: out[t] for t in ERASED_TABLES}, redacted)
