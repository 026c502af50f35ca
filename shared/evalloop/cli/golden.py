"""``evalloop golden``: versioned golden sets in PostgreSQL (``docs/rules.md#golden-set-format``).

* ``import FILE --agent A`` stores an eval set YAML or golden-set JSON file as a **new immutable
  version** (parent = the previous version, diff = added/removed/changed case ids); importing
  content identical to the latest version stores nothing and says so.
* ``list [--agent A] [--json]`` shows every set and version with its diff (``--json``: one
  object per version, the stored columns).
* ``export --agent A [--version N] [--format json|yaml|jsonl] [--output FILE]`` writes a
  version as golden-set JSON (the export format), eval set YAML or JSONL (one case per line).
* ``care`` / ``reminders``: a version's care checks, and when each monthly review is due.
* ``verify [--agent A] [--json]``: recompute each version's content hash; a version erasure
  redacted says ``redacted by erasure on <date>`` (``docs/security.md#erasure``); any other
  difference is a mismatch (exit 1).

The database: ``--db DSN``, else ``EVALLOOP_POSTGRES__DSN``. ``import`` may fall back to the
embedded server (``evalloop.adapters.postgres.resolve_dsn``) and applies migrations first;
``list``, ``export`` and ``verify`` only read: they neither start the embedded server nor
migrate, and say what is missing. Exit codes: ``docs/exit-codes.md``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from evalloop.cli._common import (
    UsageError,
    console,
    exit_if_missing,
    fail,
    json_line,
    run_with_pool,
)

if TYPE_CHECKING:
    import asyncpg

    from evalloop.adapters.golden_store import GoldenVersion

__all__ = ["app", "describe_diff"]

app = typer.Typer(no_args_is_help=True,
                  help="Versioned golden sets (import, list, export, care, reminders, verify).")
T = TypeVar("T")
DbOption = Annotated[str | None, typer.Option(
    "--db", help="PostgreSQL DSN (default: EVALLOOP_POSTGRES__DSN; read only: no embedded "
                 "server is started).")]
ImportDbOption = Annotated[str | None, typer.Option(
    "--db", help="PostgreSQL DSN (default: EVALLOOP_POSTGRES__DSN, else the embedded "
                 "server; migrations are applied).")]


def describe_diff(diff: dict[str, list[str]]) -> str:
    """One line for a version diff, e.g. ``"+2 added (c9, c10), 1 changed (c3)"``."""
    parts = []
    for key, sign in (("added", "+"), ("removed", "-"), ("changed", "~")):
        ids = diff.get(key, [])
        if ids:
            shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
            parts.append(f"{sign}{len(ids)} {key} ({shown})")
    return "; ".join(parts) or "no changes"


def _with_pool(db: str | None, work: Callable[[asyncpg.Pool], Awaitable[T]], *,
               read_only: bool) -> T:
    """Run ``work`` on a pool; a read-only command uses a configured database as it is."""
    try:
        return run_with_pool(db, work, read_only=read_only)
    except Exception as exc:
        if read_only:
            exit_if_missing(exc, tables="golden-set",
                            remedy="`evalloop golden import` or the services apply them")
        fail(exc, _missing_tables_hint(exc))


def _missing_tables_hint(exc: BaseException) -> str | None:
    if "does not exist" in str(exc) and "golden_set" in str(exc):
        return ("the database has no golden-set tables (read-only commands do not migrate: "
                "`evalloop golden import` or the services apply the migrations)")
    return None


def _label(v: GoldenVersion) -> str:
    return f"{v.agent_id}/{v.golden_set_id} v{v.version}"


@app.command("import")
def import_cmd(
    file: Annotated[Path, typer.Argument(
        help="Eval set YAML (id, input, expected_behavior, should_escalate, should_refuse, "
             "category, notes) or golden-set JSON ({id, agent, version, cases: [{id, question, "
             "expected_answer, context_chunks, tags, difficulty, created_by, created_at}]}).")],
    agent: Annotated[str | None, typer.Option(
        "--agent", help="Agent id (default: the file's 'agent').")] = None,
    set_id: Annotated[str | None, typer.Option(
        "--set", help="Golden-set id (default: the file's 'id', else its name).")] = None,
    created_by: Annotated[str | None, typer.Option(
        "--created-by", help="Who made this version (recorded on it).")] = None,
    db: ImportDbOption = None,
) -> None:
    """Store FILE as a new version of the agent's golden set (no-op if unchanged)."""
    from evalloop.adapters.golden_store import import_golden_set
    from evalloop.core.evaluation.cases import load_eval_file

    try:
        eval_set = load_eval_file(file)
        agent_id = agent or eval_set.agent
        if not agent_id:
            raise ValueError(f"{file.name} names no agent: pass --agent")
    except Exception as exc:
        fail(exc)
    outcome = _with_pool(db, lambda pool: import_golden_set(
        pool, eval_set, agent_id=agent_id, golden_set_id=set_id, created_by=created_by,
        source=file.name), read_only=False)
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
    as_json: Annotated[bool, typer.Option(
        "--json", help="JSON lines: one object per version, the stored columns.")] = False,
    db: DbOption = None,
) -> None:
    """List stored golden sets and their versions."""
    from evalloop.adapters.golden_store import list_golden_versions

    versions = _with_pool(db, lambda pool: list_golden_versions(pool, agent), read_only=True)
    if as_json:
        for v in versions:
            json_line(_version_row(v))
        return
    if not versions:
        typer.echo("no golden sets stored" + (f" for agent {agent}" if agent else ""))
        return
    from rich.table import Table

    table = Table("agent", "golden set", "version", "cases", "created", "by", "source",
                  "changes vs parent")
    for v in versions:
        table.add_row(v.agent_id, v.golden_set_id, str(v.version), str(v.case_count),
                      v.created_at.strftime("%Y-%m-%d %H:%M:%SZ"), v.created_by or "",
                      v.source or "", describe_diff(v.diff) if v.parent_version_id else "initial")
    console().print(table)


