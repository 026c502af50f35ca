"""Recorder against real PostgreSQL, driven through the in-process bus (same handler as Kafka).

Exactly-once storage under redelivery and injected crashes, dead letters for every kind of bad
record (original bytes + reason), conflicting duplicates, and fusion of a turn across batches.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

import asyncpg
import pytest

from evalloop.adapters.bus import InProcessBus, Record
from evalloop.adapters.event_store import count_events
from evalloop.core.fusion import TurnKey, case_id_for
from evalloop.events import MAX_EVENT_BYTES, NegativeCase
from evalloop.runtime import Deps, mount_in_process
from evalloop.settings import Settings
from evalloop.topics import Topics
from services.recorder.service import RecorderService

T = Topics()


def eid(n: int) -> str:
    return f"00000000-0000-0000-0000-{n:012d}"


def event(n: int, event_type: str = "user_rating", *, minute: int = 0, turn: str = "t1",
          **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "event_type": event_type,
        "event_id": eid(n),
        "agent_id": "cdc",
        "conversation_id": "c1",
        "turn_id": turn,
        "occurred_at": f"2025-03-01T12:{minute:02d}:00Z",
    }
    data.update(fields)
    return {k: v for k, v in data.items() if v is not ...}


def response(n: int, **fields: Any) -> dict[str, Any]:
    return event(n, "agent_response", question="Can I travel?", answer="Yes.", **fields)


def rec(value: dict[str, Any] | bytes, offset: int = 0) -> Record:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return Record(topic=T.feedback_events, key="cdc", value=raw, partition=0, offset=offset)


def batch(*values: dict[str, Any] | bytes, start: int = 0) -> list[Record]:
    return [rec(v, start + i) for i, v in enumerate(values)]


@pytest.fixture
async def bus() -> InProcessBus:
    return InProcessBus(retry_delay_s=0.01)


@pytest.fixture
def recorder(pg_settings: Settings, pool: asyncpg.Pool, bus: InProcessBus) -> RecorderService:
    return RecorderService(Deps(settings=pg_settings, pool=pool, bus=bus, topics=T))


async def rows(pool: asyncpg.Pool, sql: str, *args: Any) -> list[asyncpg.Record]:
    async with pool.acquire() as conn:
        return await conn.fetch(sql, *args)


async def n_events(pool: asyncpg.Pool) -> int:
    async with pool.acquire() as conn:
        return await count_events(conn)


def published_cases(bus: InProcessBus) -> list[NegativeCase]:
    return [NegativeCase.model_validate_json(m.value) for m in bus.messages(T.feedback_negative)]


@pytest.fixture
async def running(bus: InProcessBus) -> AsyncIterator[None]:
    """Run the bus's consumers in the background while the test runs."""
    async with asyncio.TaskGroup() as tg:
        tg.create_task(bus.run())
        yield
        bus.stop()


# ------------------------------------------------------------------ storing and fusing


async def test_batch_is_stored_and_its_negative_turn_published(
    recorder: RecorderService, pool: asyncpg.Pool, bus: InProcessBus
) -> None:
    await recorder.on_feedback_events(batch(
        response(1, context_chunks=[{"id": "kb-7", "text": "Travel rules"}]),
        event(2, minute=3, thumbs="down", comment="outdated"),
        response(3, turn="t2"),  # an unrated turn: no case
    ))
    assert await n_events(pool) == 3
    [stored] = await rows(pool, "SELECT * FROM events WHERE event_id = $1", UUID(eid(2)))
    assert (stored["event_type"], stored["agent_id"], stored["turn_id"]) == ("user_rating", "cdc",
                                                                            "t1")
    assert stored["payload"]["thumbs"] == "down" and stored["received_at"] is not None
    [case_row] = await rows(pool, "SELECT * FROM negative_cases")
    case_id = case_id_for(TurnKey("cdc", "c1", "t1"))
    assert dict(case_row) | {"updated_at": None} == {
        "case_id": case_id, "agent_id": "cdc", "conversation_id": "c1", "turn_id": "t1",
        "occurred_at": case_row["occurred_at"], "confidence": 0.7, "signals": ["thumbs_down"],
        "evidence_event_ids": [UUID(eid(1)), UUID(eid(2))], "question": "Can I travel?",
        "answer": "Yes.", "comment": "outdated", "expected_answer": None,
        "context_chunks": [{"id": "kb-7", "text": "Travel rules", "source": None}],
        "updated_at": None,
    }
    assert case_row["occurred_at"].isoformat() == "2025-03-01T12:00:00+00:00"
    [msg] = bus.messages(T.feedback_negative)
    assert msg.key == "cdc"
    case = NegativeCase.model_validate_json(msg.value)
    assert (case.case_id, case.confidence, case.comment) == (case_id, 0.7, "outdated")
    assert bus.topic_size(T.feedback_dlq) == 0
    assert recorder.stats.stored == 3 and recorder.stats.cases_published == 1


