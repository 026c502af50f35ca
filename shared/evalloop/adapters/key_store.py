"""The ``api_keys`` table (migration 0006): create, list, revoke and look up ingest's API keys.

Rules: ``docs/security.md#api-keys``. Tokens never reach this module's storage: only their
SHA-256 (:mod:`evalloop.core.apikeys`). asyncpg errors become :class:`StorageError`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from evalloop.adapters.monitor_store import storage_errors
from evalloop.core.apikeys import ApiKey, NewToken, new_token, parse_token, token_matches

__all__ = ["KeyRow", "create_key", "list_keys", "lookup_key", "revoke_key"]


@dataclass(frozen=True, slots=True)
class KeyRow:
    """One key as ``evalloop keys list`` shows it (no token, no digest).

    Attributes:
        agent_ids: sorted allowed agents; ``None`` = every agent.
        rate_limit: the key's own rate (``limits`` notation) or ``None`` = the setting.
        created_at / revoked_at: UTC; ``revoked_at`` None while the key is active.
    """

    key_id: str
    name: str
    agent_ids: list[str] | None
    rate_limit: str | None
    created_at: datetime
    revoked_at: datetime | None

    def as_json(self) -> dict[str, Any]:
        """JSON-ready dict (times as ISO 8601 UTC)."""
        return {
            "key_id": self.key_id, "name": self.name, "agent_ids": self.agent_ids,
            "rate_limit": self.rate_limit, "created_at": self.created_at.isoformat(),
            "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None,
        }


def _row(r: Any) -> KeyRow:
    agents = r["agent_ids"]
    return KeyRow(
        key_id=r["key_id"], name=r["name"],
        agent_ids=sorted(agents) if agents is not None else None,
        rate_limit=r["rate_limit"], created_at=r["created_at"], revoked_at=r["revoked_at"],
    )


async def create_key(
    pool: asyncpg.Pool,
    name: str,
    *,
    agent_ids: Iterable[str] | None,
    rate_limit: str | None = None,
) -> tuple[NewToken, KeyRow]:
    """Make a new key and store its digest.

    Args:
        name: what the key is for (shown by ``keys list``).
        agent_ids: the agents it may send events for; ``None`` = every agent.
        rate_limit: ``limits`` notation (``"50/second"``); ``None`` = ``ingest.rate_limit``.

    Returns:
        The token (show it once; it is not stored) and the stored row.

    Raises:
        StorageError: PostgreSQL failed.
    """
    token = new_token()
    agents = sorted(set(agent_ids)) if agent_ids is not None else None
    with storage_errors("creating an API key"):
        r = await pool.fetchrow(
            "INSERT INTO api_keys (key_id, name, token_sha256, agent_ids, rate_limit)"
            " VALUES ($1, $2, $3, $4, $5) RETURNING *",
            token.key_id, name, token.sha256, agents, rate_limit,
        )
    return token, _row(r)


async def list_keys(pool: asyncpg.Pool, *, include_revoked: bool = True) -> list[KeyRow]:
    """Every key, oldest first (revoked ones too unless ``include_revoked`` is False).

    Raises:
        StorageError: PostgreSQL failed.
    """
    where = "" if include_revoked else " WHERE revoked_at IS NULL"
    with storage_errors("listing API keys"):
        rows = await pool.fetch(f"SELECT * FROM api_keys{where} ORDER BY created_at, key_id")
    return [_row(r) for r in rows]


async def revoke_key(pool: asyncpg.Pool, key_id: str) -> KeyRow | None:
    """Revoke ``key_id`` (idempotent: a revoked key keeps its first ``revoked_at``).

    Returns:
        The key's row, or ``None`` when no key has that id.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with storage_errors("revoking an API key"):
        r = await pool.fetchrow(
            "UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())"
            " WHERE key_id = $1 RETURNING *",
            key_id,
        )
    return _row(r) if r is not None else None


async def lookup_key(pool: asyncpg.Pool, token: str) -> ApiKey | None:
    """The key a presented ``token`` belongs to, or ``None`` for a malformed or unknown token
    (or a digest mismatch). A revoked key is returned with ``revoked=True``.

    Raises:
        StorageError: PostgreSQL failed.
    """
    key_id = parse_token(token)
    if key_id is None:
        return None
    with storage_errors("looking up an API key"):
        r = await pool.fetchrow("SELECT * FROM api_keys WHERE key_id = $1", key_id)
    if r is None or not token_matches(token, bytes(r["token_sha256"])):
        return None
    agents = r["agent_ids"]
    return ApiKey(
        key_id=r["key_id"], name=r["name"],
        agent_ids=frozenset(agents) if agents is not None else None,
        rate_limit=r["rate_limit"], revoked=r["revoked_at"] is not None,
    )
