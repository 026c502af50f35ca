"""``evalloop queue show|confirm|edit|reject|skip ID``: review golden-set candidates from a shell.

The same store functions as the review HTTP API (``docs/review.md``), so a decision made here
is audited, versioned and announced exactly as one made in the browser. ``show`` is read-only
(``--db`` or ``EVALLOOP_POSTGRES__DSN``; no server started, no migration); the actions use
``--db``, else ``EVALLOOP_POSTGRES__DSN``, else the embedded server, and apply migrations.
``ID`` is a candidate id or a unique prefix of it (at least 8 characters). The reviewer is
``--reviewer``, else ``EVALLOOP_REVIEWER``, else the login name; the command line is trusted
with the ``reviewer`` role (it holds the database's credentials anyway).

Exit codes (``docs/exit-codes.md``): 0 done; 2 bad input, an unknown or ambiguous id, or a
conflict (the candidate was decided, or changed since ``--row-version``); 3 the database could
not be reached.
"""

from __future__ import annotations

import getpass
import json
import os
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar
from uuid import UUID

import asyncpg
import typer
from rich.markup import escape

from evalloop.adapters import review_store as store
from evalloop.cli._common import console, error_line, exit_if_missing, run_with_pool
from evalloop.core.review import Reviewer, parse_edits
from evalloop.errors import (
    EvalloopError,
    FieldProblem,
    ReviewConflict,
    ReviewError,
    ReviewInputError,
    StorageError,
)

__all__ = ["confirm_cmd", "edit_cmd", "register", "reject_cmd", "show_cmd", "skip_cmd"]

T = TypeVar("T")
_out = console()

IdArg = Annotated[str, typer.Argument(
    metavar="ID", help="Candidate id or a unique prefix (>= 8 chars).", show_default=False)]
ReviewerOpt = Annotated[str | None, typer.Option(
    "--reviewer", help="Who decides (default: EVALLOOP_REVIEWER, else the login name).")]
VersionOpt = Annotated[int | None, typer.Option(
    "--row-version", min=1, help="The row version you saw (`queue show`); a newer one is a "
    "conflict. Default: the current one.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as one JSON line.")]
DbOpt = Annotated[str | None, typer.Option(
    "--db", help="PostgreSQL DSN (default: EVALLOOP_POSTGRES__DSN, else the embedded server).")]
ReadDbOpt = Annotated[str | None, typer.Option(
    "--db", help="PostgreSQL DSN (default: EVALLOOP_POSTGRES__DSN; read only: no embedded "
                 "server is started).")]


def _reviewer(name: str | None) -> Reviewer:
    if name is not None and not name.strip():
        error_line(f"--reviewer: expected a reviewer name, received {name!r}")
        raise typer.Exit(2)
    who = name or os.environ.get("EVALLOOP_REVIEWER") or getpass.getuser()
    try:
        return Reviewer(who, "reviewer")
    except ValueError as exc:
        error_line(str(exc))
        raise typer.Exit(2) from exc


def _run(db: str | None, work: Callable[[asyncpg.Pool], Awaitable[T]], *,
         read_only: bool = False) -> T:
    try:
        return run_with_pool(db, work, read_only=read_only)
    except ReviewConflict as exc:
        error_line(f"conflict: {exc}")
        raise typer.Exit(2) from exc
    except ReviewError as exc:
        error_line(str(exc))
        raise typer.Exit(2) from exc
    except StorageError as exc:
        if read_only:
            exit_if_missing(exc, tables="triage",
                            remedy="the services or `evalloop demo` apply them")
        error_line(f"database unavailable: {exc}")
        raise typer.Exit(3) from exc
    except EvalloopError as exc:
        error_line(str(exc))
        raise typer.Exit(2) from exc


async def _resolve(pool: asyncpg.Pool, given: str) -> UUID:
    try:
        return UUID(given)
    except ValueError:
        pass
    matches = await store.find_candidates(pool, given)
    if len(matches) != 1:
        what = ("no candidate" if not matches else
                f"{len(matches)} candidates ({', '.join(str(m) for m in matches[:5])})")
        raise ReviewInputError([FieldProblem(
            "ID", "a candidate id or a unique prefix of at least 8 hex characters",
            f"{given!r}, which matches {what}")])
    return matches[0]


