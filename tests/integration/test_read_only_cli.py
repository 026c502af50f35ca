"""Read-only list and report commands against real PostgreSQL: on an empty database they say
which tables are missing and create none; a database that does not exist is reported as such
(docs/exit-codes.md: 3, one line)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from uuid import uuid4

import asyncpg
import pytest
import pytest_asyncio
from typer.testing import CliRunner

from evalloop.adapters.postgres import create_database
from evalloop.cli.main import app


@pytest_asyncio.fixture
async def empty_dsn(pg_dsn: str) -> AsyncIterator[str]:
    """DSN of a fresh database with no tables at all."""
    name = f"evalloop_bare_{uuid4().hex[:10]}"
    dsn = await create_database(pg_dsn, name)
    try:
        yield dsn
    finally:
        conn = await asyncpg.connect(pg_dsn)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


async def _run(args: list[str], dsn: str) -> tuple[int, str, str]:
    # the DSN both ways: --db where the command has it, the environment for `keys list`
    result = await asyncio.to_thread(CliRunner().invoke, app, args,
                                     env={"EVALLOOP_POSTGRES__DSN": dsn, "COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


async def _tables(dsn: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        return int(await conn.fetchval(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"))
    finally:
        await conn.close()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["keys", "list", "--json"],
         "error: the database has no API-key tables (read-only commands do not migrate: "
         "`evalloop keys create` or the ingest service applies them): relation 'api_keys' "
         "does not exist\n"),
        (["users", "list"],
         "error: the database has no web-user tables (read-only commands do not migrate: "
         "`evalloop users create` or `evalloop web` applies them): relation 'web_users' does "
         "not exist\n"),
        (["users", "list", "--json"],
         "error: the database has no web-user tables (read-only commands do not migrate: "
         "`evalloop users create` or `evalloop web` applies them): relation 'web_users' does "
         "not exist\n"),
        (["report", "hallucinations", "--agent", "x", "--since", "7d"],
         "error: the database has no readiness tables (read-only commands do not migrate: the "
         "evaluator service, `evalloop gate decide` or `evalloop demo` applies them): relation "
         "'hallucination_claims' does not exist\n"),
        (["queue", "show", "1a2b3c4d"],
         "error: the database has no triage tables (read-only commands do not migrate: the "
         "services or `evalloop demo` apply them): relation 'review_queue' does not exist\n"),
    ],
)
async def test_read_only_commands_on_an_empty_database_create_no_table(
        empty_dsn: str, args: list[str], message: str) -> None:
    code, out, err = await _run(args, empty_dsn)
    assert (code, out, err) == (3, "", message)
    assert await _tables(empty_dsn) == 0


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["keys", "list", "--json"], ""),
        (["users", "list"], ""),
        (["report", "hallucinations"], ""),
        (["queue", "list", "--json"], "cannot list the review queue: "),
        (["jobs", "list", "--json"], "cannot list jobs: "),
        (["golden", "list", "--json"], ""),
        (["queue", "show", "1a2b3c4d"], ""),
    ],
)
async def test_a_database_that_does_not_exist_is_named(pg_dsn: str, args: list[str],
                                                       what: str) -> None:
    name = f"evalloop_absent_{uuid4().hex[:10]}"
    base, _, query = pg_dsn.partition("?")
    dsn = base.rsplit("/", 1)[0] + "/" + name + (f"?{query}" if query else "")
    code, out, err = await _run(args, dsn)
    assert (code, out, err) == (
        3, "", f"error: {what}the database '{name}' does not exist (read-only commands neither "
               "create nor migrate a database: check --db or EVALLOOP_POSTGRES__DSN)\n")


async def test_a_dsn_that_is_no_dsn_is_bad_input() -> None:
    # a malformed DSN is the user's input, not the database failing: exit 2, not 3
    code, out, err = await _run(["golden", "list", "--db", "not-a-dsn"], "not-a-dsn")
    assert (code, out) == (2, "")
    assert err == ("error: expected a postgresql:// DSN, got 'not-a-dsn': invalid DSN: scheme "
                   "is expected to be either \"postgresql\" or \"postgres\", got ''\n")
