"""The wire contract (events.py): validation, UTC normalisation and the exact error contents."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest
from pydantic import ValidationError

from evalloop.errors import FieldProblem, InvalidBatch, InvalidEvent
from evalloop.events import (
    MAX_EVENT_BYTES,
    AgentChanged,
    AgentResponse,
    ConversationOutcome,
    Escalation,
    OperatorCorrection,
    SafetyTrigger,
    UserRating,
    dump_event,
    parse_event,
    parse_events,
    utc_now,
)

EID = "00000000-0000-0000-0000-000000000001"
TYPES = (
    "['agent_changed', 'agent_response', 'conversation_outcome', 'escalation', "
    "'operator_correction', 'safety_trigger', 'user_rating']"
)


def rating(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "event_type": "user_rating",
        "event_id": EID,
        "agent_id": "cdc",
        "conversation_id": "c1",
        "turn_id": "t1",
        "occurred_at": "2025-03-01T12:00:00+00:00",
        "thumbs": "down",
    }
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not ...}


def problems_of(raw: Any) -> tuple[str, str | None, list[dict[str, str]]]:
    with pytest.raises(InvalidEvent) as info:
        parse_event(raw if isinstance(raw, bytes | str) else json.dumps(raw).encode())
    d = info.value.as_dict()
    return d["reason"], d["event_id"], d["problems"]  # type: ignore[return-value]


# ------------------------------------------------------------------ every type parses


@pytest.mark.parametrize(
    ("fields", "cls"),
    [
        ({"event_type": "agent_response", "question": "q", "answer": "a", "latency_ms": 12.5,
          "context_chunks": [{"id": "kb1", "text": "t"}]}, AgentResponse),
        ({"event_type": "user_rating", "score": 4, "comment": "ok"}, UserRating),
        ({"event_type": "operator_correction", "corrected_answer": "b"}, OperatorCorrection),
        ({"event_type": "escalation", "requested_by": "policy", "reason": "hr"}, Escalation),
        ({"event_type": "safety_trigger", "gate": "pii", "category": "privacy",
          "severity": "critical", "action": "redacted"}, SafetyTrigger),
        ({"event_type": "conversation_outcome", "resolved": True, "follow_up_count": 2},
         ConversationOutcome),
        ({"event_type": "agent_changed", "change_kind": "knowledge_base", "new_version": "kb7",
          "changed_documents": ["leave.pdf"]}, AgentChanged),
    ],
)
def test_every_event_type_parses_and_round_trips(fields: dict[str, Any], cls: type) -> None:
    data = rating(thumbs=...) | fields
    event = parse_event(json.dumps(data))
    assert type(event) is cls
    assert event.event_id == UUID(EID)
    assert parse_event(dump_event(event)) == event


def test_parse_accepts_dict_str_and_bytes_alike() -> None:
    data = rating()
    text = json.dumps(data)
    assert parse_event(data) == parse_event(text) == parse_event(text.encode())


# ------------------------------------------------------------------ timestamps


def test_naive_timestamp_is_rejected() -> None:
    assert problems_of(rating(occurred_at="2025-03-01T12:00:00")) == (
        "invalid_fields",
        EID,
        [{"field": "occurred_at", "expected": "Input should have timezone info",
          "received": "'2025-03-01T12:00:00'"}],
    )


def test_non_utc_offset_is_normalised_to_utc() -> None:
    event = parse_event(rating(occurred_at="2025-03-01T14:30:00+02:30"))
    assert event.occurred_at == datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    assert event.occurred_at.tzinfo is UTC
    assert b'"occurred_at":"2025-03-01T12:00:00Z"' in dump_event(event)


def test_epoch_1970_is_rejected_as_absurd() -> None:
    assert problems_of(rating(occurred_at="1970-01-01T00:00:00Z")) == (
        "invalid_fields",
        EID,
        [{"field": "occurred_at",
          "expected": "Value error, event time before 2000-01-01T00:00:00+00:00 is not plausible",
          "received": "'1970-01-01T00:00:00Z'"}],
    )


def test_far_future_is_rejected_but_small_clock_skew_is_accepted() -> None:
    assert problems_of(rating(occurred_at="2999-01-01T00:00:00Z"))[2] == [
        {"field": "occurred_at",
         "expected": "Value error, event time more than 1:00:00 in the future is not plausible",
         "received": "'2999-01-01T00:00:00Z'"}
    ]
    skewed = utc_now() + timedelta(minutes=30)
    assert parse_event(rating(occurred_at=skewed.isoformat())).occurred_at == skewed


# ------------------------------------------------------------------ types and fields


def test_unknown_event_type() -> None:
    assert problems_of(rating(event_type="user_mood")) == (
        "unknown_event_type", EID,
        [{"field": "event_type", "expected": f"one of {TYPES}", "received": "'user_mood'"}],
    )


def test_missing_event_type() -> None:
    assert problems_of(rating(event_type=...))[2] == [
        {"field": "event_type", "expected": f"one of {TYPES}", "received": "null"}
    ]


def test_missing_field_names_the_field() -> None:
    assert problems_of(rating(agent_id=...)) == (
        "invalid_fields", EID,
        [{"field": "agent_id", "expected": "Field required",
          "received": "nothing (field missing)"}],
    )


def test_every_bad_field_is_listed() -> None:
    reason, event_id, problems = problems_of(rating(score="high", thumbs="sideways", turn_id=""))
    assert (reason, event_id) == ("invalid_fields", EID)
    assert problems == [
        {"field": "turn_id", "expected": "String should have at least 1 character",
         "received": "''"},
        {"field": "thumbs", "expected": "Input should be 'up' or 'down'",
         "received": "'sideways'"},
        {"field": "score",
         "expected": "Input should be a valid integer, unable to parse string as an integer",
         "received": "'high'"},
    ]


def test_out_of_range_score_and_bad_uuid() -> None:
    assert problems_of(rating(score=7))[2] == [
        {"field": "score", "expected": "Input should be less than or equal to 5", "received": "7"}
    ]
    reason, event_id, problems = problems_of(rating(event_id="nope"))
    assert (reason, event_id) == ("invalid_fields", "nope")
    assert problems == [
        {"field": "event_id",
         "expected": "Input should be a valid UUID, invalid character: found `n` at 1",
         "received": "'nope'"}
    ]


def test_nested_field_path_is_dotted() -> None:
    data = rating(event_type="agent_response", thumbs=..., context_chunks=[{"text": "x"}])
    assert problems_of(data)[2] == [
        {"field": "context_chunks.0.id", "expected": "Field required",
         "received": "nothing (field missing)"}
    ]


def test_rating_without_thumbs_or_score_is_a_record_level_problem() -> None:
    reason, _, problems = problems_of(rating(thumbs=...))
    assert reason == "invalid_fields"
    assert problems[0]["field"] == "(record)"
    assert problems[0]["expected"] == (
        "Value error, a user_rating needs 'thumbs' ('up'|'down') or 'score' (1-5)"
    )


def test_extra_fields_are_forbidden() -> None:
    assert problems_of(rating(colour="red"))[2] == [
        {"field": "colour", "expected": "Extra inputs are not permitted", "received": "'red'"}
    ]


def test_agent_id_pattern() -> None:
    assert problems_of(rating(agent_id="bad id!"))[2] == [
        {"field": "agent_id", "expected": "String should match pattern '^[A-Za-z0-9_.:\\-]+$'",
         "received": "'bad id!'"}
    ]


def test_models_are_frozen() -> None:
    event = parse_event(rating())
    with pytest.raises(ValidationError, match="Instance is frozen"):
        event.thumbs = "up"  # type: ignore[misc,union-attr]


# ------------------------------------------------------------------ records that are not events


def test_malformed_json() -> None:
    assert problems_of(b'{"event_type": "user_rating",') == (
        "malformed_json", None,
        [{"field": "(record)", "expected": "a JSON object",
          "received": "Expecting property name enclosed in double quotes: "
                      "line 1 column 30 (char 29)"}],
    )


def test_not_utf8() -> None:
    assert problems_of(b"\xff\xfe{}")[0] == "malformed_json"


def test_json_that_is_not_an_object() -> None:
    assert problems_of(b"[1, 2]") == (
        "not_an_object", None,
        [{"field": "(record)", "expected": "a JSON object", "received": "list"}],
    )


def test_oversized_record() -> None:
    raw = json.dumps(rating(comment="x" * MAX_EVENT_BYTES)).encode()
    assert problems_of(raw) == (
        "oversized", None,
        [{"field": "(record)", "expected": "at most 262144 bytes",
          "received": f"{len(raw)} bytes"}],
    )


def test_error_message_reads_well() -> None:
    err = InvalidEvent("invalid_fields", [FieldProblem("score", "an integer", "'x'")], index=3)
    assert str(err) == "record 3: invalid_fields: score: expected an integer, received 'x'"


# ------------------------------------------------------------------ batches


def test_parse_events_single_object_and_array() -> None:
    assert [e.event_id for e in parse_events(json.dumps(rating()))] == [UUID(EID)]
    two = [rating(), rating(event_id="00000000-0000-0000-0000-000000000002")]
    assert len(parse_events(json.dumps(two).encode())) == 2


def test_parse_events_names_every_bad_record_by_index() -> None:
    body = [
        rating(),
        rating(score=9),
        "x",
        rating(comment="y" * MAX_EVENT_BYTES),
        rating(occurred_at="2025-03-01T12:00:00"),
    ]
    with pytest.raises(InvalidBatch) as info:
        parse_events(json.dumps(body))
    got = [e.as_dict() for e in info.value.errors]
    size = len(json.dumps(body[3]).encode())
    assert got == [
        {"index": 1, "event_id": EID, "reason": "invalid_fields",
         "problems": [{"field": "score", "expected": "Input should be less than or equal to 5",
                       "received": "9"}]},
        {"index": 2, "event_id": None, "reason": "not_an_object",
         "problems": [{"field": "(record)", "expected": "a JSON object", "received": "str"}]},
        {"index": 3, "event_id": EID, "reason": "oversized",
         "problems": [{"field": "(record)", "expected": "at most 262144 bytes",
                       "received": f"{size} bytes"}]},
        {"index": 4, "event_id": EID, "reason": "invalid_fields",
         "problems": [{"field": "occurred_at", "expected": "Input should have timezone info",
                       "received": "'2025-03-01T12:00:00'"}]},
    ]


def test_parse_events_malformed_body() -> None:
    with pytest.raises(InvalidEvent) as info:
        parse_events(b"[{")
    assert info.value.as_dict()["reason"] == "malformed_json"
    assert info.value.problems[0].field == "(body)"


def test_lone_surrogate_is_an_invalid_field_not_a_crash() -> None:
    body = json.dumps([rating(comment="broken \ud800")])  # json.dumps escapes it: valid JSON
    with pytest.raises(InvalidBatch) as info:
        parse_events(body)
    assert [e.as_dict() for e in info.value.errors] == [
        {"index": 0, "event_id": EID, "reason": "invalid_fields",
         "problems": [{"field": "comment",
                       "expected": "Input should be a valid string, unable to parse raw data "
                                   "as a unicode string",
                       "received": "'broken \\ud800'"}]}
    ]


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(constant: str) -> None:
    raw = json.dumps(rating(event_type="agent_response", thumbs=...))[:-1] + (
        f', "latency_ms": {constant}}}')
    assert problems_of(raw.encode()) == (
        "malformed_json", None,
        [{"field": "(record)", "expected": "a JSON object",
          "received": f"{constant} is not JSON (RFC 8259 has no NaN or Infinity)"}],
    )
    with pytest.raises(InvalidEvent, match=f"{constant} is not JSON"):
        parse_events(raw)
