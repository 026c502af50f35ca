"""PostgreSQL store of the web app's users and API tokens (tables: migration ``0010``).

Passwords and tokens are checked with :mod:`evalloop.core.access`; this module only stores
and finds rows. asyncpg errors become :class:`~evalloop.errors.StorageError`; a duplicate or
unknown user is a :class:`UserError` (usage error: exit code 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import asyncpg

from evalloop.adapters.postgres import storage_errors
from evalloop.core.access import Role, check_username, hash_password, hash_token, new_token
from evalloop.core.access import verify_password as _verify
from evalloop.errors import EvalloopError

__all__ = [
    "User",
    "UserError",
    "authenticate_password",
    "authenticate_token",
    "create_user",
    "get_user",
    "issue_token",
    "list_users",
]


class UserError(EvalloopError):
    """A user name that exists already (create) or does not exist (token, lookup)."""


@dataclass(frozen=True, slots=True)
class User:
    """One ``web_users`` row (no password hash).

    Attributes:
        username: the name shown in the audit trail.
        role: viewer, reviewer or admin (``docs/web.md#access``).
        has_password: whether password sign-in is possible.
        created_at: UTC. disabled_at: UTC, or ``None`` while the user may sign in.
        tokens: active (not revoked) API tokens.
    """

    username: str
    role: Role
    has_password: bool
    created_at: datetime
    disabled_at: datetime | None = None
    tokens: int = 0


_storage = storage_errors


_USER_COLS = """u.username, u.role, u.password_hash IS NOT NULL AS has_password, u.created_at,
    u.disabled_at,
    (SELECT count(*) FROM web_tokens t WHERE t.username = u.username
       AND t.revoked_at IS NULL)::int AS tokens"""


def _user(row: asyncpg.Record) -> User:
    return User(username=row["username"], role=Role(row["role"]),
                has_password=row["has_password"], created_at=row["created_at"],
                disabled_at=row["disabled_at"], tokens=row["tokens"])


async def create_user(pool: asyncpg.Pool, username: str, role: Role,
                      password: str | None = None) -> User:
    """Create a user (with a password, or for token sign-in only).

    Raises:
        ValueError: bad user name or a password under 8 characters.
        UserError: the user exists already.
        StorageError: PostgreSQL failed.
    """
    check_username(username)
    hashed = hash_password(password) if password is not None else None
    with _storage(f"creating user {username}"):
        try:
            await pool.execute(
                "INSERT INTO web_users (username, role, password_hash) VALUES ($1, $2, $3)",
                username, role.value, hashed)
        except asyncpg.UniqueViolationError:
            raise UserError(f"user {username!r} exists already") from None
    user = await get_user(pool, username)
    assert user is not None
    return user


async def get_user(pool: asyncpg.Pool, username: str) -> User | None:
    """The user named ``username`` (enabled or not), or ``None``.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage(f"reading user {username}"):
        row = await pool.fetchrow(f"SELECT {_USER_COLS} FROM web_users u WHERE username = $1",
                                  username)
    return _user(row) if row else None


async def list_users(pool: asyncpg.Pool) -> list[User]:
    """Every user, by name.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("listing users"):
        rows = await pool.fetch(f"SELECT {_USER_COLS} FROM web_users u ORDER BY username")
    return [_user(r) for r in rows]


async def issue_token(pool: asyncpg.Pool, username: str, label: str | None = None) -> str:
    """Create an API token for ``username`` and return it (shown once; only its hash is kept).

    Raises:
        UserError: no such user.
        StorageError: PostgreSQL failed.
    """
    token = new_token()
    with _storage(f"issuing a token for {username}"):
        try:
            await pool.execute(
                "INSERT INTO web_tokens (token_hash, username, label) VALUES ($1, $2, $3)",
                hash_token(token), username, label)
        except asyncpg.ForeignKeyViolationError:
            raise UserError(
                f"no user {username!r}; create one with `evalloop users create {username}`"
            ) from None
    return token


async def authenticate_password(pool: asyncpg.Pool, username: str, password: str
                                ) -> User | None:
    """The enabled user whose password is ``password``, or ``None`` (unknown user, no
    password set, wrong password or disabled: the caller cannot tell which).

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("checking a password"):
        row = await pool.fetchrow(
            f"SELECT {_USER_COLS}, u.password_hash FROM web_users u "
            "WHERE username = $1 AND disabled_at IS NULL", username)
    if row is None or not _verify(password, row["password_hash"]):
        return None
    return _user(row)


async def authenticate_token(pool: asyncpg.Pool, token: str) -> User | None:
    """The enabled user owning the active API token ``token``, or ``None``; stamps
    ``last_used_at``.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("checking a token"):
        row = await pool.fetchrow(
            f"""
            UPDATE web_tokens t SET last_used_at = now()
            FROM web_users u
            WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND u.username = t.username
              AND u.disabled_at IS NULL
            RETURNING {_USER_COLS}
            """, hash_token(token.strip()))
    return _user(row) if row else None
