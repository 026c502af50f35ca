"""HTTP front of the reference agent (Starlette) and an embeddable uvicorn runner.

Endpoints:

- ``POST /`` (also ``/chat``, ``/v1/chat/completions``, ``/v1/messages``): body
  ``{"messages": [{"role": "user", "content": "..."}]}`` (docs/rules.md#endpoint-contract;
  ``content`` may
  also be a list of ``{"type": "text", "text": ...}`` blocks). The last user message is answered.
- ``GET /healthz``: ``{"status": "ok", "kb", "chunks", "agent_version", "model_version",
  "prompt_version", "weak"}``.

The reply format is chosen per request, first match wins: ``?format=<name>``; the path
(``/v1/chat/completions`` -> ``openai``, or ``openai-sse`` with ``"stream": true``;
``/v1/messages`` -> ``anthropic``); the ``Accept`` header's first media type
(``text/event-stream`` -> ``openai-sse``, ``text/plain`` -> ``text``); ``"stream": true`` in
the body -> ``openai-sse``; else the server's default format. Every reply carries
``X-Agent-Version`` and ``X-Context-Chunks`` (comma-separated chunk ids) headers.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from evalloop.agent.agent import AgentConfig, ReferenceAgent, Reply
from evalloop.agent.formats import FORMATS, Format, render_json, sse_events, versions

__all__ = ["BadRequest", "build_agent_app", "extract_question", "serve_agent"]


class BadRequest(ValueError):
    """The request body is not the endpoint contract's ``{"messages": [...]}``; ``expected`` /
    ``received``
    describe the problem (returned as HTTP 400)."""

    def __init__(self, expected: str, received: str) -> None:
        """Keep what was expected and what arrived."""
        super().__init__(f"expected {expected}; received {received}")
        self.expected = expected
        self.received = received


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def extract_question(body: Any) -> str:
    """The text of the last ``user`` message of a chat request body.

    Raises:
        BadRequest: not an object with a non-empty ``messages`` list holding a user message
            whose ``content`` is a string or a list of text blocks.
    """
    if not isinstance(body, dict):
        raise BadRequest('a JSON object {"messages": [...]}', type(body).__name__)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest('"messages": a non-empty list of {role, content}', _short(messages))
    for msg in reversed(messages):
        if not isinstance(msg, dict) or msg.get("role") != "user":
            continue
        content = msg.get("content")
        if isinstance(content, str) and content.strip():
            return content
        if isinstance(content, list):
            text = " ".join(
                b["text"] for b in content
                if isinstance(b, dict) and b.get("type") == "text"
                and isinstance(b.get("text"), str)
            )
            if text.strip():
                return text
        raise BadRequest("user message content: a non-empty string or text blocks", _short(content))
    raise BadRequest('a message with "role": "user"', _short(messages))


def _choose_format(request: Request, body: dict[str, Any], default: Format) -> Format:
    asked = request.query_params.get("format")
    if asked is not None:
        if asked not in FORMATS:
            raise BadRequest(f"format one of {list(FORMATS)}", repr(asked))
        return cast(Format, asked)
    path = request.url.path.rstrip("/")
    if path.endswith("/chat/completions"):
        return "openai-sse" if body.get("stream") is True else "openai"
    if path.endswith("/messages"):
        return "anthropic"
    # The client's first-listed media type decides; a client that accepts several formats
    # (``application/json, text/event-stream, text/plain``) gets the server's default.
    first = request.headers.get("accept", "").split(",")[0].split(";")[0].strip().lower()
    if first == "text/event-stream":
        return "openai-sse"
    if first == "text/plain":
        return "text"
    if body.get("stream") is True:
        return "openai-sse"
    return default


def build_agent_app(
    agent: ReferenceAgent, *, default_format: Format = "json", delay_s: float = 0.0,
    token: str | None = None,
) -> Starlette:
    """The Starlette app serving ``agent``.

    Args:
        agent: the agent to serve.
        default_format: reply format when the request does not choose one.
        delay_s: seconds to wait before replying (simulates model latency; 0 = none).
        token: when set, chat requests need ``Authorization: Bearer <token>`` (else ``401``;
            ``/healthz`` stays open): ``docs/security.md#agent-endpoints``.

    Raises:
        ValueError: ``default_format`` is not one of :data:`FORMATS`.
    """
    if default_format not in FORMATS:
        raise ValueError(f"default_format must be one of {list(FORMATS)}; got {default_format!r}")
    config: AgentConfig = agent.config

    expected = f"Bearer {token}".encode() if token else None

    async def chat(request: Request) -> Response:
        if expected is not None:
            given = request.headers.get("authorization", "").encode()
            if not hmac.compare_digest(given, expected):
                return JSONResponse(
                    {"error": {"message": "expected 'Authorization: Bearer <token>' with this "
                               "agent's token", "expected": "Bearer <token>",
                               "received": "none" if not given else "another value"}},
                    status_code=401, headers={"WWW-Authenticate": "Bearer"})
        try:
            try:
                body = json.loads(await request.body())
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise BadRequest('a JSON object {"messages": [...]}', f"invalid JSON ({exc})") \
                    from exc
            question = extract_question(body)
            fmt = _choose_format(request, body, default_format)
        except BadRequest as exc:
            return JSONResponse(
                {"error": {"message": str(exc), "expected": exc.expected,
                           "received": exc.received}},
                status_code=400,
            )
        if delay_s > 0:
            await asyncio.sleep(delay_s)
        reply = agent.respond(question)
        headers = {
            "X-Agent-Version": config.version,
            "X-Context-Chunks": ",".join(c.id for c in reply.chunks),
        }
        return _render(fmt, reply, config, question, headers)

    async def healthz(request: Request) -> Response:
        return JSONResponse({
            "status": "ok", "kb": config.kb, "chunks": len(agent.chunks),
            **versions(config), "weak": config.weak,
        })

    chat_methods = ["POST"]
    return Starlette(routes=[
        Route("/", chat, methods=chat_methods),
        Route("/chat", chat, methods=chat_methods),
        Route("/v1/chat/completions", chat, methods=chat_methods),
        Route("/v1/messages", chat, methods=chat_methods),
        Route("/healthz", healthz, methods=["GET"]),
    ])


def _render(fmt: Format, reply: Reply, config: AgentConfig, question: str,
            headers: dict[str, str]) -> Response:
    if fmt == "text":
        return PlainTextResponse(reply.text, headers=headers)
    if fmt == "openai-sse":
        def stream() -> Iterator[str]:
            yield from sse_events(reply, config)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={**headers, "Cache-Control": "no-cache"})
    return JSONResponse(render_json(fmt, reply, config, question), headers=headers)


class _EmbeddedServer(uvicorn.Server):
    """A uvicorn server that leaves the process's signal handlers alone (it runs inside a
    host program: tests, ``evalloop demo``)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.asynccontextmanager
async def serve_agent(
    config: AgentConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    default_format: Format = "json",
    delay_s: float = 0.0,
    token: str | None = None,
) -> AsyncIterator[str]:
    """Run the reference agent on ``host:port`` (0 = a free port) for the ``async with`` body.

    Yields:
        The base URL, e.g. ``"http://127.0.0.1:38211"``; POST chat requests to it.

    Raises:
        RuntimeError: the server could not start (e.g. the port is taken).
    """
    app = build_agent_app(ReferenceAgent(config), default_format=default_format, delay_s=delay_s,
                          token=token)
    server = _EmbeddedServer(uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan="off", access_log=False,
    ))
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                try:
                    task.result()
                except SystemExit as exc:  # uvicorn exits on a bind error
                    raise RuntimeError(
                        f"reference agent could not start on {host}:{port} (port in use?)"
                    ) from exc
                raise RuntimeError(f"reference agent stopped while starting on {host}:{port}")
            await asyncio.sleep(0.01)
        bound = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://{host}:{bound}"
    finally:
        server.should_exit = True
        with contextlib.suppress(SystemExit):
            await task
