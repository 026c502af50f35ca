"""Dead letters of the recorder: what goes to ``feedback.events.dlq.v1`` and how it is labelled.

A letter is identified by :func:`letter_id` (the record's ``event_id`` and bytes) and stored
once, in the batch's transaction, in table ``dead_letters``; it is published from there (an
outbox), so a redelivered batch adds no second letter (``docs/operations.md#dead-letters``).

A dead letter keeps the ORIGINAL record bytes as its value and its original key, so nothing is
lost and a fixed record can be replayed as it was. Headers (all UTF-8 text):

* ``x-dlq-reason``: short code, one of ``InvalidEvent.reason`` (``malformed_json``,
  ``oversized``, ``not_an_object``, ``unknown_event_type``, ``invalid_fields``,
  ``conflicting_duplicate``);
* ``x-dlq-detail``: JSON of ``InvalidEvent.as_dict()`` (``index``, ``event_id``, ``reason``,
  ``problems`` = ``[{"field", "expected", "received"}]``);
* ``x-dlq-source-topic``, ``x-dlq-source-partition``, ``x-dlq-source-offset``: where it came from;
* ``x-dlq-at``: when it was dead-lettered (ISO-8601 UTC);
* ``x-dlq-id``: the letter id (UUID), the same for every copy of the same rejected record.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalloop.adapters.bus import Record
from evalloop.adapters.dead_letter_store import LetterRow, dlq_headers
from evalloop.errors import FieldProblem, InvalidEvent

__all__ = ["DeadLetter", "conflict_error", "dlq_headers", "letter_id", "letter_row"]

#: Namespace of letter ids. NEVER change it: stored letters would no longer match redeliveries.
_LETTER_NAMESPACE = uuid.UUID("5b0d0c35-84c1-4d55-9a8e-3f4a6f1de2a7")


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A record the recorder cannot store, and why."""

    record: Record
    error: InvalidEvent


def letter_id(event_id: str | None, value: bytes) -> uuid.UUID:
    """The identity of a dead letter: UUIDv5 of the record's ``event_id`` (when it could be
    read) and the SHA-256 of its bytes. Every delivery of the same rejected record gets the
    same id; two different records rejected under one ``event_id`` (two conflicting copies)
    get two."""
    digest = hashlib.sha256(value).hexdigest()
    return uuid.uuid5(_LETTER_NAMESPACE, f"{event_id or ''}\x1f{digest}")


def _uuid_or_none(text: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(text) if text else None
    except ValueError:
        return None


def letter_row(letter: DeadLetter) -> LetterRow:
    """The ``dead_letters`` row of ``letter``."""
    r, e = letter.record, letter.error
    return LetterRow(
        letter_id=letter_id(e.event_id, r.value), event_id=_uuid_or_none(e.event_id),
        reason=e.reason, detail=e.as_dict(), key=r.key, value=r.value, source_topic=r.topic,
        source_partition=r.partition, source_offset=r.offset,
    )


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def conflict_error(
    event_id: str, first: Mapping[str, Any], later: Mapping[str, Any], fields: list[str]
) -> InvalidEvent:
    """The error of an event whose id is already taken by an event with other content.

    Args:
        event_id: the shared id.
        first: the JSON object of the event kept (stored first, or earlier in the batch).
        later: the JSON object of the rejected one.
        fields: the differing top-level fields.

    Returns:
        ``InvalidEvent("conflicting_duplicate", ...)`` with one problem per differing field:
        expected = the kept value, received = the rejected one.
    """
    problems = [
        FieldProblem(
            field=f,
            expected=f"{_short(first.get(f))} (event_id already stored with this value)",
            received=_short(later.get(f)),
        )
        for f in fields
    ]
    return InvalidEvent("conflicting_duplicate", problems, event_id=event_id)
