"""What every ``evalloop`` command shares: the exit-code table, one-line errors, JSON lines,
and the database a read-only command may use.

Light on purpose (stdlib and typer at import): ``evalloop --help`` imports it.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer

if TYPE_CHECKING:
    import asyncpg
    from rich.console import Console

T = TypeVar("T")

__all__ = ["PIPE_WIDTH", "UsageError", "console", "describe", "error_line", "exit_code_for",
           "exit_if_missing", "fail", "json_default", "json_line", "leaf", "read_only_dsn",
           "read_only_failure", "run_with_pool"]

#: Columns a table is drawn in when stdout is not a terminal and ``COLUMNS`` is not set (a
#: terminal-less console would otherwise fold every table into 80 columns).
PIPE_WIDTH = 200


def console(*, stderr: bool = False) -> Console:
    """A rich console for command output: the terminal's width on a terminal, else ``COLUMNS``
    when set, else :data:`PIPE_WIDTH` columns (so ``evalloop golden list | cat`` stays
    readable)."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty() or os.environ.get("COLUMNS", "").isdigit():
        return Console(stderr=stderr)
    return Console(stderr=stderr, width=PIPE_WIDTH)


def error_line(message: str, prefix: str = "error") -> None:
    """Print ``<prefix>: <message>`` on stderr as ONE line (a line break and the whitespace
    around it become one space; ``docs/exit-codes.md``)."""
    one = " ".join(part.strip() for part in message.splitlines() if part.strip())
    print(f"{prefix}: {one}", file=sys.stderr)


