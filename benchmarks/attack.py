#!/usr/bin/env python3
"""Ingest and the evaluator tried as an attacker would: poison and overload
(``docs/operations.md#tried-as-an-attacker``). Prints one line per try: what was sent, what
came back, how long it took, and whether it held.

Usage::

    EVALLOOP_KAFKA__BOOTSTRAP=... EVALLOOP_POSTGRES__DSN=... python benchmarks/attack.py
    python benchmarks/attack.py --only agent          # the evaluator's agent client only

Ingest runs as its own process (``evalloop up --service ingest``) against the Kafka and
PostgreSQL named by the environment (it only publishes: nothing is stopped), with a fresh
database holding one API key. The evaluator side drives :class:`AgentClient` (what every
evaluator job uses) against hostile agent endpoints served on loopback by this script: one that
streams forever, one that sends gigabytes, one that hangs, a gzip bomb, an endless SSE stream.
Every try is bounded (``--bound`` seconds). Exit code: 0 when every try held, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import resource
import socket
import subprocess
import sys
import time
import uuid
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx

from evalloop.adapters.agent_client import AgentCallError, AgentClient
from evalloop.adapters.key_store import create_key
from evalloop.adapters.postgres import connect_pool, create_database, migrate

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Try:
    """One attempt: its name, what it sent, what came back, seconds, and whether it held."""

    target: str
    name: str
    sent: str
    outcome: str
    seconds: float
    held: bool


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# --------------------------------------------------------------------------- ingest


async def _raw(port: int, chunks: list[tuple[bytes, float]], bound_s: float) -> tuple[str, float]:
    """Send raw bytes (each chunk after its delay, seconds) and read the answer; returns
    ``(status line or what happened, seconds until the server answered or closed)``."""
    t0 = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    got = b""

    async def read() -> None:
        nonlocal got
        got = await reader.read(65536)

    reading = asyncio.create_task(read())
    try:
        for data, delay in chunks:
            if reading.done():
                break
            await asyncio.sleep(delay)
            if reading.done():
                break
            writer.write(data)
            with contextlib.suppress(ConnectionError):
                await writer.drain()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(reading), max(0.1, bound_s - (
                time.monotonic() - t0)))
    except ConnectionError as exc:
        return f"connection closed by the server ({type(exc).__name__})", time.monotonic() - t0
    finally:
        reading.cancel()
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    if not reading.done() or (reading.cancelled() and not got):
        return "no answer, connection still open", time.monotonic() - t0
    line = got.split(b"\r\n", 1)[0].decode(errors="replace")
    return (line or "connection closed without an answer"), time.monotonic() - t0


async def ingest_tries(port: int, token: str, pid: int, bound_s: float) -> list[Try]:
    url = f"http://127.0.0.1:{port}/v1/events"
    auth = {"authorization": f"Bearer {token}", "content-type": "application/json"}
    head = (f"POST /v1/events HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\n"
            "content-type: application/json\r\n").encode()
    out: list[Try] = []
    event = {"event_type": "agent_response", "agent_id": "who", "conversation_id": "c",
             "turn_id": "t", "occurred_at": "2026-01-01T00:00:00Z", "question": "q",
             "answer": "a"}

    async with httpx.AsyncClient(timeout=bound_s) as client:
        async def post(name: str, sent: str, body: bytes | Callable[[], AsyncIterator[bytes]],
                       ok: Callable[[httpx.Response], bool]) -> None:
            rss0 = _rss_mb(pid)
            t0 = time.monotonic()
            try:
                content = body if isinstance(body, bytes) else body()
                r = await client.post(url, content=content, headers=auth)
                outcome = f"{r.status_code}, {len(r.content)} B answer"
                held = ok(r)
                with contextlib.suppress(ValueError):
                    outcome += f" ({r.json().get('error')})"
            except httpx.HTTPError as exc:
                outcome, held = f"{type(exc).__name__}: {exc}", False
            dt = time.monotonic() - t0
            outcome += f"; ingest RSS {rss0:.0f} -> {_rss_mb(pid):.0f} MB"
            out.append(Try("ingest", name, sent, outcome, dt, held))

        deep = b"[" * 100_000 + b"]" * 100_000
        await post("deeply nested JSON", "100,000 nested arrays (200 KB)", deep,
                   lambda r: r.status_code == 422)
        deep_field = (json.dumps({**event, "event_id": str(uuid.uuid4())})[:-1]
                      + ', "comment": ' + "[" * 50_000 + "]" * 50_000 + "}").encode()
        await post("nesting inside a valid event", "a valid event with 50,000 nested arrays "
                   "in a field", deep_field, lambda r: r.status_code == 422)
        await post("many tiny records", "100,000 empty objects (300 KB)",
                   b"[" + b",".join([b"{}"] * 100_000) + b"]",
                   lambda r: r.status_code == 413 and len(r.content) < 4096)
        many_valid = json.dumps([{**event, "event_id": str(uuid.uuid4()), "turn_id": f"t{i}"}
                                 for i in range(1000)]).encode()
        await post("the most records allowed", "1,000 valid events in one request",
                   many_valid, lambda r: r.status_code == 202)
        await post("invalid UTF-8", "an event whose text holds the bytes ff fe",
                   json.dumps({**event, "event_id": str(uuid.uuid4())}).encode()
                   .replace(b'"q"', b'"\xff\xfe"'), lambda r: r.status_code == 422)
        await post("lone surrogate escape", 'an event whose text is "\\ud800"',
                   json.dumps({**event, "event_id": str(uuid.uuid4())}).encode()
                   .replace(b'"q"', b'"\\ud800"'), lambda r: r.status_code == 422)

        async def chunked() -> AsyncIterator[bytes]:
            block = b" " * (1024 * 1024)
            for _ in range(200):  # 200 MB unless the server stops reading
                yield block

        await post("huge chunked body", "200 MB of spaces, chunked, no Content-Length",
                   chunked, lambda r: r.status_code == 413)
        await post("huge declared body", "Content-Length 50 MB (body sent)",
                   b" " * (50 * 1024 * 1024), lambda r: r.status_code == 413)

    # slow and malformed at the socket level
    line, dt = await _raw(port, [(head + b"content-length: 2000\r\n\r\n", 0.0)]
                          + [(b" ", 1.0)] * int(bound_s + 5), bound_s)
    out.append(Try("ingest", "slow body (slowloris)", "Content-Length 2000, then 1 byte/s",
                   line, dt, dt < bound_s and "408" in line))
    line, dt = await _raw(port, [(b"POST /v1/events HTTP/1.1\r\n", 0.0)]
                          + [(f"x-h{i}: {i}\r\n".encode(), 1.0) for i in range(int(bound_s + 5))],
                          bound_s)
    out.append(Try("ingest", "slow headers (slowloris)", "one header line per second, never "
                   "ending the head", line, dt, dt < bound_s))
    line, dt = await _raw(port, [(head + b"x-big: " + b"a" * 200_000 + b"\r\n\r\n", 0.0)],
                          bound_s)
    out.append(Try("ingest", "huge header", "a 200 KB header line", line, dt,
                   line.startswith("HTTP/1.1 4")))

    # many idle connections, then a legitimate request
    conns = []
    with contextlib.suppress(OSError):
        for _ in range(800):
            conns.append(await asyncio.open_connection("127.0.0.1", port))
    t0 = time.monotonic()
    try:
        async with httpx.AsyncClient(timeout=bound_s) as client:
            r = await client.post(url, content=json.dumps(
                {**event, "event_id": str(uuid.uuid4())}).encode(), headers=auth)
            outcome, held = f"{r.status_code}", r.status_code == 202
    except httpx.HTTPError as exc:
        outcome, held = f"{type(exc).__name__}", False
    out.append(Try("ingest", "800 idle connections", f"{len(conns)} connections opened and "
                   "left idle, then one real request", outcome + " for the real request",
                   time.monotonic() - t0, held))
    for _, w in conns:
        w.close()

    # a stranger hammering without a key
    t0 = time.monotonic()
    codes: dict[int, int] = {}
    async with httpx.AsyncClient(timeout=bound_s) as client:
        for _ in range(60):
            r = await client.post(url, content=b"[]", headers={"content-type":
                                                               "application/json"})
            codes[r.status_code] = codes.get(r.status_code, 0) + 1
    out.append(Try("ingest", "no key, 60 requests", "60 requests without an API key",
                   f"answers {codes}", time.monotonic() - t0,
                   set(codes) <= {401, 429} and codes.get(429, 0) > 0))
    return out


def _spawn_ingest(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "evalloop.cli.main", "up", "--service",
                                 "ingest"], env=env, stdout=out, stderr=subprocess.STDOUT)


@contextlib.asynccontextmanager
async def ingest_process(bound_s: float) -> AsyncIterator[tuple[int, str, int]]:
    """Ingest as its own process on a fresh database with one key: ``(port, token, pid)``."""
    admin = os.environ["EVALLOOP_POSTGRES__DSN"]
    name = f"attack_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    dsn = await create_database(admin, name)
    await migrate(dsn)
    pool = await connect_pool(dsn, min_size=1, max_size=1)
    try:
        new, _ = await create_key(pool, "attack", agent_ids=None, rate_limit="100000/second")
    finally:
        await pool.close()
    port = _free_port()
    env = {**os.environ, "EVALLOOP_POSTGRES__DSN": dsn, "EVALLOOP_INGEST__PORT": str(port),
           "EVALLOOP_KAFKA__TOPIC_PREFIX": f"a{uuid.uuid4().hex[:8]}.",
           "EVALLOOP_INGEST__AUTH_FAILURE_LIMIT": "20/minute",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "shared"), str(ROOT),
                                          os.environ.get("PYTHONPATH", "")])}
    log = Path(f"/tmp/attack-ingest-{os.getpid()}.log")
    proc = await asyncio.to_thread(_spawn_ingest, env, log)
    try:
        async with httpx.AsyncClient(timeout=2) as client:
            for _ in range(240):
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200:
                        break
                if proc.poll() is not None:
                    raise RuntimeError(f"ingest exited with {proc.returncode}; see {log}")
                await asyncio.sleep(0.5)
        yield port, new.token, proc.pid
    finally:
        proc.terminate()
        await asyncio.to_thread(proc.wait, 30)
        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


# --------------------------------------------------------------------------- the agent side


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _read_request(reader: asyncio.StreamReader) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    await reader.readexactly(length)


@functools.cache
def _bomb() -> bytes:
    """1 GiB of ``a`` as one gzip member (~1 MB), compressed in 1 MiB steps (the attacker's
    memory stays small)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"a" * (1024 * 1024)
    return b"".join([*(z.compress(block) for _ in range(1024)), z.flush()])


