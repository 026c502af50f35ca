"""The whole loop in one process: services mounted on an :class:`InProcessBus` (the embedded
default of ``evalloop demo``; the same handler code as on Kafka, see ``evalloop.runtime``).

:func:`in_process_loop` builds one ``Deps`` (settings, pool, bus, topics, extras), instantiates
each service class, mounts its handlers, starts it, and drives the bus in a task of an
``asyncio.TaskGroup`` until the ``async with`` body ends (then stops the services, newest
first, and the bus). A handler that keeps failing crashes the loop (the ``TaskGroup`` raises),
as a consumer would crash on Kafka.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from evalloop.adapters.bus import InProcessBus
from evalloop.replay.producer import BusSink, IngestSink
from evalloop.runtime import Deps, Service, mount_in_process, topics_for
from evalloop.settings import Settings

__all__ = ["Loop", "in_process_loop"]

_S = TypeVar("_S", bound=Service)


@dataclass
class Loop:
    """A running in-process loop: the bus, the shared deps and the service instances."""

    bus: InProcessBus
    deps: Deps
    services: list[Service] = field(default_factory=list)

    def service(self, cls: type[_S]) -> _S:
        """The running instance of ``cls``.

        Raises:
            KeyError: ``cls`` is not part of this loop.
        """
        for s in self.services:
            if isinstance(s, cls):
                return s
        raise KeyError(f"no {cls.__name__} in this loop; running: "
                       f"{[type(s).__name__ for s in self.services]}")

    def bus_sink(self) -> BusSink:
        """A sink producing straight to ``feedback.events.v1`` (a producer bypassing ingest)."""
        return BusSink(self.bus, self.deps.topics.feedback_events)

    @contextlib.asynccontextmanager
    async def ingest_sink(self) -> AsyncIterator[IngestSink]:
        """A sink POSTing to the ingest service's ASGI app (built on this loop's bus) through
        ``httpx.ASGITransport``: the real HTTP handler, no socket.

        The loop creates its own API key for every agent (``docs/security.md#api-keys``) and
        revokes it when the sink closes."""
        from evalloop.adapters.key_store import create_key, revoke_key
        from services.ingest.app import build_http_app

        app = build_http_app(self.deps.settings, self.bus, pool=self.deps.pool)
        transport = httpx.ASGITransport(app=app)
        token, key = await create_key(self.deps.pool, "in-process loop (evalloop demo)",
                                      agent_ids=None, rate_limit="1000000/second")
        headers = {"Authorization": f"Bearer {token.token}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://ingest",
                                     timeout=120.0, headers=headers) as client:
            try:
                yield IngestSink(client, "http://ingest")
            finally:
                await revoke_key(self.deps.pool, key.key_id)

    async def drain(self, timeout_s: float = 600.0) -> None:
        """Wait until every service consumed everything published so far (see
        :meth:`InProcessBus.drain`), at most ``timeout_s`` seconds.

        Raises:
            TimeoutError: still behind after ``timeout_s``.
        """
        await self.bus.drain(timeout_s)


@contextlib.asynccontextmanager
async def in_process_loop(
    settings: Settings,
    pool: Any,
    services: Sequence[type[Service]],
    *,
    extras: dict[str, Any] | None = None,
    bus: InProcessBus | None = None,
) -> AsyncIterator[Loop]:
    """Run ``services`` on an in-process bus for the ``async with`` body.

    Args:
        settings: every section the services read (topic prefix included).
        pool: the asyncpg pool on a migrated database.
        services: service classes, started in this order (stopped in reverse).
        extras: ``Deps.extras`` (an embedder, a clock, ...).
        bus: the bus to use (default a new :class:`InProcessBus`).

    Yields:
        The :class:`Loop`.
    """
    bus = bus or InProcessBus()
    deps = Deps(settings=settings, pool=pool, bus=bus, topics=topics_for(settings),
                extras=dict(extras or {}))
    loop = Loop(bus=bus, deps=deps)
    for cls in services:
        service = cls(deps)
        mount_in_process(bus, service)
        loop.services.append(service)
    async with asyncio.TaskGroup() as tg:
        tg.create_task(bus.run(), name="in-process-bus")
        started: list[Service] = []
        try:
            for service in loop.services:
                await service.start()
                started.append(service)
            yield loop
        finally:
            try:
                for service in reversed(started):
                    await service.stop()
            finally:
                bus.stop()
