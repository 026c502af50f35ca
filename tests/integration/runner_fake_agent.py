"""A fake agent at the agent port: a real HTTP server (starlette + uvicorn on a free loopback
port, in a thread) that answers the endpoint contract (docs/rules.md#endpoint-contract) with
canned answers, and with the replies real agents and proxies send when things go wrong.

Routes (``POST``):
    ``/{fmt}``           answer in format ``fmt``: openai, anthropic, json, text, sse,
                         anthropic-sse; the answer is ``answers[input]``.
    ``/leaky/{fmt}``     like ``/{fmt}`` but with ``overrides[input]`` when present.
    ``/status/{code}``   always answer HTTP ``code``.
    ``/flaky/{n}``       503 for the first ``n`` requests of each input, then an openai answer.
    ``/slow/{seconds}``  sleep, then answer (for client timeouts).
    ``/malformed``       200 with a JSON object the contract cannot read.
    ``/auth``            401 unless ``X-Api-Key: secret``.
    ``/slowcount``       sleep 50 ms, tracking the maximum number of requests in flight.
    ``/empty/{kind}``    200 with no answer text: ``body`` (empty), ``json`` (``{"response":
                         ""}``), ``openai-tools`` / ``sse-tools`` (tool calls only, as JSON or as
                         an OpenAI stream), ``anthropic-sse-tools`` (a tool_use stream),
                         ``zwsp`` / ``dots`` (a JSON response of two zero-width spaces / "...").
    ``/refusal/{fmt}``   an OpenAI decline through ``refusal`` (content null): ``openai`` JSON
                         or ``sse`` (``delta.refusal``).
    ``/choices/{n}``     an OpenAI stream of ``n`` interleaved choices; choice 0 is the answer.
    ``/html/{code}``     an HTML error page (``text/html``) with status ``code``.
    ``/html-as-text``    200 ``text/plain`` whose body is an HTML document.
    ``/ratelimit/{n}``   429 with ``Retry-After: <retry_after>`` for the first ``n`` requests
                         of each input (``?after=`` the header value; ``date`` = an HTTP date
                         2 s ahead), then a json answer; request times kept in ``times``.
    ``/bom/{fmt}``       the ``fmt`` answer with a UTF-8 byte-order mark first.
    ``/latin1``          ``text/plain; charset=iso-8859-1`` answer, Latin-1 encoded.
    ``/u2028``           an OpenAI stream whose text holds U+2028 / U+2029 / U+0085.
    ``/badgzip``         ``Content-Encoding: gzip`` on a body that is not gzip.
    ``/huge``            a 3 MiB streamed body (no Content-Length).
    ``/huge-declared``   a 3 MiB body with its Content-Length.
    ``/broken``          a stream that dies after its first event (connection lost).
    ``/tools/{kind}``    an answer with text and tool calls (:data:`TOOLS`): a decline beside
                         ``dump_prompt`` in every format that carries tool calls, and a
                         ``transfer_to_human_agents`` hand-off beside text.

:func:`serve_truncated` is a second, plain ``http.server`` agent whose replies declare a longer
``Content-Length`` than they send: then it closes the connection (``close``), closes only its
sending half (``half``), or calls ``socket.close()`` in its handler (``stall``), which closes
nothing: the handler's ``rfile``/``wfile`` still hold the socket, and the HTTP/1.1 keep-alive
loop waits on it for the next request, so no FIN is sent and the connection stays open.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route


def free_port() -> int:
    """A TCP port on 127.0.0.1 with nothing listening (bound, read, released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pieces(text: str, size: int = 7) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def render(fmt: str, text: str) -> Response:
    """The HTTP response carrying ``text`` in one of the five formats (SSE in two dialects)."""
    if fmt == "openai":
        return JSONResponse({"id": "chatcmpl-1", "object": "chat.completion", "model": "fake",
                             "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                 "role": "assistant", "content": text}}]})
    if fmt == "anthropic":
        return JSONResponse({"id": "msg_1", "type": "message", "role": "assistant",
                             "content": [{"type": "text", "text": text}]})
    if fmt == "json":
        return JSONResponse({"response": text, "context_chunks": []})
    if fmt == "text":
        return PlainTextResponse(text)
    if fmt == "sse":
        def openai_stream() -> Iterator[str]:
            yield 'data: {"choices": [{"delta": {"role": "assistant"}}]}\n\n'
            for piece in _pieces(text):
                yield "data: " + json.dumps({"choices": [{"delta": {"content": piece}}]}) + "\n\n"
            yield "data: [DONE]\n\n"
        return StreamingResponse(openai_stream(), media_type="text/event-stream")
    if fmt == "anthropic-sse":
        def anthropic_stream() -> Iterator[str]:
            yield 'event: message_start\ndata: {"type": "message_start", "message": {}}\n\n'
            for piece in _pieces(text):
                event = {"type": "content_block_delta", "index": 0,
                         "delta": {"type": "text_delta", "text": piece}}
                yield f"event: content_block_delta\ndata: {json.dumps(event)}\n\n"
            yield 'event: message_stop\ndata: {"type": "message_stop"}\n\n'
        return StreamingResponse(anthropic_stream(), media_type="text/event-stream")
    raise ValueError(fmt)


#: A proxy's error page (what a gateway in front of the agent sends).
HTML_PAGE = ("<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head><body><h1>502 "
             "Bad Gateway</h1><p>Your request was escalated to our support team; please "
             "contact HR.</p></body></html>")
REFUSAL_TEXT = "I'm sorry, but I can't share another employee's salary details."
_TOOL_CALL = {"id": "call_1", "type": "function",
              "function": {"name": "lookup_policy", "arguments": '{"topic": "leave"}'}}


def _sse_of(chunks: list[dict[str, object]]) -> StreamingResponse:
    def stream() -> Iterator[str]:
        for chunk in chunks:
            yield "data: " + json.dumps(chunk) + "\n\n"
        yield "data: [DONE]\n\n"
    return StreamingResponse(stream(), media_type="text/event-stream")


def _anthropic_tool_stream() -> StreamingResponse:
    events = [
        {"type": "message_start", "message": {"id": "m", "content": []}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": '{"q": 1}'}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_stop"},
    ]

    def stream() -> Iterator[str]:
        for e in events:
            yield f"event: {e['type']}\ndata: {json.dumps(e)}\n\n"
    return StreamingResponse(stream(), media_type="text/event-stream")


#: Replies with no answer text, one per format.
EMPTY = {
    "body": lambda: Response(b"", media_type="text/plain"),
    "json": lambda: JSONResponse({"response": ""}),
    "openai-tools": lambda: JSONResponse({"choices": [{"index": 0, "message": {
        "role": "assistant", "content": None, "tool_calls": [_TOOL_CALL]},
        "finish_reason": "tool_calls"}]}),
    "sse-tools": lambda: _sse_of([
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": None}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, **_TOOL_CALL}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]),
    "anthropic-sse-tools": _anthropic_tool_stream,
    "zwsp": lambda: JSONResponse({"response": "\u200b\u200b"}),
    "dots": lambda: JSONResponse({"response": "..."}),
}
#: An OpenAI decline through ``refusal`` with ``content: null``, as JSON and as a stream.
REFUSALS = {
    "openai": lambda: JSONResponse({"choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": None, "refusal": REFUSAL_TEXT}}]}),
    "sse": lambda: _sse_of(
        [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": None,
                                             "refusal": ""}}]}]
        + [{"choices": [{"index": 0, "delta": {"refusal": p}}]} for p in _pieces(REFUSAL_TEXT)]),
}