def _version_row(v: GoldenVersion) -> dict[str, Any]:
    return asdict(v)


@app.command("export")
def export_cmd(
    agent: Annotated[str, typer.Option("--agent", help="Agent id.")],
    version: Annotated[int | None, typer.Option(
        "--version", min=1, help="Version number (default: the latest).")] = None,
    set_id: Annotated[str | None, typer.Option("--set", help="Golden-set id.")] = None,
    fmt: Annotated[str, typer.Option(
        "--format", help="json (golden-set JSON, default), yaml (eval set YAML) or jsonl (one "
                         "golden-set case per line).")] = "json",
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write here instead of stdout.")] = None,
    db: DbOption = None,
) -> None:
    """Export a stored version as golden-set JSON, eval set YAML or JSONL (one case per line,
    as the web app's export)."""
    from evalloop.adapters.golden_store import get_golden_version, load_golden_cases
    from evalloop.core.evaluation.cases import dump_eval_yaml, dump_golden_json, dump_golden_jsonl

    writers = {"json": dump_golden_json, "yaml": dump_eval_yaml, "jsonl": dump_golden_jsonl}
    if fmt not in writers:
        fail(UsageError(f"--format: expected json, yaml or jsonl, received {fmt!r}"))
    dump = writers[fmt]

    async def work(pool: asyncpg.Pool) -> str:
        v = await get_golden_version(pool, agent, version=version, golden_set_id=set_id)
        cases = await load_golden_cases(pool, v.version_id)
        return dump(cases, set_id=v.golden_set_id, agent=v.agent_id, version=v.version)

    text = _with_pool(db, work, read_only=True)
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {output}", err=True)