async def _version(pool: asyncpg.Pool, cid: UUID, given: int | None) -> int:
    if given is not None:
        return given
    detail = await store.candidate_detail(pool, cid)
    return int(detail["row_version"])


def _emit(doc: dict[str, Any], as_json: bool, line: str) -> None:
    if as_json:
        typer.echo(json.dumps(doc, ensure_ascii=False))
    else:
        typer.echo(line)


def show_cmd(id_: IdArg, as_json: JsonOpt = False, db: ReadDbOpt = None) -> None:
    """Show one candidate with the evidence a reviewer decides on."""
    async def work(pool: asyncpg.Pool) -> dict[str, Any]:
        return await store.candidate_detail(pool, await _resolve(pool, id_))

    d = _run(db, work, read_only=True)
    if as_json:
        typer.echo(json.dumps(d, ensure_ascii=False))
        return
    ev = d["evidence"]
    _out.print(f"[bold]{d['candidate_id']}[/bold]  {d['agent_id']}  status {d['status']}  "
               f"row version {d['row_version']}  confidence {d['confidence']:.3f}",
               highlight=False)
    _out.print(f"[bold]question:[/bold] {escape(d['question'])}", highlight=False)
    _out.print(f"[bold]answer given:[/bold] {escape(d['answer_given'] or '-')}",
               highlight=False)
    src = d["expected_answer_source"] or ("operator_correction" if ev["correction"] else None)
    _out.print(f"[bold]proposed expected answer[/bold] ({src or 'none'}): "
               f"{escape(d['expected_answer'] or '-')}", highlight=False)
    if d["edits"]:
        _out.print(f"[bold]saved edits:[/bold] {escape(json.dumps(d['edits']))}",
                   highlight=False)
    cl = ev["cluster"]
    _out.print(f"[bold]cluster[/bold] {cl.get('cluster_id')}: {escape(str(cl.get('label')))} "
               f"(size {cl.get('size', 'gone')})", highlight=False)
    for q in cl.get("examples", []):
        _out.print(f"   · {escape(q)}", highlight=False)
    _out.print("[bold]evidence:[/bold]")
    for s in ev["signals"]:
        parts = [s["event_type"]] + [f"{k}={s[k]}" for k in (
            "thumbs", "score", "requested_by", "severity", "resolved") if k in s]
        text = s.get("comment") or s.get("corrected_answer") or s.get("reason") or ""
        _out.print(f"   {s['occurred_at']}  {' '.join(parts)}  {escape(text)}", highlight=False)
    if d["explanation"]:
        _out.print(f"[bold]why this rank:[/bold] {escape(d['explanation'])}", highlight=False)
    for a in d["audit"]:
        _out.print(f"   {a['at']}  {a['reviewer']} {a['action']}"
                   + (f": {escape(a['reason'])}" if a["reason"] else ""), highlight=False)


def _decided(out: dict[str, Any]) -> str:
    v = out["version"]
    return (f"{', '.join(i['candidate_id'] + ' ' + i['status'] for i in out['items'])}: "
            f"{v['agent_id']}/{v['golden_set_id']} v{v['version']} ({v['case_count']} cases, "
            f"+{len(v['diff']['added'])}); version id {v['version_id']}")


def confirm_cmd(id_: IdArg, reviewer: ReviewerOpt = None, row_version: VersionOpt = None,
                golden_set: Annotated[str | None, typer.Option(
                    "--set", help="Golden set to add to (default: the agent's only set).")
                ] = None, as_json: JsonOpt = False, db: DbOpt = None) -> None:
    """Confirm a candidate as is (with any saved edits): a new golden-set version."""
    who = _reviewer(reviewer)

    async def work(pool: asyncpg.Pool) -> dict[str, Any]:
        cid = await _resolve(pool, id_)
        return await store.confirm_candidates(
            pool, [(cid, await _version(pool, cid, row_version), None)], reviewer=who,
            golden_set_id=golden_set)

    out = _run(db, work)
    _emit(out, as_json, _decided(out))