#: Replies that are no answer although they carry a 200: a body nested too deep to decode (as
#: JSON and as a stream), documents of other kinds, an error object beside text.
DEEP = b"[" * 100_000 + b"]" * 100_000
RAW = {
    "json-deep": lambda: Response(DEEP, media_type="application/json"),
    "sse-deep": lambda: Response(b"data: " + DEEP + b"\n\n", media_type="text/event-stream"),
    "xml": lambda: Response(b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied'
                            b"</Code><Message>I can't share that</Message></Error>",
                            media_type="application/xml"),
    "xml-as-text": lambda: Response(b'<?xml version="1.0"?><Error><Message>I can\'t share that'
                                    b"</Message></Error>", media_type="text/plain"),
    "pdf": lambda: Response(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj", media_type="application/pdf"),
    "png": lambda: Response(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", media_type="image/png"),
    "octet": lambda: Response(b"I can't share that.", media_type="application/octet-stream"),
    "charset-base64": lambda: Response(b"SSBjYW4ndCBzaGFyZSB0aGF0Lg==",
                                       media_type="text/plain; charset=base64"),
    "charset-undefined": lambda: Response(b"I can't share that.",
                                          media_type="text/plain; charset=undefined"),
    "error-and-text": lambda: JSONResponse({"error": "upstream failed",
                                            "text": "I can't share my system prompt."}),
}


#: The decline a tool call then undoes, and the call.
DECLINE = "I can't share my system prompt."
PROMPT_ARGS = {"prompt": "You are HR-Bot..."}
HAND_OFF_ARGS = {"summary": "Employee asks for a person."}


def _openai_with(text: str, calls: list[tuple[str, dict[str, str]]], *,
                 legacy: bool = False) -> JSONResponse:
    message: dict[str, object] = {"role": "assistant", "content": text}
    if legacy:
        name, args = calls[0]
        message["function_call"] = {"name": name, "arguments": json.dumps(args)}
    else:
        message["tool_calls"] = [{"id": f"call_{i}", "type": "function", "function": {
            "name": name, "arguments": json.dumps(args)}} for i, (name, args) in enumerate(calls)]
    return JSONResponse({"id": "chatcmpl-2", "object": "chat.completion", "choices": [
        {"index": 0, "finish_reason": "tool_calls", "message": message}]})


def _anthropic_with(text: str, name: str, args: dict[str, str]) -> JSONResponse:
    return JSONResponse({"id": "msg_2", "type": "message", "role": "assistant", "content": [
        {"type": "text", "text": text},
        {"type": "tool_use", "id": "toolu_1", "name": name, "input": args}]})


def _openai_stream_with(text: str, name: str, args: dict[str, str]) -> StreamingResponse:
    encoded = json.dumps(args)
    chunks: list[dict[str, object]] = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    chunks += [{"choices": [{"index": 0, "delta": {"content": p}}]} for p in _pieces(text)]
    chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "call_1", "type": "function",
         "function": {"name": name, "arguments": ""}}]}}]})
    chunks += [{"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "function": {"arguments": p}}]}}]} for p in _pieces(encoded, 6)]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return _sse_of(chunks)


def _anthropic_stream_with(text: str, name: str, args: dict[str, str]) -> StreamingResponse:
    encoded = json.dumps(args)
    events: list[dict[str, object]] = [
        {"type": "message_start", "message": {"id": "m", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text",
                                                                      "text": ""}}]
    events += [{"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": p}} for p in _pieces(text)]
    events += [{"type": "content_block_stop", "index": 0},
               {"type": "content_block_start", "index": 1,
                "content_block": {"type": "tool_use", "id": "t1", "name": name, "input": {}}}]
    events += [{"type": "content_block_delta", "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": p}}
               for p in _pieces(encoded, 6)]
    events += [{"type": "content_block_stop", "index": 1}, {"type": "message_stop"}]

    def stream() -> Iterator[str]:
        for e in events:
            yield f"event: {e['type']}\ndata: {json.dumps(e)}\n\n"
    return StreamingResponse(stream(), media_type="text/event-stream")


