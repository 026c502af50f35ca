"""``evalloop keys create|list|revoke`` against real PostgreSQL: the token is printed once,
never listed, and a revoked key is refused by ingest."""

from __future__ import annotations

import asyncio
import json

import asyncpg
import httpx
from typer.testing import CliRunner

from evalloop.adapters.bus import InProcessBus
from evalloop.cli.main import app
from evalloop.settings import IngestSettings, Settings
from services.ingest.app import build_http_app

EVENT = {"event_type": "user_rating", "event_id": "00000000-0000-0000-0000-000000000001",
         "agent_id": "covid-qa-who", "conversation_id": "c1", "turn_id": "t1",
         "occurred_at": "2025-03-01T12:00:00Z", "thumbs": "down"}


async def keys(db_dsn: str, *args: str) -> tuple[int, str, str]:
    result = await asyncio.to_thread(
        CliRunner().invoke, app, ["keys", *args],
        env={"EVALLOOP_POSTGRES__DSN": db_dsn, "COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


async def test_create_list_revoke(pool: asyncpg.Pool, db_dsn: str) -> None:
    code, out, _ = await keys(db_dsn, "create", "--name", "who frontend", "--agent",
                              "covid-qa-who", "--rate-limit", "5/second", "--json")
    assert code == 0, out
    created = json.loads(out)
    token, key_id = created["token"], created["key_id"]
    assert token.startswith(f"evl_{key_id}_") and len(token) == 60
    assert {k: created[k] for k in ("name", "agent_ids", "rate_limit", "revoked_at")} == {
        "name": "who frontend", "agent_ids": ["covid-qa-who"], "rate_limit": "5/second",
        "revoked_at": None}

    code, out, _ = await keys(db_dsn, "create", "--name", "bulk", "--all-agents")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].endswith("  bulk  [all agents]  default rate  active")
    assert lines[1].startswith("token (shown once): evl_")

    code, out, _ = await keys(db_dsn, "list", "--json")
    listed = [json.loads(line) for line in out.splitlines()]
    assert [k["name"] for k in listed] == ["who frontend", "bulk"]
    assert token not in out and all("token" not in k for k in listed)

    app_ = build_http_app(Settings(ingest=IngestSettings(key_cache_s=0)), bus=InProcessBus(),
                          pool=pool)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app_),
                                 base_url="http://ingest",
                                 headers={"Authorization": f"Bearer {token}"}) as c:
        assert (await c.post("/v1/events", json=EVENT)).status_code == 202
        code, out, _ = await keys(db_dsn, "revoke", key_id, "--json")
        assert code == 0 and json.loads(out)["revoked_at"] is not None
        assert (await c.post("/v1/events", json=EVENT)).status_code == 401

    code, out, _ = await keys(db_dsn, "list", "--active", "--json")
    assert [json.loads(line)["name"] for line in out.splitlines()] == ["bulk"]


async def test_usage_errors_exit_2(db_dsn: str) -> None:
    code, _, err = await keys(db_dsn, "revoke", "000000000000")
    assert (code, err.strip()) == (2, "error: no API key '000000000000' (see evalloop keys list)")
    code, out, err = await keys(db_dsn, "create", "--name", "x")
    assert code == 2 and "give --agent ID (repeatable) or --all-agents" in out + err
    code, out, err = await keys(db_dsn, "create", "--name", "x", "--all-agents",
                                "--rate-limit", "fast")
    assert code == 2 and "expected a rate such as 20/second" in out + err


async def test_an_unreachable_database_exits_3() -> None:
    result = await asyncio.to_thread(
        CliRunner().invoke, app, ["keys", "list"],
        env={"EVALLOOP_POSTGRES__DSN": "postgresql://u:Xk29-unique@127.0.0.1:1/x"})
    assert result.exit_code == 3
    assert result.stderr.startswith("error: ")
    assert "Xk29-unique" not in result.stderr and "u:***@127.0.0.1:1" in result.stderr
