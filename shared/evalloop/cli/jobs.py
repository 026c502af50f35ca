"""``evalloop jobs``: the re-evaluation jobs (``reeval_jobs``) — why each was requested, its
status and result.

Reads the PostgreSQL named by ``--db`` or ``EVALLOOP_POSTGRES__DSN``; a read-only command, it
neither starts the embedded server nor applies migrations, and says what is missing. Exit
codes: ``docs/exit-codes.md``.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Any

import typer

from evalloop.cli._common import console as make_console
from evalloop.cli._common import (
    json_default,
    json_line,
    read_only_dsn,
    read_only_failure,
)

if TYPE_CHECKING:
    from evalloop.adapters.monitor_store import JobRow

__all__ = ["app", "list_cmd", "summarize_result"]

app = typer.Typer(no_args_is_help=True, help="Re-evaluation jobs: why, status, result.")

_STATUSES = ("requested", "running", "succeeded", "failed")


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, list):
        return len(value)
    return None


def summarize_result(result: dict[str, Any] | None, error: str | None = None) -> str:
    """One line from a job's ``result`` JSON (written by the evaluator), e.g.
    ``"NO-GO; 27 passed, 2 failed of 29; gate failures: 2"``.

    Reads, where present (at the top level or under ``summary``/``gates``): ``decision``
    (GO / CONDITIONAL GO / NO-GO), ``passed``, ``failed``, ``total``/``cases``,
    ``agent_errors`` (when > 0), ``gate_failures``, ``exit_code`` (the evaluator's result
    keys, ``services/evaluator/service.py``); otherwise the JSON abridged. ``error`` wins.
    """
    if error:
        return f"error: {error}"
    if not result:
        return ""
    scopes = [result]
    for key in ("summary", "gates"):
        if isinstance(result.get(key), dict):
            scopes.append(result[key])

    def find(*names: str) -> Any:
        for scope in scopes:
            for name in names:
                if name in scope and scope[name] is not None:
                    return scope[name]
        return None

    parts: list[str] = []
    decision = find("decision", "gate_decision")
    if isinstance(decision, str):
        parts.append(decision)
    passed, failed = _count(find("passed")), _count(find("failed"))
    total = _count(find("total", "cases", "n_cases"))
    if passed is not None or failed is not None:
        counts = f"{passed or 0} passed, {failed or 0} failed"
        parts.append(counts + (f" of {total}" if total is not None else ""))
    elif total is not None:
        parts.append(f"{total} cases")
    agent_errors = _count(find("agent_errors"))
    if agent_errors:
        parts.append(f"agent errors: {agent_errors}")
    gate_failures = _count(find("gate_failures"))
    if gate_failures is not None:
        parts.append(f"gate failures: {gate_failures}")
    exit_code = find("exit_code")
    if isinstance(exit_code, int) and not isinstance(exit_code, bool):
        parts.append(f"exit {exit_code}")
    if parts:
        return "; ".join(parts)
    text = json.dumps(result, separators=(",", ":"), default=str)
    return text if len(text) <= 80 else text[:77] + "..."


async def _fetch(dsn: str, agent: str | None, status: str | None, limit: int) -> list[JobRow]:
    from evalloop.adapters.monitor_store import list_jobs
    from evalloop.adapters.postgres import connect_pool

    pool = await connect_pool(dsn, min_size=1, max_size=1)
    try:
        return await list_jobs(pool, agent_id=agent, status=status, limit=limit)
    finally:
        await pool.close()


def _as_json(row: JobRow) -> dict[str, Any]:
    out = asdict(row)
    out["summary"] = summarize_result(row.result, row.error)
    # uuid -> str, datetime -> ISO 8601
    encoded: dict[str, Any] = json.loads(json.dumps(out, default=json_default))
    return encoded


@app.command("list")
def list_cmd(
    agent: Annotated[str | None, typer.Option("--agent", help="only this agent")] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="requested | running | succeeded | failed")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="at most this many")] = 50,
    as_json: Annotated[bool, typer.Option(
        "--json", help="JSON lines (one job per line: the stored columns and a summary)")
    ] = False,
    db: Annotated[str | None, typer.Option(
        "--db", help="PostgreSQL DSN (default: EVALLOOP_POSTGRES__DSN)")] = None,
) -> None:
    """List re-evaluation jobs, newest first: when, agent, trigger, why, status, result."""
    if status is not None and status not in _STATUSES:
        raise typer.BadParameter(
            f"expected one of {', '.join(_STATUSES)}, got {status!r}", param_hint="--status"
        )
    try:
        rows = asyncio.run(_fetch(read_only_dsn(db), agent, status, limit))
    except Exception as exc:
        read_only_failure(exc, tables="re-evaluation job",
                          remedy="the monitor and evaluator services (or `evalloop demo`) apply "
                                 "them", what="cannot list jobs")
    if as_json:
        for row in rows:
            json_line(_as_json(row))
        return
    from rich.table import Table

    console = make_console()
    table = Table(title=f"re-evaluation jobs ({len(rows)})", show_lines=False)
    for col in ("requested (UTC)", "agent", "trigger", "reason", "status", "result"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(
            r.requested_at.strftime("%Y-%m-%d %H:%M:%S"), r.agent_id, r.trigger, r.reason,
            r.status + ("" if r.published_at else " (unpublished)"),
            summarize_result(r.result, r.error),
        )
    console.print(table)
