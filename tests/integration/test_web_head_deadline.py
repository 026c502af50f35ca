"""The web app's server closes a connection whose request head is not complete within
``web.head_timeout_s`` (slowloris; ``docs/operations.md#tried-as-an-attacker``), as ingest's does:
the web app as ``evalloop up --service web`` serves it, over a real socket, on the test
database."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from evalloop.adapters.http_server import http_options
from evalloop.cli.up import run_services
from evalloop.settings import Settings, WebSettings

DEADLINE_S = 0.5


@contextlib.asynccontextmanager
async def web_up(settings: Settings) -> AsyncIterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = settings.model_copy(update={"web": WebSettings(port=port,
                                                              head_timeout_s=DEADLINE_S)})
    stop = asyncio.Event()
    task = asyncio.create_task(run_services(["web"], settings, stop))
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as c:
            for _ in range(400):
                with contextlib.suppress(httpx.ConnectError):
                    assert (await c.get("/healthz")).status_code == 200
                    break
                await asyncio.sleep(0.05)
        yield port
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)


async def test_a_web_request_head_sent_one_line_at_a_time_is_closed_at_the_deadline(
    pg_settings: Settings,
) -> None:
    async with web_up(pg_settings) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /login HTTP/1.1\r\nhost: x\r\n")
        t0 = time.monotonic()

        async def trickle() -> None:
            for i in range(50):
                await asyncio.sleep(0.2)
                with contextlib.suppress(ConnectionError):
                    writer.write(f"x-h{i}: {i}\r\n".encode())

        sending = asyncio.create_task(trickle())
        received = await asyncio.wait_for(reader.read(), 10.0)  # b"" once the server closes
        took = time.monotonic() - t0
        sending.cancel()
        writer.close()
        # the server is still serving others
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as c:
            after = await c.get("/healthz")
    assert received == b""  # closed without an answer
    assert DEADLINE_S - 0.1 <= took < DEADLINE_S + 1.5
    assert (after.status_code, after.json()) == (200, {"status": "ok"})


def test_each_http_service_gets_the_head_deadline_of_its_own_setting() -> None:
    settings = Settings(web=WebSettings(head_timeout_s=3.0))
    web, ingest = http_options("web", settings), http_options("ingest", settings)
    assert web["http"].__name__ == ingest["http"].__name__ == "HeadDeadline"
    assert "h11_max_incomplete_event_size" not in web
    assert ingest["h11_max_incomplete_event_size"] == 16 * 1024
    with pytest.raises(ValueError, match="expected an HTTP service, 'ingest' or 'web'; got 'x'"):
        http_options("x", settings)