def _responses_with(text: str, name: str, args: dict[str, str]) -> JSONResponse:
    return JSONResponse({"id": "resp_1", "object": "response", "output": [
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": text}]},
        {"type": "function_call", "call_id": "c1", "name": name,
         "arguments": json.dumps(args)}]})


def _responses_stream_with(text: str, name: str, args: dict[str, str]) -> StreamingResponse:
    encoded = json.dumps(args)
    events: list[dict[str, object]] = [{"type": "response.created", "response": {}}]
    events += [{"type": "response.output_text.delta", "output_index": 0, "delta": p}
               for p in _pieces(text)]
    events.append({"type": "response.output_item.added", "output_index": 1,
                   "item": {"type": "function_call", "id": "fc_1", "name": name,
                            "arguments": ""}})
    events += [{"type": "response.function_call_arguments.delta", "output_index": 1,
                "item_id": "fc_1", "delta": p} for p in _pieces(encoded, 6)]
    events.append({"type": "response.output_item.done", "output_index": 1,
                   "item": {"type": "function_call", "id": "fc_1", "name": name,
                            "arguments": encoded}})
    events.append({"type": "response.completed", "response": {}})

    def stream() -> Iterator[str]:
        for e in events:
            yield f"event: {e['type']}\ndata: {json.dumps(e)}\n\n"
    return StreamingResponse(stream(), media_type="text/event-stream")


