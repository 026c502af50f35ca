"""What every ``evalloop`` command shares: the exit-code table, one-line errors, JSON lines,
and the database a read-only command may use.

Light on purpose (stdlib and typer at import): ``evalloop --help`` imports it.
"""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer

__all__ = ["UsageError", "describe", "exit_code_for", "fail", "json_line", "leaf", "read_only_dsn"]


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
    """One line naming what failed (no traceback); pydantic errors list each bad field."""
    from pydantic import ValidationError

    from evalloop.errors import EvalloopError

    exc = leaf(exc)
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '(settings)'}: {e['msg']} (got {e.get('input')!r})"
            for e in exc.errors(include_url=False))
        return f"invalid settings (EVALLOOP_* environment or .env): {problems}"
    text = " ".join(str(exc).split())
    if isinstance(exc, EvalloopError | UsageError):
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def fail(exc: BaseException, what: str | None = None) -> NoReturn:
    """Print ``error: <what>: <the error>`` on stderr, one line, and exit with its code.

    Raises:
        typer.Exit: always, with :func:`exit_code_for` ``exc``.
    """
    prefix = "error" if expected(exc) else "error (unexpected)"
    print(f"{prefix}: {what + ': ' if what else ''}{describe(exc)}", file=sys.stderr)
    raise typer.Exit(exit_code_for(exc)) from None


def json_line(row: dict[str, Any]) -> None:
    """Print one JSON object on one line (UUIDs, times and paths as strings)."""
    print(json.dumps(row, default=str, ensure_ascii=False, separators=(", ", ": ")))


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
