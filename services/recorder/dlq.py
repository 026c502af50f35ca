"""Dead letters of the recorder: what goes to ``feedback.events.dlq.v1`` and how it is labelled.

A dead letter keeps the ORIGINAL record bytes as its value and its original key, so nothing is
lost and a fixed record can be replayed as it was. Headers (all UTF-8 text):

* ``x-dlq-reason``: short code, one of ``InvalidEvent.reason`` (``malformed_json``,
  ``oversized``, ``not_an_object``, ``unknown_event_type``, ``invalid_fields``,
  ``conflicting_duplicate``);
* ``x-dlq-detail``: JSON of ``InvalidEvent.as_dict()`` (``index``, ``event_id``, ``reason``,
  ``problems`` = ``[{"field", "expected", "received"}]``);
* ``x-dlq-source-topic``, ``x-dlq-source-partition``, ``x-dlq-source-offset``: where it came from;
* ``x-dlq-at``: when it was dead-lettered (ISO-8601 UTC).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from evalloop.adapters.bus import Record
from evalloop.errors import FieldProblem, InvalidEvent

__all__ = ["DeadLetter", "conflict_error", "dlq_headers"]


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A record the recorder cannot store, and why."""

    record: Record
    error: InvalidEvent


def dlq_headers(letter: DeadLetter, at: datetime) -> dict[str, str]:
    """The headers of ``letter``'s DLQ message (module docs); ``at`` is a UTC time."""
    r = letter.record
    return {
        "x-dlq-reason": letter.error.reason,
        "x-dlq-detail": json.dumps(letter.error.as_dict(), ensure_ascii=False),
        "x-dlq-source-topic": r.topic,
        "x-dlq-source-partition": str(r.partition),
        "x-dlq-source-offset": str(r.offset),
        "x-dlq-at": at.isoformat(),
    }


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
