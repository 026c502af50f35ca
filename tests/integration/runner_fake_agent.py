"""A fake agent at the agent port: a real HTTP server (starlette + uvicorn on a free loopback
port, in a thread) that answers seed 003's endpoint contract with canned answers.

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
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

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

        return Starlette(routes=[
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
