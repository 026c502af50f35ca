"""Inputs for fuzzing the decoders and the ingest endpoint (``tests/unit/test_fuzz_decoders.py``,
``tests/integration/test_fuzz_ingest.py``): arbitrary bytes and text, arbitrary JSON, valid
events with fields replaced or dropped, and nesting deeper than any decoder's recursion."""

from __future__ import annotations

import json
from typing import Any

import hypothesis.strategies as st

__all__ = ["VALID", "deep", "json_values", "mutated_events", "raw_bodies"]

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
