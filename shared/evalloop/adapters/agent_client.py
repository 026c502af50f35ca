"""HTTP client for the agent under evaluation (``docs/rules.md#endpoint-contract``).

``POST <endpoint>`` with ``{"messages": [{"role": "user", "content": <input>}]}``; the body is
read under a size cap (2 MiB by default) and then by
:func:`evalloop.adapters.agent_body.read_reply` (SSE, OpenAI, Anthropic, generic JSON, plain
text). Every httpx error is mapped to an :class:`AgentCallError` here, in one place; its
``failure.kind`` (:data:`~evalloop.core.evaluation.results.FailureKind`) names what happened:

* retried (tenacity, ``retries`` times at most): ``unreachable`` (connection refused, DNS),
  ``connection_lost`` (reset or closed mid-reply: a body cut short of its Content-Length or
  last chunk says how much arrived), ``timeout`` (the per-attempt deadline; a body that stopped
  part-way on a connection left open says how much arrived),
  ``http_5xx`` and ``rate_limited`` (429). The wait before a retry is ``backoff_s * 2**(n-1)``
  plus up to as much again at random, so workers that failed together do not retry together;
  a ``Retry-After`` (seconds or an HTTP date, on 429 or 503) replaces it, plus up to 10 % (at
  most 1 s) of jitter. A ``Retry-After`` longer than the timeout is not waited for: the case
  ends at once as ``rate_limited`` (the timeout caps every wait).
* not retried (the same request would fail the same way): ``http_4xx``, ``redirect`` (3xx; not
  followed), ``unsupported_url``, ``transport_error`` (any other httpx error),
  ``too_large``, ``bad_content_encoding`` (e.g. a body labelled gzip that is not; stacked
  codings such as ``gzip, gzip`` are decoded layer by layer, each under the cap),
  ``html_page`` (an HTML document, whatever the status; retried when the status is 5xx; a 429
  page is ``rate_limited``), ``not_text``, ``no_text`` and ``malformed_response``.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
import zlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import TracebackType

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from evalloop.adapters.agent_body import read_reply
from evalloop.core.evaluation.extract import (
    MalformedResponse,
    ResponseFormat,
    decode_body,
    looks_like_html,
)
from evalloop.core.evaluation.results import AgentFailure, FailureKind
from evalloop.core.evaluation.tool_calls import ToolCall
from evalloop.core.redaction import redact_text
from evalloop.errors import AgentError

__all__ = ["MAX_BODY_BYTES", "MAX_CODINGS", "AgentCallError", "AgentClient", "AgentReply",
           "parse_header", "retry_after_seconds"]

#: The largest reply read, bytes (after content decoding): 2 MiB. A longer one is ``too_large``.
MAX_BODY_BYTES = 2 * 1024 * 1024


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
    ids; empty when it sent none, see ``docs/readiness.md#retrieved-context``); ``tool_calls``:
    the tool calls the answer made beside its text, in order (``docs/rules.md#tool-calls``);
    ``beside_text``: what it shows the person asking beside its text (citations, quick
    replies), one line each (``docs/rules.md#what-a-reply-shows-beside-its-text``)."""

    text: str
    format: ResponseFormat
    latency_ms: float
    attempts: int
    status_code: int
    context_ids: tuple[str, ...] | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    beside_text: tuple[str, ...] = ()


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


@dataclass(slots=True)
class _Progress:
    """How far one attempt got: whether the status line and headers arrived, the body's
    declared ``Content-Length`` (``None``: not given, e.g. chunked) and the body bytes received
    (before content decoding)."""

    headers: bool = False
    declared: int | None = None
    received: int = 0

    def cut_short(self, ending: str) -> str | None:
        """The message for a body that stopped part-way (``ending``: what happened next), or
        ``None`` when no body had started (the reply never began)."""
        if not self.headers:
            return None
        if self.declared is not None:
            if self.received >= self.declared:
                return None
            return (f"the body was cut short: {self.received} of the {self.declared} bytes its "
                    f"Content-Length declares arrived, then {ending}")
        return (f"the body was cut short: {self.received} bytes of a chunked body arrived "
                f"(not its last chunk), then {ending}")


class _AttemptFailed(Exception):
    """One attempt gave no answer; ``retryable`` says whether another may."""

    def __init__(self, kind: FailureKind, message: str, status: int | None = None, *,
                 retryable: bool = False, retry_after: float | None = None) -> None:
        self.kind, self.message, self.status = kind, message, status
        self.retryable, self.retry_after = retryable, retry_after
        super().__init__(message)


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delay-seconds or an HTTP date (RFC 9110
    section 10.2.3). A date in the past is 0; an unreadable value is ``None`` (ignored).

    Args:
        value: the header value, if any.
        now: the current UTC time (default: the clock).
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


