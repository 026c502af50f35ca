"""Fuzzing the decoders and the ingest endpoint (docs/operations.md#poison-records): whatever
arrives, a decoder returns an event or raises ``InvalidEvent``/``InvalidBatch`` (never anything
else); ingest's whole validation (``decode_body``) likewise. The endpoint itself is fuzzed in
``tests/integration/test_ingest_fuzz.py``. Bounded: derandomized, fixed example counts."""

from __future__ import annotations

import json
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings

from evalloop.adapters.bus import Record
from evalloop.errors import InvalidBatch, InvalidEvent
from evalloop.events import parse_event, parse_events
from evalloop.settings import Settings
from services.ingest.app import decode_body
from services.recorder.service import decode_record

FUZZ = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

VALID: dict[str, Any] = {
    "event_type": "user_rating", "event_id": "00000000-0000-0000-0000-000000000001",
    "agent_id": "who", "conversation_id": "c1", "turn_id": "t1",
    "occurred_at": "2025-03-01T14:00:00+02:00", "thumbs": "down",
}
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=30,
)


@st.composite
def mutated_events(draw: st.DrawFn) -> dict[str, Any]:
    """A valid event with some fields replaced by arbitrary JSON, dropped or added."""
    event = dict(VALID)
    event["event_type"] = draw(st.sampled_from([
        "user_rating", "agent_response", "operator_correction", "escalation",
        "safety_trigger", "conversation_outcome", "agent_changed", "unknown"]))
    keys = [*sorted(VALID), "comment", "context_chunks", "score", "extra"]
    for key in draw(st.lists(st.sampled_from(keys), max_size=4)):
        if draw(st.booleans()):
            event[key] = draw(json_values)
        else:
            event.pop(key, None)
    return event


@st.composite
def deep(draw: st.DrawFn) -> bytes:
    """JSON nested far deeper than any decoder's recursion, as a record or inside one."""
    depth = draw(st.integers(900, 20_000))
    opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}")]))
    core = opener * depth + (b"1" if opener != b"[" else b"") + closer * depth
    if draw(st.booleans()):
        return core
    return json.dumps(VALID)[:-1].encode() + b', "comment": ' + core + b"}"


def raw_bodies() -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.binary(max_size=300),
        st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
        json_values.map(lambda v: json.dumps(v).encode()),
        mutated_events().map(lambda v: json.dumps(v).encode()),
        st.lists(mutated_events(), max_size=5).map(lambda v: json.dumps(v).encode()),
        deep(),
    )


@FUZZ
@given(raw_bodies())
def test_record_decoders_raise_only_invalid_event(raw: bytes) -> None:
    for decode in (parse_event, lambda r: decode_record(Record("t", None, r))):
        try:
            decode(raw)
        except InvalidEvent as exc:
            assert exc.reason and exc.problems
    try:
        parse_event(raw.decode("utf-8", "surrogateescape"))  # lone surrogates for bad bytes
    except InvalidEvent:
        pass


@FUZZ
@given(st.one_of(mutated_events(), json_values))
def test_parse_event_of_decoded_values_raises_only_invalid_event(value: Any) -> None:
    try:
        parse_event(value)
    except InvalidEvent:
        pass


@FUZZ
@given(raw_bodies())
def test_parse_events_raises_only_invalid_event_or_batch(raw: bytes) -> None:
    try:
        parse_events(raw)
    except (InvalidEvent, InvalidBatch):
        pass


@FUZZ
@given(raw_bodies())
def test_ingest_validation_raises_only_invalid_event_or_batch(raw: bytes) -> None:
    try:
        decode_body(raw, Settings().ingest.limits())
    except (InvalidEvent, InvalidBatch):
        pass
