"""Ingest as a stranger would try it: no key, wrong key, revoked key, another agent's key, bursts
beyond the rate limit, guessing keys, huge headers. Real PostgreSQL holds the keys; the bus is the
in-process one (no Kafka needed to authenticate); the last tests go through a real uvicorn socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import asyncpg
import httpx
import pytest
import uvicorn

from evalloop.adapters.bus import InProcessBus
from evalloop.adapters.http_server import http_options
from evalloop.adapters.key_store import create_key, list_keys, revoke_key
from evalloop.core.apikeys import new_token
from evalloop.errors import ConfigError
from evalloop.settings import IngestSettings, Settings
from evalloop.topics import Topics
from services.ingest.app import build_http_app

TOPIC = Topics().feedback_events
EID = "00000000-0000-0000-0000-{:012d}"


def event(n: int, agent: str = "hr-agent", **extra: Any) -> dict[str, Any]:
    return {"event_type": "user_rating", "event_id": EID.format(n), "agent_id": agent,
            "conversation_id": "c1", "turn_id": f"t{n}", "occurred_at": "2025-03-01T12:00:00Z",
            "thumbs": "down", **extra}


def ingest_settings(**over: Any) -> Settings:
    base: dict[str, Any] = {"key_cache_s": 0, "rate_limit": "1000/second",
                            "auth_failure_limit": "1000/minute"}
    return Settings(ingest=IngestSettings(**(base | over)))


@contextlib.asynccontextmanager
async def ingest(pool: asyncpg.Pool, settings: Settings | None = None,
                 bus: InProcessBus | None = None) -> AsyncIterator[httpx.AsyncClient]:
    app = build_http_app(settings or ingest_settings(), bus=bus or InProcessBus(), pool=pool)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://ingest") as c:
        yield c


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# ------------------------------------------------------------------ 401


async def test_no_key_is_401_and_nothing_published(pool: asyncpg.Pool) -> None:
    bus = InProcessBus()
    async with ingest(pool, bus=bus) as c:
        r = await c.post("/v1/events", json=event(1))
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == 'Bearer realm="evalloop-ingest"'
    assert r.json() == {
        "error": "unauthorized",
        "message": "expected an API key in 'Authorization: Bearer <token>' or 'X-API-Key: "
                   "<token>', received none (see docs/security.md#api-keys)",
    }
    assert bus.messages(TOPIC) == []


@pytest.mark.parametrize(("header", "message"), [
    ({"Authorization": "Basic dXNlcjpwYXNz"},
     "expected 'Authorization: Bearer <token>', received another scheme"),
    ({"Authorization": "Bearer not-a-key"}, "unknown API key"),
    ({"X-API-Key": "evl_0123456789ab_" + "A" * 43}, "unknown API key"),
    ({"Authorization": "Bearer " + "x" * 5000},
     "expected an API key of at most 128 characters, received 5000"),
])
async def test_wrong_keys_are_401(pool: asyncpg.Pool, header: dict[str, str],
                                  message: str) -> None:
    async with ingest(pool) as c:
        r = await c.post("/v1/events", json=event(1), headers=header)
    assert r.status_code == 401
    assert r.json()["message"] == f"{message} (see docs/security.md#api-keys)"


async def test_a_real_key_id_with_a_forged_secret_is_401(pool: asyncpg.Pool) -> None:
    token, _ = await create_key(pool, "frontend", agent_ids=None)
    forged = token.token[:-4] + ("AAAA" if not token.token.endswith("AAAA") else "BBBB")
    async with ingest(pool) as c:
        r = await c.post("/v1/events", json=event(1), headers=bearer(forged))
    assert (r.status_code, r.json()["message"]) == (
        401, "unknown API key (see docs/security.md#api-keys)")


async def test_revoked_key_is_401_at_once_without_cache(pool: asyncpg.Pool) -> None:
    token, row = await create_key(pool, "frontend", agent_ids=["hr-agent"])
    async with ingest(pool) as c:
        ok = await c.post("/v1/events", json=event(1), headers=bearer(token.token))
        await revoke_key(pool, row.key_id)
        r = await c.post("/v1/events", json=event(2), headers=bearer(token.token))
    assert ok.status_code == 202
    assert r.status_code == 401
    assert r.json()["message"] == (
        f"API key {row.key_id} was revoked (see docs/security.md#api-keys)")


async def test_cached_key_is_refused_once_the_cache_expires(pool: asyncpg.Pool) -> None:
    token, row = await create_key(pool, "frontend", agent_ids=None)
    async with ingest(pool, ingest_settings(key_cache_s=0.5)) as c:
        assert (await c.post("/v1/events", json=event(1),
                             headers=bearer(token.token))).status_code == 202
        await revoke_key(pool, row.key_id)
        within = await c.post("/v1/events", json=event(2), headers=bearer(token.token))
        await asyncio.sleep(0.6)
        after = await c.post("/v1/events", json=event(3), headers=bearer(token.token))
    assert within.status_code == 202  # documented: revocation takes up to key_cache_s
    assert after.status_code == 401


# ------------------------------------------------------------------ 403


async def test_another_agents_key_is_403_naming_the_agent(pool: asyncpg.Pool) -> None:
    token, row = await create_key(pool, "who frontend", agent_ids=["covid-qa-who"])
    bus = InProcessBus()
    async with ingest(pool, bus=bus) as c:
        r = await c.post("/v1/events", json=[event(1, "covid-qa-who"), event(2, "hr-agent"),
                                              event(3, "payroll")],
                         headers=bearer(token.token))
    assert r.status_code == 403
    assert r.json() == {
        "error": "agent_not_allowed",
        "message": f"API key {row.key_id} may send events of covid-qa-who, not of hr-agent, "
                   "payroll; nothing of this batch was published",
        "agents": ["hr-agent", "payroll"],
        "event_ids": [EID.format(2), EID.format(3)],
        "key_id": row.key_id,
    }
    assert bus.messages(TOPIC) == []  # not even the allowed record


async def test_allowed_agents_pass_and_x_api_key_works(pool: asyncpg.Pool) -> None:
    token, _ = await create_key(pool, "two agents", agent_ids=["a1", "a2"])
    bus = InProcessBus()
    async with ingest(pool, bus=bus) as c:
        r = await c.post("/v1/events", json=[event(1, "a1"), event(2, "a2")],
                         headers={"X-API-Key": token.token})
    assert (r.status_code, r.json()) == (202, {"accepted": [EID.format(1), EID.format(2)]})
    assert [m.key for m in bus.messages(TOPIC)] == ["a1", "a2"]


# ------------------------------------------------------------------ 429


async def test_burst_beyond_the_keys_rate_is_429_with_retry_after(pool: asyncpg.Pool) -> None:
    token, row = await create_key(pool, "slow", agent_ids=None, rate_limit="3/minute")
    other, _ = await create_key(pool, "other", agent_ids=None)
    async with ingest(pool) as c:
        codes = [(await c.post("/v1/events", json=event(i), headers=bearer(token.token)))
                 for i in range(5)]
        unaffected = await c.post("/v1/events", json=event(9), headers=bearer(other.token))
    assert [r.status_code for r in codes] == [202, 202, 202, 429, 429]
    body = codes[3].json()
    assert body["error"] == "rate_limited" and body["limit"] == "3/minute"
    assert body["key_id"] == row.key_id
    assert 55 <= int(codes[3].headers["retry-after"]) <= 60
    assert body["message"] == (f"API key {row.key_id} sent more than 3 requests per 60 s; "
                               f"wait {codes[3].headers['retry-after']} s")
    assert unaffected.status_code == 202  # one key's burst does not starve another


async def test_default_rate_applies_to_keys_without_their_own(pool: asyncpg.Pool) -> None:
    token, _ = await create_key(pool, "default", agent_ids=None)
    async with ingest(pool, ingest_settings(rate_limit="2/minute")) as c:
        codes = [(await c.post("/v1/events", json=event(i), headers=bearer(token.token))
                  ).status_code for i in range(3)]
    assert codes == [202, 202, 429]


async def test_guessing_keys_is_throttled_per_client(pool: asyncpg.Pool) -> None:
    token, _ = await create_key(pool, "real", agent_ids=None)
    async with ingest(pool, ingest_settings(auth_failure_limit="5/minute")) as c:
        guesses = [(await c.post("/v1/events", json=event(1),
                                 headers=bearer(new_token().token))).status_code
                   for _ in range(7)]
        real = await c.post("/v1/events", json=event(1), headers=bearer(token.token))
        after = await c.post("/v1/events", json=event(2), headers=bearer("evl_bad"))
    assert guesses == [401] * 5 + [429] * 2
    # the limit is on requests WITHOUT a valid key: a valid key from the same address passes
    assert real.status_code == 202
    assert after.status_code == 429
    assert after.json()["error"] == "too_many_failed_attempts"
    assert after.json()["message"].startswith(
        "more than 5/minute requests without a valid API key from 127.0.0.1; wait ")
    assert 55 <= int(after.headers["retry-after"]) <= 60


async def test_forty_bad_keys_do_not_lock_out_a_valid_key(pool: asyncpg.Pool) -> None:
    """A proxy or NAT shared with a guesser keeps working: with the default limit
    (20/minute), 40 bad keys then a valid key from the same address -> 202."""
    token, _ = await create_key(pool, "frontend", agent_ids=None)
    async with ingest(pool, ingest_settings(auth_failure_limit="20/minute")) as c:
        bad = [(await c.post("/v1/events", json={},
                             headers=bearer(f"evl_bad{i}"))).status_code for i in range(1, 41)]
        good = await c.post("/v1/events", json=event(3), headers=bearer(token.token))
    assert bad == [401] * 20 + [429] * 20
    assert (good.status_code, good.json()) == (202, {"accepted": [EID.format(3)]})


async def test_healthz_needs_no_key(pool: asyncpg.Pool) -> None:
    async with ingest(pool) as c:
        assert (await c.get("/healthz")).status_code == 200


# ------------------------------------------------------------------ the key store


async def test_only_the_digest_is_stored(pool: asyncpg.Pool) -> None:
    token, row = await create_key(pool, "frontend", agent_ids=["b", "a", "a"],
                                  rate_limit="9/second")
    stored = await pool.fetchrow("SELECT * FROM api_keys WHERE key_id = $1", row.key_id)
    assert token.token.startswith(f"evl_{row.key_id}_") and len(token.token) == 60
    assert token.token not in str(dict(stored))
    assert bytes(stored["token_sha256"]) == token.sha256 and len(token.sha256) == 32
    assert stored["agent_ids"] == ["a", "b"]
    [listed] = await list_keys(pool)
    assert listed.as_json()["agent_ids"] == ["a", "b"] and "token" not in listed.as_json()


# ------------------------------------------------------------------ over a real socket


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_huge_headers_are_refused_by_the_server_and_it_stays_up(
    pool: asyncpg.Pool,
) -> None:
    token, _ = await create_key(pool, "real", agent_ids=None)
    port = _free_port()
    settings = ingest_settings()
    server = _Server(uvicorn.Config(build_http_app(settings, bus=InProcessBus(), pool=pool),
                                    host="127.0.0.1", port=port, log_level="critical",
                                    lifespan="off", **settings.ingest.uvicorn_limits()))
    async with asyncio.TaskGroup() as tg:
        tg.create_task(server.serve())
        while not server.started:  # noqa: ASYNC110 (uvicorn has no started event)
            await asyncio.sleep(0.01)
        try:
            base = f"http://127.0.0.1:{port}"
            huge_auth = await _outcome(base, bearer("x" * 1_000_000))
            many = await _outcome(base, {f"x-h{i}": "v" * 100 for i in range(500)})
            async with httpx.AsyncClient(base_url=base) as c:
                ok = await c.post("/v1/events", json=event(1), headers=bearer(token.token))
        finally:
            server.should_exit = True
    # h11 stops reading a head above 16 KiB that arrives in pieces: 400, or the connection is
    # closed while the client is still sending; a head that arrived whole is measured by the
    # guard (431) before any lookup
    assert huge_auth in ("400", "431", "connection closed")
    assert many == "431"
    assert ok.status_code == 202


async def _outcome(base: str, headers: dict[str, str]) -> str:
    async with httpx.AsyncClient(base_url=base) as c:
        try:
            r = await c.post("/v1/events", json=event(1), headers=headers)
        except (httpx.ReadError, httpx.RemoteProtocolError, httpx.WriteError):
            return "connection closed"
    return str(r.status_code)


# ------------------------------------------------- client address (docs/security.md#client-address)


@contextlib.asynccontextmanager
async def served(pool: asyncpg.Pool, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """Ingest behind a real uvicorn socket on 127.0.0.1, started with the options every
    evalloop entry point uses (``http_options("ingest", ...)``)."""
    port = _free_port()
    server = _Server(uvicorn.Config(build_http_app(settings, bus=InProcessBus(), pool=pool),
                                    host="127.0.0.1", port=port, log_level="critical",
                                    lifespan="off", **http_options("ingest", settings)))
    async with asyncio.TaskGroup() as tg:
        tg.create_task(server.serve())
        while not server.started:  # noqa: ASYNC110 (uvicorn has no started event)
            await asyncio.sleep(0.01)
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as c:
                yield c
        finally:
            server.should_exit = True


def guess(n: int, forwarded_for: str | None = None) -> dict[str, str]:
    headers = bearer(f"evl_000000000000_guess{n}")
    if forwarded_for is not None:
        headers["X-Forwarded-For"] = forwarded_for
    return headers


def locked_message(client: str, response: httpx.Response, limit: str) -> str:
    return (f"more than {limit} requests without a valid API key from {client}; "
            f"wait {response.headers['retry-after']} s")


async def test_forged_forwarded_for_from_loopback_buys_no_fresh_budget(
    pool: asyncpg.Pool,
) -> None:
    token, _ = await create_key(pool, "real", agent_ids=None)
    settings = ingest_settings(auth_failure_limit="20/minute")  # no trusted proxy (default)
    async with served(pool, settings) as c:
        guesses = [await c.post("/v1/events", json={}, headers=guess(i, f"10.9.{i}.1"))
                   for i in range(1, 26)]
        valid = await c.post("/v1/events", json=event(1),
                             headers=bearer(token.token) | {"X-Forwarded-For": "10.9.99.1"})
    assert [r.status_code for r in guesses] == [401] * 20 + [429] * 5
    last = guesses[-1]
    assert 1 <= int(last.headers["retry-after"]) <= 60
    assert last.json() == {"error": "too_many_failed_attempts",
                           "message": locked_message("127.0.0.1", last, "20/minute")}
    # a valid key from the locked-out address is admitted (docs/security.md#rate-limits)
    assert (valid.status_code, valid.json()) == (202, {"accepted": [EID.format(1)]})


async def test_a_trusted_proxy_names_the_client_read_from_the_right(pool: asyncpg.Pool) -> None:
    token, _ = await create_key(pool, "real", agent_ids=None)
    settings = ingest_settings(auth_failure_limit="3/minute", trusted_proxies=["127.0.0.0/8"])
    async with served(pool, settings) as c:
        async def status(headers: dict[str, str]) -> int:
            return (await c.post("/v1/events", json={}, headers=headers)).status_code

        a = [await status(guess(i, "10.9.1.1")) for i in range(4)]
        b = await status(guess(10, "10.9.2.1"))  # another client behind the proxy: own budget
        # the client forges a first entry, the proxy appends the address it saw: the
        # rightmost address that is not a trusted proxy is the client
        forged = await c.post("/v1/events", json={}, headers=guess(11, "10.9.2.1, 10.9.1.1"))
        # a chain of two trusted proxies: the client is the first untrusted from the right
        two_hops = await c.post("/v1/events", json={},
                                headers=guess(12, "10.9.1.1, 127.0.0.2"))
        proxy_itself = await status(guess(13))  # no header: the proxy's own address counts
        valid = await c.post("/v1/events", json=event(2),
                             headers=bearer(token.token) | {"X-Forwarded-For": "10.9.1.1"})
    assert a == [401, 401, 401, 429]
    assert b == 401
    assert forged.status_code == 429
    assert forged.json()["message"] == locked_message("10.9.1.1", forged, "3/minute")
    assert two_hops.status_code == 429
    assert two_hops.json()["message"] == locked_message("10.9.1.1", two_hops, "3/minute")
    assert proxy_itself == 401
    assert (valid.status_code, valid.json()) == (202, {"accepted": [EID.format(2)]})


def test_trusted_proxies_setting() -> None:
    assert IngestSettings().trusted_proxies == []
    assert IngestSettings(trusted_proxies="10.0.0.5, 10.1.0.0/16,::1").trusted_proxies == [
        "10.0.0.5", "10.1.0.0/16", "::1"]
    assert IngestSettings(trusted_proxies='["10.0.0.5"]').trusted_proxies == ["10.0.0.5"]
    with pytest.raises(ConfigError) as star:
        IngestSettings(trusted_proxies=["*"])
    assert str(star.value) == (
        "ingest.trusted_proxies: expected IP addresses or networks such as '10.0.0.5' or "
        "'10.1.0.0/16', got '*' ('*' does not appear to be an IPv4 or IPv6 network)")
    with pytest.raises(ConfigError) as host_bits:
        IngestSettings(trusted_proxies=["10.0.0.1/8"])
    assert str(host_bits.value) == (
        "ingest.trusted_proxies: expected IP addresses or networks such as '10.0.0.5' or "
        "'10.1.0.0/16', got '10.0.0.1/8' (10.0.0.1/8 has host bits set)")
    # uvicorn itself must not rewrite the client: it would trust any loopback sender
    assert http_options("ingest", Settings())["proxy_headers"] is False
    assert IngestSettings().uvicorn_limits()["proxy_headers"] is False
