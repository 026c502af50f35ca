"""The optional redaction step of ingest (``ingest.redact_pii``; ``docs/security.md#redaction``).

Masks identifiers (:func:`evalloop.core.pii.mask_identifiers`) in every free-text field of an
event before it is published, so nothing downstream (Kafka, the recorder's tables, triage's
embeddings, the review queue) ever holds them: ``question``, ``answer``, ``comment``,
``corrected_answer``, ``reason`` and each context chunk's ``text``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from evalloop.core.pii import DEFAULT_REGIONS, mask_identifiers
from evalloop.events import FeedbackEvent

__all__ = ["TEXT_FIELDS", "redact_event", "redact_events"]

#: The free-text fields of feedback events (``evalloop.events``) that are masked.
TEXT_FIELDS = ("question", "answer", "comment", "corrected_answer", "reason")


def redact_event(event: FeedbackEvent, regions: Iterable[str] = DEFAULT_REGIONS) -> FeedbackEvent:
    """A copy of ``event`` with identifiers masked in its text fields (unchanged fields kept)."""
    regions = tuple(regions)
    update: dict[str, Any] = {}
    for name in TEXT_FIELDS:
        value = getattr(event, name, None)
        if isinstance(value, str):
            masked = mask_identifiers(value, regions)
            if masked != value:
                update[name] = masked
    chunks = event.context_chunks
    if chunks:
        masked_chunks = [c.model_copy(update={"text": mask_identifiers(c.text, regions)})
                         for c in chunks]
        if any(a.text != b.text for a, b in zip(chunks, masked_chunks, strict=True)):
            update["context_chunks"] = masked_chunks
    return event.model_copy(update=update) if update else event


def redact_events(events: Sequence[FeedbackEvent]) -> list[FeedbackEvent]:
    """:func:`redact_event` of each event, in order."""
    return [redact_event(e) for e in events]
