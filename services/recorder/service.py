"""The recorder: store each feedback event once, fuse each turn's signals, publish negative cases.

Per batch of ``feedback.events.v1`` records (``docs/operations.md#the-recorded-stream``):

1. decode and validate every record (``evalloop.events``); a record that fails becomes a dead
   letter (``services.recorder.dlq``: original bytes + reason);
2. dedupe within the batch by ``event_id``: an identical copy is dropped, a copy with different
   content is a ``conflicting_duplicate`` dead letter (the first one wins);
3. in ONE transaction: insert the events (``ON CONFLICT (event_id) DO NOTHING``), dead-letter
   those whose id was already stored with other content, re-fuse every judged turn the batch
   touched (one with an event other than ``agent_response``) from ALL its stored events, and
   upsert the turns' negative cases;
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

import asyncio
import gc
import logging
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, ClassVar, NamedTuple
from uuid import UUID

from pydantic import TypeAdapter, ValidationError

from evalloop.adapters.bus import Record
from evalloop.adapters.dead_letter_store import LetterRow, insert_letters, publish_unpublished
from evalloop.adapters.event_store import (
    VOLATILE_FIELDS,
    EventRow,
    Inserted,
    check_storable,
    find_conflicts,
    insert_events_noting_cases,
    load_turn_events,
    upsert_negative_cases,
)
from evalloop.core.fusion import FusionWeights, TurnKey, fuse
from evalloop.errors import BusError, InvalidEvent, StorageError
from evalloop.events import (
    EARLIEST_EVENT_TIME,
    MAX_EVENT_BYTES,
    FeedbackEvent,
    NegativeCase,
    dump_event,
    parse_event,
    undecodable,
)
from evalloop.runtime import Consumes, Deps, Publishes, Service
from evalloop.topics import GROUP_RECORDER
from services.recorder.dlq import DeadLetter, conflict_error, dlq_headers, letter_row

__all__ = [
    "BatchOutcome", "RecorderService", "RecorderStats", "decode_record", "received_time",
    "tune_gc",
]

log = logging.getLogger(__name__)
_ADAPTER: TypeAdapter[FeedbackEvent] = TypeAdapter(FeedbackEvent)


def decode_record(record: Record) -> FeedbackEvent:
    """Decode one record's value into a feedback event.

    Valid records take pydantic's JSON fast path; a record that fails is decoded again by
    :func:`evalloop.events.parse_event` for the precise, field-by-field error. What validates
    but PostgreSQL cannot store (U+0000 in text, NaN/Infinity) is refused too
    (:func:`check_storable`).

    Raises:
        InvalidEvent: malformed JSON, oversized, not an object, unknown type, bad fields, or
            ``undecodable`` when a decoder failed in a surprising way (deep nesting's
            ``RecursionError``): nothing else, so one poison record never fails its batch
            (``docs/operations.md#poison-records``).
    """
    try:
        return _decode_record(record)
    except InvalidEvent:
        raise
    except Exception as exc:
        raise undecodable(exc) from exc


def _decode_record(record: Record) -> FeedbackEvent:
    if len(record.value) > MAX_EVENT_BYTES:
        return parse_event(record.value)  # raises "oversized"
    try:
        event = _ADAPTER.validate_json(record.value)
    except ValidationError:
        return parse_event(record.value)  # raises the precise InvalidEvent
    try:
        check_storable(record.value)
    except InvalidEvent as exc:
        exc.event_id = str(event.event_id)
        raise
    return event


def received_time(record: Record) -> datetime:
    """When evalloop received ``record``: its Kafka timestamp (ms since the epoch) as UTC, or
    now (UTC) when it has none. Stored as ``received_at`` for events that carry none (a
    producer that wrote to Kafka directly instead of through ingest)."""
    if record.timestamp_ms is None:
        return datetime.now(UTC)
    return datetime.fromtimestamp(record.timestamp_ms / 1000, UTC)


def tune_gc(gen0_threshold: int) -> bool:
    """Tune the process's cyclic garbage collector for a recorder running alone
    (``docs/operations.md#process-wide-settings``): raise the young-generation threshold to
    ``gen0_threshold`` (never lower it) and move every object alive now (modules, pydantic
    schemas, clients: the start-up state) to the permanent generation (``gc.freeze``), so full
    collections do not traverse them again and again. They are still freed by reference
    counting; only cycles among them are never collected (CPython's advice for long-running
    servers). Returns ``True`` (the caller unfreezes on stop).
    """
    gen0, gen1, gen2 = gc.get_threshold()
    if gen0 < gen0_threshold:
        gc.set_threshold(gen0_threshold, gen1, gen2)
    gc.freeze()
    return True


class _Item(NamedTuple):
    record: Record
    event: FeedbackEvent
    row: EventRow
    key: TurnKey | None  # None: not about a turn (agent_changed)


@dataclass
class _Decoded:
    """A decoded batch: first copy of each id (``unique``) with its row, later copies of an
    id (``repeats``, judged once stored), and the turns with a judging event."""

    unique: dict[UUID, _Item] = field(default_factory=dict)
    rows: list[EventRow] = field(default_factory=list)
    repeats: list[_Item] = field(default_factory=list)
    judged: set[TurnKey] = field(default_factory=set)


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
    #: ``(agent_id, record bytes)`` of every event the batch holds that is stored (now or
    #: before, with the same content), one per ``event_id``: the ``feedback.recorded.v1``
    #: messages.
    recorded: list[tuple[str, bytes]] = field(default_factory=list)
    #: Dead letters stored by this batch (0 for a redelivered batch: they exist already).
    letters_stored: int = 0


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
        Publishes("feedback_recorded", FeedbackEvent, "every event the recorder stored, once "
                  "its transaction committed (at-least-once; key agent_id; the event's bytes "
                  "as received; dedupe by event_id)"),
    )

    #: A batch is inserted in this many parts: part k+1 is decoded while the server inserts
    #: part k (one COPY + INSERT each; the turns are loaded once, after the last). Measured on
    #: 2 cores: +3-5% at 2 parts with a quiet machine, nothing under load; more parts add
    #: statements for no further gain.
    INSERT_PARTS: ClassVar[int] = 2
    #: Records decoded between two yields to the event loop (lets the in-flight COPY flow,
    #: and the Kafka client's heartbeats and other in-process services run).
    YIELD_EVERY: ClassVar[int] = 100

    #: Allocations between two young-generation collections of the cyclic GC (CPython's
    #: default is 700). A batch allocates several objects per record, nearly all freed by
    #: reference counting, and keeps a batch's worth alive: at 700 the collector ran every few
    #: records and doubled the decode cost. Handler CPU per record, measured on 2 cores:
    #: ~50 us at 700, ~28 us at 20,000, ~24 us at 100,000 (= with the collector off).
    #: Process-wide (hence opt-in: ``settings.recorder.process_gc``); cyclic garbage is still
    #: collected, only less often.
    GC_GEN0_THRESHOLD: ClassVar[int] = 100_000

    def __init__(self, deps: Deps) -> None:
        """Keep ``deps``; batch size and fusion weights come from ``deps.settings``."""
        super().__init__(deps)
        self.weights = FusionWeights.from_mapping(deps.settings.fusion.model_dump())
        self.stats = RecorderStats()
        self._letters_pending = True  # letters a previous process may have left unpublished
        self._gc_tuned = False
        batch = deps.settings.recorder.max_records
        if batch != self.consumes[0].max_records:
            # per-instance batch size (read by mount_in_process); build_app uses with_batch_size
            self.consumes = (replace(self.consumes[0], max_records=batch),)  # type: ignore[misc]

    async def start(self) -> None:
        """Re-publish dead letters a previous process left unpublished; with
        ``settings.recorder.process_gc`` (a process running the recorder alone), tune the
        process's garbage collector (:func:`tune_gc`)."""
        if self.deps.settings.recorder.process_gc:
            self._gc_tuned = tune_gc(self.GC_GEN0_THRESHOLD)
        try:
            await self.flush_dead_letters()
        except (BusError, StorageError):
            log.exception("recorder: re-publishing dead letters failed; retrying after the "
                          "next batch")

    async def stop(self) -> None:
        """Hand the frozen start-up objects back to the collector if :meth:`start` froze them
        (``gc.unfreeze``), so that a process that goes on after the recorder or exits collects
        them as usual; without it, native extensions report them as leaked at exit."""
        if self._gc_tuned:
            gc.unfreeze()
            self._gc_tuned = False
        await super().stop()

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
        decoded = _Decoded()
        new: list[Inserted] = []
        size = max(1, -(-len(records) // self.INSERT_PARTS))
        async with self.deps.pool.acquire() as conn, conn.transaction():
            try:
                async with asyncio.TaskGroup() as tg:
                    pending: asyncio.Task[list[Inserted]] | None = None
                    for start in range(0, len(records), size):
                        first = len(decoded.rows)
                        await self._decode(records[start:start + size], outcome, decoded)
                        if pending is not None:
                            new.extend(await pending)
                        rows = decoded.rows[first:]
                        pending = (tg.create_task(insert_events_noting_cases(conn, rows))
                                   if rows else None)
                        await asyncio.sleep(0)  # let the insert go out before decoding on
                    if pending is not None:
                        new.extend(await pending)
            except ExceptionGroup as group:
                raise group.exceptions[0] from group
            if decoded.unique:
                inserted = {n.event_id for n in new}
                # Turns to re-fuse: judged in this batch, or already holding a case (a late
                # agent_response completes it). For events that were stored before (a
                # redelivery), whether their turn holds a case is asked by the load itself.
                refuse = set(decoded.judged)
                unique = decoded.unique
                for n in new:
                    if n.turn_has_case:
                        key = unique[n.event_id].key
                        if key is not None:
                            refuse.add(key)
                # every id inserted (the usual first delivery): no turn was stored before
                again = set() if len(inserted) == len(unique) else {
                    i.key for i in unique.values()
                    if i.key is not None and i.event.event_id not in inserted}
                judged = await load_turn_events(conn, refuse | again, judged=refuse,
                                                skip_own=True)
                await self._store(conn, decoded, inserted, judged, outcome)
            outcome.dead_letters.sort(key=lambda d: (d.record.partition, d.record.offset))
            outcome.letters_stored = await insert_letters(
                conn, [letter_row(d) for d in outcome.dead_letters])
        return outcome

    async def _decode(
        self, records: list[Record], outcome: BatchOutcome, decoded: _Decoded
    ) -> None:
        """Decode and dedupe ``records``; undecodable ones become dead letters in ``outcome``.

        Yields to the event loop every :attr:`YIELD_EVERY` records, so that other tasks of
        the process (the Kafka client's heartbeats, in-process services) keep running.
        """
        unique, judged, rows = decoded.unique, decoded.judged, decoded.rows
        repeats, letters = decoded.repeats, outcome.dead_letters
        every = self.YIELD_EVERY
        last_ms: int | None = None
        last_time = EARLIEST_EVENT_TIME  # replaced before first use
        for i, record in enumerate(records):
            if i % every == every - 1:
                await asyncio.sleep(0)
            try:
                event = decode_record(record)
            except InvalidEvent as exc:
                letters.append(DeadLetter(record, exc))
                continue
            # The payload is the record's own JSON (validated just now): not encoded again;
            # content comparisons happen on validated values (event_store.event_content).
            # (event_row, turn_key inlined: this loop is the recorder's hottest.)
            received = event.received_at
            if received is None:  # records of one producer batch share their timestamp
                if record.timestamp_ms != last_ms or record.timestamp_ms is None:
                    last_ms, last_time = record.timestamp_ms, received_time(record)
                received = last_time
            event_id = event.event_id
            row = EventRow(event_id, event.event_type, event.agent_id, event.agent_version,
                           event.conversation_id, event.turn_id, event.occurred_at, received,
                           record.value.decode())
            # event_type, not isinstance: isinstance on pydantic models goes through ABCMeta
            etype = row.event_type
            key = None if etype == "agent_changed" else TurnKey(
                row.agent_id, row.conversation_id, row.turn_id)
            item = _Item(record, event, row, key)
            if event_id in unique:
                repeats.append(item)
                continue
            unique[event_id] = item
            rows.append(row)
            if key is not None and etype != "agent_response":
                judged.add(key)

    async def _store(
        self, conn: Any, decoded: _Decoded, inserted: set[UUID],
        judged: dict[TurnKey, list[FeedbackEvent]], outcome: BatchOutcome,
    ) -> None:
        """Sort the batch into stored / already stored / conflicting, re-fuse the ``judged``
        turns (each with its stored events other than those just ``inserted``), upsert."""
        unique, repeats = decoded.unique, decoded.repeats
        own: dict[TurnKey, list[FeedbackEvent]] = {}  # judged turns' events inserted now
        redelivered_turns: set[TurnKey] = set()
        recorded = outcome.recorded
        if len(inserted) == len(unique):  # the usual first delivery: all new, none compared
            outcome.stored.extend(unique)
            recorded.extend((i.event.agent_id, i.record.value) for i in unique.values())
            if judged:
                for item in unique.values():
                    if item.key in judged:
                        own.setdefault(item.key, []).append(item.event)
            items: list[_Item] = []
            conflicts: dict[UUID, Any] = {}
        else:
            items = list(unique.values())
            seen = [item.row for item in items if item.row.event_id not in inserted]
            conflicts = {c.event_id: c for c in await find_conflicts(conn, seen)}

        def reject(item: _Item, kept: dict[str, Any], fields: list[str]) -> None:
            error = conflict_error(str(item.event.event_id), kept, _content(item.event), fields)
            outcome.dead_letters.append(DeadLetter(item.record, error))

        published: set[UUID] = set()  # ids whose accepted copy is in ``recorded``
        for item in items:
            event_id = item.event.event_id
            if event_id in conflicts:
                conflict = conflicts[event_id]
                reject(item, conflict.stored, conflict.fields)
                continue
            published.add(event_id)
            recorded.append((item.event.agent_id, item.record.value))
            if event_id in inserted:
                outcome.stored.append(event_id)
                if item.key in judged:
                    own.setdefault(item.key, []).append(item.event)
            else:
                outcome.already_stored.append(event_id)
                if item.key is not None:
                    redelivered_turns.add(item.key)
        for item in repeats:  # compared with the copy that was kept (stored first wins)
            event_id = item.event.event_id
            earlier = conflicts.get(event_id)
            kept = earlier.stored if earlier is not None else _content(unique[event_id].event)
            again = _content(item.event)
            fields = sorted(k for k in kept.keys() | again.keys()
                            if k not in VOLATILE_FIELDS and kept.get(k) != again.get(k))
            if fields:
                reject(item, kept, fields)
            else:
                outcome.already_stored.append(event_id)
                if items and event_id not in published:  # the stored copy, re-sent
                    published.add(event_id)
                    recorded.append((item.event.agent_id, item.record.value))

        cases = []
        for key, stored in judged.items():
            # by id: an event is never counted twice, even if it were both "own" and loaded
            events = {e.event_id: e for e in stored} | {e.event_id: e for e in own.get(key, ())}
            case = fuse(list(events.values()), self.weights)
            if case is not None:
                cases.append(case)
        changed = await upsert_negative_cases(conn, cases)
        changed_ids = {c.case_id for c in changed}
        outcome.cases_changed = changed
        outcome.cases_to_publish = [
            c for c in cases
            if c.case_id in changed_ids
            or TurnKey(c.agent_id, c.conversation_id, c.turn_id) in redelivered_turns
        ]

    async def publish_outcome(self, outcome: BatchOutcome) -> None:
        """Publish a committed batch's accepted events (``feedback.recorded.v1``), its new
        dead letters (from the ``dead_letters`` outbox) and its negative cases (step 4).

        Raises:
            BusError: the bus refused a message (the caller lets the batch be re-delivered;
                letters not yet published stay in the outbox).
            StorageError: PostgreSQL failed while marking letters published.
        """
        bus, topics = self.deps.bus, self.deps.topics
        if outcome.recorded:
            await bus.publish_batch(topics.feedback_recorded, list(outcome.recorded))
        if outcome.letters_stored or self._letters_pending:
            await self.flush_dead_letters()
        if outcome.cases_to_publish:
            await bus.publish_batch(
                topics.feedback_negative,
                [(c.agent_id, dump_event(c)) for c in outcome.cases_to_publish],
            )

    async def flush_dead_letters(self) -> int:
        """Publish every stored dead letter not yet published (oldest first) to
        ``feedback.events.dlq.v1``; returns how many.

        Raises:
            BusError: the bus refused a letter (the rest stay in the outbox for the next try).
            StorageError: PostgreSQL failed.
        """
        bus, topic = self.deps.bus, self.deps.topics.feedback_dlq

        async def publish(row: LetterRow) -> None:
            await bus.publish(topic, row.value, key=row.key,
                              headers=dlq_headers(row, row.created_at or datetime.now(UTC)))

        self._letters_pending = True
        count = await publish_unpublished(self.deps.pool, publish)
        self._letters_pending = False
        return count
