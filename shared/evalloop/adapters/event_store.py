"""Repository of feedback events and negative cases (PostgreSQL, tables of migration 0001).

Every write here is idempotent, so a redelivered batch changes nothing (DESIGN.md, "Storage"):
events are keyed by ``event_id`` (``ON CONFLICT DO NOTHING``), negative cases by their turn
(``ON CONFLICT ... DO UPDATE ... WHERE`` something changed). Bulk writes send whole columns as
arrays, one statement per batch: ``unnest`` of arrays measured faster here than COPY into a
temporary table followed by ``INSERT ... SELECT`` (``benchmarks/recorder.py --compare-insert``).
Payloads travel as JSON text (``text[]``) cast to ``jsonb`` by the server, which spares the
per-row Python jsonb codec. asyncpg errors become :class:`evalloop.errors.StorageError`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg
from pydantic import TypeAdapter

from evalloop.core.fusion import TurnKey
from evalloop.errors import StorageError
from evalloop.events import FeedbackEvent, NegativeCase

__all__ = [
    "Conflict",
    "EventRow",
    "count_events",
    "event_row",
    "find_conflicts",
    "insert_events",
    "load_turn_events",
    "upsert_negative_cases",
]

_EVENT_ADAPTER: TypeAdapter[FeedbackEvent] = TypeAdapter(FeedbackEvent)
#: Fields that may differ between two sendings of the same event (ingest stamps each sending).
VOLATILE_FIELDS = ("received_at",)


@contextlib.contextmanager
def _storage(what: str) -> Iterator[None]:
    try:
        yield
    except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
        raise StorageError(f"{what} failed: {exc}") from exc


@dataclass(frozen=True, slots=True)
class EventRow:
    """One ``events`` row ready to insert: the model's columns and its JSON text ``payload``."""

    event_id: UUID
    event_type: str
    agent_id: str
    agent_version: str | None
    conversation_id: str
    turn_id: str
    occurred_at: Any
    received_at: Any
    payload: str


def event_row(event: FeedbackEvent) -> EventRow:
    """The row of ``event``; ``payload`` is its full JSON (pydantic's encoder, UTC times)."""
    return EventRow(
        event.event_id, event.event_type, event.agent_id, event.agent_version,
        event.conversation_id, event.turn_id, event.occurred_at, event.received_at,
        event.model_dump_json(),
    )


_INSERT_EVENTS = """
INSERT INTO events (event_id, event_type, agent_id, agent_version, conversation_id, turn_id,
                    occurred_at, received_at, payload)
SELECT i, t, a, v, c, u, o, r, p::jsonb
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
            $7::timestamptz[], $8::timestamptz[], $9::text[]) AS n(i, t, a, v, c, u, o, r, p)
ON CONFLICT (event_id) DO NOTHING
RETURNING event_id
"""


async def insert_events(
    conn: asyncpg.Connection, events: Sequence[FeedbackEvent | EventRow]
) -> list[UUID]:
    """Insert events that are not stored yet, in one statement.

    Args:
        conn: a connection (run it inside the caller's transaction for atomicity).
        events: event models or pre-built :class:`EventRow` values; ``event_id`` must be
            unique within the call (dedupe first: PostgreSQL refuses to touch one row twice).

    Returns:
        The ids that were newly inserted (an id already stored is skipped: idempotent).

    Raises:
        StorageError: the statement failed.
    """
    if not events:
        return []
    rows = [e if isinstance(e, EventRow) else event_row(e) for e in events]
    columns = list(zip(*((r.event_id, r.event_type, r.agent_id, r.agent_version,
                          r.conversation_id, r.turn_id, r.occurred_at, r.received_at,
                          r.payload) for r in rows), strict=True))
    with _storage(f"inserting {len(rows)} events"):
        records = await conn.fetch(_INSERT_EVENTS, *columns)
    return [r[0] for r in records]


@dataclass(frozen=True, slots=True)
class Conflict:
    """An event id already stored with different content.

    Attributes:
        event_id: the id.
        stored: the stored event's JSON object (the first one stored wins).
        fields: names of the top-level fields whose values differ (``received_at`` ignored).
    """

    event_id: UUID
    stored: dict[str, Any]
    fields: list[str]


_FIND_CONFLICTS = """
SELECT e.event_id, e.payload::text
FROM unnest($1::uuid[], $2::text[]) AS n(i, p)
JOIN events e ON e.event_id = n.i
WHERE (e.payload - $3::text[]) IS DISTINCT FROM (n.p::jsonb - $3::text[])
"""


async def find_conflicts(
    conn: asyncpg.Connection, events: Sequence[FeedbackEvent | EventRow]
) -> list[Conflict]:
    """Among ``events`` whose ids are already stored, those whose stored content differs.

    Content is compared as JSON values (key order irrelevant), ignoring ``received_at``
    (ingest stamps every sending anew, so a re-sent event differs only there).

    Raises:
        StorageError: the query failed.
    """
    if not events:
        return []
    rows = [e if isinstance(e, EventRow) else event_row(e) for e in events]
    with _storage(f"comparing {len(rows)} events with the stored ones"):
        records = await conn.fetch(
            _FIND_CONFLICTS, [r.event_id for r in rows], [r.payload for r in rows],
            list(VOLATILE_FIELDS),
        )
    mine = {r.event_id: json.loads(r.payload) for r in rows}
    out = []
    for event_id, text in records:
        stored = json.loads(text)
        new = mine[event_id]
        fields = sorted(
            k for k in set(stored) | set(new)
            if k not in VOLATILE_FIELDS and stored.get(k) != new.get(k)
        )
        out.append(Conflict(event_id, stored, fields))
    return sorted(out, key=lambda c: c.event_id)


