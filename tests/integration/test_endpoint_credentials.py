"""Credentials in endpoint URLs are stripped before they are stored or published
(docs/security.md#secrets): the agent registry and evaluation runs, against real PostgreSQL and
the reference agent over real HTTP."""

from __future__ import annotations

import asyncpg

from evalloop.adapters.agent_client import AgentClient
from evalloop.adapters.golden_store import AgentRecord, get_agent, upsert_agent
from evalloop.agent import AgentConfig, serve_agent
from evalloop.cli.eval_cmd import bundled_evals
from evalloop.core.evaluation.cases import load_eval_file
from evalloop.evaluation.runner import run_eval


async def test_the_registry_stores_the_url_without_credentials(pool: asyncpg.Pool) -> None:
    await upsert_agent(pool, AgentRecord(
        agent_id="hr", endpoint_url="https://bob:hunter2@agent.example/chat?api_key=k1&v=2",
        auth_header_name="Authorization", auth_header_value_env="HR_AGENT_AUTH"))
    stored = await get_agent(pool, "hr")
    assert stored is not None
    assert stored.endpoint_url == "https://agent.example/chat?v=2"
    row = await pool.fetchrow("SELECT * FROM agents")
    assert "hunter2" not in str(dict(row)) and "k1" not in str(dict(row))


async def test_an_evaluation_run_records_the_endpoint_without_credentials() -> None:
    cases = load_eval_file(bundled_evals()).cases[:2]
    async with serve_agent(AgentConfig(kb="hr"), default_format="openai") as url:
        secret_url = url.replace("http://", "http://bob:hunter2@") + "/?token=t0k&v=1"
        async with AgentClient(secret_url, retries=0) as client:
            run = await run_eval(cases, client, concurrency=2)
    assert run.endpoint == url + "/?v=1"
    assert "hunter2" not in run.model_dump_json() and "t0k" not in run.model_dump_json()
