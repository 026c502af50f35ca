"""Fuzzing the decoders and the ingest endpoint (docs/operations.md#poison-records): whatever
arrives, a decoder returns an event or raises ``InvalidEvent``/``InvalidBatch`` (never anything
else). The ingest endpoint is fuzzed with the same inputs in
``tests/integration/test_fuzz_ingest.py`` (it needs its API keys in PostgreSQL). Bounded."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
from fuzz_inputs import json_values, mutated_events, raw_bodies
from hypothesis import HealthCheck, given, settings

from evalloop.adapters.bus import Record
from evalloop.errors import InvalidBatch, InvalidEvent
from evalloop.events import parse_event, parse_events
from services.recorder.service import decode_record

FUZZ = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

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