async def test_turn_fused_across_two_batches(
    recorder: RecorderService, pool: asyncpg.Pool, bus: InProcessBus
) -> None:
    await recorder.on_feedback_events(batch(response(1), event(2, minute=1, thumbs="down")))
    await recorder.on_feedback_events(batch(
        event(3, "operator_correction", minute=5, corrected_answer="Only with a negative test."),
        event(4, "user_rating", minute=6, thumbs="up"),
        start=2,
    ))
    first, second = published_cases(bus)
    assert (first.confidence, first.signals) == (0.7, ["thumbs_down"])
    # noisy-OR 1 - 0.3*0.05 = 0.985, times (1 - 0.5*0.7) for the disagreeing thumbs up
    assert second.confidence == round(0.985 * 0.65, 6) == 0.64025
    assert second.signals == ["operator_correction", "thumbs_down", "thumbs_up"]
    assert second.expected_answer == "Only with a negative test."
    assert second.evidence_event_ids == [UUID(eid(n)) for n in (1, 2, 3, 4)]
    assert second.case_id == first.case_id
    [row] = await rows(pool, "SELECT confidence, expected_answer FROM negative_cases")
    assert tuple(row) == (0.64025, "Only with a negative test.")


async def test_rating_before_its_response_gets_the_interaction_later(
    recorder: RecorderService, pool: asyncpg.Pool, bus: InProcessBus
) -> None:
    await recorder.on_feedback_events(batch(event(2, minute=4, score=1)))
    await recorder.on_feedback_events(batch(response(1), start=1))
    first, second = published_cases(bus)
    assert (first.question, first.occurred_at.minute) == (None, 4)
    assert (second.question, second.answer, second.occurred_at.minute) == ("Can I travel?",
                                                                            "Yes.", 0)


async def test_unjudged_turns_make_no_case(recorder: RecorderService, pool: asyncpg.Pool,
                                           bus: InProcessBus) -> None:
    await recorder.on_feedback_events(batch(
        response(1), event(2, thumbs="up"), event(3, "escalation", requested_by="user"),
        event(4, "conversation_outcome", resolved=True),
        event(5, "agent_changed", change_kind="model_version", new_version="m2"),
    ))
    assert await n_events(pool) == 5
    assert await rows(pool, "SELECT * FROM negative_cases") == []
    assert bus.topic_size(T.feedback_negative) == 0


# ------------------------------------------------------------------ exactly once


async def test_same_batch_twice_stores_nothing_twice(
    recorder: RecorderService, pool: asyncpg.Pool, bus: InProcessBus
) -> None:
    records = batch(response(1), event(2, thumbs="down"), response(3, turn="t2"))
    await recorder.on_feedback_events(records)
    [before] = await rows(pool, "SELECT updated_at FROM negative_cases")
    await recorder.on_feedback_events(records)
    assert await n_events(pool) == 3
    [after] = await rows(pool, "SELECT updated_at FROM negative_cases")
    assert after == before  # an identical re-fused case is not rewritten
    # the redelivered turn's case is published again (at-least-once), same case_id
    assert len({c.case_id for c in published_cases(bus)}) == 1
    assert recorder.stats.stored == 3 and recorder.stats.already_stored == 3
    assert bus.topic_size(T.feedback_dlq) == 0