@app.command("care")
def care_cmd(
    agent: Annotated[str, typer.Option("--agent", help="Agent id.")],
    set_id: Annotated[str | None, typer.Option(
        "--set", help="Golden-set id (default: the agent's only set).")] = None,
    version: Annotated[int | None, typer.Option(
        "--version", min=1, help="Version number (default: the latest).")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="JSON lines: one object per check.")] = False,
    db: DbOption = None,
) -> None:
    """The care checks of a version (docs/review.md#care-checks): size, difficulty mix,
    domains, adversarial, escalation triggers, universal cases, coverage gaps."""
    from evalloop.adapters import review_store
    from evalloop.core.golden_care import CareCheck, ClusterGap, care_checks

    async def work(pool: asyncpg.Pool) -> tuple[dict[str, Any], list[CareCheck]]:
        from evalloop.adapters.golden_store import list_golden_versions

        if not await list_golden_versions(pool, agent):
            raise UsageError(f"no golden set for agent {agent!r} (see `evalloop golden list`)")
        sid = await review_store.resolve_set(pool, agent, set_id)
        head, cases = await review_store.version_detail(pool, agent, sid, version)
        profile = await review_store.get_profile(pool, agent)
        gaps = await review_store.uncovered_clusters(pool, agent, [c.id for c in cases])
        return head, care_checks(
            cases, in_production=profile["in_production"] if profile else None,
            domains=profile["knowledge_domains"] if profile else None,
            triggers=profile["escalation_triggers"] if profile else None,
            gaps=None if gaps is None else
            [ClusterGap(g["cluster_id"], g["label"], g["size"]) for g in gaps])

    head, checks = _with_pool(db, work, read_only=True)
    if as_json:
        for c in checks:
            json_line({"agent_id": agent, "golden_set_id": head["golden_set_id"],
                       "version": head["version"], **c.as_dict()})
        return
    from rich.markup import escape
    from rich.table import Table

    table = Table("check", "status", "value", "bar", "why",
                  title=f"{agent}/{head['golden_set_id']} v{head['version']} "
                        f"({head['case_count']} cases)", title_justify="left")
    colour = {"pass": "green", "fail": "red", "unknown": "yellow"}
    for c in checks:
        table.add_row(c.name, f"[{colour[c.status]}]{c.status}[/]", escape(str(c.value)),
                      escape(c.bar), escape(c.why))
    console().print(table)
    typer.echo(f"source: {checks[0].source}")


@app.command("reminders")
def reminders_cmd(
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent.")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="JSON lines: one object per set.")] = False,
    db: DbOption = None,
) -> None:
    """When each golden set's monthly review is due (docs/review.md#monthly-review)."""
    from datetime import UTC, datetime

    from evalloop.adapters import review_store

    rows = _with_pool(db, lambda pool: review_store.set_reminders(
        pool, now=datetime.now(UTC), agent_id=agent), read_only=True)
    if as_json:
        for r in rows:
            json_line(r)
        return
    if not rows:
        typer.echo("no golden sets stored" + (f" for agent {agent}" if agent else ""))
    for r in rows:
        when = (f"OVERDUE by {-r['days_left']} day(s)" if r["overdue"]
                else f"due in {r['days_left']} day(s)")
        typer.echo(f"{r['agent_id']}/{r['golden_set_id']}: monthly review {when} "
                   f"(due {r['due_at'][:10]}, last {r['last_reviewed_at'][:10]})")


@app.command("verify")
def verify_cmd(
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent.")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="JSON lines: one object per version.")] = False,
    db: DbOption = None,
) -> None:
    """Check every version's cases against its content hash (docs/security.md#erasure).

    Exit 0: every version intact or redacted by erasure; 1: a version's content does not
    match its hash. Example: evalloop golden verify --agent hr.
    """
    from evalloop.adapters.golden_store import verify_versions

    checks = _with_pool(db, lambda pool: verify_versions(pool, agent), read_only=True)
    for c in checks:
        if as_json:
            json_line(asdict(c))
        else:
            typer.echo(f"{c.agent_id}/{c.golden_set_id} v{c.version}: {c.status}: {c.message}")
    if not checks and not as_json:
        typer.echo("no golden sets stored" + (f" for agent {agent}" if agent else ""))
    if any(c.status == "mismatch" for c in checks):
        raise typer.Exit(1)
