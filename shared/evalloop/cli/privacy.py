"""``evalloop prune`` and ``evalloop erase``: retention and erasure of people's text.

Rules: ``docs/security.md#retention`` and ``docs/security.md#erasure``. Both connect to the
PostgreSQL named by settings (or the embedded one) and print rows deleted per table (``--json``:
one JSON line). Exit codes (``docs/exit-codes.md``): 0 done, 2 bad usage, 3 database
unreachable.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import asyncpg
import typer

from evalloop.adapters import privacy_store
from evalloop.cli._common import run_with_pool
from evalloop.errors import EvalloopError
from evalloop.events import utc_now
from evalloop.settings import Settings

__all__ = ["erase", "prune"]

T = TypeVar("T")


def _with_pool(settings: Settings, work: Callable[[asyncpg.Pool], Awaitable[T]]) -> T:
    from evalloop.adapters.postgres import resolve_dsn

    try:
        return run_with_pool(resolve_dsn(settings.postgres), work)
    except EvalloopError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(3) from None


def _report(counts: dict[str, int], as_json: bool, **extra: object) -> None:
    if as_json:
        typer.echo(json.dumps({**extra, "deleted": counts}))
        return
    for table, n in counts.items():
        typer.echo(f"{table:16} {n:>9}")
    typer.echo(f"{'total':16} {sum(counts.values()):>9}")


def prune(
    as_json: Annotated[bool, typer.Option("--json", help="one JSON line")] = False,
) -> None:
    """Delete what is older than the retention settings (EVALLOOP_RETENTION__*_DAYS) allow.

    The retention service does the same every retention.interval_s seconds; this runs it
    once now. Example: EVALLOOP_RETENTION__EVENTS_DAYS=30 evalloop prune.
    """
    settings = Settings()
    counts = _with_pool(
        settings, lambda pool: privacy_store.prune(pool, settings.retention, now=utc_now()))
    _report(counts, as_json)


#: What the text output says after each count of rows redacted (``docs/security.md#erasure``).
_REDACTED_WHAT = {
    "golden_cases": "redacted in every golden-set version holding them",
    "review_actions": "redacted in the review audit (who, what and when stay)",
    "eval_results": "redacted in the results of runs over those cases",
}


def erase(
    conversation: Annotated[list[str] | None, typer.Option(
        "--conversation", metavar="<str>", help="a conversation id to erase (repeatable)")] = None,
    user: Annotated[str | None, typer.Option(
        "--user", help="erase every conversation whose events carry this user_id")] = None,
    agent: Annotated[str | None, typer.Option(
        "--agent", help="only this agent's records of those conversations")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON line")] = False,
) -> None:
    """Remove a person's text everywhere: events, negative cases, monitor turns, triage cases,
    the review queue (the candidate outbox); golden cases confirmed from those conversations are
    redacted in every version, and so are their review audit rows and the eval results of runs
    over them. Prints rows deleted per table and rows redacted per table.

    Example: evalloop erase --conversation c-1842 or evalloop erase --user u-77.
    """
    if not conversation and user is None:
        raise typer.BadParameter("give --conversation ID (repeatable) or --user ID")
    settings = Settings()

    async def work(pool: asyncpg.Pool) -> tuple[list[str], privacy_store.Erasure]:
        convs = list(conversation or [])
        if user is not None:
            convs += await privacy_store.conversations_of_user(pool, user)
        done = await privacy_store.erase_conversations(pool, convs, agent_id=agent)
        return sorted(set(convs)), done

    convs, done = _with_pool(settings, work)
    if as_json:
        typer.echo(json.dumps({"erase_id": str(done.erase_id), "conversations": convs,
                               "deleted": done.deleted, "redacted": done.redacted}))
        return
    typer.echo(f"erased {len(convs)} conversation(s)"
               + (f" of user {user}" if user is not None else "")
               + f" (erase request {done.erase_id})")
    _report(done.deleted, as_json=False)
    for table, n in done.redacted.items():
        typer.echo(f"{table:16} {n:>9} {_REDACTED_WHAT[table]}")
