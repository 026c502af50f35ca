"""Running services: one ``Service`` definition, two transports (Kafka via FastStream, in-process).

A service declares what it consumes and publishes as class attributes and implements batch
handlers ``async def on_<event>(self, records: list[Record]) -> None``. ``build_faststream_app``
turns it into a FastStream app (one per deployable, ``evalloop up``/compose); ``mount_in_process``
subscribes the same handler methods to an :class:`~evalloop.adapters.bus.InProcessBus`
(``evalloop demo``). Resources (pool, bus) are built in the app's lifespan and injected.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import asyncpg
from pydantic import BaseModel

from evalloop.adapters.bus import Bus, InProcessBus, Record
from evalloop.errors import BusError, StorageError
from evalloop.settings import Settings
from evalloop.topics import Topics

if TYPE_CHECKING:
    from evalloop.adapters.embedder import Embedder

__all__ = [
    "ConsumerHealth",
    "Consumes",
    "Deps",
    "HealthProvider",
    "LoopHealth",
    "Service",
    "build_faststream_app",
    "health_answer",
    "mount_in_process",
    "topics_for",
]

_log = logging.getLogger("evalloop.runtime")


@dataclass(frozen=True, slots=True)
class Consumes:
    """One subscription: ``topic`` is a :class:`Topics` attribute name (e.g.
    ``"feedback_events"``), ``handler`` the service method's name, ``payload`` the model shown
    in the AsyncAPI document, ``max_records`` the batch size."""

    topic: str
    group: str
    handler: str
    payload: type[BaseModel] | Any
    max_records: int = 1000


@dataclass(frozen=True, slots=True)
class Publishes:
    """A topic the service publishes to (``topic``: a :class:`Topics` attribute name)."""

    topic: str
    payload: type[BaseModel] | Any
    description: str = ""


@dataclass
class Deps:
    """What a service gets injected: settings, the PostgreSQL pool, the bus and topic names.

    Attributes:
        settings: every section of the deployment's settings.
        pool: the asyncpg pool on a migrated database.
        bus: where the service publishes.
        topics: the topic names (prefix applied).
        extras: other collaborators by name (for extensions; ``"clock"`` and ``"embedder"``
            given here are moved to their typed fields).
        clock: the UTC wall clock (``() -> datetime``), replaced in tests and replays;
            ``None`` = the real one.
        embedder: one loaded embedding model shared by the process's consumers, or ``None``
            (triage then builds its own from settings).
    """

    settings: Settings
    pool: asyncpg.Pool
    bus: Bus
    topics: Topics
    extras: dict[str, Any] = field(default_factory=dict)
    clock: Callable[[], datetime] | None = None
    embedder: Embedder | None = None

    def __post_init__(self) -> None:
        """Take ``clock`` / ``embedder`` given in ``extras`` (the older spelling) into their
        typed fields, checked.

        Raises:
            TypeError: ``extras["clock"]`` is not callable, or ``extras["embedder"]`` has no
                ``encode`` method.
        """
        clock = self.extras.get("clock")
        if clock is not None and self.clock is None:
            if not callable(clock):
                raise TypeError(f"Deps.extras['clock']: expected a () -> datetime callable, "
                                f"received {type(clock).__name__}")
            self.clock = clock
        embedder = self.extras.get("embedder")
        if embedder is not None and self.embedder is None:
            from evalloop.adapters.embedder import Embedder

            if not isinstance(embedder, Embedder):
                raise TypeError(f"Deps.extras['embedder']: expected an Embedder, received "
                                f"{type(embedder).__name__}")
            self.embedder = embedder


@dataclass
class LoopHealth:
    """The state of one supervised background loop (``docs/operations.md#supervision``).

    Attributes:
        name: ``<service>.<loop>``, e.g. ``"evaluator._worker[0]"``.
        state: ``running``; ``restarting`` (it raised; waiting out its backoff);
            ``finished`` (returned); ``stopped`` (cancelled by ``stop``).
        restarts: times it raised and was started again.
        last_error: ``"<ExceptionType>: <message>"`` of the last failure, or ``None``.
        last_error_at: when that happened (UTC), or ``None``.
    """

    name: str
    state: Literal["running", "restarting", "finished", "stopped"] = "running"
    restarts: int = 0
    last_error: str | None = None
    last_error_at: datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (times as ISO-8601 UTC)."""
        return {
            "name": self.name, "state": self.state, "restarts": self.restarts,
            "last_error": self.last_error,
            "last_error_at": self.last_error_at.isoformat() if self.last_error_at else None,
        }


#: Namespace of the letter ids of batches dead-lettered for a failing handler. NEVER change it:
#: a redelivered batch would no longer find its stored letters.
_HANDLER_LETTER_NAMESPACE = uuid.UUID("a3c5e0d2-6f1b-4b8e-9d57-2c4e8f0b71a6")


def handler_letter_id(group: str, record: Record) -> uuid.UUID:
    """The identity of the dead letter of ``record`` when consumer group ``group``'s handler
    kept failing on it: UUIDv5 of the group and the record's topic, partition and offset, so
    every redelivery of the same record to the same group gives the same letter
    (``docs/operations.md#a-handler-that-keeps-failing``)."""
    return uuid.uuid5(_HANDLER_LETTER_NAMESPACE,
                      f"{group}\x1f{record.topic}\x1f{record.partition}\x1f{record.offset}")


@dataclass
class ConsumerHealth:
    """The state of one subscription's handler
    (``docs/operations.md#a-handler-that-keeps-failing``).

    Attributes:
        topic: the topic consumed (prefix applied).
        group: the consumer group.
        failures: deliveries in a row of the current batch that raised (0: healthy).
        last_error: ``"<ExceptionType>: <message>"`` of the last failure, or ``None``.
        batches_dead_lettered: batches whose records were dead-lettered (reason
            ``handler_failed``) since the process started.
        starts: ``(partition, first offset)`` of each partition of the failing batch (how a
            redelivery of the same batch is recognised; Kafka rewinds to these offsets).
    """

    topic: str
    group: str
    failures: int = 0
    last_error: str | None = None
    batches_dead_lettered: int = 0
    starts: frozenset[tuple[int, int]] = frozenset()

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (without ``starts``)."""
        return {"topic": self.topic, "group": self.group,
                "state": "failing" if self.failures else "ok", "failures": self.failures,
                "last_error": self.last_error,
                "batches_dead_lettered": self.batches_dead_lettered}


class Service:
    """Base class of the services. Subclasses set ``name``, ``consumes``, ``publishes`` and
    implement the handler methods; ``start``/``stop`` run background work (schedules).

    Background loops are supervised (``docs/operations.md#supervision``): one that raises is
    logged with its context and started again after a backoff (``RESTART_BACKOFF_S``,
    doubling up to ``RESTART_BACKOFF_MAX_S``), never left dead in silence; :meth:`health`
    reports every loop.
    """

    name: ClassVar[str] = "service"
    consumes: ClassVar[tuple[Consumes, ...]] = ()
    publishes: ClassVar[tuple[Publishes, ...]] = ()
    #: First restart delay of a failed background loop, seconds (doubles per failure in a row).
    RESTART_BACKOFF_S: ClassVar[float] = 1.0
    #: Longest restart delay, seconds.
    RESTART_BACKOFF_MAX_S: ClassVar[float] = 60.0
    #: A loop that ran this long since its last (re)start has its backoff reset, seconds.
    HEALTHY_AFTER_S: ClassVar[float] = 60.0

    def __init__(self, deps: Deps) -> None:
        """Keep the injected dependencies."""
        self.deps = deps
        self._background: asyncio.Task[None] | None = None
        self.loops: list[LoopHealth] = []
        self.consumers: dict[tuple[str, str], ConsumerHealth] = {}
        self.started = False

    async def start(self) -> None:
        """Start background work (none by default; see :meth:`start_background`)."""

    async def stop(self) -> None:
        """Stop background work (cancels what :meth:`start_background` started)."""
        await self.stop_background()

    def start_background(
        self, *loops: Callable[[], Coroutine[Any, Any, None]], name: str
    ) -> None:
        """Run each of ``loops`` (long-running coroutine functions) supervised, until
        :meth:`stop_background`: one that raises is logged and restarted with backoff; the
        others go on."""
        counts: dict[str, int] = {}
        entries: list[tuple[Callable[[], Coroutine[Any, Any, None]], LoopHealth]] = []
        for loop in loops:
            base = getattr(loop, "__name__", "loop")
            n = counts.get(base, 0)
            counts[base] = n + 1
            label = f"{self.name}.{base}" + (f"[{n}]" if loops.count(loop) > 1 else "")
            entries.append((loop, LoopHealth(label)))
        self.loops = [h for _, h in entries]

        async def run() -> None:
            async with asyncio.TaskGroup() as tg:
                for loop, health in entries:
                    tg.create_task(self._supervise(loop, health), name=health.name)

        self._background = asyncio.create_task(run(), name=name)
        self.started = True

    async def _supervise(
        self, loop: Callable[[], Coroutine[Any, Any, None]], health: LoopHealth
    ) -> None:
        backoff = self.RESTART_BACKOFF_S
        while True:
            began = time.monotonic()
            health.state = "running"
            try:
                await loop()
            except asyncio.CancelledError:
                health.state = "stopped"
                raise
            except Exception as exc:
                if time.monotonic() - began >= self.HEALTHY_AFTER_S:
                    backoff = self.RESTART_BACKOFF_S
                health.restarts += 1
                health.last_error = f"{type(exc).__name__}: {exc}"
                health.last_error_at = datetime.now(UTC)
                health.state = "restarting"
                _log.exception(
                    "%s: background loop failed (%s); restart %d in %.2f s",
                    health.name, health.last_error, health.restarts, backoff,
                )
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.RESTART_BACKOFF_MAX_S)
                continue
            health.state = "finished"
            return

    async def stop_background(self) -> None:
        """Cancel the loops of :meth:`start_background` and wait until they have finished."""
        if self._background is not None:
            self._background.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._background
            self._background = None
        for h in self.loops:
            if h.state != "finished":
                h.state = "stopped"
        self.started = False

    def health(self) -> dict[str, Any]:
        """The service's health for ``/healthz`` and ``/readyz``
        (``docs/operations.md#supervision``).

        Returns:
            ``{"service", "status", "ready", "loops": [LoopHealth.as_dict()...],
            "consumers": [ConsumerHealth.as_dict()...]}``; ``status`` is ``"ok"`` (every loop
            running or finished, every handler succeeding), ``"degraded"`` (a loop is waiting
            to restart after a failure, or a handler failed on the batch it is retrying) or
            ``"stopped"``; ``ready`` is ``status == "ok"``.
        """
        states = {h.state for h in self.loops}
        if self.loops and not self.started:
            status = "stopped"
        elif "restarting" in states or any(c.failures for c in self.consumers.values()):
            status = "degraded"
        else:
            status = "ok"
        return {"service": self.name, "status": status, "ready": status == "ok",
                "loops": [h.as_dict() for h in self.loops],
                "consumers": [c.as_dict() for c in self.consumers.values()]}

    def guarded_handler(self, c: Consumes) -> Callable[[list[Record]], Any]:
        """The handler of ``c`` wrapped so that a batch it keeps failing on cannot stall the
        consumer (``docs/operations.md#a-handler-that-keeps-failing``).

        A delivery that raises is logged, counted in :attr:`consumers` (so ``/readyz``
        answers 503 naming the service, topic and error), and re-raised after
        ``settings.consumer.handler_retry_backoff_s``: the bus delivers the batch again. The
        ``settings.consumer.max_handler_failures``-th failure in a row of the same batch
        (same first offset of a partition) dead-letters every record of the batch instead
        (table ``dead_letters`` and ``feedback.events.dlq.v1``, reason ``handler_failed``, the
        exception in the detail; idempotent by :func:`handler_letter_id`) and returns, so the
        offsets are committed and the consumer goes on. A success clears the failure.
        Infrastructure failures (``StorageError``, ``BusError``, ``OSError``: PostgreSQL or
        the broker unreachable) say nothing about the batch: they are retried the same way,
        shown the same way, but never dead-letter it.

        Raises:
            Exception: what the handler raised, while the batch has failures left; or the
                ``StorageError``/``BusError`` of dead-lettering it (the batch is then retried).
        """
        handler = self.handler(c)
        topic = getattr(self.deps.topics, c.topic)
        state = self.consumers.setdefault((c.group, topic), ConsumerHealth(topic, c.group))
        limits = self.deps.settings.consumer

        async def guarded(records: list[Record]) -> None:
            try:
                await handler(records)
            except Exception as exc:
                starts: dict[int, int] = {}
                for r in records:
                    starts[r.partition] = min(starts.get(r.partition, r.offset), r.offset)
                here = frozenset(starts.items())
                state.failures = state.failures + 1 if state.starts & here else 1
                state.starts = here
                state.last_error = f"{type(exc).__name__}: {exc}"
                infrastructure = isinstance(exc, StorageError | BusError | OSError)
                if infrastructure or state.failures < limits.max_handler_failures:
                    _log.exception(
                        "%s: handler %s failed on %d records of %s (group %s, from %s), "
                        "failure %d of %d%s; redelivering in %.2f s",
                        self.name, c.handler, len(records), topic, c.group, sorted(here),
                        state.failures, limits.max_handler_failures,
                        " (infrastructure: never dead-lettered)" if infrastructure else "",
                        limits.handler_retry_backoff_s,
                    )
                    await asyncio.sleep(limits.handler_retry_backoff_s)
                    raise
                _log.exception(
                    "%s: handler %s failed %d times in a row on %d records of %s (group %s, "
                    "from %s); dead-lettering them as handler_failed and going on",
                    self.name, c.handler, state.failures, len(records), topic, c.group,
                    sorted(here),
                )
                await self._dead_letter_batch(c.group, records, exc, state.failures)
                state.batches_dead_lettered += 1
            state.failures, state.last_error, state.starts = 0, None, frozenset()

        guarded.__doc__ = handler.__doc__
        return guarded

    async def _dead_letter_batch(
        self, group: str, records: list[Record], exc: Exception, attempts: int
    ) -> None:
        from evalloop.adapters.dead_letter_store import (
            LetterRow,
            dlq_headers,
            insert_letters,
            publish_unpublished,
        )

        detail = {"reason": "handler_failed", "service": self.name, "group": group,
                  "error_type": type(exc).__name__, "error": str(exc), "attempts": attempts}
        rows = [
            LetterRow(letter_id=handler_letter_id(group, r), event_id=None,
                      reason="handler_failed", detail=detail, key=r.key, value=r.value,
                      source_topic=r.topic, source_partition=r.partition, source_offset=r.offset)
            for r in records
        ]
        async with self.deps.pool.acquire() as conn, conn.transaction():
            await insert_letters(conn, rows)
        bus, dlq = self.deps.bus, self.deps.topics.feedback_dlq

        async def publish(row: LetterRow) -> None:
            await bus.publish(dlq, row.value, key=row.key,
                              headers=dlq_headers(row, row.created_at or datetime.now(UTC)))

        await publish_unpublished(self.deps.pool, publish)

    def handler(self, c: Consumes) -> Callable[[list[Record]], Any]:
        """The bound handler method named by ``c``."""
        return getattr(self, c.handler)  # type: ignore[no-any-return]


#: Health of the services of one process: one :meth:`Service.health` dict per service.
HealthProvider = Callable[[], list[dict[str, Any]]]


def health_answer(
    own_ready: bool, services: list[dict[str, Any]], *, readiness: bool
) -> tuple[int, dict[str, Any]]:
    """The HTTP status and body of ``/healthz`` (``readiness=False``) or ``/readyz``
    (``docs/operations.md#supervision``).

    Args:
        own_ready: whether the answering app itself is ready (ingest: its bus is connected).
        services: :meth:`Service.health` of every other service of the process.
        readiness: ``/readyz`` semantics: 503 unless the app and every service are ready.
            ``/healthz`` answers 200 while the process serves (a service whose loop is waiting
            to restart shows as ``degraded``), and 503 only when a service has stopped.

    Returns:
        ``(status_code, {"status": "ok"|"degraded"|"stopped", "services": [...]})``.
    """
    statuses = {s["status"] for s in services}
    status = ("stopped" if "stopped" in statuses
              else "degraded" if "degraded" in statuses or not own_ready else "ok")
    ready = own_ready and all(s["ready"] for s in services)
    if readiness:
        code = 200 if ready else 503
    else:
        code = 503 if status == "stopped" else 200
    return code, {"status": status, "ready": ready, "services": services}


def topics_for(settings: Settings) -> Topics:
    """The topic names of this deployment (``settings.kafka.topic_prefix`` applied)."""
    prefix = settings.kafka.topic_prefix
    return Topics.with_prefix(prefix) if prefix else Topics()


def mount_in_process(bus: InProcessBus, service: Service) -> None:
    """Subscribe ``service``'s handlers to the in-process ``bus`` (same groups as on Kafka)."""
    for c in service.consumes:
        bus.subscribe(
            getattr(service.deps.topics, c.topic), c.group, service.guarded_handler(c),
            max_records=c.max_records,
        )


def build_faststream_app(
    service_cls: type[Service],
    settings: Settings,
    *,
    extras: Callable[[Settings], dict[str, Any]] | None = None,
) -> Any:
    """Build the FastStream app of ``service_cls`` against Kafka and PostgreSQL from ``settings``.

    The PostgreSQL pool, migrations, topics and the service instance are created in the app's
    lifespan (nothing at import time). Handlers are registered as batch subscribers that commit
    offsets only after the handler returned.

    Returns:
        A ``faststream.FastStream`` app with an AsyncAPI specification.
    """
    from faststream import AsyncAPI, FastStream

    from evalloop.adapters.kafka import (
        KafkaBus,
        build_broker,
        build_producer,
        ensure_topics,
        subscribe_batch,
    )
    from evalloop.adapters.postgres import connect_pool, migrate, resolve_dsn

    topics = topics_for(settings)
    broker = build_broker(settings.kafka)
    holder: dict[str, Service] = {}
    guarded: dict[str, Callable[[list[Record]], Any]] = {}

    for c in service_cls.consumes:

        def make(c: Consumes = c) -> Callable[[list[Record]], Any]:
            async def _handle(records: list[Record]) -> None:
                key = f"{c.group}/{c.topic}/{c.handler}"
                if key not in guarded:
                    guarded[key] = holder["service"].guarded_handler(c)
                await guarded[key](records)

            _handle.__doc__ = f"{service_cls.name}: {c.handler}"
            return _handle

        subscribe_batch(
            broker, getattr(topics, c.topic), c.group, make(), max_records=c.max_records,
            title=f"{getattr(topics, c.topic)}:{service_cls.name}",
        )
    for p in service_cls.publishes:
        # Declared for the AsyncAPI document; publishing goes through KafkaBus.
        broker.publisher(
            getattr(topics, p.topic), schema=p.payload, description=p.description,
            title=f"{getattr(topics, p.topic)}:{service_cls.name}:publish",
        )

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        dsn = resolve_dsn(settings.postgres)
        await migrate(dsn)
        await ensure_topics(settings.kafka, topics)
        pool = await connect_pool(
            dsn, min_size=settings.postgres.pool_min, max_size=settings.postgres.pool_max
        )
        producer = build_producer(settings.kafka)
        try:
            await producer.start()
            deps = Deps(
                settings=settings, pool=pool, bus=KafkaBus(broker, producer=producer),
                topics=topics, extras=extras(settings) if extras else {},
            )
            holder["service"] = service_cls(deps)
            guarded.clear()
            yield
        finally:
            await producer.stop()
            await pool.close()

    # The lifespan is entered before the broker connects and left after it disconnected, so the
    # service's own start/stop (which may publish) run in the app's after-startup / on-shutdown
    # hooks, while the broker is connected.
    async def start_service() -> None:
        await holder["service"].start()

    async def stop_service() -> None:
        await holder["service"].stop()

    app = FastStream(
        broker,
        lifespan=lifespan,
        after_startup=(start_service,),
        on_shutdown=(stop_service,),
        specification=AsyncAPI(
            title=f"evalloop {service_cls.name}",
            version="1.0.0",
            description=(service_cls.__doc__ or "").strip().split("\n\n")[0],
        ),
    )
    # Handlers take raw bytes (they decide what is malformed), so FastStream documents their
    # payload as bytes; `evalloop schemas generate` puts the declared models in the document.
    # The running service (None before the lifespan built it), for health reports
    # (``evalloop up`` shows every service's health on ingest's /healthz and /readyz).
    app.evalloop_service = lambda: holder.get("service")  # type: ignore[attr-defined]
    app.evalloop_payloads = {  # type: ignore[attr-defined]
        f"{getattr(topics, c.topic)}:{service_cls.name}": c.payload for c in service_cls.consumes
    }
    return app
