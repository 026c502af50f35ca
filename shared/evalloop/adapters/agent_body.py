"""An agent's reply body -> its answer text: httpx-sse frames event streams, core reads payloads.

:func:`read_reply` is :func:`evalloop.core.evaluation.extract.extract_text` with the SSE framing
of httpx-sse (``docs/rules.md#endpoint-contract``): lines end only at CR, LF or CRLF (a
``data:`` line holding U+2028 or U+0085 stays one line), ``data:`` lines of one event are joined
with ``\\n``, comments and unknown fields are ignored. An event stream whose last event lacks the
closing blank line still delivers that event (agents that close the connection right after
their last ``data:`` line are common).
"""

from __future__ import annotations

import httpx
from httpx_sse import EventSource

from evalloop.core.evaluation.extract import Extracted, ResponseFormat, extract_text

__all__ = ["frame_sse", "read_reply"]

_SSE_HEADERS = {"content-type": "text/event-stream; charset=utf-8"}


def frame_sse(text: str) -> list[str]:
    """Split an event stream into the ``data`` of each event (events without data left out).

    Args:
        text: the whole stream, decoded.

    Returns:
        One string per event that carried data, in order.
    """
    # httpx-sse reads an httpx.Response; an in-memory one frames an already-read body (read
    # under the size cap by the client) with the same decoder as a live stream.
    response = httpx.Response(200, headers=_SSE_HEADERS,
                              content=(text + "\n\n").encode("utf-8"))
    return [event.data for event in EventSource(response).iter_sse() if event.data]


def read_reply(body: bytes | str, content_type: str | None = None, *,
               hint: ResponseFormat | None = None) -> Extracted:
    """Extract the answer from a reply body (see :func:`~evalloop.core.evaluation.extract.
    extract_text` for the formats and the errors).

    Raises:
        MalformedResponse: the body is no answer; ``reason`` names the kind.
    """
    return extract_text(body, content_type, hint=hint, frame_sse=frame_sse)
