"""Slow request heads are cut off (``docs/operations.md#tried-as-an-attacker``): uvicorn has no
timeout on a request head, so one header line a second held an ingest connection for ever.
``head_deadline_protocol`` closes a connection whose head is not complete in time, and leaves
complete requests (and keep-alive connections that go on promptly) alone. A real uvicorn server
on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import uvicorn

from evalloop.adapters.http_server import head_deadline_protocol


async def ok_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain"), (b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


@contextlib.asynccontextmanager
async def server(timeout_s: float) -> AsyncIterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(ok_app, host="127.0.0.1", port=port, lifespan="off",
                                        http=head_deadline_protocol(timeout_s),
                                        log_level="warning"))
    task = asyncio.create_task(srv.serve())
    while not srv.started:  # noqa: ASYNC110 - uvicorn sets it from its own task
        await asyncio.sleep(0.01)
    try:
        yield port
    finally:
        srv.should_exit = True
        await task


async def _closed_after(reader: asyncio.StreamReader, bound_s: float) -> float:
    t0 = time.monotonic()
    data = await asyncio.wait_for(reader.read(), bound_s)  # b"" once the server closes
    assert data == b""
    return time.monotonic() - t0


async def test_a_head_sent_one_line_a_second_is_closed_at_the_deadline() -> None:
    async with server(0.5) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /v1/events HTTP/1.1\r\nhost: x\r\n")
        t0 = time.monotonic()

        async def trickle() -> None:
            for i in range(20):
                await asyncio.sleep(0.2)
                with contextlib.suppress(ConnectionError):
                    writer.write(f"x-h{i}: {i}\r\n".encode())

        sending = asyncio.create_task(trickle())
        await _closed_after(reader, 5.0)
        took = time.monotonic() - t0
        sending.cancel()
        writer.close()
    assert 0.4 <= took < 2.0


async def test_complete_requests_and_prompt_keep_alive_are_served() -> None:
    async with server(0.5) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(3):  # three requests on one connection, each head sent at once
            writer.write(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5.0)
            assert head.startswith(b"HTTP/1.1 200 OK")
            assert await asyncio.wait_for(reader.readexactly(2), 5.0) == b"ok"
            await asyncio.sleep(0.3)  # under the deadline between requests
        # then idle past the deadline without a new head: closed
        assert await _closed_after(reader, 5.0) < 2.0
        writer.close()