class CrashAfterReturnWork(RecorderService):
    """Raises after the batch is stored AND published, before returning (offsets not committed)."""

    crashes = 1

    async def on_feedback_events(self, records: list[Record]) -> None:
        await super().on_feedback_events(records)
        if self.crashes:
            self.crashes -= 1
            raise RuntimeError("injected crash after the batch was done")


class CrashBeforePublish(RecorderService):
    """Raises after the commit, before anything is published."""

    crashes = 1

    async def publish_outcome(self, outcome: Any) -> None:
        if self.crashes:
            self.crashes -= 1
            raise RuntimeError("injected crash between commit and publish")
        await super().publish_outcome(outcome)


class CrashInsideTransaction(RecorderService):
    """Raises after the events were inserted, inside the transaction (rolled back)."""

    crashes = 1

    async def _store(self, conn: Any, *args: Any) -> None:
        await super()._store(conn, *args)
        if self.crashes:
            self.crashes -= 1
            raise RuntimeError("injected crash before commit")


@pytest.mark.parametrize("cls", [CrashAfterReturnWork, CrashBeforePublish, CrashInsideTransaction])
async def test_crash_mid_batch_then_redelivery_counts_once(
    cls: type[RecorderService], pg_settings: Settings, pool: asyncpg.Pool, bus: InProcessBus
) -> None:
    service = cls(Deps(settings=pg_settings, pool=pool, bus=bus, topics=T))
    mount_in_process(bus, service)
    for value in (response(1), event(2, thumbs="down"), event(3, score=5, turn="t2"), b"{bad"):
        raw = value if isinstance(value, bytes) else json.dumps(value).encode()
        await bus.publish(T.feedback_events, raw, key="cdc")
    async with asyncio.TaskGroup() as tg:
        tg.create_task(bus.run())
        await bus.drain(timeout_s=30)
        bus.stop()
    assert service.crashes == 0  # the crash did happen
    assert await n_events(pool) == 3
    assert len(await rows(pool, "SELECT * FROM negative_cases")) == 1
    cases = published_cases(bus)
    assert {c.case_id for c in cases} == {case_id_for(TurnKey("cdc", "c1", "t1"))}
    assert 1 <= len(cases) <= 2  # at-least-once: twice only if the crash followed the publish
    if cls is not CrashAfterReturnWork:
        assert len(cases) == 1 and bus.topic_size(T.feedback_dlq) == 1


# ------------------------------------------------------------------ dead letters


