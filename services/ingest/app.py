"""HTTP ingest: ``POST /v1/events`` validates feedback events and produces them to Kafka.

Contract (bad input: ``docs/operations.md#bounded-work-per-request``):

* body: one event object or a JSON array of them, ``Content-Type: application/json``
  (``415`` otherwise), at most ``settings.ingest.max_body_bytes`` bytes and
  ``settings.ingest.max_records`` records (``413``;
  ``docs/operations.md#bounded-work-per-request``);
  it is validated in a worker thread, and an error answer lists at most
  ``settings.ingest.max_errors`` records (``omitted`` counts the rest);
* every record is validated (``evalloop.events.parse_events``); if ANY record is bad the answer
  is ``422 {"message", "errors": [{"index", "event_id", "reason", "problems": [{"field",
  "expected", "received"}]}]}`` naming every bad record, and nothing of the batch is published;
* text holding U+0000 is refused (``invalid_fields``: PostgreSQL cannot store it; lone
  UTF-16 surrogates, the other unstorable text, fail validation already);
* an ``event_id`` repeated within the batch is accepted once when the copies are identical
  (``received_at`` aside), and is a ``conflicting_duplicate`` error when they differ;
* valid batches get ``received_at`` = now (UTC), are published to ``feedback.events.v1`` keyed
  by ``agent_id``, and answered ``202 {"accepted": [event ids]}`` once the bus acknowledged them
  (Kafka: ``acks=all``). ``503`` when the bus refused: re-send the batch; the recorder stores
  each ``event_id`` once, so a retry cannot double-count.

Every request needs an API key allowed to send the batch's agents, within the key's rate
(``services/ingest/auth.py``; ``docs/security.md#api-keys``): ``401`` / ``403`` / ``429``.
``X-Forwarded-For`` names the client only when the socket's peer is one of
``ingest.trusted_proxies`` (none by default; ``docs/security.md#client-address``).
With ``ingest.redact_pii`` on, e-mail addresses, phone numbers and similar identifiers in the
events' text are masked before publishing (``docs/security.md#redaction``).

Producers may also write to the topic directly; the recorder validates again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from evalloop.adapters.bus import Bus
from evalloop.adapters.event_store import check_storable
from evalloop.errors import BusError, FieldProblem, InvalidBatch, InvalidEvent
from evalloop.events import BatchLimits, FeedbackEvent, dump_event, parse_events, utc_now
from evalloop.runtime import HealthProvider, health_answer, topics_for
from evalloop.settings import Settings
from services.ingest.auth import IngestGuard
from services.ingest.redaction import redact_events

__all__ = ["build_http_app", "decode_body", "dedupe_batch"]

log = logging.getLogger(__name__)
_REJECTED = "nothing of this batch was published: fix the listed records and send it again"


def _error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": code, "message": message, **extra}, status_code=status)


def dedupe_batch(events: list[FeedbackEvent]) -> list[FeedbackEvent]:
    """Drop identical repeats of an ``event_id`` (first kept), ``received_at`` ignored.

    Raises:
        InvalidBatch: an ``event_id`` is repeated with different content; one
            ``conflicting_duplicate`` error per later copy, naming its index and the fields
            that differ from the first copy.
    """
    first: dict[Any, tuple[int, dict[str, Any]]] = {}
    out: list[FeedbackEvent] = []
    errors: list[InvalidEvent] = []
    for index, event in enumerate(events):
        content = event.model_dump(mode="json", exclude={"received_at"})
        seen = first.get(event.event_id)
        if seen is None:
            first[event.event_id] = (index, content)
            out.append(event)
            continue
        at, kept = seen
        if content != kept:
            fields = sorted(k for k in kept | content if kept.get(k) != content.get(k))
            errors.append(
                InvalidEvent(
                    "conflicting_duplicate",
                    [
                        FieldProblem(
                            f,
                            f"{json.dumps(kept.get(f))} (as in record {at}, same event_id)",
                            json.dumps(content.get(f)),
                        )
                        for f in fields
                    ],
                    event_id=str(event.event_id),
                    index=index,
                )
            )
    if errors:
        raise InvalidBatch(errors)
    return out


def _check_storable(body: bytes, max_errors: int) -> None:
    """Refuse records whose text holds U+0000 (PostgreSQL cannot store it; see
    ``evalloop.adapters.event_store.check_storable``), naming each by index (the first
    ``max_errors``; the others are counted).

    Raises:
        InvalidBatch: one ``invalid_fields`` error per such record.
    """
    if b"\\u0000" not in body:  # the only way JSON text can spell NUL
        return
    data = json.loads(body)
    errors: list[InvalidEvent] = []
    omitted = 0
    for index, record in enumerate(data if isinstance(data, list) else [data]):
        try:
            check_storable(json.dumps(record), index=index)
        except InvalidEvent as exc:
            if len(errors) >= max_errors:
                omitted += 1
                continue
            exc.event_id = str(record.get("event_id"))
            errors.append(exc)
    if errors:
        raise InvalidBatch(errors, omitted=omitted)


def decode_body(body: bytes, limits: BatchLimits) -> list[FeedbackEvent]:
    """Validate a request body: parse (bounded by ``limits``), dedupe, refuse unstorable text.

    CPU-bound (up to a few hundred ms for a full body): the app runs it in a worker thread,
    off the event loop (``docs/operations.md#bounded-work-per-request``).

    Raises:
        InvalidEvent: the body as a whole is refused (too large, too many records, not JSON).
        InvalidBatch: records are invalid (at most ``limits.max_errors`` described).
    """
    events = dedupe_batch(parse_events(body, limits))
    _check_storable(body, limits.max_errors)
    return events


async def _read_body(request: Request, limit: int) -> bytes | None:
    """The body, or ``None`` as soon as it exceeds ``limit`` bytes (never buffers more)."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


def build_http_app(
    settings: Settings,
    bus: Bus | None = None,
    *,
    pool: asyncpg.Pool | None = None,
    health: HealthProvider | None = None,
) -> Starlette:
    """The ingest ASGI app.

    Args:
        settings: ``ingest`` limits, ``kafka`` connection and topic prefix.
        bus: publish through this bus (the demo's ``InProcessBus``, tests); ``None`` = a
            ``KafkaBus`` over a FastStream ``KafkaBroker`` connected in the app's lifespan.
        pool: PostgreSQL pool holding the API keys; ``None`` = one opened (and migrated) from
            ``settings.postgres`` in the app's lifespan.
        health: the health of the other services of the process (``evalloop up``), reported
            by ``/healthz`` and ``/readyz`` (``docs/operations.md#supervision``).

    Returns:
        A Starlette app serving ``POST /v1/events``, ``GET /healthz`` and ``GET /readyz``.
    """
    topic = topics_for(settings).feedback_events
    limits = settings.ingest.limits()
    limit = limits.max_body_bytes
    guard = IngestGuard(settings.ingest, pool)

    async def post_events(request: Request) -> JSONResponse:
        key = await guard.admit(request)
        if isinstance(key, JSONResponse):
            return key
        ctype = request.headers.get("content-type", "")
        media = ctype.split(";")[0].strip().lower()
        if media != "application/json" and not media.endswith("+json"):
            return _error(
                415, "unsupported_media_type",
                f"expected Content-Type application/json, received {ctype or 'none'!r}",
            )
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return _error(
                413, "payload_too_large",
                f"expected a body of at most {limit} bytes, received {declared} bytes",
            )
        try:
            async with asyncio.timeout(settings.ingest.body_timeout_s):
                body = await _read_body(request, limit)
        except TimeoutError:
            return _error(
                408, "request_timeout",
                f"expected the whole body within {settings.ingest.body_timeout_s:g} s, "
                "received part of it; send it again, faster",
            )
        if body is None:
            return _error(
                413, "payload_too_large",
                f"expected a body of at most {limit} bytes, received more",
            )
        try:
            events = await asyncio.to_thread(decode_body, body, limits)
        except InvalidBatch as exc:
            shown = (f" ({len(exc.errors)} listed, {exc.omitted} more not)"
                     if exc.omitted else "")
            return _error(422, "invalid_events",
                          f"{len(exc.errors) + exc.omitted} invalid record(s){shown}; "
                          + _REJECTED, errors=[e.as_dict() for e in exc.errors],
                          omitted=exc.omitted)
        except InvalidEvent as exc:
            status = 413 if exc.reason in ("too_many_records", "oversized") and exc.index is None \
                else 422
            code = "payload_too_large" if status == 413 else "invalid_body"
            return _error(status, code, f"{exc}; " + _REJECTED, errors=[exc.as_dict()])
        if not events:
            return _error(
                422, "empty_batch", "expected one event object or a non-empty array, received []",
                errors=[],
            )
        refused = guard.refuse_agents(key, events)
        if refused is not None:
            return refused
        if settings.ingest.redact_pii:
            events = redact_events(events)
        now = utc_now()
        stamped = [e.model_copy(update={"received_at": now}) for e in events]
        deadline = settings.ingest.publish_timeout_s
        try:
            # bounded: with the broker down the producer would wait for it for a long time
            # (docs/operations.md#faults-measured); a batch timed out here may still be
            # delivered, and its retry is then an identical duplicate the recorder drops
            async with asyncio.timeout(deadline):
                await request.app.state.bus.publish_batch(
                    topic, [(e.agent_id, dump_event(e)) for e in stamped]
                )
        except (BusError, TimeoutError) as exc:
            reason = (f"the broker did not acknowledge them within {deadline:g} s"
                      if isinstance(exc, TimeoutError) else str(exc))
            log.warning("ingest: publishing %d events failed: %s", len(stamped), reason)
            return _error(
                503, "bus_unavailable",
                f"the events could not be published ({reason}); send the batch again: an "
                "event_id already stored is not counted twice",
            )
        return JSONResponse({"accepted": [str(e.event_id) for e in stamped]}, status_code=202)

    def _answer(request: Request, readiness: bool) -> JSONResponse:
        own_ready = request.app.state.bus is not None
        if health is None and not readiness:
            return JSONResponse({"status": "ok", "topic": topic})
        code, body = health_answer(own_ready, health() if health else [], readiness=readiness)
        return JSONResponse({**body, "topic": topic}, status_code=code)

    async def healthz(request: Request) -> JSONResponse:
        return _answer(request, readiness=False)

    async def readyz(request: Request) -> JSONResponse:
        return _answer(request, readiness=True)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if guard.pool is None:
                opened = guard.pool = await _key_pool(settings)
                stack.callback(setattr, guard, "pool", None)  # a restarted app opens anew
                stack.push_async_callback(opened.close)
            async with _bus_lifespan(app):
                yield

    @contextlib.asynccontextmanager
    async def _bus_lifespan(app: Starlette) -> AsyncIterator[None]:
        if bus is not None:
            yield
            return
        from evalloop.adapters.kafka import KafkaBus, build_producer, ensure_topics

        await ensure_topics(settings.kafka, topics_for(settings))
        producer = build_producer(settings.kafka)
        await producer.start()
        app.state.bus = KafkaBus(producer=producer)
        try:
            yield
        finally:
            app.state.bus = None
            await producer.stop()

    # The client address the failed-auth limit counts (docs/security.md#client-address): the
    # socket's peer, or, when the peer is a trusted proxy, the nearest address in
    # X-Forwarded-For that is not one (uvicorn's middleware, read from the right).
    trusted = settings.ingest.trusted_proxies
    app = Starlette(
        routes=[
            Route("/v1/events", post_events, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
        ],
        middleware=[Middleware(ProxyHeadersMiddleware, trusted_hosts=trusted)] if trusted
        else [],
        lifespan=lifespan,
    )
    app.state.bus = bus
    return app


async def _key_pool(settings: Settings) -> asyncpg.Pool:
    """A small pool on the database holding ``api_keys`` (migrated first, like every service).

    Raises:
        StorageError: PostgreSQL is unreachable or a migration failed.
    """
    from evalloop.adapters.postgres import connect_pool, migrate, resolve_dsn

    dsn = resolve_dsn(settings.postgres)
    await migrate(dsn)
    return await connect_pool(dsn, min_size=1, max_size=4)