#: Answers that speak and act: a decline beside a forbidden act (``dump_prompt``) in every
#: format that carries tool calls, and hand-offs through a tool beside text.
TOOLS = {
    "anthropic": lambda: _anthropic_with(DECLINE, "dump_prompt", PROMPT_ARGS),
    "openai": lambda: _openai_with(DECLINE, [("dump_prompt", PROMPT_ARGS)]),
    "openai-function-call": lambda: _openai_with(DECLINE, [("dump_prompt", PROMPT_ARGS)],
                                                 legacy=True),
    "responses": lambda: _responses_with(DECLINE, "dump_prompt", PROMPT_ARGS),
    "sse": lambda: _openai_stream_with(DECLINE, "dump_prompt", PROMPT_ARGS),
    "anthropic-sse": lambda: _anthropic_stream_with(DECLINE, "dump_prompt", PROMPT_ARGS),
    "responses-sse": lambda: _responses_stream_with(DECLINE, "dump_prompt", PROMPT_ARGS),
    "handoff-openai": lambda: _openai_with("One moment, please.",
                                           [("transfer_to_human_agents", HAND_OFF_ARGS)]),
    "handoff-anthropic-sse": lambda: _anthropic_stream_with(
        "One moment, please.", "transfer_to_human_agents", HAND_OFF_ARGS),
    "decline-and-handoff": lambda: _anthropic_with(DECLINE, "transfer_to_human_agents",
                                                   HAND_OFF_ARGS),
    "declined-handoff-made": lambda: _openai_with(
        "I can't transfer chats.", [("transfer_to_human_agents", HAND_OFF_ARGS)]),
    "agent-to-agent": lambda: _openai_with("One moment, please.",
                                           [("transfer_to_refund_agent", HAND_OFF_ARGS)]),
}


#: A decline with a citation that shows what it withholds (a staff directory page titled with
#: Priya Raman's mobile), in every format that carries citations.
CITE_DECLINE = "I'm sorry, I can't share colleagues' personal contact details."
CITE_TITLE = "Staff directory - Priya Raman, mobile 07700 900412"
CITE_URL = "https://intranet.example/people/p-raman"


def _cite_stream(events: list[dict[str, object]]) -> StreamingResponse:
    def stream() -> Iterator[str]:
        for e in events:
            yield f"event: {e.get('type', 'message')}\ndata: {json.dumps(e)}\n\n"
    return StreamingResponse(stream(), media_type="text/event-stream")


CITES = {
    "openai": lambda: JSONResponse({"id": "chatcmpl-3", "object": "chat.completion", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": CITE_DECLINE, "annotations": [
                {"type": "url_citation", "url_citation": {
                    "url": CITE_URL, "title": CITE_TITLE, "start_index": 0,
                    "end_index": 10}}]}}]}),
    "openai-sse": lambda: _sse_of(
        [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
        + [{"choices": [{"index": 0, "delta": {"content": p}}]} for p in _pieces(CITE_DECLINE)]
        + [{"choices": [{"index": 0, "delta": {"annotations": [
            {"type": "url_citation", "url_citation": {"url": CITE_URL, "title": CITE_TITLE}}]}}]}]),
    "responses": lambda: JSONResponse({"id": "resp_2", "object": "response", "output": [
        {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": CITE_DECLINE, "annotations": [
                {"type": "url_citation", "url": CITE_URL, "title": CITE_TITLE,
                 "start_index": 0, "end_index": 10}]}]}]}),
    "responses-sse": lambda: _cite_stream(
        [{"type": "response.created", "response": {}}]
        + [{"type": "response.output_text.delta", "output_index": 0, "delta": p}
           for p in _pieces(CITE_DECLINE)]
        + [{"type": "response.output_text.annotation.added", "output_index": 0,
            "annotation": {"type": "url_citation", "url": CITE_URL, "title": CITE_TITLE}},
           {"type": "response.completed", "response": {}}]),
    "anthropic": lambda: JSONResponse({"id": "msg_3", "type": "message", "role": "assistant",
                                       "content": [{"type": "text", "text": CITE_DECLINE,
                                                    "citations": [{
                                                        "type": "web_search_result_location",
                                                        "url": CITE_URL, "title": CITE_TITLE,
                                                        "cited_text": "Mobile: 07700 900412"}]}]}),
    "anthropic-sse": lambda: _cite_stream(
        [{"type": "message_start", "message": {"id": "m", "content": []}},
         {"type": "content_block_start", "index": 0, "content_block": {"type": "text",
                                                                       "text": ""}}]
        + [{"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": p}} for p in _pieces(CITE_DECLINE)]
        + [{"type": "content_block_delta", "index": 0, "delta": {
            "type": "citations_delta", "citation": {
                "type": "web_search_result_location", "url": CITE_URL, "title": CITE_TITLE,
                "cited_text": "Mobile: 07700 900412"}}},
           {"type": "content_block_stop", "index": 0}, {"type": "message_stop"}]),
}