#: zlib window bits per Content-Encoding the client asks for (16+: a gzip header).
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
#: Content codings stacked on one body at most ("gzip, gzip" is two): more is refused.
MAX_CODINGS = 4


class _Inflater:
    """Bounded decoding of one ``gzip`` or ``deflate`` layer (the encodings the client asks
    for): it never produces more than ``cap`` bytes plus one (the byte that shows the cap was
    passed).

    Raises ``_AttemptFailed("bad_content_encoding")`` for a body that is not what its
    ``Content-Encoding`` says.
    """

    def __init__(self, encoding: str, cap: int) -> None:
        self.encoding = encoding
        self.cap = cap
        self.produced = 0
        self._z = zlib.decompressobj(_WBITS[encoding])
        self._started = False

    @property
    def over(self) -> bool:
        """Whether this layer decoded more than its cap."""
        return self.produced > self.cap

    def feed(self, data: bytes) -> bytes:
        """Decode ``data``; stop once more than the cap has been produced in all."""
        out = bytearray()
        while data and self.produced + len(out) <= self.cap:
            try:
                out += self._z.decompress(data, self.cap + 1 - self.produced - len(out))
            except zlib.error as exc:
                if self.encoding == "deflate" and not self._started:
                    # some servers send raw deflate (no zlib header): what httpx accepts too
                    self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                    self._started = True
                    continue
                raise _AttemptFailed("bad_content_encoding", f"body does not match its "
                                     f"Content-Encoding: {exc}") from exc
            self._started = True
            data = self._z.unconsumed_tail
        self.produced += len(out)
        return bytes(out)

    def finish(self) -> None:
        """Check the stream ended where it should (a truncated gzip body is an error)."""
        if not self._z.eof and self.encoding != "deflate":
            raise _AttemptFailed("bad_content_encoding", "body does not match its "
                                 "Content-Encoding: the compressed stream is truncated")


