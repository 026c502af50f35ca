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
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, ClassVar

import asyncpg
from pydantic import BaseModel

from evalloop.adapters.bus import Bus, InProcessBus, Record
from evalloop.settings import Settings
from evalloop.topics import Topics

__all__ = ["Consumes", "Deps", "Service", "build_faststream_app", "mount_in_process", "topics_for"]


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
    """What a service gets injected: settings, the PostgreSQL pool, the bus and topic names."""

    settings: Settings
    pool: asyncpg.Pool
    bus: Bus
    topics: Topics
    extras: dict[str, Any] = field(default_factory=dict)


class Service:
    """Base class of the services. Subclasses set ``name``, ``consumes``, ``publishes`` and
    implement the handler methods; ``start``/``stop`` run background work (schedules)."""

    name: ClassVar[str] = "service"
    consumes: ClassVar[tuple[Consumes, ...]] = ()
    publishes: ClassVar[tuple[Publishes, ...]] = ()

    def __init__(self, deps: Deps) -> None:
        """Keep the injected dependencies."""
        self.deps = deps
        self._background: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start background work (none by default; see :meth:`start_background`)."""

    async def stop(self) -> None:
        """Stop background work (cancels what :meth:`start_background` started)."""
        await self.stop_background()

    def start_background(
        self, *loops: Callable[[], Coroutine[Any, Any, None]], name: str
    ) -> None:
        """Run each of ``loops`` (long-running coroutine functions) in one task group until
        :meth:`stop_background`; one that raises cancels the others and ends the group."""

        async def run() -> None:
            async with asyncio.TaskGroup() as tg:
                for loop in loops:
                    tg.create_task(loop())

        self._background = asyncio.create_task(run(), name=name)

    async def stop_background(self) -> None:
        """Cancel the loops of :meth:`start_background` and wait until they have finished."""
        if self._background is not None:
            self._background.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._background
            self._background = None

    def handler(self, c: Consumes) -> Callable[[list[Record]], Any]:
        """The bound handler method named by ``c``."""
        return getattr(self, c.handler)  # type: ignore[no-any-return]


def topics_for(settings: Settings) -> Topics:
    """The topic names of this deployment (``settings.kafka.topic_prefix`` applied)."""
    prefix = settings.kafka.topic_prefix
    return Topics.with_prefix(prefix) if prefix else Topics()


def mount_in_process(bus: InProcessBus, service: Service) -> None:
    """Subscribe ``service``'s handlers to the in-process ``bus`` (same groups as on Kafka)."""
    for c in service.consumes:
        bus.subscribe(
            getattr(service.deps.topics, c.topic), c.group, service.handler(c),
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

    from evalloop.adapters.kafka import KafkaBus, build_broker, ensure_topics, subscribe_batch
    from evalloop.adapters.postgres import connect_pool, migrate, resolve_dsn

    topics = topics_for(settings)
    broker = build_broker(settings.kafka)
    holder: dict[str, Service] = {}

    for c in service_cls.consumes:

        def make(c: Consumes = c) -> Callable[[list[Record]], Any]:
            async def _handle(records: list[Record]) -> None:
                await holder["service"].handler(c)(records)

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
        try:
            deps = Deps(
                settings=settings, pool=pool, bus=KafkaBus(broker), topics=topics,
                extras=extras(settings) if extras else {},
            )
            holder["service"] = service_cls(deps)
            yield
        finally:
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
    app.evalloop_payloads = {  # type: ignore[attr-defined]
        f"{getattr(topics, c.topic)}:{service_cls.name}": c.payload for c in service_cls.consumes
    }
    return app
