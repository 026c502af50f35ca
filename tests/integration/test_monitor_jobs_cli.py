"""``evalloop jobs list`` on real PostgreSQL: table, filters, JSON, result summaries."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from uuid import uuid4

import asyncpg
from typer.testing import CliRunner

from evalloop.adapters.postgres import create_database
from evalloop.cli.jobs import summarize_result
from evalloop.cli.main import app


async def _job(pool: asyncpg.Pool, agent: str, trigger: str, reason: str, when: datetime,
               status: str = "requested", result: dict | None = None,  # type: ignore[type-arg]
               published: bool = True) -> None:
    await pool.execute(
        "INSERT INTO reeval_jobs (job_id, agent_id, trigger, reason, requested_at, request,"
        " status, result, published_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,"
        " CASE WHEN $9 THEN now() END)",
        uuid4(), agent, trigger, reason, when, {"trigger": trigger}, status, result, published,
    )


def _run(db_dsn: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        app, ["jobs", "list", *args], env={"EVALLOOP_POSTGRES__DSN": db_dsn, "COLUMNS": "200"}
    )
    return result.exit_code, result.output


async def test_jobs_list_table_filters_and_json(pool: asyncpg.Pool, db_dsn: str) -> None:
    await _job(pool, "who", "negative_rate",
               "negative rate 3.1% [2.2%, 4.4%] over 24 h ending 2026-03-02T20:05:00Z, "
               "31/1000 turns served > 2%", datetime(2026, 3, 2, 20, 6, tzinfo=UTC),
               status="succeeded",
               result={"decision": "NO-GO", "summary": {"passed": 27, "failed": 2, "total": 29}})
    await _job(pool, "cdc", "system_prompt", "system prompt changed to p-7",
               datetime(2026, 3, 2, 21, 0, tzinfo=UTC), published=False)

    code, out = await asyncio.to_thread(_run, db_dsn)
    assert code == 0, out
    assert "re-evaluation jobs (2)" in out
    assert out.index("cdc") < out.index("who")  # newest first
    assert "NO-GO; 27 passed, 2 failed of 29" in out
    assert "requested (unpublished)" in out
    assert "2026-03-02 20:06:00" in out

    code, out = await asyncio.to_thread(_run, db_dsn, "--agent", "who", "--json")
    assert code == 0, out
    row = json.loads(out)  # one job: one JSON object
    assert (row["agent_id"], row["trigger"], row["status"]) == (
        "who", "negative_rate", "succeeded"
    )
    assert row["summary"] == "NO-GO; 27 passed, 2 failed of 29"

    code, out = await asyncio.to_thread(_run, db_dsn, "--status", "requested")
    assert code == 0 and "cdc" in out and "who" not in out

    code, out = await asyncio.to_thread(_run, db_dsn, "--status", "done")
    assert code == 2 and "expected one of requested, running, succeeded, failed" in out


async def test_jobs_list_on_an_unmigrated_database_says_so(pg_dsn: str) -> None:
    name = f"evalloop_empty_{uuid4().hex[:10]}"
    dsn = await create_database(pg_dsn, name)
    try:
        code, out = await asyncio.to_thread(_run, dsn)
    finally:
        conn = await asyncpg.connect(pg_dsn)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()
    assert code == 3  # the database is there but not set up: infrastructure
    assert out == ("error: cannot list jobs: the database has no re-evaluation job tables "
                   "(read-only commands do not migrate: the monitor and evaluator services (or "
                   "`evalloop demo`) apply them): relation 'reeval_jobs' does not exist\n")


def test_jobs_list_without_a_database_says_what_is_missing_and_starts_none() -> None:
    result = CliRunner().invoke(app, ["jobs", "list"], env={"EVALLOOP_POSTGRES__DSN": ""})
    assert result.exit_code == 2
    assert result.output.startswith("error: cannot list jobs: no database configured: pass "
                                    "--db DSN or set EVALLOOP_POSTGRES__DSN")


def test_summarize_result_shapes() -> None:
    assert summarize_result(None) == ""
    assert summarize_result({"x": 1}, error="agent unreachable") == "error: agent unreachable"
    assert summarize_result({"gates": {"passed": 28, "failed": 1}}) == "28 passed, 1 failed"
    assert summarize_result({"decision": "GO", "cases": [1, 2, 3]}) == "GO; 3 cases"
    assert summarize_result({"gate_failures": ["a001"], "exit_code": 1}) == (
        "gate failures: 1; exit 1"
    )
    assert summarize_result({"note": "x" * 100}).endswith("...")
    # the evaluator's result shape
    assert summarize_result({
        "status": "succeeded", "trigger": "weekly_sample", "total": 10, "passed": 8,
        "failed": 1, "agent_errors": 1, "gate_failures": 1, "exit_code": 1,
    }) == "8 passed, 1 failed of 10; agent errors: 1; gate failures: 1; exit 1"