BAD: list[tuple[str, bytes, str, list[dict[str, str]] | None]] = [
    ("malformed_json", b'{"event_type": "user_rating", ', "malformed_json",
     [{"field": "(record)", "expected": "a JSON object",
       "received": "Expecting property name enclosed in double quotes: "
                   "line 1 column 31 (char 30)"}]),
    ("missing_field", json.dumps(event(11, thumbs="down", turn_id=...)).encode(), "invalid_fields",
     [{"field": "turn_id", "expected": "Field required", "received": "nothing (field missing)"}]),
    ("mistyped_field", json.dumps(event(12, score="bad")).encode(), "invalid_fields",
     [{"field": "score", "expected": "Input should be a valid integer, unable to parse string as "
       "an integer", "received": "'bad'"}]),
    ("naive_timestamp", json.dumps(event(13, thumbs="down", occurred_at="2025-03-01T12:00:00"))
     .encode(), "invalid_fields",
     [{"field": "occurred_at", "expected": "Input should have timezone info",
       "received": "'2025-03-01T12:00:00'"}]),
    ("absurd_timestamp", json.dumps(event(14, thumbs="down", occurred_at="1970-01-01T00:00:00Z"))
     .encode(), "invalid_fields",
     [{"field": "occurred_at", "expected": "Value error, event time before "
       "2000-01-01T00:00:00+00:00 is not plausible", "received": "'1970-01-01T00:00:00Z'"}]),
    ("unknown_type", json.dumps(event(15, "user_mood")).encode(), "unknown_event_type", None),
    ("oversized", json.dumps(event(16, thumbs="down", comment="x" * MAX_EVENT_BYTES)).encode(),
     "oversized", None),
    ("not_an_object", b'["an", "array"]', "not_an_object",
     [{"field": "(record)", "expected": "a JSON object", "received": "list"}]),
    ("empty_value", b"", "malformed_json", None),
    # Python's json accepts NaN/Infinity, PostgreSQL's jsonb does not: refused, not a poison
    ("infinity", json.dumps(response(18, latency_ms=float("inf"))).encode(), "malformed_json",
     [{"field": "(record)", "expected": "a JSON object",
       "received": "Infinity is not JSON (RFC 8259 has no NaN or Infinity)"}]),
    # Python's json accepts a lone surrogate, PostgreSQL does not: refused, not a poison batch
    ("lone_surrogate", b'{"event_type": "user_rating", "event_id": "' + eid(17).encode()
     + b'", "agent_id": "cdc", "conversation_id": "c1", "turn_id": "t1", "occurred_at": '
       b'"2025-03-01T12:00:00Z", "thumbs": "down", "comment": "x\\ud800"}',
     "invalid_fields",
     [{"field": "comment",
       "expected": "Input should be a valid string, unable to parse raw data as a unicode string",
       "received": "'x\\ud800'"}]),
]


async def test_every_bad_record_goes_to_the_dlq_with_its_bytes_and_reason(
    recorder: RecorderService, pool: asyncpg.Pool, bus: InProcessBus
) -> None:
    records = [rec(response(1), 0)] + [rec(raw, i + 1) for i, (_, raw, _, _) in enumerate(BAD)]
    records.append(rec(event(2, thumbs="down"), len(records)))
    await recorder.on_feedback_events(records)
    assert await n_events(pool) == 2  # the valid ones are stored despite the bad neighbours
    letters = bus.messages(T.feedback_dlq)
    assert [m.value for m in letters] == [raw for _, raw, _, _ in BAD]  # original bytes
    assert all(m.key == "cdc" for m in letters)
    for i, ((name, _, reason, problems), m) in enumerate(zip(BAD, letters, strict=True)):
        h = {k: v.decode() for k, v in m.headers.items()}
        assert h["x-dlq-reason"] == reason, name
        assert (h["x-dlq-source-topic"], h["x-dlq-source-partition"], h["x-dlq-source-offset"]) == (
            T.feedback_events, "0", str(i + 1)), name
        assert h["x-dlq-at"].endswith("+00:00"), name
        detail = json.loads(h["x-dlq-detail"])
        assert detail["reason"] == reason, name
        if problems is not None:
            assert detail["problems"] == problems, name
    detail = {json.loads(m.headers["x-dlq-detail"])["reason"]: json.loads(m.headers["x-dlq-detail"])
              for m in letters}
    assert detail["oversized"]["problems"] == [
        {"field": "(record)", "expected": "at most 262144 bytes",
         "received": f"{len(BAD[6][1])} bytes"}
    ]
    assert detail["unknown_event_type"]["problems"][0]["received"] == "'user_mood'"
    assert detail["unknown_event_type"]["event_id"] == eid(15)
    assert recorder.stats.dead_letters == len(BAD)