def _content_codings(value: str) -> list[str]:
    """The content codings of a ``Content-Encoding`` value in the order they were applied
    (RFC 9110 section 8.4: "gzip, gzip" is gzip applied twice); ``identity`` and empty
    members are dropped.

    Args:
        value: the header value.

    Returns:
        The codings, lower-cased, first applied first.

    Raises:
        _AttemptFailed: ``bad_content_encoding`` -- a coding other than gzip or deflate (the
            ones asked for), or more than :data:`MAX_CODINGS` of them.
    """
    codings = [c.strip().lower() for c in value.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    for coding in codings:
        if coding not in _WBITS:
            what = repr(coding) if coding == value.strip().lower() \
                else f"{coding!r} (in {value.strip()!r})"
            raise _AttemptFailed("bad_content_encoding", f"body does not match its "
                                 f"Content-Encoding: {what} is not gzip or deflate (the "
                                 "encodings asked for)")
    if len(codings) > MAX_CODINGS:
        raise _AttemptFailed("bad_content_encoding", f"Content-Encoding {value.strip()[:80]!r} "
                             f"stacks {len(codings)} codings; at most {MAX_CODINGS} are decoded")
    return codings


class AgentClient:
    """Async client for one agent endpoint; use as ``async with AgentClient(...) as client``.

    Args:
        endpoint: the agent's URL (POST target).
        headers: extra request headers (e.g. ``{"Authorization": "Bearer ..."}``).
        timeout_s: deadline of one attempt, seconds (connect + send + the whole body); also the
            longest wait a ``Retry-After`` may ask for.
        retries: extra attempts after a timeout, connection error, 5xx or 429.
        backoff_s: first backoff, seconds; doubles on each retry (plus jitter).
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
        max_body_bytes: the largest reply read, bytes after content decoding.
        jitter_seed: seed of the retry jitter (``None``: from the OS, so that workers of
            separate processes spread their retries).
        transport: an httpx transport (tests); when given, one shared client is used.
    """

    def __init__(self, endpoint: str, *, headers: dict[str, str] | None = None,
                 timeout_s: float = 30.0, retries: int = 2, backoff_s: float = 0.25,
                 format_hint: ResponseFormat | None = None, max_connections: int = 32,
                 max_body_bytes: int = MAX_BODY_BYTES, jitter_seed: int | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        if retries < 0 or timeout_s <= 0 or backoff_s < 0 or max_body_bytes < 1:
            raise ValueError("expected retries >= 0, timeout_s > 0, backoff_s >= 0 and "
                             f"max_body_bytes >= 1, received {retries}, {timeout_s}, "
                             f"{backoff_s}, {max_body_bytes}")
        self.endpoint = endpoint
        # parsed once, not on every request (~10 us each); a URL httpx cannot parse stays a
        # string, and the request reports it as unsupported_url
        self._url: httpx.URL | str
        try:
            self._url = httpx.URL(endpoint)
        except httpx.InvalidURL:
            self._url = endpoint
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.format_hint = format_hint
        self.max_body_bytes = max_body_bytes
        self._random = random.Random(jitter_seed)
        # only encodings _Inflater decodes under the cap (httpx would add br/zstd if installed)
        self._headers = {"accept": "application/json, text/event-stream, text/plain",
                         "accept-encoding": "gzip, deflate", **(headers or {})}
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

    async def _read(self, response: httpx.Response, progress: _Progress) -> bytes:
        """The body, decoded (gzip/deflate, each stacked layer in reverse order of
        application) under the size cap: no layer ever produces more than the cap allows (an
        outer layer, holding compressed data, gets 1/16 more), so a small compressed bomb --
        nested in several layers too -- costs at most the cap in memory and stops at once
        (httpx would inflate each received chunk whole)."""
        status = response.status_code
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            raise _AttemptFailed("too_large", f"reply of {int(declared)} bytes (Content-Length) "
                                              f"is over the {self.max_body_bytes}-byte cap; not "
                                              "read", status)
        progress.declared = int(declared) if declared.isdigit() else None
        codings = _content_codings(response.headers.get("content-encoding", ""))
        # outermost layer first; an outer layer's output is the next layer's compressed input
        outer_cap = self.max_body_bytes + self.max_body_bytes // 16 + 1024
        layers = [_Inflater(c, self.max_body_bytes if i == 0 else outer_cap)
                  for i, c in reversed(list(enumerate(codings)))]
        body = bytearray()
        async for raw in response.aiter_raw():
            progress.received += len(raw)
            data = raw
            for layer in layers:
                data = layer.feed(data)
                if layer.over and layer is not layers[-1]:
                    raise _AttemptFailed("too_large", f"a {layer.encoding} layer of the reply "
                                                      f"decoded to over {layer.cap} bytes; "
                                                      "reading stopped", status)
            body += data
            if len(body) > self.max_body_bytes:
                raise _AttemptFailed("too_large", f"reply over the {self.max_body_bytes}-byte "
                                                  "cap; reading stopped", status)
        for layer in layers:
            layer.finish()
        return bytes(body)

    async def _exchange(self, client: httpx.AsyncClient, payload: dict[str, object],
                        on_sent: Callable[[], None] | None, progress: _Progress
                        ) -> tuple[bytes, httpx.Headers, int]:
        # same request as client.post(json=payload): headers, Content-Length, JSON encoding
        request = client.build_request("POST", self._url, json=payload)
        if on_sent is not None:
            request.stream = _SignalledBody(request.content, on_sent)
        async with asyncio.timeout(self.timeout_s):
            response = await client.send(request, stream=True)
            progress.headers = True
            try:
                body = await self._read(response, progress)
            finally:
                await response.aclose()
        return body, response.headers, response.status_code

    async def _attempt(self, client: httpx.AsyncClient, payload: dict[str, object],
                       on_sent: Callable[[], None] | None
                       ) -> tuple[bytes, str | None, int, str | None]:
        progress = _Progress()
        try:
            body, headers, status = await self._exchange(client, payload, on_sent, progress)
        except _AttemptFailed:
            raise
        except TimeoutError as exc:
            # a body that stops part-way on a connection left open looks like this too: the
            # agent never closed it, so only the deadline can end the wait
            stalled = progress.cut_short(f"nothing more for the rest of the {self.timeout_s:g} s "
                                         "timeout (the connection stayed open)")
            raise _AttemptFailed("timeout", stalled or f"no complete answer within "
                                                       f"{self.timeout_s:g} s",
                                 retryable=True) from exc
        except httpx.TimeoutException as exc:
            raise _AttemptFailed("timeout", f"{type(exc).__name__} after {self.timeout_s:g} s",
                                 retryable=True) from exc
        except httpx.ConnectError as exc:
            raise _AttemptFailed("unreachable", f"ConnectError: {redact_text(str(exc))}",
                                 retryable=True) from exc
        except (httpx.ReadError, httpx.WriteError, httpx.CloseError,
                httpx.RemoteProtocolError) as exc:
            # a truncated body: fewer bytes than declared (or an unfinished chunked body),
            # then the agent closed the connection -- fully or only its sending half
            cut = progress.cut_short("the agent closed the connection")
            raise _AttemptFailed("connection_lost", cut or
                                 f"{type(exc).__name__}: {redact_text(str(exc))}",
                                 retryable=True) from exc
        except httpx.UnsupportedProtocol as exc:
            raise _AttemptFailed("unsupported_url", f"{self.endpoint!r}: expected an http:// "
                                                    f"or https:// URL ({exc})") from exc
        except httpx.InvalidURL as exc:
            raise _AttemptFailed("unsupported_url", f"{self.endpoint!r}: {exc}") from exc
        except httpx.DecodingError as exc:
            raise _AttemptFailed("bad_content_encoding", f"body does not match its "
                                                         f"Content-Encoding: {exc}") from exc
        except (httpx.HTTPError, httpx.StreamError, OSError) as exc:
            raise _AttemptFailed("transport_error",
                                 f"{type(exc).__name__}: {redact_text(str(exc))}") from exc
        ctype = headers.get("content-type")
        if status < 300:
            return body, ctype, status, headers.get(CONTEXT_HEADER)
        detail = _detail(body, ctype)
        html = _is_html(body, ctype)
        if status == 429 or status >= 500:
            wait = retry_after_seconds(headers.get("retry-after")) \
                if status in (429, 503) else None
            # a rate limit stays one even when a proxy words it as a page
            kind: FailureKind = "rate_limited" if status == 429 else (
                "html_page" if html else "http_5xx")
            if wait is not None and wait > self.timeout_s:
                raise _AttemptFailed(kind, f"HTTP {status}: asked to retry after {wait:g} s, "
                                           f"longer than the {self.timeout_s:g} s timeout; not "
                                           f"retried: {detail}", status)
            raise _AttemptFailed(kind, f"HTTP {status}: {detail}", status, retryable=True,
                                 retry_after=wait)
        if html:
            raise _AttemptFailed("html_page", f"HTTP {status}: {detail}", status)
        if status < 400:
            where = headers.get("location")
            raise _AttemptFailed("redirect", f"HTTP {status} to {where!r}: redirects are not "
                                             "followed; give the final URL", status)
        raise _AttemptFailed("http_4xx", f"HTTP {status}: {detail}", status)

    def _wait(self, state: RetryCallState) -> float:
        failed = state.outcome.exception() if state.outcome else None
        if isinstance(failed, _AttemptFailed) and failed.retry_after is not None:
            # honour the agent's own wait; spread the workers a little past it
            return failed.retry_after + self._random.uniform(0, min(1.0, 0.1 *
                                                                    failed.retry_after))
        base = self.backoff_s * 2.0 ** (state.attempt_number - 1)
        return base + self._random.uniform(0, base)

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
            The extracted answer (never empty) with its format, latency and attempt count.

        Raises:
            AgentCallError: whatever kept the agent from answering, after the retries that
                kind allows (``failure.kind`` says which; see the module docstring). No other
                exception escapes for an HTTP or transport problem.
        """
        payload: dict[str, object] = {"messages": [{"role": "user", "content": text}]}
        client = self._client_for(slot)
        start = time.perf_counter()
        attempts = 0
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.retries + 1), wait=self._wait, reraise=True,
            retry=retry_if_exception(lambda e: isinstance(e, _AttemptFailed) and e.retryable))
        try:
            async for attempt in retrying:
                with attempt:
                    attempts += 1
                    body, ctype, status, ctx = await self._attempt(client, payload, on_sent)
        except _AttemptFailed as exc:
            raise AgentCallError(AgentFailure(kind=exc.kind, message=exc.message,
                                              http_status=exc.status, attempts=attempts),
                                 (time.perf_counter() - start) * 1000) from exc
        elapsed = (time.perf_counter() - start) * 1000
        try:
            found = read_reply(body, ctype, hint=self.format_hint)
        except MalformedResponse as exc:
            raise AgentCallError(AgentFailure(kind=exc.kind, message=exc.message,
                                              http_status=status,
                                              attempts=attempts), elapsed) from exc
        except (RecursionError, MemoryError, ValueError, TypeError, LookupError) as exc:
            # a reply no reader anticipated fails its own case, never the run
            raise AgentCallError(AgentFailure(
                kind="malformed_response",
                message=f"unreadable reply: {type(exc).__name__}: "
                        f"{redact_text(str(exc))[:200]}",
                http_status=status, attempts=attempts), elapsed) from exc
        return AgentReply(found.text, found.format, elapsed, attempts, status,
                          context_ids(ctx), found.tool_calls, found.beside_text)


def _is_html(body: bytes, content_type: str | None) -> bool:
    try:
        text = decode_body(body[:4096], content_type)
    except MalformedResponse:
        text = body[:4096].decode("latin-1")
    return looks_like_html(text, content_type)


def _detail(body: bytes, content_type: str | None) -> str:
    """The start of an error body, one line (an HTML page: its title, if any)."""
    text = body[:4096].decode("utf-8", errors="replace")
    if _is_html(body, content_type):
        lower = text.lower()
        start, end = lower.find("<title>"), lower.find("</title>")
        title = " ".join(text[start + 7:end].split()) if 0 <= start < end else ""
        return f"an HTML page{f' ({title!r})' if title else ''}, not an answer"
    return " ".join(text.split())[:200]
