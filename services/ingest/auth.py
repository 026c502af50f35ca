"""Ingest's guard: API keys, agent scopes and rate limits (``docs/security.md#api-keys``).

Order of checks for ``POST /v1/events`` (the body is not read before the first three pass):

0. headers above ``ingest.max_header_bytes`` -> ``431 headers_too_large`` (the HTTP server's
   parser bounds only a head that arrives in pieces);
1. the key: ``Authorization: Bearer <token>`` (or ``X-API-Key: <token>``). Missing, malformed,
   unknown or revoked -> ``401`` with ``WWW-Authenticate: Bearer``;
2. once a client address has sent more than ``ingest.auth_failure_limit`` such requests
   (moving window), its requests without a valid key get ``429 too_many_failed_attempts``
   instead, so keys cannot be guessed at speed; a request carrying a valid key is never
   refused by this limit (a proxy or NAT shared with a guesser keeps working;
   ``docs/security.md#rate-limits``). The client address is the socket's peer;
   ``X-Forwarded-For`` counts only when that peer is one of ``ingest.trusted_proxies``
   (``docs/security.md#client-address``), so a forged header cannot buy a fresh budget;
3. the key's rate (its own ``rate_limit`` or ``ingest.rate_limit``; ``limits`` moving window,
   one request = one hit) -> ``429 rate_limited`` with ``Retry-After`` seconds;
4. after parsing: every record's ``agent_id`` must be in the key's allowlist, else
   ``403 agent_not_allowed`` naming the agents and event ids; nothing of the batch is
   published.

Looked-up keys are cached ``ingest.key_cache_s`` seconds in a bounded LRU/TTL cache, keyed by
the token's digest (tokens are never kept), so a revocation takes effect within that time.

A lookup has ``ingest.key_lookup_timeout_s`` seconds (a hung server counts as unreachable).
While PostgreSQL cannot be reached, a key whose last successful lookup found it active at most
``ingest.key_stale_if_error_s`` seconds ago is still admitted (Kafka takes the events; the
recorder stores them once PostgreSQL is back); a key last seen revoked stays refused (``401``);
any other key gets ``503 key_store_unavailable`` (``docs/security.md#when-postgresql-is-down``).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Sequence
from typing import Any

import asyncpg
from cachetools import TTLCache
from limits import RateLimitItem, parse
from limits.aio.strategies import MovingWindowRateLimiter
from limits.storage import storage_from_string
from starlette.requests import Request
from starlette.responses import JSONResponse

from evalloop.adapters.key_store import lookup_key
from evalloop.core.apikeys import MAX_TOKEN_CHARS, ApiKey, forbidden_agents, hash_token
from evalloop.errors import StorageError
from evalloop.events import FeedbackEvent
from evalloop.settings import IngestSettings

__all__ = ["IngestGuard"]

log = logging.getLogger(__name__)

_DOC = "docs/security.md#api-keys"
_DOWN_DOC = "docs/security.md#when-postgresql-is-down"
_MISSING: Any = object()
#: API key lookups that may wait for a slow PostgreSQL at once (beyond: answered as unreachable).
_MAX_PENDING = 64


def _deny(status: int, code: str, message: str, headers: dict[str, str] | None = None,
          **extra: Any) -> JSONResponse:
    return JSONResponse({"error": code, "message": message, **extra}, status_code=status,
                        headers=headers)


def _unauthorized(message: str) -> JSONResponse:
    return _deny(401, "unauthorized", message + f" (see {_DOC})",
                 headers={"WWW-Authenticate": 'Bearer realm="evalloop-ingest"'})


def _presented_token(request: Request) -> str | None:
    auth = request.headers.get("authorization")
    if auth is not None:
        scheme, _, value = auth.partition(" ")
        return value.strip() if scheme.lower() == "bearer" else ""
    return request.headers.get("x-api-key")


class IngestGuard:
    """API-key authentication, per-key rate limits and agent scopes for ingest.

    Args:
        settings: ``ingest`` settings (rates, cache, limiter storage).
        pool: PostgreSQL pool holding ``api_keys``; may be set later (:attr:`pool`) when the
            app's lifespan opens it.
    """

    def __init__(self, settings: IngestSettings, pool: asyncpg.Pool | None = None) -> None:
        """Build the limiter (``settings.rate_limit_storage``) and the key cache."""
        self.settings = settings
        self.pool = pool
        self._limiter = MovingWindowRateLimiter(storage_from_string(settings.rate_limit_storage))
        self._default_rate = parse(settings.rate_limit)
        self._failure_rate = parse(settings.auth_failure_limit)
        self._rates: dict[str, RateLimitItem] = {}
        self._cache: TTLCache[bytes, ApiKey | None] | None = (
            TTLCache(maxsize=settings.key_cache_size, ttl=settings.key_cache_s)
            if settings.key_cache_s > 0 else None
        )
        # Keys as PostgreSQL last showed them (active or revoked), each kept
        # key_stale_if_error_s seconds after that lookup: the answer while the store is down.
        self._last_seen: TTLCache[bytes, ApiKey] | None = (
            TTLCache(maxsize=settings.key_cache_size, ttl=settings.key_stale_if_error_s)
            if settings.key_stale_if_error_s > 0 else None
        )
        self._store_down = False
        self._pending: dict[bytes, asyncio.Task[ApiKey | None]] = {}

    async def _fetch(self, digest: bytes, token: str) -> ApiKey | None:
        """One lookup in PostgreSQL; its answer refreshes both caches."""
        assert self.pool is not None
        key = await lookup_key(self.pool, token)
        if self._store_down:
            self._store_down = False
            log.info("ingest: the API key store answers again")
        if self._cache is not None:
            self._cache[digest] = key
        if self._last_seen is not None:
            if key is not None:
                self._last_seen[digest] = key  # (re)starts its stale window
            else:
                self._last_seen.pop(digest, None)
        return key

    def _start_fetch(self, digest: bytes, token: str) -> asyncio.Task[ApiKey | None]:
        """The lookup of ``digest`` in flight, or a new one. A lookup is never cancelled: on a
        hung server, cancelling an asyncpg query waits for the server as well, so a slow lookup
        goes on in the background (at most ``_MAX_PENDING`` of them) and fills the caches when
        it ends."""
        task = self._pending.get(digest)
        if task is not None:
            return task
        if len(self._pending) >= _MAX_PENDING:
            raise StorageError(f"{len(self._pending)} API key lookups are still waiting for "
                               "PostgreSQL")
        task = asyncio.create_task(self._fetch(digest, token))
        self._pending[digest] = task

        def finished(t: asyncio.Task[ApiKey | None]) -> None:
            if self._pending.get(digest) is t:
                del self._pending[digest]
            if not t.cancelled():
                t.exception()  # retrieved: a failure is answered by the waiting request

        task.add_done_callback(finished)
        return task

    async def _lookup(self, token: str) -> ApiKey | None:
        """The key ``token`` belongs to (``None``: unknown); served from the last lookup while
        the store is down or slower than ``key_lookup_timeout_s`` (see the module's docstring).

        Raises:
            StorageError: the store cannot be reached and the key was not seen active or
                revoked within ``key_stale_if_error_s`` seconds.
        """
        digest = hash_token(token)
        if self._cache is not None:
            found = self._cache.get(digest, _MISSING)
            if found is not _MISSING:
                return found  # type: ignore[no-any-return]
        try:
            if self.pool is None:
                raise StorageError("the API key store is not connected yet")
            task = self._start_fetch(digest, token)
            limit = self.settings.key_lookup_timeout_s
            done, _ = await asyncio.wait({task}, timeout=limit)
            if not done:  # a hung server must not hold requests
                raise StorageError(f"looking up an API key took longer than {limit:g} s")
            return task.result()
        except StorageError as exc:
            if not self._store_down:
                self._store_down = True
                stale = self.settings.key_stale_if_error_s
                log.warning("ingest: the API key store cannot be reached (%s); %s (%s)", exc,
                            f"admitting keys verified in the last {stale:g} s" if stale > 0
                            else "answering 503 to keys not in the key cache", _DOWN_DOC)
            seen = self._last_seen.get(digest) if self._last_seen is not None else None
            if seen is None:
                raise
            return seen

    def _rate_for(self, key: ApiKey) -> RateLimitItem:
        if key.rate_limit is None:
            return self._default_rate
        rate = self._rates.get(key.rate_limit)
        if rate is None:
            rate = self._rates[key.rate_limit] = parse(key.rate_limit)
        return rate

    async def _retry_after(self, rate: RateLimitItem, *ids: str) -> str:
        stats = await self._limiter.get_window_stats(rate, *ids)
        return str(max(1, math.ceil(stats.reset_time - time.time())))

    async def _failed(self, client: str, message: str) -> JSONResponse:
        await self._limiter.hit(self._failure_rate, "auth-failure", client)
        return _unauthorized(message)

    async def admit(self, request: Request) -> ApiKey | JSONResponse:
        """The caller's key, or the ``401``/``429``/``503`` answer to send instead.

        Never reads the body.
        """
        head = sum(len(k) + len(v) + 4 for k, v in request.headers.raw)
        if head > self.settings.max_header_bytes:
            return _deny(431, "headers_too_large",
                         f"expected request headers of at most {self.settings.max_header_bytes} "
                         f"bytes, received {head} bytes")
        client = request.client.host if request.client else "unknown"
        locked = not await self._limiter.test(self._failure_rate, "auth-failure", client)
        token = _presented_token(request)
        refusal: str | None = None
        if token is None:
            refusal = ("expected an API key in 'Authorization: Bearer <token>' or "
                       "'X-API-Key: <token>', received none")
        elif token == "":
            refusal = "expected 'Authorization: Bearer <token>', received another scheme"
        elif len(token) > MAX_TOKEN_CHARS:
            refusal = (f"expected an API key of at most {MAX_TOKEN_CHARS} characters, "
                       f"received {len(token)}")
        key: ApiKey | None = None
        if refusal is None and token is not None:
            try:
                key = await self._lookup(token)
            except StorageError:
                stale = self.settings.key_stale_if_error_s
                unseen = (f" and this key was not verified in the last {stale:g} s"
                          if stale > 0 else "")
                return _deny(503, "key_store_unavailable",
                             f"the API key store (PostgreSQL) cannot be reached{unseen}; send "
                             f"again later (see {_DOWN_DOC})", headers={"Retry-After": "5"})
            if key is None:
                refusal = "unknown API key"
            elif key.revoked:
                refusal = f"API key {key.key_id} was revoked"
        if refusal is not None or key is None:
            if locked:  # a valid key is never refused here: the limit is on requests without
                wait = await self._retry_after(self._failure_rate, "auth-failure", client)
                return _deny(
                    429, "too_many_failed_attempts",
                    f"more than {self.settings.auth_failure_limit} requests without a valid API "
                    f"key from {client}; wait {wait} s", headers={"Retry-After": wait},
                )
            return await self._failed(client, refusal or "unknown API key")
        rate = self._rate_for(key)
        if not await self._limiter.hit(rate, "key", key.key_id):
            wait = await self._retry_after(rate, "key", key.key_id)
            return _deny(
                429, "rate_limited",
                f"API key {key.key_id} sent more than {rate.amount} requests per "
                f"{rate.get_expiry()} s; wait {wait} s", headers={"Retry-After": wait},
                key_id=key.key_id, limit=str(key.rate_limit or self.settings.rate_limit),
            )
        return key

    @staticmethod
    def refuse_agents(key: ApiKey, events: Sequence[FeedbackEvent]) -> JSONResponse | None:
        """``403 agent_not_allowed`` when a record's agent is outside ``key``'s allowlist
        (naming each such agent and up to 100 of the refused records' ``event_id``s), else
        ``None``."""
        denied = forbidden_agents(key, (e.agent_id for e in events))
        if not denied:
            return None
        refused = set(denied)
        records = [str(e.event_id) for e in events if e.agent_id in refused]
        allowed = ", ".join(sorted(key.agent_ids or ()))
        return _deny(
            403, "agent_not_allowed",
            f"API key {key.key_id} may send events of {allowed}, not of "
            f"{', '.join(denied)}; nothing of this batch was published",
            agents=denied, event_ids=records[:100], key_id=key.key_id,
        )
