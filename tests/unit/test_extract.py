"""extract_text: the five response formats of seed 003's endpoint contract, SSE edge cases and
malformed bodies."""

from __future__ import annotations

import json

import pytest

from evalloop.core.evaluation.extract import MalformedResponse, extract_text, format_hint

OPENAI = {"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
          "choices": [{"index": 0, "message": {"role": "assistant", "content": " 14 days. "},
                       "finish_reason": "stop"}]}
ANTHROPIC = {"id": "msg_1", "type": "message", "role": "assistant",
             "content": [{"type": "text", "text": "First part."},
                         {"type": "tool_use", "id": "t", "name": "x", "input": {}},
                         {"type": "text", "text": "Second part."}]}


def _sse(*events: str) -> str:
    return "".join(f"{e}\n\n" for e in events)


def _chunk(text: str | None) -> str:
    return "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]})


@pytest.mark.parametrize(
    ("body", "ctype", "text", "fmt"),
    [
        (json.dumps(OPENAI), "application/json", "14 days.", "openai"),
        (json.dumps(ANTHROPIC), "application/json", "First part.\nSecond part.", "anthropic"),
        (json.dumps({"response": "r"}), "application/json", "r", "json"),
        (json.dumps({"content": "c"}), "application/json", "c", "json"),
        (json.dumps({"output": "o"}), "application/json", "o", "json"),
        (json.dumps({"text": "t"}), "application/json", "t", "json"),
        (json.dumps({"answer": "a", "context_chunks": [{"id": "k1"}]}), None, "a", "json"),
        # seed order decides when several generic keys are present
        (json.dumps({"answer": "a", "response": "r"}), "application/json", "r", "json"),
        (json.dumps("just a string"), "application/json", "just a string", "json"),
        ("Plain answer.\n", "text/plain", "Plain answer.", "text"),
        ("Plain answer without a content type", None, "Plain answer without a content type",
         "text"),
        # looks like JSON but is not, and is not declared JSON: plain text
        ("{not json} but prose", "text/plain", "{not json} but prose", "text"),
        # OpenAI content as a list of parts
        (json.dumps({"choices": [{"message": {"content": [{"type": "text", "text": "x"},
                                                          {"type": "text", "text": "y"}]}}]}),
         "application/json", "x\ny", "openai"),
        # legacy completions
        (json.dumps({"choices": [{"text": "legacy"}]}), None, "legacy", "openai"),
    ],
)
def test_json_and_text_formats(body: str, ctype: str | None, text: str, fmt: str) -> None:
    got = extract_text(body.encode(), ctype)
    assert (got.text, got.format) == (text, fmt)


def test_openai_sse_stream_joins_deltas_and_stops_at_done() -> None:
    body = _sse(_chunk("Annual "), _chunk(None), _chunk("leave is "), _chunk("14 days."),
                "data: [DONE]", _chunk("after done is ignored"))
    got = extract_text(body, "text/event-stream; charset=utf-8")
    assert (got.text, got.format) == ("Annual leave is 14 days.", "sse")


def test_sse_multiple_data_lines_in_one_event_join_with_newline() -> None:
    body = "data: line one\ndata: line two\n\ndata: [DONE]\n\n"
    assert extract_text(body, "text/event-stream").text == "line one\nline two"


def test_sse_comments_event_names_ids_crlf_and_no_trailing_blank_line() -> None:
    body = (": keep-alive\r\nevent: message\r\nid: 1\r\n" + _chunk("Hello") + "\r\n\r\n"
            + "retry: 100\r\n" + _chunk(" world"))
    assert extract_text(body, None).text == "Hello world"  # detected without a content type


def test_anthropic_stream_events() -> None:
    events = [
        {"type": "message_start", "message": {"id": "m", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": "{}"}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "text_delta", "text": " there."}},
        {"type": "message_stop"},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "X"}},
    ]
    body = _sse(*(f"event: {e['type']}\ndata: {json.dumps(e)}" for e in events))
    assert extract_text(body, "text/event-stream").text == "Hi there."


def test_sse_of_generic_objects_and_raw_text() -> None:
    body = _sse('data: {"response": "A"}', 'data: {"delta": "B"}', "data: C")
    assert extract_text(body, "text/event-stream").text == "ABC"


def test_hint_forces_the_reader() -> None:
    sse_looking = "data: not a stream, a plain answer"
    assert extract_text(sse_looking, None, hint="text").text == sse_looking
    assert extract_text(json.dumps({"response": "r"}), "text/plain", hint="json").text == "r"


@pytest.mark.parametrize(
    ("body", "ctype", "reason"),
    [
        (b"\xff\xfe\x00bad", None, "not_utf8"),
        (b'{"response": "unterminated', "application/json", "malformed_json"),
        (b'{"result": {"text": "nested"}, "id": 3}', "application/json", "unrecognised_json"),
        (b"[1, 2, 3]", "application/json", "unrecognised_json"),
        (b"42", "application/json", "unrecognised_json"),
        (b'{"error": {"message": "model overloaded"}}', "application/json", "error_object"),
        (b'{"choices": []}', "application/json", "no_text"),
        (b'{"choices": [{"message": {"role": "assistant", "content": null, '
         b'"tool_calls": [{"id": "c"}]}}]}', "application/json", "no_text"),
        (b'{"type": "message", "content": [{"type": "tool_use", "id": "t"}]}', None, "no_text"),
        (b": only a comment\n\n", "text/event-stream", "empty_stream"),
        (b'data: {"type": "error", "error": {"type": "overloaded_error"}}\n\n',
         "text/event-stream", "error_object"),
    ],
)
def test_malformed_bodies_raise_with_a_reason(body: bytes, ctype: str | None, reason: str) -> None:
    with pytest.raises(MalformedResponse) as info:
        extract_text(body, ctype)
    assert info.value.reason == reason


def test_unrecognised_json_names_the_keys_it_received() -> None:
    with pytest.raises(MalformedResponse, match=r"received keys \['id', 'result'\]"):
        extract_text(b'{"result": {"text": "nested"}, "id": 3}', "application/json")


def test_empty_plain_body_is_an_empty_answer_not_an_error() -> None:
    got = extract_text(b"", "text/plain")
    assert (got.text, got.format) == ("", "text")


@pytest.mark.parametrize(
    ("name", "hint"),
    [("auto", None), (None, None), ("openai-sse", "sse"), ("SSE", "sse"),
     ("anthropic", "anthropic"), ("json", "json"), ("text", "text"), ("plain", "text")],
)
def test_format_hint_names(name: str | None, hint: str | None) -> None:
    assert format_hint(name) == hint


def test_unknown_format_hint_lists_the_accepted_names() -> None:
    with pytest.raises(ValueError, match="expected a response format among"):
        format_hint("xml")