async def test_conflicting_duplicates_within_and_across_batches(
    recorder: RecorderService, pool: asyncpg.Pool, bus: InProcessBus
) -> None:
    first = event(2, thumbs="down", comment="bad")
    same_resent = event(2, thumbs="down", comment="bad", received_at="2025-03-02T00:00:00Z")
    changed = event(2, thumbs="up", comment="bad")
    await recorder.on_feedback_events(batch(response(1), first, same_resent, changed))
    await recorder.on_feedback_events(batch(event(2, score=1, thumbs=...), first, start=4))
    assert await n_events(pool) == 2
    [payload] = [r["payload"] for r in await rows(pool, "SELECT payload FROM events WHERE "
                                                        "event_id = $1", UUID(eid(2)))]
    assert payload["thumbs"] == "down"  # the first stored wins
    letters = bus.messages(T.feedback_dlq)
    assert [(m.headers["x-dlq-reason"], m.headers["x-dlq-source-offset"]) for m in letters] == [
        (b"conflicting_duplicate", b"3"), (b"conflicting_duplicate", b"4")
    ]
    within, across = (json.loads(m.headers["x-dlq-detail"]) for m in letters)
    assert within == {"index": None, "event_id": eid(2), "reason": "conflicting_duplicate",
                      "problems": [{"field": "thumbs",
                                    "expected": '"down" (event_id already stored with this value)',
                                    "received": '"up"'}]}
    assert across["problems"] == [
        {"field": "comment", "expected": '"bad" (event_id already stored with this value)',
         "received": "null"},
        {"field": "score", "expected": "null (event_id already stored with this value)",
         "received": "1"},
        {"field": "thumbs", "expected": '"down" (event_id already stored with this value)',
         "received": "null"},
    ]
    assert [m.value for m in letters] == [json.dumps(changed).encode(),
                                          json.dumps(event(2, score=1, thumbs=...)).encode()]


async def test_nul_character_goes_to_the_dlq_not_into_a_poison_loop(
    recorder: RecorderService, pool: asyncpg.Pool, bus: InProcessBus
) -> None:
    bad = json.dumps(event(2, thumbs="down", comment="a\x00b")).encode()
    await recorder.on_feedback_events(batch(response(1), bad))
    assert await n_events(pool) == 1
    [letter] = bus.messages(T.feedback_dlq)
    assert letter.value == bad
    assert json.loads(letter.headers["x-dlq-detail"]) == {
        "index": None, "event_id": eid(2), "reason": "invalid_fields",
        "problems": [{"field": "comment",
                      "expected": "text without NUL characters (PostgreSQL cannot store U+0000)",
                      "received": "a string containing \\u0000"}]}


async def test_resend_spelled_differently_is_the_same_event(
    recorder: RecorderService, pool: asyncpg.Pool, bus: InProcessBus
) -> None:
    """Omitted null fields, another UTC spelling and key order do not make a conflict."""
    first = event(2, thumbs="down", occurred_at="2025-03-01T12:00:00Z")
    again = {"comment": None, **event(2, thumbs="down", occurred_at="2025-03-01T14:00:00+02:00"),
             "score": None}
    await recorder.on_feedback_events(batch(first))
    await recorder.on_feedback_events(batch(again, start=1))
    assert bus.topic_size(T.feedback_dlq) == 0
    assert await n_events(pool) == 1
    assert recorder.stats.stored == 1 and recorder.stats.already_stored == 1
    # the stored payload is the first sending's JSON, as it arrived
    [row] = await rows(pool, "SELECT payload, occurred_at FROM events")
    assert row["payload"] == first and row["occurred_at"].isoformat() == "2025-03-01T12:00:00+00:00"


async def test_redelivered_response_of_a_negative_turn_republishes_its_case(
    recorder: RecorderService, pool: asyncpg.Pool, bus: InProcessBus
) -> None:
    """Only the response is redelivered (the crash hit after its commit): the turn's case is
    published again, since the first attempt may have died before publishing it."""
    first = batch(response(1), event(2, thumbs="down"))
    await recorder.on_feedback_events(first)
    await recorder.on_feedback_events(first[:1])
    first_case, again = published_cases(bus)
    assert again == first_case
    assert await n_events(pool) == 2


async def test_unrated_turns_publish_nothing_even_when_redelivered(
    recorder: RecorderService, bus: InProcessBus
) -> None:
    records = batch(response(1), response(2, turn="t2"), event(3, thumbs="up", turn="t2"))
    await recorder.on_feedback_events(records)
    await recorder.on_feedback_events(records)
    assert bus.topic_size(T.feedback_negative) == 0
