"""The message-bus port: one handler signature for Kafka and for the in-process bus.

Every service handler is ``async def handler(records: list[Record]) -> None`` and publishes through
a :class:`Bus`. On Kafka (``evalloop.adapters.kafka``) a FastStream batch subscriber converts its
``ConsumerRecord`` batch to ``Record`` and commits offsets only after the handler returned. The
:class:`InProcessBus` (the embedded default, ``evalloop demo``) is a small append-only log per topic
with per-group offsets and the same at-least-once contract: a batch is re-delivered when its
handler raises, and offsets advance only after the handler returned. FastStream has no supported
in-process broker (its ``TestKafkaBroker`` dispatches synchronously and has no offsets or consumer
groups), hence this one; the handler code is identical on both paths.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from evalloop.errors import BusError

__all__ = ["BatchHandler", "Bus", "InProcessBus", "Record"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Record:
    """One message as a handler sees it.

    Attributes:
        topic: topic name.
        key: the partition key (``agent_id``) as text, or ``None``.
        value: the raw payload bytes (not yet decoded: handlers decide what is malformed).
        headers: header name -> value bytes.
        partition: partition number (0 on the in-process bus).
        offset: offset within the partition.
        timestamp_ms: broker/log-append time, milliseconds since the epoch, or ``None``.
    """

    topic: str
    key: str | None
    value: bytes
    headers: Mapping[str, bytes] = field(default_factory=dict)
    partition: int = 0
    offset: int = 0
    timestamp_ms: int | None = None


BatchHandler = Callable[[list[Record]], Awaitable[None]]


class Bus(Protocol):
    """Where handlers publish. Implementations: ``KafkaBus`` and ``InProcessBus``."""

    async def publish(
        self,
        topic: str,
        value: bytes,
        *,
        key: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Publish one message; returns once the bus has accepted it (Kafka: acked by the broker).

        Raises:
            BusError: the bus refused the message.
        """
        ...

    async def publish_batch(
        self, topic: str, items: list[tuple[str | None, bytes]]
    ) -> None:
        """Publish ``(key, value)`` pairs, in order per key; returns once all are accepted."""
        ...


@dataclass
class _Subscription:
    topic: str
    group: str
    handler: BatchHandler
    max_records: int
    offset: int = 0


