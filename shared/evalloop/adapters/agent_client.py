"""HTTP client for the agent under evaluation (seed 003's endpoint contract).

``POST <endpoint>`` with ``{"messages": [{"role": "user", "content": <input>}]}``; the body is
read by :func:`evalloop.core.evaluation.extract.extract_text` (SSE, OpenAI, Anthropic, generic
JSON, plain text). httpx errors are mapped to :class:`AgentCallError` here, in one place:

* connection refused / reset / DNS failure -> ``unreachable``; a per-attempt deadline passed
  -> ``timeout``; 5xx (and 429) -> ``http_5xx``. All three are retried with exponential
  backoff (``backoff_s * 2**attempt``; deterministic, no jitter) up to ``retries`` times.
* 4xx (except 429) -> ``http_4xx`` and an unreadable body -> ``malformed_response``: not
  retried (the same request would fail the same way).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Literal

import httpx

from evalloop.core.evaluation.extract import MalformedResponse, ResponseFormat, extract_text
from evalloop.core.evaluation.results import AgentFailure
from evalloop.errors import AgentError

__all__ = ["AgentCallError", "AgentClient", "AgentReply", "parse_header"]

FailureKind = Literal["unreachable", "timeout", "http_5xx", "http_4xx", "malformed_response"]


class AgentCallError(AgentError):
    """The agent gave no usable answer after all attempts.

    Attributes:
        failure: the :class:`~evalloop.core.evaluation.results.AgentFailure` record (kind,
            message, last HTTP status, attempts).
        elapsed_ms: time spent on every attempt and backoff, milliseconds.
    """

    def __init__(self, failure: AgentFailure, elapsed_ms: float) -> None:
        self.failure = failure
        self.elapsed_ms = elapsed_ms
        super().__init__(f"{failure.kind} after {failure.attempts} attempt(s): {failure.message}")


@dataclass(frozen=True, slots=True)
class AgentReply:
    """One answer: ``text``, the ``format`` it came in, ``latency_ms`` (all attempts incl.
    backoff, milliseconds), ``attempts`` made and the final ``status_code``; ``context_ids``:
    the passages the agent says it retrieved (its ``X-Context-Chunks`` header, comma-separated
    ids; empty when it sent none, see ``docs/readiness.md#retrieved-context``)."""

    text: str
    format: ResponseFormat
    latency_ms: float
    attempts: int
    status_code: int
    context_ids: tuple[str, ...] | None = None


#: Response header in which an agent lists the passage ids it retrieved (comma-separated).
CONTEXT_HEADER = "x-context-chunks"


def context_ids(value: str | None) -> tuple[str, ...] | None:
    """The chunk ids of an ``X-Context-Chunks`` header value (``None``: no header; ``()``: the
    agent retrieved nothing)."""
    if value is None:
        return None
    return tuple(part.strip() for part in value.split(",") if part.strip())


def parse_header(raw: str) -> tuple[str, str]:
    """Parse ``"Name: value"`` (as given to ``--header``) into ``(name, value)``.

    Raises:
        ValueError: no ``:`` or an empty name.
    """
    name, sep, value = raw.partition(":")
    if not sep or not name.strip():
        raise ValueError(f"expected a header as 'Name: value', received {raw!r}")
    return name.strip(), value.strip()


class _SignalledBody(httpx.AsyncByteStream):
    """A request body sent as one chunk that calls ``on_sent`` once httpcore has written it.

    httpcore writes each chunk before asking for the next, so the call after the ``yield``
    happens when the body is on the wire. (An httpcore ``trace`` extension told the same, but
    is awaited on every one of ~12 connection events per request: ~0.06 ms of client CPU.)
    """

    def __init__(self, body: bytes, on_sent: Callable[[], None]) -> None:
        self._body = body
        self._on_sent = on_sent

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._body
        self._on_sent()


class _Retryable(Exception):
    def __init__(self, kind: FailureKind, message: str, status: int | None = None) -> None:
        self.kind, self.message, self.status = kind, message, status
        super().__init__(message)


class AgentClient:
    """Async client for one agent endpoint; use as ``async with AgentClient(...) as client``.

    Args:
        endpoint: the agent's URL (POST target).
        headers: extra request headers (e.g. ``{"Authorization": "Bearer ..."}``).
        timeout_s: deadline of one attempt, seconds (connect + send + the whole body).
        retries: extra attempts after a timeout, connection error, 5xx or 429.
        backoff_s: first backoff, seconds; doubles on each retry.
        format_hint: force one body reader (``sse``, ``openai``, ``anthropic``, ``json``,
            ``text``); ``None`` detects it per response.
        max_connections: connections at most (set it to the runner's concurrency). They are
            kept as that many one-connection httpx clients, and a caller that passes ``slot``
            to :meth:`ask` (the runner: its worker number) always uses the same one: httpcore's
            shared pool rescans every connection on each request and response (O(connections)
            per event, measured to dominate client CPU at 32 connections). The clients and
            their one TLS context are built here, as ``httpx.AsyncClient`` builds its pool in
            its constructor (~20 ms for the CA bundle, ~0.4 ms a client): not on the first
            requests of a run. Connections open on first use.
        transport: an httpx transport (tests); when given, one shared client is used.
    """

    def __init__(self, endpoint: str, *, headers: dict[str, str] | None = None,
                 timeout_s: float = 30.0, retries: int = 2, backoff_s: float = 0.25,
                 format_hint: ResponseFormat | None = None, max_connections: int = 32,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        if retries < 0 or timeout_s <= 0 or backoff_s < 0:
            raise ValueError("expected retries >= 0, timeout_s > 0 and backoff_s >= 0, received "
                             f"{retries}, {timeout_s}, {backoff_s}")
        self.endpoint = endpoint
        # parsed once, not on every request (~10 us each); a URL httpx cannot parse stays a
        # string so that the error surfaces where it always did, in the request
        self._url: httpx.URL | str
        try:
            self._url = httpx.URL(endpoint)
        except httpx.InvalidURL:
            self._url = endpoint
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.format_hint = format_hint
        self._headers = {"accept": "application/json, text/event-stream, text/plain",
                         **(headers or {})}
        self._shared: httpx.AsyncClient | None = None
        if transport is not None:
            self._shared = httpx.AsyncClient(
                headers=self._headers, timeout=httpx.Timeout(timeout_s), transport=transport,
                limits=httpx.Limits(max_connections=max_connections,
                                    max_keepalive_connections=max_connections))
        # one-connection clients sharing one TLS context (building one per client costs
        # ~20 ms each: it loads the CA bundle)
        self._slots: list[httpx.AsyncClient] = []
        if transport is None:
            tls = httpx.create_ssl_context()
            self._slots = [
                httpx.AsyncClient(
                    headers=self._headers, timeout=httpx.Timeout(timeout_s), verify=tls,
                    limits=httpx.Limits(max_connections=1, max_keepalive_connections=1))
                for _ in range(max(1, max_connections))]
        self._next = itertools.cycle(range(max(1, len(self._slots))))

    def _client_for(self, slot: int | None) -> httpx.AsyncClient:
        if self._shared is not None:
            return self._shared
        return self._slots[(next(self._next) if slot is None else slot) % len(self._slots)]

    async def __aenter__(self) -> AgentClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        for client in (self._shared, *self._slots):
            if client is not None:
                await client.aclose()

    async def _attempt(self, client: httpx.AsyncClient, payload: dict[str, object],
                       on_sent: Callable[[], None] | None
                       ) -> tuple[bytes, str | None, int, str | None]:
        # same request as client.post(json=payload): headers, Content-Length, JSON encoding
        request = client.build_request("POST", self._url, json=payload)
        if on_sent is not None:
            request.stream = _SignalledBody(request.content, on_sent)
        try:
            async with asyncio.timeout(self.timeout_s):
                response = await client.send(request)
        except TimeoutError as exc:
            raise _Retryable("timeout", f"no complete answer within {self.timeout_s:g} s") \
                from exc
        except httpx.TimeoutException as exc:
            raise _Retryable("timeout", f"{type(exc).__name__} after {self.timeout_s:g} s") \
                from exc
        except (httpx.ConnectError, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            raise _Retryable("unreachable", f"{type(exc).__name__}: {exc}") from exc
        status = response.status_code
        if status >= 500 or status == 429:
            raise _Retryable("http_5xx", f"HTTP {status}: {response.text[:200]}", status)
        return (response.content, response.headers.get("content-type"), status,
                response.headers.get(CONTEXT_HEADER))

    async def ask(self, text: str, *, on_sent: Callable[[], None] | None = None,
                  slot: int | None = None) -> AgentReply:
        """Send one user message and return the agent's answer.

        Args:
            text: the user's message (the eval case's input).
            on_sent: called when the request body is on the wire (each attempt); the runner
                uses it to score the previous answer while this one is awaited.
            slot: which connection to use (``slot % max_connections``); ``None`` takes the
                next one round-robin (concurrent calls may then share a connection and wait).

        Returns:
            The extracted answer with its format, latency and attempt count.

        Raises:
            AgentCallError: unreachable, timed out or 5xx after all retries; a 4xx; or a body
                the contract cannot read (``failure.kind`` says which).
        """
        payload: dict[str, object] = {"messages": [{"role": "user", "content": text}]}
        client = self._client_for(slot)
        start = time.perf_counter()
        attempts = 0
        last: _Retryable | None = None
        while attempts <= self.retries:
            if attempts:
                await asyncio.sleep(self.backoff_s * 2 ** (attempts - 1))
            attempts += 1
            try:
                body, ctype, status, ctx = await self._attempt(client, payload, on_sent)
            except _Retryable as exc:
                last = exc
                continue
            elapsed = (time.perf_counter() - start) * 1000
            if status >= 400:
                detail = body[:200].decode(errors="replace")
                raise AgentCallError(AgentFailure(
                    kind="http_4xx", message=f"HTTP {status}: {detail}", http_status=status,
                    attempts=attempts), elapsed)
            try:
                found = extract_text(body, ctype, hint=self.format_hint)
            except MalformedResponse as exc:
                raise AgentCallError(AgentFailure(
                    kind="malformed_response", message=str(exc), http_status=status,
                    attempts=attempts), elapsed) from exc
            return AgentReply(found.text, found.format, elapsed, attempts, status,
                              context_ids(ctx))
        assert last is not None
        raise AgentCallError(AgentFailure(kind=last.kind, message=last.message,
                                          http_status=last.status, attempts=attempts),
                             (time.perf_counter() - start) * 1000)