def edit_cmd(
    id_: IdArg,
    question: Annotated[str | None, typer.Option("--question")] = None,
    expected_answer: Annotated[str | None, typer.Option("--expected-answer")] = None,
    expected_behavior: Annotated[str | None, typer.Option("--expected-behavior")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", metavar="<str>",
                                                  help="Repeat for several tags.")
                   ] = None,
    difficulty: Annotated[str | None, typer.Option("--difficulty", help="easy|medium|hard")
                          ] = None,
    domain: Annotated[str | None, typer.Option("--domain", help="Knowledge domain.")] = None,
    category: Annotated[str | None, typer.Option(
        "--category", help="routine|edge-case|adversarial|sensitive")] = None,
    should_refuse: Annotated[bool | None, typer.Option(
        "--should-refuse/--should-not-refuse")] = None,
    should_escalate: Annotated[bool | None, typer.Option(
        "--should-escalate/--should-not-escalate")] = None,
    notes: Annotated[str | None, typer.Option("--notes")] = None,
    save_only: Annotated[bool, typer.Option(
        "--save-only", help="Save the edits, do not confirm yet.")] = False,
    reviewer: ReviewerOpt = None, row_version: VersionOpt = None,
    golden_set: Annotated[str | None, typer.Option("--set")] = None,
    as_json: JsonOpt = False, db: DbOpt = None,
) -> None:
    """Edit a candidate, then confirm it (--save-only: keep the edits for later)."""
    raw: dict[str, Any] = {k: v for k, v in {
        "question": question, "expected_answer": expected_answer,
        "expected_behavior": expected_behavior, "tags": tag, "difficulty": difficulty,
        "domain": domain, "category": category, "should_refuse": should_refuse,
        "should_escalate": should_escalate, "notes": notes}.items() if v is not None}
    who = _reviewer(reviewer)
    try:
        edits = parse_edits(raw)
    except ReviewInputError as exc:
        error_line(str(exc))
        raise typer.Exit(2) from exc

    async def work(pool: asyncpg.Pool) -> dict[str, Any]:
        cid = await _resolve(pool, id_)
        version = await _version(pool, cid, row_version)
        if save_only:
            return await store.save_edits(pool, cid, row_version=version, reviewer=who,
                                          edits=edits)
        return await store.confirm_candidates(pool, [(cid, version, edits)], reviewer=who,
                                              golden_set_id=golden_set, action="edit")

    out = _run(db, work)
    _emit(out, as_json, _decided(out) if "version" in out else
          f"{out['candidate_id']}: edits saved (row version {out['row_version']})")


def reject_cmd(id_: IdArg, reason: Annotated[str, typer.Option(
        "--reason", help="Why it is not a golden case (required).")],
               reviewer: ReviewerOpt = None, row_version: VersionOpt = None,
               as_json: JsonOpt = False, db: DbOpt = None) -> None:
    """Reject a candidate with a reason; its question is never proposed again."""
    who = _reviewer(reviewer)

    async def work(pool: asyncpg.Pool) -> dict[str, Any]:
        cid = await _resolve(pool, id_)
        return await store.reject_candidate(pool, cid, row_version=await _version(
            pool, cid, row_version), reviewer=who, reason=reason)

    out = _run(db, work)
    _emit(out, as_json, f"{out['candidate_id']}: rejected")


def skip_cmd(id_: IdArg, reason: Annotated[str | None, typer.Option("--reason")] = None,
             reviewer: ReviewerOpt = None, row_version: VersionOpt = None,
             as_json: JsonOpt = False, db: DbOpt = None) -> None:
    """Skip a candidate for now: it stays pending, behind the others."""
    who = _reviewer(reviewer)

    async def work(pool: asyncpg.Pool) -> dict[str, Any]:
        cid = await _resolve(pool, id_)
        return await store.skip_candidate(pool, cid, row_version=await _version(
            pool, cid, row_version), reviewer=who, reason=reason)

    out = _run(db, work)
    _emit(out, as_json, f"{out['candidate_id']}: skipped ({out['skip_count']} time(s))")


def register(app: typer.Typer) -> None:
    """Add ``show``, ``confirm``, ``edit``, ``reject`` and ``skip`` to the ``queue`` group."""
    app.command("show")(show_cmd)
    app.command("confirm")(confirm_cmd)
    app.command("edit")(edit_cmd)
    app.command("reject")(reject_cmd)
    app.command("skip")(skip_cmd)
