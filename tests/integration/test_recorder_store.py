"""The recorder's repository (adapters/event_store.py) against real PostgreSQL."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import asyncpg
import pytest

from evalloop.adapters.event_store import (
    check_storable,
    count_events,
    event_content,
    event_row,
    find_conflicts,
    insert_events,
    insert_events_noting_cases,
    load_turn_events,
    upsert_negative_cases,
)
from evalloop.core.fusion import FusionWeights, TurnKey, fuse
from evalloop.errors import InvalidEvent, StorageError
from evalloop.events import parse_event

W = FusionWeights()
T1 = TurnKey("cdc", "c1", "t1")


def eid(n: int) -> str:
    return f"00000000-0000-0000-0000-{n:012d}"


def ev(n: int, event_type: str = "user_rating", *, turn: str = "t1", **fields: Any) -> Any:
    return parse_event({
        "event_type": event_type, "event_id": eid(n), "agent_id": "cdc",
        "conversation_id": "c1", "turn_id": turn, "occurred_at": "2025-03-01T12:00:00Z",
        **fields,
    })


async def test_insert_returns_only_new_ids_and_counts(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        first = await insert_events(conn, [ev(1, thumbs="down"), ev(2, "agent_response")])
        again = await insert_events(conn, [ev(2, "agent_response"), ev(3, score=5)])
        assert sorted(map(str, first)) == [eid(1), eid(2)]
        assert [str(i) for i in again] == [eid(3)]
        assert await count_events(conn) == 3
        assert await count_events(conn, "cdc") == 3
        assert await count_events(conn, "who") == 0
        assert await insert_events(conn, []) == []


async def test_insert_notes_turns_that_hold_a_case(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        await insert_events(conn, [ev(1, thumbs="down")])
        case = fuse([ev(1, thumbs="down")], W)
        assert case is not None
        await upsert_negative_cases(conn, [case])
        new = await insert_events_noting_cases(
            conn, [ev(2, "agent_response"), ev(3, "agent_response", turn="t2")]
        )
    assert sorted((str(n.event_id), n.turn_has_case) for n in new) == [
        (eid(2), True), (eid(3), False)
    ]


async def test_stored_columns_and_payload(pool: asyncpg.Pool) -> None:
    event = ev(1, thumbs="down", occurred_at="2025-03-01T14:00:00+02:00")
    raw = '{"event_type": "user_rating", "thumbs": "down"}'  # the payload as it arrived
    async with pool.acquire() as conn:
        await insert_events(conn, [event_row(event, None, raw)])
        row = await conn.fetchrow("SELECT * FROM events")
    assert row is not None
    assert (row["event_type"], row["agent_id"], row["conversation_id"], row["turn_id"]) == (
        "user_rating", "cdc", "c1", "t1")
    assert row["occurred_at"].isoformat() == "2025-03-01T12:00:00+00:00"
    assert row["received_at"] is None and row["stored_at"] is not None
    assert row["payload"] == json.loads(raw)


async def test_conflicts_are_real_differences_only(pool: asyncpg.Pool) -> None:
    stored = ev(1, thumbs="down", comment="slow")
    async with pool.acquire() as conn:
        await insert_events(conn, [stored])
        spelled_differently = event_row(
            stored, None,
            json.dumps({**json.loads(stored.model_dump_json()),
                        "occurred_at": "2025-03-01T13:00:00+01:00",
                        "received_at": "2025-03-05T00:00:00Z"}),
        )
        assert await find_conflicts(conn, [spelled_differently]) == []
        [conflict] = await find_conflicts(conn, [ev(1, thumbs="up", comment="slow")])
    assert conflict.event_id == UUID(eid(1))
    assert conflict.fields == ["thumbs"]
    assert conflict.stored == event_content(stored.model_dump_json())
    assert conflict.stored["thumbs"] == "down" and "received_at" not in conflict.stored


async def test_load_turn_events_judged_and_own(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        await insert_events(conn, [ev(1, "agent_response"), ev(2, thumbs="down"),
                                   ev(3, "agent_response", turn="t2")])
        everything = await load_turn_events(conn, [T1, TurnKey("cdc", "c1", "t2")])
        assert {k: sorted(str(e.event_id) for e in v) for k, v in everything.items()} == {
            T1: [eid(1), eid(2)], TurnKey("cdc", "c1", "t2"): [eid(3)]}
        # judged: only t1 is named; t2 has no case, so it is not loaded
        judged = await load_turn_events(conn, [T1, TurnKey("cdc", "c1", "t2")], judged={T1})
        assert list(judged) == [T1]
        async with conn.transaction():
            await insert_events(conn, [ev(4, score=1)])
            mine = await load_turn_events(conn, [T1], judged={T1}, skip_own=True)
        assert sorted(str(e.event_id) for e in mine[T1]) == [eid(1), eid(2)]  # not eid(4)


async def test_upsert_returns_new_or_changed_cases_only(pool: asyncpg.Pool) -> None:
    case = fuse([ev(1, "agent_response", answer="A"), ev(2, thumbs="down")], W)
    changed = fuse([ev(1, "agent_response", answer="A"), ev(2, thumbs="down"),
                    ev(3, "operator_correction", corrected_answer="B")], W)
    assert case is not None and changed is not None
    async with pool.acquire() as conn:
        assert await upsert_negative_cases(conn, [case]) == [case]
        assert await upsert_negative_cases(conn, [case]) == []
        assert await upsert_negative_cases(conn, [changed]) == [changed]
        row = await conn.fetchrow("SELECT confidence, expected_answer, signals, "
                                  "evidence_event_ids FROM negative_cases")
    assert row is not None
    assert (row["confidence"], row["expected_answer"]) == (0.985, "B")
    assert row["signals"] == ["operator_correction", "thumbs_down"]
    assert [str(i) for i in row["evidence_event_ids"]] == [eid(1), eid(2), eid(3)]


async def test_driver_errors_become_storage_errors(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        await conn.execute("DROP TABLE negative_cases")
        with pytest.raises(StorageError, match='upserting 1 negative cases failed: relation '
                                               '"negative_cases" does not exist'):
            case = fuse([ev(1, thumbs="down")], W)
            assert case is not None
            await upsert_negative_cases(conn, [case])


def test_check_storable() -> None:
    check_storable(b'{"comment": "fine"}')
    check_storable('{"comment": "C:\\\\u0000 is a path"}')
    with pytest.raises(InvalidEvent) as info:
        check_storable(json.dumps({"context_chunks": [{"id": "a", "text": "x\x00"}]}), index=4)
    assert info.value.as_dict() == {
        "index": 4, "event_id": None, "reason": "invalid_fields",
        "problems": [{"field": "context_chunks.0.text",
                      "expected": "text without NUL characters (PostgreSQL cannot store U+0000)",
                      "received": "a string containing \\u0000"}]}


@pytest.mark.parametrize("raw", [b'{"latency_ms": NaN}', '{"a": [1, -Infinity]}'])
def test_check_storable_refuses_nan_and_infinity(raw: bytes | str) -> None:
    with pytest.raises(InvalidEvent) as info:
        check_storable(raw)
    assert info.value.reason == "malformed_json"
    assert info.value.problems[0].received.endswith(
        "is not JSON (RFC 8259 has no NaN or Infinity)")


def test_check_storable_accepts_the_words_inside_strings() -> None:
    check_storable(b'{"answer": "NaN means Not a Number; Infinity is large"}')
