"""Deliver scheduled events: to a bus (Kafka or in-process) or to the ingest HTTP API.

Two sinks share one interface (``send(events)``, a batch in delivery order):

* :class:`BusSink` publishes each event's JSON to ``feedback.events.v1`` keyed by ``agent_id``
  (what a producer writing to Kafka directly does; order per key is kept);
* :class:`IngestSink` POSTs batches to ``<url>/v1/events`` (``202`` expected). Any
  ``httpx`` transport works: a real URL, or ``httpx.ASGITransport`` over the ingest app in the
  same process (the demo).

:func:`deliver` walks the schedule in batches and reports progress through a callback.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Protocol

import httpx

from evalloop.adapters.bus import Bus
from evalloop.core.redaction import redact_url
from evalloop.errors import BusError, ConfigError
from evalloop.events import FeedbackEvent, dump_event
from evalloop.replay.schedule import ScheduledEvent
from evalloop.settings import Settings

__all__ = ["BusSink", "EventSink", "IngestSink", "deliver", "kafka_sink"]


class EventSink(Protocol):
    """Where the replay sends its events."""

    async def send(self, events: Sequence[FeedbackEvent]) -> None:
        """Deliver one batch (in order); return once it is accepted.

        Raises:
            BusError: the bus or the ingest service refused the batch.
        """
        ...


class BusSink:
    """Publish to ``topic`` of a :class:`~evalloop.adapters.bus.Bus`, keyed by ``agent_id``."""

    def __init__(self, bus: Bus, topic: str) -> None:
        """Publish through ``bus`` to ``topic`` (normally ``Topics.feedback_events``)."""
        self.bus, self.topic = bus, topic

    async def send(self, events: Sequence[FeedbackEvent]) -> None:
        """Publish ``events`` as one ordered batch (see :class:`EventSink`)."""
        await self.bus.publish_batch(self.topic, [(e.agent_id, dump_event(e)) for e in events])


class IngestSink:
    """POST batches to an ingest service's ``/v1/events``."""

    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        """Send with ``client`` to ``url`` (the service's base URL, e.g. ``http://host:8080``)."""
        self.client, self.endpoint = client, url.rstrip("/") + "/v1/events"
        self._shown = redact_url(self.endpoint)  # for messages (docs/security.md#secrets)

    async def send(self, events: Sequence[FeedbackEvent]) -> None:
        """POST ``events`` as a JSON array (see :class:`EventSink`).

        Raises:
            BusError: the service is unreachable or did not answer 202 with every event id
                accepted (the message carries its status and error body).
        """
        body = "[" + ",".join(e.model_dump_json() for e in events) + "]"
        try:
            resp = await self.client.post(
                self.endpoint, content=body.encode(),
                headers={"Content-Type": "application/json"},
            )
        except httpx.HTTPError as exc:
            raise BusError(f"POST {self._shown} failed: {exc!r}") from exc
        if resp.status_code != 202:
            raise BusError(
                f"POST {self._shown}: expected 202, got {resp.status_code}: {resp.text[:500]}"
            )
        accepted = resp.json().get("accepted", [])
        if len(accepted) != len({e.event_id for e in events}):
            raise BusError(
                f"POST {self._shown}: {len(events)} events sent, {len(accepted)} accepted"
            )


@contextlib.asynccontextmanager
async def kafka_sink(settings: Settings) -> AsyncIterator[BusSink]:
    """A :class:`BusSink` on the Kafka cluster of ``settings`` (topics created if missing).

    Raises:
        BusError: the cluster is unreachable.
    """
    from evalloop.adapters.kafka import KafkaBus, build_broker, ensure_topics
    from evalloop.runtime import topics_for

    topics = topics_for(settings)
    await ensure_topics(settings.kafka, topics)
    broker = build_broker(settings.kafka)
    try:
        await broker.connect()
    except Exception as exc:
        raise BusError(f"cannot connect to Kafka at {settings.kafka.bootstrap}: {exc}") from exc
    try:
        yield BusSink(KafkaBus(broker), topics.feedback_events)
    finally:
        await broker.stop()


async def deliver(
    scheduled: Sequence[ScheduledEvent],
    sink: EventSink,
    *,
    batch_size: int = 500,
    on_batch: Callable[[int], Any] | None = None,
) -> int:
    """Send ``scheduled`` events to ``sink`` in batches of ``batch_size``, in order.

    Args:
        scheduled: events in delivery order (:class:`~evalloop.replay.schedule.Schedule`).
        sink: where to send them.
        batch_size: events per batch (replay events are 1-35 KB; 500 stay well under the
            ingest body limit, ``settings.ingest.max_body_bytes``, 10 MB by default).
        on_batch: called with the number of events of each delivered batch (progress bars).

    Returns:
        The number of events sent.

    Raises:
        ConfigError: ``batch_size`` < 1.
        BusError: a batch was refused (the ones before it were delivered).
    """
    if batch_size < 1:
        raise ConfigError(f"expected batch_size >= 1, got {batch_size}")
    sent = 0
    for i in range(0, len(scheduled), batch_size):
        batch = [s.event for s in scheduled[i : i + batch_size]]
        await sink.send(batch)
        sent += len(batch)
        if on_batch is not None:
            on_batch(len(batch))
    return sent