_LOAD_TURNS = """
SELECT payload::text FROM (
    SELECT e.payload, e.occurred_at, e.event_id,
           bool_or(e.event_type <> 'agent_response')
               OVER (PARTITION BY e.agent_id, e.conversation_id, e.turn_id) AS judged
    FROM unnest($1::text[], $2::text[], $3::text[]) AS k(a, c, t)
    JOIN events e ON e.agent_id = k.a AND e.conversation_id = k.c AND e.turn_id = k.t
) s
WHERE judged OR NOT $4::boolean
ORDER BY occurred_at, event_id
"""


async def load_turn_events(
    conn: asyncpg.Connection, turn_keys: Sequence[TurnKey], *, judged_only: bool = False
) -> dict[TurnKey, list[FeedbackEvent]]:
    """Every stored event of each turn in ``turn_keys``, oldest first.

    Args:
        conn: a connection.
        turn_keys: the turns (duplicates are fine).
        judged_only: skip turns whose only events are ``agent_response`` (nothing to fuse:
            a turn without a judging event cannot be a negative case). The recorder uses it
            so that unrated traffic, most of it, costs one index probe and no decoding.

    Returns:
        turn -> its events; a turn with no (matching) stored event is absent.

    Raises:
        StorageError: the query failed.
    """
    keys = sorted(set(turn_keys))
    if not keys:
        return {}
    with _storage(f"loading the events of {len(keys)} turns"):
        records = await conn.fetch(
            _LOAD_TURNS, [k.agent_id for k in keys], [k.conversation_id for k in keys],
            [k.turn_id for k in keys], judged_only,
        )
    out: dict[TurnKey, list[FeedbackEvent]] = {}
    for (text,) in records:
        event = _EVENT_ADAPTER.validate_json(text)
        out.setdefault(TurnKey(event.agent_id, event.conversation_id, event.turn_id), []).append(
            event
        )
    return out


def _pg_array(values: Sequence[object]) -> str:
    """A PostgreSQL array literal of plain tokens (uuids, signal kinds): no quoting needed."""
    return "{" + ",".join(str(v) for v in values) + "}"


_UPSERT_CASES = """
INSERT INTO negative_cases AS nc (case_id, agent_id, conversation_id, turn_id, occurred_at,
    confidence, signals, evidence_event_ids, question, answer, comment, expected_answer,
    context_chunks, updated_at)
SELECT i, a, c, t, o, f, s::text[], e::uuid[], q, w, m, x, j::jsonb, now()
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::timestamptz[],
            $6::float8[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[],
            $12::text[], $13::text[]) AS n(i, a, c, t, o, f, s, e, q, w, m, x, j)
ON CONFLICT (agent_id, conversation_id, turn_id) DO UPDATE SET
    occurred_at = EXCLUDED.occurred_at, confidence = EXCLUDED.confidence,
    signals = EXCLUDED.signals, evidence_event_ids = EXCLUDED.evidence_event_ids,
    question = EXCLUDED.question, answer = EXCLUDED.answer, comment = EXCLUDED.comment,
    expected_answer = EXCLUDED.expected_answer, context_chunks = EXCLUDED.context_chunks,
    updated_at = now()
WHERE (nc.occurred_at, nc.confidence, nc.signals, nc.evidence_event_ids, nc.question,
       nc.answer, nc.comment, nc.expected_answer, nc.context_chunks)
  IS DISTINCT FROM
      (EXCLUDED.occurred_at, EXCLUDED.confidence, EXCLUDED.signals,
       EXCLUDED.evidence_event_ids, EXCLUDED.question, EXCLUDED.answer, EXCLUDED.comment,
       EXCLUDED.expected_answer, EXCLUDED.context_chunks)
RETURNING case_id
"""


async def upsert_negative_cases(
    conn: asyncpg.Connection, cases: Sequence[NegativeCase]
) -> list[NegativeCase]:
    """Insert new cases and update changed ones (keyed by turn), in one statement.

    Args:
        conn: a connection (inside the caller's transaction).
        cases: at most one case per turn.

    Returns:
        The cases that were inserted or whose content changed, in input order; an identical
        re-fused case is left untouched (``updated_at`` too) and not returned.

    Raises:
        StorageError: the statement failed.
    """
    if not cases:
        return []
    chunks = [
        None if c.context_chunks is None
        else json.dumps([ch.model_dump() for ch in c.context_chunks])
        for c in cases
    ]
    with _storage(f"upserting {len(cases)} negative cases"):
        records = await conn.fetch(
            _UPSERT_CASES,
            [c.case_id for c in cases], [c.agent_id for c in cases],
            [c.conversation_id for c in cases], [c.turn_id for c in cases],
            [c.occurred_at for c in cases], [c.confidence for c in cases],
            [_pg_array(c.signals) for c in cases],
            [_pg_array(c.evidence_event_ids) for c in cases],
            [c.question for c in cases], [c.answer for c in cases],
            [c.comment for c in cases], [c.expected_answer for c in cases], chunks,
        )
    changed = {r[0] for r in records}
    return [c for c in cases if c.case_id in changed]


async def count_events(conn: asyncpg.Connection, agent_id: str | None = None) -> int:
    """Number of stored events, of one agent or of all.

    Raises:
        StorageError: the query failed.
    """
    with _storage("counting events"):
        if agent_id is None:
            value = await conn.fetchval("SELECT count(*) FROM events")
        else:
            value = await conn.fetchval("SELECT count(*) FROM events WHERE agent_id = $1", agent_id)
    return int(value)
