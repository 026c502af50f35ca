"""The agent client against hostile compressed replies
(``docs/operations.md#tried-as-an-attacker``): a gzip bomb (1 GiB of ``a`` in ~1 MB) is
refused as ``too_large`` having decoded no more than the cap (httpx inflated each received
chunk whole: ~64 MB per 64 KB read); a gzip or deflate answer still reads, also with stacked
codings ("gzip, gzip", RFC 9110 section 8.4: each layer decoded in reverse order, every layer
under the cap, a bomb nested in a second layer too); an encoding not asked for, or a truncated
stream, is ``bad_content_encoding``. The agents are real HTTP servers on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import tracemalloc
import zlib
from collections.abc import AsyncIterator

import pytest

from evalloop.adapters.agent_client import (
    MAX_BODY_BYTES,
    MAX_CODINGS,
    AgentCallError,
    AgentClient,
)

REPLY = json.dumps({"choices": [{"message": {"role": "assistant",
                                             "content": "Full-time staff get 25 days."}}]})


@functools.cache
def bomb() -> bytes:
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"a" * (1024 * 1024)
    return b"".join([*(z.compress(block) for _ in range(1024)), z.flush()])


def gzip_of(data: bytes) -> bytes:
    z = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return z.compress(data) + z.flush()


def raw_deflate(data: bytes) -> bytes:
    z = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return z.compress(data) + z.flush()


@contextlib.asynccontextmanager
async def agent(body: bytes, encoding: str,
                ctype: str = "application/json") -> AsyncIterator[str]:
    """An agent answering every request with ``body`` labelled ``Content-Encoding``."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            await reader.readexactly(length)
            writer.write(f"HTTP/1.1 200 OK\r\ncontent-type: {ctype}\r\ncontent-encoding: "
                         f"{encoding}\r\ncontent-length: {len(body)}\r\nconnection: close\r\n"
                         "\r\n".encode() + body)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    finally:
        server.close()


@pytest.mark.parametrize(("encoding", "layers"), [("gzip", 1), ("gzip, gzip", 2)])
async def test_a_gzip_bomb_is_too_large_without_inflating_it(encoding: str, layers: int) -> None:
    payload = bomb()  # 1 GiB of "a", gzipped
    assert len(payload) < 1_100_000
    if layers == 2:
        payload = gzip_of(payload)  # a bomb inside a second gzip layer
    async with agent(payload, encoding, "text/plain") as url:
        async with AgentClient(url, timeout_s=10, retries=0) as client:
            tracemalloc.start()
            try:
                with pytest.raises(AgentCallError) as caught:
                    await client.ask("What is the leave policy?")
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
    failure = caught.value.failure
    assert (failure.kind, failure.message) == (
        "too_large", f"reply over the {MAX_BODY_BYTES}-byte cap; reading stopped")
    assert peak < 4 * MAX_BODY_BYTES  # the cap plus what was received, not a gigabyte


@pytest.mark.parametrize(("encoding", "encode"), [
    ("gzip", gzip_of), ("deflate", zlib.compress), ("deflate", raw_deflate),
])
async def test_compressed_answers_still_read(encoding: str, encode: object) -> None:
    assert callable(encode)
    async with agent(encode(REPLY.encode()), encoding) as url:
        async with AgentClient(url, timeout_s=10, retries=0) as client:
            reply = await client.ask("What is the leave policy?")
    assert (reply.text, reply.format) == ("Full-time staff get 25 days.", "openai")


@pytest.mark.parametrize(("encoding", "encode"), [
    ("gzip, gzip", lambda b: gzip_of(gzip_of(b))),
    ("GZIP,gzip", lambda b: gzip_of(gzip_of(b))),
    ("deflate, gzip", lambda b: gzip_of(zlib.compress(b))),
    ("gzip, deflate", lambda b: zlib.compress(gzip_of(b))),
    ("identity, gzip", gzip_of),
    ("x-gzip, gzip, gzip", lambda b: gzip_of(gzip_of(gzip_of(b)))),
])
async def test_stacked_codings_are_decoded_layer_by_layer(encoding: str, encode: object) -> None:
    assert callable(encode)
    async with agent(encode(REPLY.encode()), encoding) as url:
        async with AgentClient(url, timeout_s=10, retries=0) as client:
            reply = await client.ask("What is the leave policy?")
    assert (reply.text, reply.format, reply.attempts) == (
        "Full-time staff get 25 days.", "openai", 1)


async def test_an_outer_layer_that_decodes_past_its_cap_is_too_large() -> None:
    # the outer gzip holds 3 MiB of zeros: the outer layer stops at its cap (the body cap plus
    # 1/16 plus 1 KiB: compressed data may be a little larger than what it holds) before the
    # inner layer reads any of it
    payload = gzip_of(b"\0" * (3 * 1024 * 1024))
    async with agent(payload, "deflate, gzip") as url:
        async with AgentClient(url, timeout_s=10, retries=0) as client:
            with pytest.raises(AgentCallError) as caught:
                await client.ask("What is the leave policy?")
    failure = caught.value.failure
    assert (failure.kind, failure.message, failure.http_status) == (
        "too_large", "a gzip layer of the reply decoded to over 2229248 bytes; reading stopped",
        200)


@pytest.mark.parametrize(("body", "encoding", "message"), [
    (REPLY.encode(), "br", "body does not match its Content-Encoding: 'br' is not gzip or "
                           "deflate (the encodings asked for)"),
    (gzip_of(REPLY.encode())[:-12], "gzip",
     "body does not match its Content-Encoding: the compressed stream is truncated"),
    (b"this is not gzip at all", "gzip", "body does not match its Content-Encoding: Error -3 "
                                         "while decompressing data: incorrect header check"),
    (gzip_of(REPLY.encode()), "gzip, br",
     "body does not match its Content-Encoding: 'br' (in 'gzip, br') is not gzip or deflate (the "
     "encodings asked for)"),
    (gzip_of(REPLY.encode()), "x-foo, gzip",
     "body does not match its Content-Encoding: 'x-foo' (in 'x-foo, gzip') is not gzip or "
     "deflate (the encodings asked for)"),
    (gzip_of(REPLY.encode()), "gzip, gzip",
     "body does not match its Content-Encoding: Error -3 while decompressing data: incorrect "
     "header check"),
    (gzip_of(gzip_of(REPLY.encode())[:-12]), "gzip, gzip",
     "body does not match its Content-Encoding: the compressed stream is truncated"),
    (gzip_of(REPLY.encode()), ", ".join(["gzip"] * (MAX_CODINGS + 1)),
     "Content-Encoding 'gzip, gzip, gzip, gzip, gzip' stacks 5 codings; at most 4 are decoded"),
])
async def test_bodies_that_are_not_what_they_say_are_bad_content_encoding(
    body: bytes, encoding: str, message: str
) -> None:
    async with agent(body, encoding) as url:
        async with AgentClient(url, timeout_s=10, retries=0) as client:
            with pytest.raises(AgentCallError) as caught:
                await client.ask("What is the leave policy?")
    failure = caught.value.failure
    assert (failure.kind, failure.message, failure.attempts) == (
        "bad_content_encoding", message, 1)