def hostile(kind: str) -> Handler:
    """A hostile agent endpoint's connection handler."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if kind == "hang_before_reading":
                await asyncio.sleep(3600)
            await _read_request(reader)
            if kind == "hang_after_request":
                await asyncio.sleep(3600)
            elif kind == "hang_after_headers":
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                             b"content-length: 100\r\n\r\n")
                await writer.drain()
                await asyncio.sleep(3600)
            elif kind == "stream_forever":
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n"
                             b"transfer-encoding: chunked\r\n\r\n")
                while True:
                    writer.write(b"5\r\nhello\r\n")
                    await writer.drain()
                    await asyncio.sleep(0.01)
            elif kind == "sse_forever":
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                             b"transfer-encoding: chunked\r\n\r\n")
                chunk = b'data: {"choices":[{"delta":{"content":"a"}}]}\n\n'
                frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
                while True:
                    writer.write(frame)
                    await writer.drain()
                    await asyncio.sleep(0.005)
            elif kind == "gigabytes_declared":
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n"
                             b"content-length: 4000000000\r\n\r\n")
                block = b"a" * 65536
                for _ in range(61036):
                    writer.write(block)
                    await writer.drain()
            elif kind == "gigabytes_chunked":
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n"
                             b"transfer-encoding: chunked\r\n\r\n")
                block = b"a" * 65536
                frame = f"{len(block):x}\r\n".encode() + block + b"\r\n"
                for _ in range(61036):
                    writer.write(frame)
                    await writer.drain()
            elif kind == "gzip_bomb":
                bomb = _bomb()
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n"
                             b"content-encoding: gzip\r\n"
                             + f"content-length: {len(bomb)}\r\n\r\n".encode() + bomb)
                await writer.drain()
            elif kind == "garbage_status":
                writer.write(b"HTTP/1.1 2OO OK\r\n\r\n\x00\x01\x02")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    return handle


AGENT_KINDS = {
    "hang_before_reading": "accepts the connection, never reads the request",
    "hang_after_request": "reads the request, never answers",
    "hang_after_headers": "sends headers (Content-Length 100), never the body",
    "stream_forever": "chunked text, 5 bytes every 10 ms, never ends",
    "sse_forever": "an SSE stream of one-token deltas that never sends [DONE]",
    "gigabytes_declared": "Content-Length 4 GB, then streams it",
    "gigabytes_chunked": "4 GB chunked, no Content-Length",
    "gzip_bomb": "1 GB of 'a' gzip-compressed to ~1 MB",
    "garbage_status": "a status line that is not HTTP",
}


async def agent_tries(bound_s: float, timeout_s: float) -> list[Try]:
    out = []
    _bomb()  # built before anything is measured
    for kind, what in AGENT_KINDS.items():
        server = await asyncio.start_server(hostile(kind), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        t0 = time.monotonic()
        try:
            async with AgentClient(f"http://127.0.0.1:{port}/", timeout_s=timeout_s,
                                   retries=1, backoff_s=0.1) as client:
                reply = await asyncio.wait_for(client.ask("What is the leave policy?"),
                                               bound_s)
            outcome, held = f"answered {len(reply.text)} chars", False
        except AgentCallError as exc:
            outcome, held = f"{exc.failure.kind}: {str(exc.failure.message)[:90]}", True
        except TimeoutError:
            outcome, held = f"still running after {bound_s:.0f} s", False
        except Exception as exc:  # anything else would end an evaluator job unexpectedly
            outcome, held = f"raised {type(exc).__name__}: {exc}", False
        dt = time.monotonic() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        outcome += f"; peak RSS {rss0:.0f} -> {peak:.0f} MB"
        held = held and dt <= 2 * timeout_s + 2 and peak - rss0 < 50
        out.append(Try("evaluator", kind, what, outcome, dt, held))
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 2)
    return out


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("ingest", "agent"))
    parser.add_argument("--bound", type=float, default=40.0, help="seconds per try at most")
    parser.add_argument("--agent-timeout", type=float, default=3.0,
                        help="the agent client's per-attempt timeout, s")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    tries: list[Try] = []
    if args.only in (None, "agent"):
        tries += await agent_tries(args.bound, args.agent_timeout)
    if args.only in (None, "ingest"):
        async with ingest_process(args.bound) as (port, token, pid):
            tries += await ingest_tries(port, token, pid, args.bound)
    for t in tries:
        if args.json:
            print(json.dumps(t.__dict__))
        print(f"{'held ' if t.held else 'BROKE'} {t.target:9} {t.name:28} {t.seconds:6.2f} s  "
              f"{t.sent} -> {t.outcome}", file=sys.stderr)
    return 0 if all(t.held for t in tries) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
