"""Repository of the recorder's dead letters (table ``dead_letters``, migration 0005).

A letter is stored once per ``letter_id`` (``ON CONFLICT DO NOTHING``) in the recorder's batch
transaction, so a redelivered batch adds none; ``published_at`` is the outbox mark of the
dead-letter topic (``docs/operations.md#dead-letters``). asyncpg errors become
:class:`evalloop.errors.StorageError` (``evalloop.adapters.postgres.storage_errors``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from evalloop.adapters.postgres import storage_errors

__all__ = ["LetterRow", "count_letters", "dlq_headers", "insert_letters", "publish_unpublished"]


@dataclass(frozen=True, slots=True)
class LetterRow:
    """One dead letter: the rejected record as it arrived, and why.

    Attributes:
        letter_id: the letter's identity (``services.recorder.dlq.letter_id``).
        event_id: the record's ``event_id`` when it could be read, else ``None``.
        reason: ``InvalidEvent.reason``.
        detail: ``InvalidEvent.as_dict()``.
        key: the record's Kafka key (text), or ``None``.
        value: the record's bytes, unchanged.
        source_topic: where it was consumed.
        source_partition: its partition.
        source_offset: its offset (of the first delivery that stored the letter).
        created_at: when it was dead-lettered (UTC); set by the server on insert.
    """

    letter_id: UUID
    event_id: UUID | None
    reason: str
    detail: dict[str, Any]
    key: str | None
    value: bytes
    source_topic: str
    source_partition: int
    source_offset: int
    created_at: datetime | None = None


def dlq_headers(row: LetterRow, at: datetime) -> dict[str, str]:
    """The headers of a stored letter's DLQ message (``docs/operations.md#dead-letters``);
    ``at`` is a UTC time."""
    return {
        "x-dlq-reason": row.reason,
        "x-dlq-detail": json.dumps(row.detail, ensure_ascii=False),
        "x-dlq-source-topic": row.source_topic,
        "x-dlq-source-partition": str(row.source_partition),
        "x-dlq-source-offset": str(row.source_offset),
        "x-dlq-at": at.isoformat(),
        "x-dlq-id": str(row.letter_id),
    }


async def insert_letters(conn: asyncpg.Connection, rows: Sequence[LetterRow]) -> int:
    """Store ``rows`` (call inside the batch's transaction); letters already stored are left
    as they are. Returns how many were new.

    Raises:
        StorageError: PostgreSQL failed.
    """
    if not rows:
        return 0
    with storage_errors(f"storing {len(rows)} dead letters"):
        inserted = await conn.fetch(
            """
            INSERT INTO dead_letters (letter_id, event_id, reason, detail, record_key,
                                      record_value, source_topic, source_partition,
                                      source_offset)
            SELECT a, b, c, d, e, f, g, h, i
              FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::jsonb[], $5::text[],
                                 $6::bytea[], $7::text[], $8::int[], $9::bigint[])
                     WITH ORDINALITY AS u(a, b, c, d, e, f, g, h, i, n)
            ORDER BY n
            ON CONFLICT (letter_id) DO NOTHING
            RETURNING letter_id
            """,
            [r.letter_id for r in rows], [r.event_id for r in rows], [r.reason for r in rows],
            [r.detail for r in rows], [r.key for r in rows], [r.value for r in rows],
            [r.source_topic for r in rows], [r.source_partition for r in rows],
            [r.source_offset for r in rows],
        )
    return len(inserted)


async def publish_unpublished(
    pool: asyncpg.Pool, publish: Callable[[LetterRow], Awaitable[None]], *, limit: int = 500
) -> int:
    """Publish every letter not yet published, oldest first, and mark each once ``publish``
    returned. Rows are locked while they are published (``FOR UPDATE SKIP LOCKED``), so two
    recorders never publish one letter twice. Returns how many were published.

    Raises:
        StorageError: PostgreSQL failed.
        Exception: whatever ``publish`` raised (the letters not yet marked stay in the outbox).
    """
    count = 0
    while True:
        failure: Exception | None = None
        with storage_errors("publishing dead letters"):
            async with pool.acquire() as conn, conn.transaction():
                rows = await conn.fetch(
                    "SELECT * FROM dead_letters WHERE published_at IS NULL"
                    " ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED", limit,
                )
                done: list[UUID] = []
                for r in rows:
                    try:
                        await publish(LetterRow(
                            r["letter_id"], r["event_id"], r["reason"], r["detail"],
                            r["record_key"], r["record_value"], r["source_topic"],
                            r["source_partition"], r["source_offset"], r["created_at"],
                        ))
                    except Exception as exc:  # mark what went out, then re-raise
                        failure = exc
                        break
                    done.append(r["letter_id"])
                if done:
                    await conn.execute(
                        "UPDATE dead_letters SET published_at = now()"
                        " WHERE letter_id = ANY($1::uuid[])", done,
                    )
        count += len(done)
        if failure is not None:
            raise failure
        if len(rows) < limit:
            return count


async def count_letters(pool: asyncpg.Pool) -> tuple[int, int]:
    """``(letters stored, letters not yet published)``.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with storage_errors("counting dead letters"):
        row = await pool.fetchrow(
            "SELECT count(*) AS n, count(*) FILTER (WHERE published_at IS NULL) AS u"
            " FROM dead_letters"
        )
    assert row is not None
    return int(row["n"]), int(row["u"])
