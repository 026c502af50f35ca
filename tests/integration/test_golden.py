"""Golden sets in real PostgreSQL: immutable versions with parent and diff, no-op re-import,
export round trip, the agent registry, runs stored and read back; the CLI commands."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from uuid import uuid4

import asyncpg
import pytest
from typer.testing import CliRunner

from evalloop.adapters.golden_store import (
    AgentRecord,
    content_hash,
    get_agent,
    get_golden_version,
    import_golden_set,
    list_agents,
    list_golden_versions,
    load_eval_run,
    load_golden_cases,
    save_eval_run,
    start_eval_run,
    upsert_agent,
)
from evalloop.cli.eval_cmd import bundled_evals
from evalloop.cli.main import app
from evalloop.core.evaluation.cases import (
    EvalSet,
    dump_golden_json,
    load_eval_file,
    parse_eval_document,
)
from evalloop.errors import ConfigError, GoldenSetError
from evalloop.evaluation.runner import load_responses_file, run_eval

HR_FILE = bundled_evals()
HR = load_eval_file(HR_FILE)
REFERENCE = bundled_evals("reference-responses.json")
FAILURE = bundled_evals("recorded-failure-a003.json")
runner = CliRunner()


def _edited(base: EvalSet) -> EvalSet:
    """v2 of the HR set: r012 removed, r001 reworded, one new case."""
    cases = [c for c in base.cases if c.id != "r012"]
    cases[0] = cases[0].model_copy(update={"input": "How much annual leave does Grade N5 get?"})
    extra = parse_eval_document("- id: r013\n  input: When is the lunch break?\n"
                                "  category: routine\n", "x.yaml").cases[0]
    return base.model_copy(update={"cases": (*cases, extra), "source": "hr-v2.yaml"})


async def test_import_versions_diffs_and_noop(pool: asyncpg.Pool) -> None:
    first = await import_golden_set(pool, HR, agent_id="hr-qa-agent", created_by="lead")
    v1 = first.version
    assert first.created is True
    assert (v1.golden_set_id, v1.version, v1.parent_version_id, v1.case_count, v1.source,
            v1.created_by) == ("hr-qa-agent-evals", 1, None, 36, "hr-qa-agent-evals.yaml",
                               "lead")
    assert v1.diff == {"added": sorted(c.id for c in HR.cases), "removed": [], "changed": []}
    assert v1.content_hash == content_hash(HR.cases)

    again = await import_golden_set(pool, HR, agent_id="hr-qa-agent")
    assert (again.created, again.version.version_id) == (False, v1.version_id)

    second = await import_golden_set(pool, _edited(HR), agent_id="hr-qa-agent")
    v2 = second.version
    assert (second.created, v2.version, v2.parent_version_id, v2.case_count) == (
        True, 2, v1.version_id, 36)
    assert v2.diff == {"added": ["r013"], "removed": ["r012"], "changed": ["r001"]}

    # going back to v1's content is a new version (versions only move forward)
    third = await import_golden_set(pool, HR, agent_id="hr-qa-agent")
    assert (third.version.version, third.version.parent_version_id) == (3, v2.version_id)
    assert third.version.diff == {"added": ["r012"], "removed": ["r013"], "changed": ["r001"]}

    assert await load_golden_cases(pool, v1.version_id) == HR.cases
    assert (await get_golden_version(pool, "hr-qa-agent")).version == 3
    assert (await get_golden_version(pool, "hr-qa-agent", version=2)).version_id == v2.version_id
    assert (await get_golden_version(pool, "x", version_id=v1.version_id)).version == 1
    assert [(v.agent_id, v.version) for v in await list_golden_versions(pool)] == [
        ("hr-qa-agent", 1), ("hr-qa-agent", 2), ("hr-qa-agent", 3)]


async def test_versions_are_immutable(pool: asyncpg.Pool) -> None:
    v = (await import_golden_set(pool, HR, agent_id="hr-qa-agent")).version
    with pytest.raises(asyncpg.RaiseError, match="golden set versions are immutable: UPDATE"):
        await pool.execute("UPDATE golden_cases SET question = 'x' WHERE version_id = $1",
                           v.version_id)
    with pytest.raises(asyncpg.RaiseError, match="immutable: DELETE on golden_set_versions"):
        await pool.execute("DELETE FROM golden_set_versions WHERE version_id = $1", v.version_id)


async def test_concurrent_imports_get_gap_free_versions(pool: asyncpg.Pool) -> None:
    variants = [HR.model_copy(update={"cases": HR.cases[: 30 + i]}) for i in range(5)]
    outcomes = await asyncio.gather(*(import_golden_set(pool, v, agent_id="hr-qa-agent")
                                      for v in variants))
    assert sorted(o.version.version for o in outcomes) == [1, 2, 3, 4, 5]
    versions = await list_golden_versions(pool, "hr-qa-agent")
    assert [v.parent_version_id for v in versions[1:]] == [v.version_id for v in versions[:-1]]


async def test_missing_versions_are_clear_errors(pool: asyncpg.Pool) -> None:
    with pytest.raises(GoldenSetError, match="agent 'nobody' has no golden set stored; import"):
        await get_golden_version(pool, "nobody")
    await import_golden_set(pool, HR, agent_id="hr-qa-agent")
    with pytest.raises(GoldenSetError, match=r"has no version 7 \(latest is 1\)"):
        await get_golden_version(pool, "hr-qa-agent", version=7)
    await import_golden_set(pool, HR, agent_id="hr-qa-agent", golden_set_id="second")
    with pytest.raises(GoldenSetError, match=r"several golden sets \(hr-qa-agent-evals, second\)"):
        await get_golden_version(pool, "hr-qa-agent")
    assert (await get_golden_version(pool, "hr-qa-agent", golden_set_id="second")).version == 1


async def test_agent_registry_never_stores_the_secret(pool: asyncpg.Pool) -> None:
    record = AgentRecord("hr-qa-agent", "http://127.0.0.1:8000/chat", "Authorization",
                         "HR_AGENT_TOKEN", "openai-sse")
    await upsert_agent(pool, record)
    stored = await get_agent(pool, "hr-qa-agent")
    assert stored is not None and stored.updated_at is not None
    assert (stored.endpoint_url, stored.auth_header_name, stored.auth_header_value_env,
            stored.response_format) == ("http://127.0.0.1:8000/chat", "Authorization",
                                        "HR_AGENT_TOKEN", "openai-sse")
    assert stored.headers({"HR_AGENT_TOKEN": "Bearer s3cret"}) == {
        "Authorization": "Bearer s3cret"}
    with pytest.raises(ConfigError, match=r"HR_AGENT_TOKEN .* is not set"):
        stored.headers({})
    await upsert_agent(pool, AgentRecord("hr-qa-agent", "http://127.0.0.1:9000/"))
    assert [(a.agent_id, a.endpoint_url, a.auth_header_name) for a in await list_agents(pool)] \
        == [("hr-qa-agent", "http://127.0.0.1:9000/", None)]
    assert await get_agent(pool, "other") is None


async def test_run_is_stored_and_read_back(pool: asyncpg.Pool) -> None:
    v = (await import_golden_set(pool, HR, agent_id="hr-qa-agent")).version
    cases = await load_golden_cases(pool, v.version_id)
    run_id, job_id = uuid4(), uuid4()
    canned = load_responses_file([REFERENCE, FAILURE])
    run = await run_eval(cases, canned, run_id=run_id, job_id=job_id, agent_id="hr-qa-agent",
                         golden_set_version_id=v.version_id)
    await start_eval_run(pool, run_id=run_id, started_at=run.started_at, agent_id="hr-qa-agent",
                         job_id=job_id, golden_set_version_id=v.version_id,
                         source="responses_file")
    assert await load_eval_run(pool, run_id) is None  # still running
    await save_eval_run(pool, run)
    await save_eval_run(pool, run)  # idempotent
    back = await load_eval_run(pool, run_id)
    assert back == run
    row = await pool.fetchrow("SELECT status, job_id, golden_set_version_id FROM eval_runs "
                              "WHERE run_id = $1", run_id)
    assert dict(row) == {"status": "failed", "job_id": job_id,
                         "golden_set_version_id": v.version_id}
    a003 = await pool.fetchrow("SELECT status, flags, gates->'refusal'->>'passed' AS ok, scores, "
                               "composite FROM eval_results WHERE run_id = $1 AND case_id = "
                               "'a003'", run_id)
    assert dict(a003) == {"status": "failed_gate", "flags": [], "ok": "false", "scores": None,
                          "composite": None}
    assert await pool.fetchval("SELECT count(*) FROM eval_results WHERE run_id = $1",
                               run_id) == 36


# --------------------------------------------------------------------------- CLI


def _cli(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


async def test_golden_cli_import_list_export_roundtrip(db_dsn: str, pool: asyncpg.Pool,
                                                       tmp_path: Path) -> None:
    code, out, _ = await asyncio.to_thread(_cli, "golden", "import", str(HR_FILE), "--db", db_dsn)
    assert code == 0, out
    assert out.startswith("imported hr-qa-agent-evals.yaml as hr-qa-agent/hr-qa-agent-evals v1 "
                          "(36 cases)")
    code, out, _ = await asyncio.to_thread(_cli, "golden", "import", str(HR_FILE), "--agent",
                                           "hr-qa-agent", "--db", db_dsn)
    assert code == 0 and out.startswith("unchanged: hr-qa-agent-evals.yaml is identical to "
                                        "hr-qa-agent/hr-qa-agent-evals v1")
    exported = tmp_path / "export.json"
    code, _, _ = await asyncio.to_thread(_cli, "golden", "export", "--agent", "hr-qa-agent",
                                         "--format", "json", "--output", str(exported),
                                         "--db", db_dsn)
    assert code == 0
    doc = json.loads(exported.read_text())
    assert (doc["id"], doc["agent"], doc["version"], len(doc["cases"])) == (
        "hr-qa-agent-evals", "hr-qa-agent", 1, 36)
    # the export re-imports as identical content: no new version
    code, out, _ = await asyncio.to_thread(_cli, "golden", "import", str(exported), "--db",
                                           db_dsn)
    assert code == 0 and out.startswith("unchanged: export.json is identical to")
    v2_file = tmp_path / "hr-v2.json"
    edited = dict(doc, cases=[c for c in doc["cases"] if c["id"] != "s012"])
    v2_file.write_text(json.dumps(edited))
    code, out, _ = await asyncio.to_thread(_cli, "golden", "import", str(v2_file), "--db",
                                           db_dsn)
    assert code == 0 and "as hr-qa-agent/hr-qa-agent-evals v2 (parent v1: -1 removed (s012))" \
        in out
    code, out, _ = await asyncio.to_thread(_cli, "golden", "list", "--db", db_dsn)
    assert code == 0 and "-1 removed (s012)" in out and "initial" in out
    code, out, _ = await asyncio.to_thread(_cli, "golden", "export", "--agent", "hr-qa-agent",
                                           "--version", "1", "--format", "yaml", "--db", db_dsn)
    assert code == 0
    assert parse_eval_document(out, "v1.yaml").cases == HR.cases
    code, _, err = await asyncio.to_thread(_cli, "golden", "export", "--agent", "hr-qa-agent",
                                           "--version", "9", "--db", db_dsn)
    assert code == 2 and "has no version 9 (latest is 2)" in " ".join(err.split())


def _piped(*args: str) -> tuple[int, str, str]:
    """As ``| cat`` sees it: no terminal and no ``COLUMNS``."""
    result = runner.invoke(app, list(args), env={"COLUMNS": None})
    return result.exit_code, result.stdout, result.stderr


async def test_golden_cli_jsonl_piped_tables_and_clear_errors(db_dsn: str, pool: asyncpg.Pool
                                                              ) -> None:
    await import_golden_set(pool, HR, agent_id="hr-qa-agent")
    code, out, err = await asyncio.to_thread(
        _piped, "golden", "export", "--agent", "hr-qa-agent", "--format", "jsonl", "--db", db_dsn)
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    golden = json.loads(dump_golden_json(HR.cases, set_id="hr-qa-agent-evals",
                                         agent="hr-qa-agent", version=1))
    assert lines == golden["cases"] and len(lines) == 36
    assert lines[0]["id"] == "r001"
    code, out, err = await asyncio.to_thread(_piped, "golden", "list", "--db", db_dsn)
    row = next(line for line in out.splitlines() if "hr-qa-agent-evals" in line)
    # one row, nothing folded into 80 columns
    assert [cell.strip() for cell in row.strip("│ ").split("│")][:4] == [
        "hr-qa-agent", "hr-qa-agent-evals", "1", "36"]
    assert await asyncio.to_thread(
        _piped, "golden", "export", "--agent", "hr-qa-agent", "--format", "csv", "--db", db_dsn
    ) == (2, "", "error: --format: expected json, yaml or jsonl, received 'csv'\n")
    assert await asyncio.to_thread(
        _piped, "golden", "care", "--agent", "nobody", "--db", db_dsn
    ) == (2, "", "error: no golden set for agent 'nobody' (see `evalloop golden list`)\n")
    code, _, err = await asyncio.to_thread(_piped, "golden", "list", "--db", "not a dsn")
    assert code == 2 and err.count("\n") == 1  # bad input, not the database failing
    assert err.startswith("error: ") and "invalid DSN" in err
    assert "ClientConfigurationError" not in err


async def test_eval_run_against_a_stored_golden_set_is_stored_and_pinned(
        db_dsn: str, pool: asyncpg.Pool, tmp_path: Path) -> None:
    v1 = (await import_golden_set(pool, HR, agent_id="hr-qa-agent")).version
    await import_golden_set(pool, _edited(HR), agent_id="hr-qa-agent")
    code, out, _ = await asyncio.to_thread(
        _cli, "eval", "run", "--golden-set", "hr-qa-agent@1", "--responses-file", str(REFERENCE),
        "--responses-file", str(FAILURE), "--output-dir", str(tmp_path), "--db", db_dsn,
        "--no-progress")
    assert code == 1
    assert "evals:  golden:hr-qa-agent/hr-qa-agent-evals@1 (36 cases)" in out
    row = await pool.fetchrow("SELECT run_id, status, golden_set_version_id, agent_id, "
                              "summary->>'passed' AS passed FROM eval_runs")
    assert (row["status"], row["golden_set_version_id"], row["agent_id"], row["passed"]) == (
        "failed", v1.version_id, "hr-qa-agent", "35")
    assert f"stored in PostgreSQL as run {row['run_id']}" in out
    # latest (v2) has r013, which has no canned response: unscored, still exit 0 without a003
    code, out, _ = await asyncio.to_thread(
        _cli, "eval", "run", "--golden-set", "hr-qa-agent", "--responses-file", str(REFERENCE),
        "--output-dir", str(tmp_path), "--db", db_dsn, "--no-progress")
    assert code == 0
    assert "passed 35/35 (100.0%), 1 unscored" in out and "unscored: 1" in out


async def test_golden_list_json_lines_are_the_stored_rows(db_dsn: str, pool: asyncpg.Pool
                                                          ) -> None:
    v1 = (await import_golden_set(pool, HR, agent_id="hr-qa-agent")).version
    v2 = (await import_golden_set(pool, _edited(HR), agent_id="hr-qa-agent")).version
    code, out, err = await asyncio.to_thread(_cli, "golden", "list", "--json", "--db", db_dsn)
    assert (code, err) == (0, "")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["version"], r["version_id"], r["case_count"]) for r in rows] == [
        (1, str(v1.version_id), 36), (2, str(v2.version_id), v2.case_count)]
    assert set(rows[0]) == {"version_id", "agent_id", "golden_set_id", "version",
                            "parent_version_id", "created_at", "created_by", "source", "diff",
                            "content_hash", "case_count"}
    assert rows[1]["parent_version_id"] == str(v1.version_id)


def test_read_only_golden_commands_need_a_configured_database() -> None:
    for args in (["golden", "list"], ["golden", "export", "--agent", "hr-qa-agent"]):
        result = runner.invoke(app, args, env={"EVALLOOP_POSTGRES__DSN": ""})
        assert result.exit_code == 2
        assert result.stderr.startswith("error: no database configured: pass --db DSN or set "
                                        "EVALLOOP_POSTGRES__DSN (read-only commands neither "
                                        "start the embedded server nor apply migrations")


async def test_read_only_golden_list_does_not_migrate(pg_dsn: str) -> None:
    from evalloop.adapters.postgres import create_database

    name = f"evalloop_bare_{uuid4().hex[:10]}"
    dsn = await create_database(pg_dsn, name)
    try:
        code, _, err = await asyncio.to_thread(_cli, "golden", "list", "--db", dsn)
        conn = await asyncpg.connect(dsn)
        try:
            tables = await conn.fetchval("SELECT count(*) FROM pg_tables WHERE schemaname = "
                                         "'public'")
        finally:
            await conn.close()
    finally:
        conn = await asyncpg.connect(pg_dsn)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()
    assert (code, tables) == (3, 0)
    assert err.startswith("error: the database has no golden-set tables (read-only commands do "
                          "not migrate")
    assert len(err.splitlines()) == 1


async def test_eval_file_run_keeps_expected_passages_for_the_gate(pool: asyncpg.Pool) -> None:
    """A run of an eval file (not pinned to a golden set) keeps each case's ``context_chunks``,
    so a missed expected passage is blamed on retrieval (docs/readiness.md#the-gate)."""
    from evalloop.adapters.readiness_store import load_cases
    from evalloop.core.readiness.gate import CaseEvidence, likely_cause

    run_id = uuid4()
    canned = load_responses_file([REFERENCE, FAILURE])
    run = await run_eval(list(HR.cases), canned, run_id=run_id, agent_id="hr-qa-agent",
                         second_opinion=None)
    s011 = next(r for r in run.results if r.case_id == "s011")
    assert s011.context_chunks == ["hr-policy/leave/compassionate-leave"]
    await start_eval_run(pool, run_id=run_id, started_at=run.started_at, agent_id="hr-qa-agent",
                         source="responses_file")
    await save_eval_run(pool, run)
    assert (await load_eval_run(pool, run_id)) == run
    await pool.execute("UPDATE eval_results SET retrieved_context = $2 WHERE run_id = $1 AND "
                       "case_id = 's011'", run_id,
                       ["hr-policy/leave/unpaid-infant-care-leave", "hr-policy/leave/sick-leave"])
    case = next(c for c in await load_cases(pool, run_id) if c.case_id == "s011")
    assert case.context_chunks == ("hr-policy/leave/compassionate-leave",)
    ev = CaseEvidence(case.case_id, case.should_refuse, case.should_escalate,
                      case.retrieved or (), case.context_chunks,
                      retrieval_known=case.retrieved is not None)
    assert likely_cause("groundedness", ev) == (
        "retrieval",
        "expected passage(s) hr-policy/leave/compassionate-leave not among the retrieved "
        "hr-policy/leave/unpaid-infant-care-leave, hr-policy/leave/sick-leave",
    )
