"""API keys of the ingest service: token format, hashing and the agent scope (pure logic).

Rules: ``docs/security.md#api-keys``. A token is ``evl_<key_id>_<secret>``:

* ``key_id``: 12 lowercase hex characters, stored in clear (``keys list`` shows it; the lookup
  uses it);
* ``secret``: 32 random bytes, URL-safe base64 (43 characters) from :mod:`secrets`.

Only SHA-256 of the whole token is stored. A slow password hash (scrypt, argon2) protects
*guessable* secrets; 256 random bits cannot be guessed, so SHA-256 loses nothing and keeps a
request's check at about a microsecond. The stored digest is compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "MAX_TOKEN_CHARS",
    "ApiKey",
    "NewToken",
    "forbidden_agents",
    "hash_token",
    "new_token",
    "parse_token",
    "token_matches",
]

#: Longest token accepted before any lookup (the real ones have 61 characters).
MAX_TOKEN_CHARS = 128
_TOKEN = re.compile(r"evl_([0-9a-f]{12})_([A-Za-z0-9_-]{43})")


@dataclass(frozen=True, slots=True)
class NewToken:
    """A freshly made token: show ``token`` once, store ``key_id`` and ``sha256``."""

    key_id: str
    token: str
    sha256: bytes


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A stored key (never its token).

    Attributes:
        key_id: the public part of the token.
        name: what the key is for (free text chosen at creation).
        agent_ids: the agents whose events the key may send; ``None`` = every agent.
        rate_limit: a ``limits`` rate such as ``"100/second"``; ``None`` = the setting.
        revoked: the key was revoked (refused from then on).
    """

    key_id: str
    name: str
    agent_ids: frozenset[str] | None
    rate_limit: str | None
    revoked: bool

    def allows(self, agent_id: str) -> bool:
        """Whether this key may send events of ``agent_id``."""
        return self.agent_ids is None or agent_id in self.agent_ids


def hash_token(token: str) -> bytes:
    """SHA-256 (32 bytes) of ``token`` as UTF-8."""
    return hashlib.sha256(token.encode()).digest()


def new_token() -> NewToken:
    """A new random token (``secrets``: 48 bits of key id, 256 bits of secret)."""
    key_id = secrets.token_hex(6)
    token = f"evl_{key_id}_{secrets.token_urlsafe(32)}"
    return NewToken(key_id=key_id, token=token, sha256=hash_token(token))


def parse_token(token: str) -> str | None:
    """The ``key_id`` of a well-formed token, ``None`` for anything else (no lookup needed)."""
    if len(token) > MAX_TOKEN_CHARS:
        return None
    m = _TOKEN.fullmatch(token)
    return m.group(1) if m else None


def token_matches(token: str, stored_sha256: bytes) -> bool:
    """Constant-time comparison of ``token``'s digest with the stored one."""
    return hmac.compare_digest(hash_token(token), stored_sha256)


def forbidden_agents(key: ApiKey, agent_ids: Iterable[str]) -> list[str]:
    """The distinct agent ids of ``agent_ids`` that ``key`` may not send, sorted."""
    if key.agent_ids is None:
        return []
    return sorted({a for a in agent_ids if a not in key.agent_ids})