def leaf(exc: BaseException) -> BaseException:
    """The first leaf of (nested) exception groups: what actually went wrong."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def exit_code_for(exc: BaseException) -> int:
    """The ``docs/exit-codes.md`` code for an error that ended a command.

    2 (usage or bad input): invalid settings, a malformed file or value, an unknown id, a
    review action on an item someone already decided (``ConfigError``, ``GoldenSetError``,
    ``InvalidEvent``/``InvalidBatch``, ``ReviewError``, ``ValueError``,
    ``FileNotFoundError``, pydantic ``ValidationError``, ``typer.BadParameter``).
    3 (infrastructure): the database, the broker, an embedder or the network
    (``StorageError``, ``BusError``, ``EmbeddingError``, ``OSError``, ``TimeoutError``), and
    anything unexpected.
    """
    from pydantic import ValidationError

    from evalloop.errors import (
        BusError,
        ConfigError,
        EmbeddingError,
        GoldenSetError,
        InvalidBatch,
        InvalidEvent,
        ReviewError,
        StorageError,
    )

    exc = leaf(exc)
    if isinstance(exc, StorageError | BusError | EmbeddingError):
        return 3
    if isinstance(exc, ConfigError | GoldenSetError | InvalidEvent | InvalidBatch | ReviewError
                  | ValidationError | ValueError | FileNotFoundError | typer.BadParameter):
        return 2
    return 3


class UsageError(ValueError):
    """Bad usage or input a command found itself (exit 2, ``docs/exit-codes.md``).

    Its message already names the option, what was expected and what arrived, so it is printed
    as is (``error: <message>``), without the class name.
    """


def expected(exc: BaseException) -> bool:
    """Whether an error is one evalloop anticipates (its own, settings, bad values, I/O)."""
    from pydantic import ValidationError

    from evalloop.errors import EvalloopError

    return isinstance(leaf(exc), EvalloopError | ValidationError | ValueError | OSError
                      | TimeoutError | typer.BadParameter)


def describe(exc: BaseException) -> str:
    """One line naming what failed (no traceback); pydantic errors list each bad field.

    An expected error (:func:`expected`) is its message alone (no ``ValueError:`` class
    name); a file error is ``<path>: <reason>``; an unexpected one keeps its class name.
    """
    from pydantic import ValidationError


    exc = leaf(exc)
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '(settings)'}: {e['msg']} (got {e.get('input')!r})"
            for e in exc.errors(include_url=False))
        return f"invalid settings (EVALLOOP_* environment or .env): {problems}"
    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror}"  # not "[Errno 2] No such file ..."
    text = " ".join(str(exc).split())
    if text and expected(exc):  # its message says what failed; the class name is noise
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def fail(exc: BaseException, what: str | None = None) -> NoReturn:
    """Print ``error: <what>: <the error>`` on stderr, one line, and exit with its code.

    Raises:
        typer.Exit: always, with :func:`exit_code_for` ``exc``.
    """
    prefix = "error" if expected(exc) else "error (unexpected)"
    error_line(f"{what + ': ' if what else ''}{describe(exc)}", prefix)
    raise typer.Exit(exit_code_for(exc)) from None


def json_default(value: object) -> str:
    """How ``--json`` writes a value JSON has no type for: times in ISO 8601
    (``2026-11-30T20:17:55.123456+00:00``, as every list command prints them), anything else
    (UUIDs, paths, decimals) as its string."""
    from datetime import date, time

    if isinstance(value, date | time):  # datetime is a date
        return value.isoformat()
    return str(value)


def json_line(row: dict[str, Any]) -> None:
    """Print one JSON object on one line (UUIDs and paths as strings, times in ISO 8601)."""
    print(json.dumps(row, default=json_default, ensure_ascii=False, separators=(", ", ": ")))


def read_only_dsn(db: str | None) -> str:
    """The DSN a read-only command uses: ``--db``, else ``EVALLOOP_POSTGRES__DSN``.

    A read-only command neither starts the embedded server nor applies migrations
    (``docs/exit-codes.md``): with no database named, it says so.

    Raises:
        ConfigError: no database is configured (exit 2).
    """
    from evalloop.errors import ConfigError
    from evalloop.settings import Settings

    dsn = db or Settings().postgres.dsn
    if not dsn:
        raise ConfigError(
            "no database configured: pass --db DSN or set EVALLOOP_POSTGRES__DSN (read-only "
            "commands neither start the embedded server nor apply migrations; `evalloop demo "
            "--keep` prints the DSN of the database it used)")
    return dsn


def run_with_pool(db: str | None, work: Callable[[asyncpg.Pool], Awaitable[T]], *,
                  read_only: bool = False, max_size: int = 2) -> T:
    """Run ``work(pool)`` to completion in a fresh event loop and close the pool.

    A read-only command uses ``--db`` or the configured database as it is (no embedded server,
    no migrations: :func:`read_only_dsn`); any other command uses ``db``, else the configured or
    embedded database, migrated to the head first (``docs/exit-codes.md``). Each command maps
    the errors to its exit code itself.

    Args:
        db: a DSN (``--db``), or ``None`` for the configured database.
        work: the command's work on an asyncpg pool.
        read_only: whether the command only reads.
        max_size: the pool's largest number of connections.

    Returns:
        What ``work`` returned.

    Raises:
        ConfigError: a read-only command with no database configured; otherwise whatever
            connecting, migrating or ``work`` raised.
    """
    import asyncio

    from evalloop.adapters.postgres import connect_pool, migrate, resolve_dsn
    from evalloop.settings import Settings

    async def main() -> T:
        if read_only:
            dsn = read_only_dsn(db)
        else:
            dsn = db or resolve_dsn(Settings().postgres)
            await migrate(dsn)
        pool = await connect_pool(dsn, min_size=1, max_size=max_size)
        try:
            return await work(pool)
        finally:
            await pool.close()

    return asyncio.run(main())


def exit_if_missing(exc: BaseException, *, tables: str, remedy: str,
                    what: str | None = None) -> None:
    """End a read-only command whose database, or whose tables, do not exist, saying which.

    A read-only command never creates or migrates a database (``docs/exit-codes.md``), so a
    database that does not exist, or one without the command's tables, is reported as such:
    one line, exit 3. Any other error returns, for the caller to report.

    Args:
        exc: the error the command met.
        tables: whose tables the command reads, e.g. ``"API-key"`` or ``"triage"``.
        remedy: how the tables come about, e.g. ``"`evalloop keys create` applies them"``.
        what: what the command was doing, printed first (e.g. ``"cannot list the review
            queue"``).

    Raises:
        typer.Exit: 3, when ``exc`` says the database or a table does not exist.
    """
    text = str(leaf(exc))
    lead = f"{what}: " if what else ""
    missing_db = re.search(r'database "([^"]+)" does not exist', text)
    if missing_db:
        error_line(f"{lead}the database {missing_db.group(1)!r} does not exist (read-only "
                   "commands neither create nor migrate a database: check --db or "
                   "EVALLOOP_POSTGRES__DSN)")
        raise typer.Exit(3) from None
    missing_table = re.search(r'relation "([^"]+)" does not exist', text)
    if missing_table:
        error_line(f"{lead}the database has no {tables} tables (read-only commands do not "
                   f"migrate: {remedy}): relation {missing_table.group(1)!r} does not exist")
        raise typer.Exit(3) from None


def read_only_failure(exc: BaseException, *, tables: str, remedy: str,
                      what: str | None = None) -> NoReturn:
    """:func:`exit_if_missing`, else :func:`fail` (same arguments).

    Raises:
        typer.Exit: always: 3 for a missing database or missing tables, else
            :func:`exit_code_for` ``exc``.
    """
    exit_if_missing(exc, tables=tables, remedy=remedy, what=what)
    fail(exc, what)