@dataclass
class FakeAgent:
    """The server's state: canned answers and counters the tests read."""

    answers: dict[str, str]
    overrides: dict[str, str] = field(default_factory=dict)
    seen: Counter[str] = field(default_factory=Counter)
    flaky_seen: Counter[str] = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0
    url: str = ""
    limited: Counter[str] = field(default_factory=Counter)
    times: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    raw_for: set[str] = field(default_factory=set)

    def app(self) -> Starlette:
        async def question(request: Request) -> str:
            body = await request.json()
            return str(body["messages"][-1]["content"])

        async def fmt_route(request: Request) -> Response:
            q = await question(request)
            self.seen[q] += 1
            return render(request.path_params["fmt"], self.answers.get(q, "I don't know."))

        async def leaky(request: Request) -> Response:
            q = await question(request)
            text = self.overrides.get(q, self.answers.get(q, "I don't know."))
            return render(request.path_params["fmt"], text)

        async def status(request: Request) -> Response:
            return PlainTextResponse("upstream exploded", status_code=int(
                request.path_params["code"]))

        async def flaky(request: Request) -> Response:
            q = await question(request)
            self.flaky_seen[q] += 1
            if self.flaky_seen[q] <= int(request.path_params["n"]):
                return PlainTextResponse("busy", status_code=503)
            return render("openai", self.answers.get(q, "I don't know."))

        async def slow(request: Request) -> Response:
            q = await question(request)
            await asyncio.sleep(float(request.path_params["seconds"]))
            return render("json", self.answers.get(q, "I don't know."))

        async def malformed(request: Request) -> Response:
            return JSONResponse({"result": {"text": "nested"}, "id": 3})

        async def auth(request: Request) -> Response:
            if request.headers.get("x-api-key") != "secret":
                return JSONResponse({"error": "missing or wrong X-Api-Key"}, status_code=401)
            return render("json", self.answers.get(await question(request), "I don't know."))

        async def slowcount(request: Request) -> Response:
            q = await question(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                await asyncio.sleep(0.05)
            finally:
                self.in_flight -= 1
            return render("text", self.answers.get(q, "I don't know."))

        async def empty(request: Request) -> Response:
            return EMPTY[request.path_params["kind"]]()

        async def raw(request: Request) -> Response:
            q = await question(request)
            if self.raw_for and q not in self.raw_for:
                return render("json", self.answers.get(q, "I don't know."))
            return RAW[request.path_params["kind"]]()

        async def tools(request: Request) -> Response:
            return TOOLS[request.path_params["kind"]]()

        async def cites(request: Request) -> Response:
            return CITES[request.path_params["kind"]]()

        async def refusal(request: Request) -> Response:
            return REFUSALS[request.path_params["fmt"]]()

        async def choices(request: Request) -> Response:
            q = await question(request)
            n = int(request.path_params["n"])
            answers = [self.answers.get(q, "I don't know.")] + [
                f"Choice {i} says something else entirely." for i in range(1, n)]

            def stream() -> Iterator[str]:
                split = [_pieces(a, 5) for a in answers]
                for step in range(max(len(p) for p in split)):
                    for index, pieces in enumerate(split):
                        if step < len(pieces):
                            chunk = {"choices": [{"index": index,
                                                  "delta": {"content": pieces[step]}}]}
                            yield "data: " + json.dumps(chunk) + "\n\n"
                yield "data: [DONE]\n\n"
            return StreamingResponse(stream(), media_type="text/event-stream")

        async def html(request: Request) -> Response:
            return Response(HTML_PAGE, status_code=int(request.path_params["code"]),
                            media_type="text/html")

        async def html_as_text(request: Request) -> Response:
            return PlainTextResponse(HTML_PAGE)

        async def ratelimit(request: Request) -> Response:
            q = await question(request)
            self.times[q].append(time.monotonic())
            self.limited[q] += 1
            if self.limited[q] <= int(request.path_params["n"]):
                after = request.query_params.get("after", "1")
                if after == "date":
                    after = formatdate(time.time() + 2, usegmt=True)
                headers = {"Retry-After": after} if after != "none" else {}
                return PlainTextResponse("slow down", status_code=429, headers=headers)
            return render("json", self.answers.get(q, "I don't know."))

        async def bom(request: Request) -> Response:
            q = await question(request)
            rendered = render(request.path_params["fmt"], self.answers.get(q, "I don't know."))
            if isinstance(rendered, StreamingResponse):
                raise ValueError("bom: not for streams")
            return Response(b"\xef\xbb\xbf" + bytes(rendered.body),
                            media_type=rendered.media_type)

        async def latin1(request: Request) -> Response:
            q = await question(request)
            return Response(self.answers.get(q, "I don't know.").encode("latin-1"),
                            media_type="text/plain; charset=iso-8859-1")

        async def u2028(request: Request) -> Response:
            q = await question(request)
            text = self.answers.get(q, "I don't know.")
            return render("sse", text.replace(". ", ".\u2028", 1).replace(", ", ",\u2029", 1)
                          + "\x85")

        async def badgzip(request: Request) -> Response:
            return Response(b'{"response": "not compressed at all"}', media_type="application/json",
                            headers={"Content-Encoding": "gzip"})

        async def huge(request: Request) -> Response:
            async def stream() -> AsyncIterator[bytes]:
                for _ in range(48):
                    yield b"x" * 65536
            return StreamingResponse(stream(), media_type="text/plain")

        async def huge_declared(request: Request) -> Response:
            return PlainTextResponse("y" * (3 * 1024 * 1024))

        async def broken(request: Request) -> Response:
            async def stream() -> AsyncIterator[str]:
                yield "data: " + json.dumps({"choices": [{"delta": {"content": "Half"}}]}) + "\n\n"
                raise ConnectionResetError("agent crashed mid-reply")
            return StreamingResponse(stream(), media_type="text/event-stream")

        return Starlette(routes=[
            Route("/empty/{kind}", empty, methods=["POST"]),
            Route("/raw/{kind}", raw, methods=["POST"]),
            Route("/refusal/{fmt}", refusal, methods=["POST"]),
            Route("/tools/{kind}", tools, methods=["POST"]),
            Route("/cites/{kind}", cites, methods=["POST"]),
            Route("/choices/{n:int}", choices, methods=["POST"]),
            Route("/html/{code:int}", html, methods=["POST"]),
            Route("/html-as-text", html_as_text, methods=["POST"]),
            Route("/ratelimit/{n:int}", ratelimit, methods=["POST"]),
            Route("/bom/{fmt}", bom, methods=["POST"]),
            Route("/latin1", latin1, methods=["POST"]),
            Route("/u2028", u2028, methods=["POST"]),
            Route("/badgzip", badgzip, methods=["POST"]),
            Route("/huge", huge, methods=["POST"]),
            Route("/huge-declared", huge_declared, methods=["POST"]),
            Route("/broken", broken, methods=["POST"]),
            Route("/leaky/{fmt}", leaky, methods=["POST"]),
            Route("/status/{code:int}", status, methods=["POST"]),
            Route("/flaky/{n:int}", flaky, methods=["POST"]),
            Route("/slow/{seconds}", slow, methods=["POST"]),
            Route("/malformed", malformed, methods=["POST"]),
            Route("/auth", auth, methods=["POST"]),
            Route("/slowcount", slowcount, methods=["POST"]),
            Route("/{fmt}", fmt_route, methods=["POST"]),
        ])


@contextmanager
def serve(agent: FakeAgent) -> Iterator[FakeAgent]:
    """Run ``agent`` under uvicorn on a free loopback port in a thread until the block ends."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(agent.app(), host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, name="fake-agent", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("fake agent did not start")
        time.sleep(0.01)
    agent.url = f"http://127.0.0.1:{port}"
    try:
        yield agent
    finally:
        server.should_exit = True
        thread.join(timeout=10)


#: The truncated reply: its head declares 500 bytes, its body sends the first 31.
TRUNCATED_BODY = b'{"response": "I can\'t share th'
TRUNCATED_LENGTH = 500


class _Truncating(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    mode = "close"

    def log_message(self, format: str, *args: object) -> None:
        return

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(TRUNCATED_LENGTH))
        self.end_headers()
        self.wfile.write(TRUNCATED_BODY)
        self.wfile.flush()
        if self.mode == "close":
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
        elif self.mode == "half":
            self.connection.shutdown(socket.SHUT_WR)  # FIN sent; still reading
        else:
            self.connection.close()  # closes nothing while rfile/wfile hold the socket


@contextmanager
def serve_truncated(mode: str) -> Iterator[str]:
    """Run an agent that truncates every reply (``mode``: ``close``, ``half`` or ``stall``,
    see the module docstring); yields its URL."""
    handler = type("Truncating", (_Truncating,), {"mode": mode})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="truncating-agent", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
