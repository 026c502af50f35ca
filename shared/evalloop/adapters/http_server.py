"""uvicorn options shared by evalloop's HTTP servers (ingest and the web app): a deadline on the
request head and a bound on its size (``docs/operations.md#tried-as-an-attacker``).

One implementation for every way a server starts: ``evalloop up``, ``python -m services.ingest``,
``python -m services.web``, ``evalloop web`` and ``evalloop demo --serve``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalloop.settings import Settings

__all__ = ["head_deadline_protocol", "http_options", "uvicorn_options"]

log = logging.getLogger(__name__)


def head_deadline_protocol(timeout_s: float, *, service: str = "http") -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with a deadline on the request head.

    A connection that has not sent a whole request line and headers ``timeout_s`` seconds after
    it opened (or after its previous response) is closed without an answer. uvicorn has no such
    timeout of its own, so one header line a second held a connection for ever (slowloris;
    ``docs/operations.md#tried-as-an-attacker``). Once a whole head has arrived the app's own
    deadlines (ingest's body timeout) take over.

    Args:
        timeout_s: seconds a connection has for each request head.
        service: the name the log line gives when a connection is closed.

    Returns:
        A protocol class for ``uvicorn.Config(http=...)``.
    """
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeadDeadline(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            self._disarm()
            self._head_timer = self.loop.call_later(timeout_s, self._head_expired)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_expired(self) -> None:
            self._head_timer = None
            if (self.cycle is None or self.cycle.response_complete) \
                    and not self.transport.is_closing():
                log.info("%s: closed a connection that sent no complete request head "
                         "within %g s", service, timeout_s)
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not None and not self.cycle.response_complete:
                self._disarm()  # a whole head arrived: the app's own deadlines take over

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and (
                    self.cycle is None or self.cycle.response_complete):
                self._arm()

    return HeadDeadline


def uvicorn_options(service: str, *, head_timeout_s: float,
                    max_header_bytes: int | None = None) -> dict[str, Any]:
    """Keyword arguments of ``uvicorn.Config`` for one of evalloop's HTTP servers.

    Args:
        service: ``"ingest"`` or ``"web"`` (named in the log line of a closed connection).
        head_timeout_s: seconds a connection has to send a whole request head
            (``ingest.head_timeout_s``, ``web.head_timeout_s``).
        max_header_bytes: largest head h11 buffers while it arrives in pieces
            (``ingest.max_header_bytes``); ``None`` = h11's default (16 KiB).

    Returns:
        ``{"http": <h11 protocol with the deadline>, ["h11_max_incomplete_event_size": n]}``:
        the h11 parser, so an installed httptools changes nothing.
    """
    options: dict[str, Any] = {"http": head_deadline_protocol(head_timeout_s, service=service)}
    if max_header_bytes is not None:
        options["h11_max_incomplete_event_size"] = max_header_bytes
    return options


def http_options(name: str, settings: Settings) -> dict[str, Any]:
    """:func:`uvicorn_options` of the HTTP service ``name`` from ``settings``: ``"web"`` gets
    ``web.head_timeout_s``; ``"ingest"`` gets ``ingest.head_timeout_s``,
    ``ingest.max_header_bytes`` (``docs/security.md#api-keys``) and ``proxy_headers=False``:
    uvicorn would otherwise believe any ``X-Forwarded-For`` sent from loopback, and ingest's
    app reads it only from ``ingest.trusted_proxies`` (``docs/security.md#client-address``).

    Raises:
        ValueError: ``name`` is neither ``"ingest"`` nor ``"web"``.
    """
    if name == "web":
        return uvicorn_options("web", head_timeout_s=settings.web.head_timeout_s)
    if name == "ingest":
        return uvicorn_options("ingest", head_timeout_s=settings.ingest.head_timeout_s,
                               max_header_bytes=settings.ingest.max_header_bytes) \
            | {"proxy_headers": False}
    raise ValueError(f"expected an HTTP service, 'ingest' or 'web'; got {name!r}")
