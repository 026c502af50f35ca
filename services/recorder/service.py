"""The recorder: store each feedback event once, fuse each turn's signals, publish negative cases.

Per batch of ``feedback.events.v1`` records (DESIGN.md, "The loop"):

1. decode and validate every record (``evalloop.events``); a record that fails becomes a dead
   letter (``services.recorder.dlq``: original bytes + reason);
2. dedupe within the batch by ``event_id``: an identical copy is dropped, a copy with different
   content is a ``conflicting_duplicate`` dead letter (the first one wins);
3. in ONE transaction: insert the events (``ON CONFLICT (event_id) DO NOTHING``), dead-letter
   those whose id was already stored with other content, re-fuse every turn the batch touched
   from ALL its stored events, and upsert the turns' negative cases;
4. after the commit: publish the dead letters, then the negative cases that are new or changed
   (``feedback.negative.v1``, key ``agent_id``), and return; the transport commits the offsets
   only then.

Exactly-once storage under at-least-once delivery: a redelivered batch inserts nothing new and
its cases are unchanged. Because a crash between the commit and the publishes would otherwise
lose those messages, the cases of every turn that received an ALREADY-STORED (redelivered or
re-sent) event are published again: ``feedback.negative.v1`` is at-least-once, and its
consumers key on the deterministic ``case_id``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, ClassVar
from uuid import UUID

from evalloop.adapters.bus import Record
from evalloop.adapters.event_store import (
    VOLATILE_FIELDS,
    EventRow,
    event_row,
    find_conflicts,
    insert_events,
    load_turn_events,
    upsert_negative_cases,
)
from evalloop.core.fusion import FusionWeights, TurnKey, fuse, turn_key
from evalloop.errors import InvalidEvent
from evalloop.events import (
    MAX_EVENT_BYTES,
    AgentChanged,
    FeedbackEvent,
    NegativeCase,
    dump_event,
    parse_event,
)
from evalloop.runtime import Consumes, Deps, Publishes, Service
from evalloop.topics import GROUP_RECORDER
from pydantic import TypeAdapter, ValidationError

from services.recorder.dlq import DeadLetter, conflict_error, dlq_headers

__all__ = ["BatchOutcome", "RecorderService", "RecorderStats", "decode_record"]

log = logging.getLogger(__name__)
_ADAPTER: TypeAdapter[FeedbackEvent] = TypeAdapter(FeedbackEvent)


def decode_record(record: Record) -> FeedbackEvent:
    """Decode one record's value into a feedback event.

    Valid records take pydantic's JSON fast path; a record that fails is decoded again by
    :func:`evalloop.events.parse_event` for the precise, field-by-field error. A missing
    ``received_at`` (a producer that wrote to Kafka directly) is set to the record's Kafka
    timestamp (milliseconds since the epoch -> UTC), or to now (UTC) when it has none.

    Raises:
        InvalidEvent: malformed JSON, oversized, not an object, unknown type, bad fields.
    """
    event: FeedbackEvent
    if len(record.value) <= MAX_EVENT_BYTES:
        try:
            event = _ADAPTER.validate_json(record.value)
        except ValidationError:
            event = parse_event(record.value)  # raises the precise InvalidEvent
    else:
        event = parse_event(record.value)  # raises "oversized"
    if event.received_at is None:
        received = (
            datetime.now(UTC) if record.timestamp_ms is None
            else datetime.fromtimestamp(record.timestamp_ms / 1000, UTC)
        )
        event = event.model_copy(update={"received_at": received})
    return event


@dataclass(frozen=True, slots=True, eq=False)
class _Item:
    record: Record
    event: FeedbackEvent
    row: EventRow


def _content(event: FeedbackEvent) -> dict[str, Any]:
    """The event as a JSON object, for content comparison (``received_at`` left out)."""
    content: dict[str, Any] = event.model_dump(mode="json", exclude=set(VOLATILE_FIELDS))
    return content


@dataclass
class RecorderStats:
    """Running totals since start (for logs, the demo and the benchmark)."""

    batches: int = 0
    records: int = 0
    stored: int = 0
    already_stored: int = 0
    dead_letters: int = 0
    cases_published: int = 0


@dataclass
class BatchOutcome:
    """What one batch did (returned by :meth:`RecorderService.record_batch`)."""

    stored: list[Any] = field(default_factory=list)
    already_stored: list[Any] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    cases_changed: list[NegativeCase] = field(default_factory=list)
    cases_to_publish: list[NegativeCase] = field(default_factory=list)


class RecorderService(Service):
    """Stores every feedback event once in PostgreSQL, dead-letters what it cannot decode, and
    publishes each negative turn as a fused negative case.

    Consumes ``feedback.events.v1`` (group ``evalloop-recorder``) in batches of
    ``settings.recorder.max_records``; publishes ``feedback.events.dlq.v1`` and
    ``feedback.negative.v1``.
    """

    name: ClassVar[str] = "recorder"
    consumes: ClassVar[tuple[Consumes, ...]] = (
        Consumes("feedback_events", GROUP_RECORDER, "on_feedback_events", FeedbackEvent, 5000),
    )
    publishes: ClassVar[tuple[Publishes, ...]] = (
        Publishes("feedback_dlq", bytes, "records the recorder could not decode or validate: "
                  "original bytes; reason in the x-dlq-* headers"),
        Publishes("feedback_negative", NegativeCase, "one fused negative case per negative turn "
                  "(at-least-once; key agent_id; dedupe by case_id)"),
    )

    def __init__(self, deps: Deps) -> None:
        """Keep ``deps``; batch size and fusion weights come from ``deps.settings``."""
        super().__init__(deps)
        self.weights = FusionWeights.from_mapping(deps.settings.fusion.model_dump())
        self.stats = RecorderStats()
        batch = deps.settings.recorder.max_records
        if batch != self.consumes[0].max_records:
            # per-instance batch size (read by mount_in_process); build_app uses with_batch_size
            self.consumes = (replace(self.consumes[0], max_records=batch),)  # type: ignore[misc]

    @classmethod
    def with_batch_size(cls, max_records: int) -> type[RecorderService]:
        """A subclass whose subscription takes batches of ``max_records`` (for Kafka apps,
        where the subscription is built from the class before an instance exists)."""
        consumes = (replace(cls.consumes[0], max_records=max_records),)
        return type(cls.__name__, (cls,), {"consumes": consumes, "__doc__": cls.__doc__})

    # ------------------------------------------------------------------ handler

    async def on_feedback_events(self, records: list[Record]) -> None:
        """Handle one batch of ``feedback.events.v1`` records (module docs, steps 1-4).

        Raises:
            StorageError: PostgreSQL failed; nothing of the batch was stored (rolled back) and
                the transport re-delivers it.
            BusError: a publish failed after the commit; the re-delivered batch stores
                nothing twice and publishes again.
        """
        outcome = await self.record_batch(records)
        await self.publish_outcome(outcome)
        s = self.stats
        s.batches += 1
        s.records += len(records)
        s.stored += len(outcome.stored)
        s.already_stored += len(outcome.already_stored)
        s.dead_letters += len(outcome.dead_letters)
        s.cases_published += len(outcome.cases_to_publish)
        log.debug(
            "recorder batch: %d records, %d stored, %d already stored, %d dead letters, "
            "%d cases published", len(records), len(outcome.stored),
            len(outcome.already_stored), len(outcome.dead_letters),
            len(outcome.cases_to_publish),
        )

    async def record_batch(self, records: list[Record]) -> BatchOutcome:
        """Decode, dedupe and store ``records`` in one transaction (steps 1-3); publish nothing.

        Returns:
            The outcome; its dead letters and cases still have to be published.
        """
        outcome = BatchOutcome()
        unique: dict[UUID, _Item] = {}
        repeats: list[_Item] = []  # later copies of an id in this batch, judged after storing
        for record in records:
            try:
                event = decode_record(record)
            except InvalidEvent as exc:
                outcome.dead_letters.append(DeadLetter(record, exc))
                continue
            item = _Item(record, event, event_row(event))
            if event.event_id in unique:
                repeats.append(item)
            else:
                unique[event.event_id] = item
        if unique:
            async with self.deps.pool.acquire() as conn, conn.transaction():
                await self._store(conn, list(unique.values()), repeats, outcome)
        outcome.dead_letters.sort(key=lambda d: (d.record.partition, d.record.offset))
        return outcome

    async def _store(
        self, conn: Any, items: list[_Item], repeats: list[_Item], outcome: BatchOutcome
    ) -> None:
        rows = [item.row for item in items]
        inserted = set(await insert_events(conn, rows))
        seen = [row for row in rows if row.event_id not in inserted]
        conflicts = {c.event_id: c for c in await find_conflicts(conn, seen)}
        # The content each id is stored with: the first one stored wins.
        winner = {
            item.event.event_id: conflicts[item.event.event_id].stored
            if item.event.event_id in conflicts else _content(item.event)
            for item in items
        }
        touched: set[TurnKey] = set()
        redelivered_turns: set[TurnKey] = set()
        for item, is_first in [(i, True) for i in items] + [(i, False) for i in repeats]:
            event = item.event
            first = winner[event.event_id]
            again = _content(event)
            fields = sorted(
                k for k in first.keys() | again.keys()
                if k not in VOLATILE_FIELDS and first.get(k) != again.get(k)
            )
            if fields:
                error = conflict_error(str(event.event_id), first, again, fields)
                outcome.dead_letters.append(DeadLetter(item.record, error))
                continue
            is_new = is_first and event.event_id in inserted
            (outcome.stored if is_new else outcome.already_stored).append(event.event_id)
            if isinstance(event, AgentChanged):
                continue
            key = turn_key(event)
            touched.add(key)
            if not is_new:
                redelivered_turns.add(key)
        turns = await load_turn_events(conn, sorted(touched), judged_only=True)
        cases = [c for c in (fuse(evts, self.weights) for evts in turns.values()) if c]
        changed = await upsert_negative_cases(conn, cases)
        changed_ids = {c.case_id for c in changed}
        outcome.cases_changed = changed
        outcome.cases_to_publish = [
            c for c in cases
            if c.case_id in changed_ids
            or TurnKey(c.agent_id, c.conversation_id, c.turn_id) in redelivered_turns
        ]

    async def publish_outcome(self, outcome: BatchOutcome) -> None:
        """Publish a committed batch's dead letters, then its negative cases (step 4).

        Raises:
            BusError: the bus refused a message (the caller lets the batch be re-delivered).
        """
        bus, topics = self.deps.bus, self.deps.topics
        now = datetime.now(UTC)
        for letter in outcome.dead_letters:
            await bus.publish(
                topics.feedback_dlq, letter.record.value, key=letter.record.key,
                headers=dlq_headers(letter, now),
            )
        if outcome.cases_to_publish:
            await bus.publish_batch(
                topics.feedback_negative,
                [(c.agent_id, dump_event(c)) for c in outcome.cases_to_publish],
            )
