"""``evalloop golden``: versioned golden sets in PostgreSQL.

* ``import FILE --agent A`` stores a seed 003 YAML or seed 004 JSON file as a **new immutable
  version** (parent = the previous version, diff = added/removed/changed case ids); importing
  content identical to the latest version stores nothing and says so.
* ``list [--agent A]`` shows every set and version with its diff.
* ``export --agent A [--version N] [--format json|yaml] [--output FILE]`` writes a version as
  seed 004 golden-set JSON (the export format) or seed 003 YAML.

The database: ``--db DSN``, else ``EVALLOOP_POSTGRES__DSN``, else the embedded server
(``evalloop.adapters.postgres.resolve_dsn``); migrations are applied first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Literal, TypeVar

import asyncpg
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evalloop.adapters.golden_store import (
    GoldenVersion,
    get_golden_version,
    import_golden_set,
    list_golden_versions,
    load_golden_cases,
)
from evalloop.adapters.postgres import connect_pool, migrate, resolve_dsn
from evalloop.core.evaluation.cases import dump_eval_yaml, dump_golden_json, load_eval_file
from evalloop.errors import EvalloopError
from evalloop.settings import Settings

__all__ = ["app", "describe_diff"]

app = typer.Typer(no_args_is_help=True, help="Versioned golden sets (import, list, export).")
_out = Console()
_err = Console(stderr=True)
T = TypeVar("T")
DbOption = Annotated[str | None, typer.Option(
    "--db", help="PostgreSQL DSN (default: EVALLOOP_POSTGRES__DSN, else the embedded server).")]


def describe_diff(diff: dict[str, list[str]]) -> str:
    """One line for a version diff, e.g. ``"+2 added (c9, c10), 1 changed (c3)"``."""
    parts = []
    for key, sign in (("added", "+"), ("removed", "-"), ("changed", "~")):
        ids = diff.get(key, [])
        if ids:
            shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
            parts.append(f"{sign}{len(ids)} {key} ({shown})")
    return "; ".join(parts) or "no changes"


def _with_pool(db: str | None, work: Callable[[asyncpg.Pool], Awaitable[T]]) -> T:
    async def main() -> T:
        dsn = db or resolve_dsn(Settings().postgres)
        await migrate(dsn)
        pool = await connect_pool(dsn, min_size=1, max_size=2)
        try:
            return await work(pool)
        finally:
            await pool.close()

    try:
        return asyncio.run(main())
    except EvalloopError as exc:
        _err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from exc


def _label(v: GoldenVersion) -> str:
    return f"{v.agent_id}/{v.golden_set_id} v{v.version}"


@app.command("import")
def import_cmd(
    file: Annotated[Path, typer.Argument(help="Seed 003 YAML or seed 004 golden-set JSON.")],
    agent: Annotated[str | None, typer.Option(
        "--agent", help="Agent id (default: the file's 'agent').")] = None,
    set_id: Annotated[str | None, typer.Option(
        "--set", help="Golden-set id (default: the file's 'id', else its name).")] = None,
    created_by: Annotated[str | None, typer.Option("--created-by")] = None,
    db: DbOption = None,
) -> None:
    """Store FILE as a new version of the agent's golden set (no-op if unchanged)."""
    try:
        eval_set = load_eval_file(file)
    except EvalloopError as exc:
        _err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from exc
    agent_id = agent or eval_set.agent
    if not agent_id:
        _err.print(f"[red]error:[/red] {escape(file.name)} names no agent: pass --agent")
        raise typer.Exit(2)
    outcome = _with_pool(db, lambda pool: import_golden_set(
        pool, eval_set, agent_id=agent_id, golden_set_id=set_id, created_by=created_by,
        source=file.name))
    v = outcome.version
    if outcome.created:
        parent = f" (parent v{v.version - 1}: {describe_diff(v.diff)})" if v.parent_version_id \
            else f" ({v.case_count} cases)"
        typer.echo(f"imported {file.name} as {_label(v)}{parent}; version id {v.version_id}")
    else:
        typer.echo(f"unchanged: {file.name} is identical to {_label(v)} (version id "
                   f"{v.version_id}); nothing stored")


@app.command("list")
def list_cmd(
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent.")] = None,
    db: DbOption = None,
) -> None:
    """List stored golden sets and their versions."""
    versions = _with_pool(db, lambda pool: list_golden_versions(pool, agent))
    if not versions:
        typer.echo("no golden sets stored" + (f" for agent {agent}" if agent else ""))
        return
    table = Table("agent", "golden set", "version", "cases", "created", "by", "source",
                  "changes vs parent")
    for v in versions:
        table.add_row(v.agent_id, v.golden_set_id, str(v.version), str(v.case_count),
                      v.created_at.strftime("%Y-%m-%d %H:%M:%SZ"), v.created_by or "",
                      v.source or "", describe_diff(v.diff) if v.parent_version_id else "initial")
    _out.print(table)


@app.command("export")
def export_cmd(
    agent: Annotated[str, typer.Option("--agent", help="Agent id.")],
    version: Annotated[int | None, typer.Option(
        "--version", min=1, help="Version number (default: the latest).")] = None,
    set_id: Annotated[str | None, typer.Option("--set", help="Golden-set id.")] = None,
    fmt: Annotated[str, typer.Option(
        "--format", help="json (seed 004, default) or yaml (seed 003).")] = "json",
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write here instead of stdout.")] = None,
    db: DbOption = None,
) -> None:
    """Export a stored version as seed 004 JSON (or seed 003 YAML)."""
    if fmt not in ("json", "yaml"):
        _err.print("[red]error:[/red] expected --format json or yaml, received "
                   f"{escape(repr(fmt))}")
        raise typer.Exit(2)
    kind: Literal["json", "yaml"] = "json" if fmt == "json" else "yaml"

    async def work(pool: asyncpg.Pool) -> str:
        v = await get_golden_version(pool, agent, version=version, golden_set_id=set_id)
        cases = await load_golden_cases(pool, v.version_id)
        dump = dump_golden_json if kind == "json" else dump_eval_yaml
        return dump(cases, set_id=v.golden_set_id, agent=v.agent_id, version=v.version)

    text = _with_pool(db, work)
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        _err.print(f"wrote {output}", highlight=False)
