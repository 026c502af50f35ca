"""``evalloop queue``: the review queue of golden-set candidates, grouped by topic cluster.

Reads the PostgreSQL named by ``--db`` or ``EVALLOOP_POSTGRES__DSN`` (tables: migration 0003); a
read-only command, it neither starts the embedded server nor applies migrations, and says what
is missing. Exit codes: ``docs/exit-codes.md``.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import typer

from evalloop.cli._common import console as make_console
from evalloop.cli._common import json_line, read_only_dsn, read_only_failure

__all__ = ["app", "group_by_cluster", "list_cmd"]

app = typer.Typer(no_args_is_help=True, help="Golden-set candidates awaiting review.")

_STATUSES = ("pending", "confirmed", "edited", "rejected", "withdrawn", "all")


def group_by_cluster(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Group queue rows (ordered by agent, cluster size, cluster, confidence) into clusters.

    Returns:
        One dict per (agent, cluster), in input order: ``agent_id``, ``cluster_id``,
        ``label``, ``size`` (``None`` when the cluster no longer exists), ``covered``
        (the golden set holds a case of it) and ``candidates`` (question, answer_given,
        expected_answer, expected_answer_source, confidence, explanation, evidence_count,
        status, row_version, candidate_id, proposed_at).
    """
    out: list[dict[str, Any]] = []
    index: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        key = (r["agent_id"], r["cluster_id"])
        group = index.get(key)
        if group is None:
            group = {"agent_id": r["agent_id"], "cluster_id": r["cluster_id"],
                     "label": r["cluster_label"], "size": r["cluster_size"],
                     "covered": r["covered"], "candidates": []}
            index[key] = group
            out.append(group)
        group["candidates"].append({
            "candidate_id": str(r["candidate_id"]), "question": r["question"],
            "answer_given": r["answer_given"], "expected_answer": r["expected_answer"],
            "expected_answer_source": r.get("expected_answer_source"),
            "confidence": r["confidence"], "explanation": r.get("explanation"),
            "evidence_count": r["evidence_count"], "status": r["status"],
            "row_version": r.get("row_version"), "proposed_at": r["proposed_at"].isoformat(),
        })
    return out


async def _fetch(dsn: str, agent: str | None, status: str | None, limit: int
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from evalloop.adapters.postgres import connect_pool
    from evalloop.adapters.triage_store import list_clusters, list_queue

    pool = await connect_pool(dsn, min_size=1, max_size=1)
    try:
        rows = await list_queue(pool, agent_id=agent, status=status, limit=limit)
        clusters = await list_clusters(pool, agent)
    finally:
        await pool.close()
    return [dict(r) for r in rows], [dict(c) for c in clusters]


def _short(text: str | None, n: int = 160) -> str:
    if not text:
        return "-"
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


@app.command("list")
def list_cmd(
    agent: Annotated[str | None, typer.Option("--agent", help="only this agent")] = None,
    status: Annotated[
        str, typer.Option("--status",
                          help="pending | confirmed | edited | rejected | withdrawn | all")
    ] = "pending",
    limit: Annotated[int, typer.Option("--limit", min=1, help="at most this many candidates")
                     ] = 50,
    as_json: Annotated[bool, typer.Option(
        "--json", help="JSON lines: one candidate per line: the stored queue columns, with its "
                       "cluster's label and size.")] = False,
    db: Annotated[str | None, typer.Option(
        "--db", help="PostgreSQL DSN (default: EVALLOOP_POSTGRES__DSN)")] = None,
) -> None:
    """Show the review queue by cluster: label, size, covered by the golden set?, and each
    candidate's question, answer given, expected answer (when corrected), confidence and
    evidence count; then the clusters no golden case covers."""
    if status not in _STATUSES:
        raise typer.BadParameter(
            f"expected one of {', '.join(_STATUSES)}, got {status!r}", param_hint="--status"
        )
    try:
        rows, clusters = asyncio.run(_fetch(
            read_only_dsn(db), agent, None if status == "all" else status, limit))
    except Exception as exc:
        read_only_failure(exc, tables="triage",
                          remedy="the services or `evalloop demo` apply them",
                          what="cannot list the review queue")
    if as_json:
        for r in rows:
            json_line(r)
        return
    groups = group_by_cluster(rows)
    uncovered = [
        {"agent_id": c["agent_id"], "cluster_id": c["cluster_id"], "label": c["label"],
         "size": c["size"]}
        for c in clusters if not c["covered_by_golden"]
    ]
    from rich.markup import escape
    from rich.table import Table

    console = make_console()
    n = sum(len(g["candidates"]) for g in groups)
    console.print(f"[bold]review queue[/bold]: {n} {status} candidate(s) in {len(groups)} "
                  "cluster(s)")
    for g in groups:
        size = "gone" if g["size"] is None else str(g["size"])
        covered = "yes" if g["covered"] else "[yellow]no[/yellow]"
        # the heading on its own line: a table title would wrap at the table's width, and a
        # label is a whole question (docs/review.md#cluster-labels)
        console.print(f"{g['agent_id']} / {g['cluster_id']}: {escape(str(g['label']))}  "
                      f"(size {size}, covered by golden set: {covered})", highlight=False)
        table = Table(show_lines=False)
        for col in ("id", "conf", "question", "answer given", "expected answer (source)",
                    "evidence", "status"):
            table.add_column(col, overflow="fold")
        for c in g["candidates"]:
            source = f" ({c['expected_answer_source']})" if c["expected_answer_source"] else ""
            table.add_row(c["candidate_id"][:8], f"{c['confidence']:.2f}",
                          _short(c["question"]), _short(c["answer_given"]),
                          _short(c["expected_answer"]) + source, str(c["evidence_count"]),
                          c["status"])
        console.print(table)
    if uncovered:
        top = ", ".join(f"{u['cluster_id']} ({u['label'] or 'provisional'}; {u['size']})"
                        for u in uncovered[:10])
        console.print(f"clusters the golden set does not cover: {len(uncovered)}; largest: "
                      f"{top}")


def _register_review_commands() -> None:
    # show / confirm / edit / reject / skip (docs/review.md), in their own module
    from evalloop.cli import review_cmds

    review_cmds.register(app)


_register_review_commands()
