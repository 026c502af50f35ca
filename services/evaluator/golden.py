"""The evaluator's view of the golden-set store, the run store and the agent registry.

Thin glue over :mod:`evalloop.adapters.golden_store` (migration 0004) so the service reads in
its own terms: the agent's *current* version, a version's cases, the registry's endpoint, and
storing a run inside the caller's transaction (the job's owner check, the run and the job's
finish commit together: a worker that lost its claim stores nothing).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

import asyncpg

from evalloop.adapters import golden_store
from evalloop.core.evaluation.cases import EvalCase
from evalloop.core.evaluation.results import EvalRun
from evalloop.errors import GoldenSetError
from evalloop.settings import AgentEndpoint

__all__ = ["current_version_id", "load_version", "registered_endpoint", "store_run"]


async def current_version_id(pool: asyncpg.Pool, agent_id: str) -> UUID | None:
    """The id of ``agent_id``'s latest golden-set version, or ``None`` when it has none.

    Raises:
        GoldenSetError: the agent has several golden sets (which one is current is ambiguous).
        StorageError: PostgreSQL failed.
    """
    try:
        version = await golden_store.get_golden_version(pool, agent_id)
    except GoldenSetError as exc:
        if "several golden sets" in str(exc):
            raise
        return None
    return version.version_id


async def load_version(pool: asyncpg.Pool, version_id: UUID) -> tuple[str, list[EvalCase]]:
    """``(label, cases)`` of a stored version; label ``<agent>/<set>@<version>``.

    Raises:
        GoldenSetError: no such version.
        StorageError: PostgreSQL failed.
    """
    version = await golden_store.get_golden_version(pool, "", version_id=version_id)
    cases = await golden_store.load_golden_cases(pool, version_id)
    label = f"{version.agent_id}/{version.golden_set_id}@{version.version}"
    return label, list(cases)


async def registered_endpoint(pool: asyncpg.Pool, agent_id: str) -> AgentEndpoint | None:
    """The agent registry's (``agents`` table) endpoint of ``agent_id``, or ``None``.

    Raises:
        StorageError: PostgreSQL failed.
    """
    record = await golden_store.get_agent(pool, agent_id)
    if record is None:
        return None
    return AgentEndpoint(
        url=record.endpoint_url, auth_header_name=record.auth_header_name,
        auth_header_value_env=record.auth_header_value_env,
        response_format=record.response_format,
    )


class _OneConnection:
    """A pool look-alike over one connection: ``acquire()`` yields that connection, so the
    store's own ``conn.transaction()`` nests as a savepoint inside the caller's transaction."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self._conn = conn

    @contextlib.asynccontextmanager
    async def acquire(self) -> AsyncIterator[asyncpg.Connection]:
        yield self._conn

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


async def store_run(conn: asyncpg.Connection, run: EvalRun) -> None:
    """Store ``run`` and its case results on ``conn`` (inside the caller's transaction).

    Raises:
        StorageError: PostgreSQL failed.
    """
    await golden_store.save_eval_run(_OneConnection(conn), run)