class InProcessBus:
    """An append-only in-memory log per topic with consumer groups (the embedded default).

    Each topic is one partition (so one agent's messages keep their order, as with Kafka's
    keyed partitions). Subscriptions of different groups each see every message; delivery is
    at-least-once: a handler that raises gets the same batch again after ``retry_delay_s``.

    ``run()`` drives all subscriptions until ``stop()``; ``drain()`` returns once every
    subscription has consumed everything published so far (including messages their own
    handlers published meanwhile).
    """

    def __init__(self, *, retry_delay_s: float = 0.2, max_attempts: int = 5) -> None:
        """Create an empty bus. ``max_attempts``: deliveries of one failing batch before it
        is raised out of ``run()`` (a crash, as a consumer would crash on Kafka)."""
        self._log: dict[str, list[Record]] = {}
        self._subs: list[_Subscription] = []
        self._wakeups: list[asyncio.Event] = []
        self._tg: asyncio.TaskGroup | None = None
        self._stopped = False
        self._stopped_event = asyncio.Event()
        self._retry_delay_s = retry_delay_s
        self._max_attempts = max_attempts
        self._idle = asyncio.Event()

    # -- Bus
    async def publish(
        self,
        topic: str,
        value: bytes,
        *,
        key: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Append one message to ``topic`` (see :class:`Bus`)."""
        if not isinstance(value, bytes | bytearray):
            raise BusError(f"publish to {topic}: expected bytes, got {type(value).__name__}")
        part = self._log.setdefault(topic, [])
        part.append(
            Record(
                topic=topic,
                key=key,
                value=bytes(value),
                headers={k: v.encode() for k, v in (headers or {}).items()},
                partition=0,
                offset=len(part),
            )
        )
        self._idle.clear()
        for wakeup in self._wakeups:
            wakeup.set()

    async def publish_batch(self, topic: str, items: list[tuple[str | None, bytes]]) -> None:
        """Append ``(key, value)`` pairs in order (see :class:`Bus`)."""
        for key, value in items:
            await self.publish(topic, value, key=key)

    # -- consumers
    def subscribe(
        self, topic: str, group: str, handler: BatchHandler, *, max_records: int = 1000
    ) -> None:
        """Register ``handler`` for ``topic`` in group ``group``, from the earliest offset."""
        sub = _Subscription(topic, group, handler, max_records)
        self._subs.append(sub)
        if self._tg is not None:
            self._start_consumer(sub)

    def topic_size(self, topic: str) -> int:
        """Number of messages ever published to ``topic``."""
        return len(self._log.get(topic, []))

    def messages(self, topic: str) -> list[Record]:
        """A copy of every message published to ``topic``, in order."""
        return list(self._log.get(topic, []))

    def lag(self) -> int:
        """Messages published but not yet consumed, summed over subscriptions."""
        return sum(self.topic_size(s.topic) - s.offset for s in self._subs)

    async def _step(self, sub: _Subscription) -> bool:
        part = self._log.get(sub.topic, [])
        if sub.offset >= len(part):
            return False
        batch = part[sub.offset : sub.offset + sub.max_records]
        for attempt in range(1, self._max_attempts + 1):
            try:
                await sub.handler(batch)
                break
            except Exception:
                if attempt == self._max_attempts:
                    raise
                log.exception(
                    "handler of %s/%s failed (attempt %d); redelivering the batch",
                    sub.group, sub.topic, attempt,
                )
                await asyncio.sleep(self._retry_delay_s)
        sub.offset += len(batch)  # "commit" only after the handler returned
        return True

    async def run(self) -> None:
        """Deliver batches to every subscription until :meth:`stop` is called.

        Each subscription consumes in a task of its own, as separate consumer groups do on
        Kafka: a slow consumer (triage embedding) does not hold up a fast one (recorder).

        Raises:
            Exception: whatever a handler raised ``max_attempts`` times in a row.
        """
        try:
            async with asyncio.TaskGroup() as tg:
                self._tg = tg
                for sub in self._subs:
                    self._start_consumer(sub)
                # Keep the group open until stop(): later subscriptions still get a consumer.
                await self._stopped_event.wait()
        except BaseExceptionGroup as group:
            # One consumer crashed and the others were cancelled: raise its error as it was.
            raise group.exceptions[0]  # noqa: B904
        finally:
            self._tg = None

    def _start_consumer(self, sub: _Subscription) -> None:
        assert self._tg is not None
        self._tg.create_task(self._consume(sub), name=f"in-process:{sub.group}:{sub.topic}")

    async def _consume(self, sub: _Subscription) -> None:
        wakeup = asyncio.Event()
        self._wakeups.append(wakeup)
        while not self._stopped:
            if await self._step(sub):
                await asyncio.sleep(0)  # let the other consumers and publishers run
                continue
            wakeup.clear()
            self._notify_idle()
            if self._stopped:
                break
            try:
                await asyncio.wait_for(wakeup.wait(), timeout=0.5)
            except TimeoutError:
                pass

    def _notify_idle(self) -> None:
        if not self.lag():
            self._idle.set()

    async def drain(self, timeout_s: float = 600.0) -> None:
        """Wait until every subscription is caught up (``lag() == 0``), at most ``timeout_s``.

        Raises:
            TimeoutError: still behind after ``timeout_s`` seconds.
        """
        async with asyncio.timeout(timeout_s):
            while self.lag():
                self._idle.clear()
                try:
                    await asyncio.wait_for(self._idle.wait(), timeout=0.5)
                except TimeoutError:
                    pass

    def stop(self) -> None:
        """Make :meth:`run` return after the batch in progress."""
        self._stopped = True
        self._stopped_event.set()
        for wakeup in self._wakeups:
            wakeup.set()
