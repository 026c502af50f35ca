"""The reference agent's optional bearer token, over real HTTP."""

from __future__ import annotations

import httpx

from evalloop.agent import AgentConfig, serve_agent

ASK = {"messages": [{"role": "user", "content": "How many vacation days do I get?"}]}


async def test_a_token_is_required_when_set() -> None:
    async with serve_agent(AgentConfig(kb="hr"), token="s3cret-agent-token") as url:
        async with httpx.AsyncClient(base_url=url) as c:
            none = await c.post("/", json=ASK)
            wrong = await c.post("/", json=ASK, headers={"Authorization": "Bearer nope"})
            ok = await c.post("/", json=ASK,
                              headers={"Authorization": "Bearer s3cret-agent-token"})
            health = await c.get("/healthz")
    assert none.status_code == 401 and none.headers["www-authenticate"] == "Bearer"
    assert none.json() == {"error": {
        "message": "expected 'Authorization: Bearer <token>' with this agent's token",
        "expected": "Bearer <token>", "received": "none"}}
    assert (wrong.status_code, wrong.json()["error"]["received"]) == (401, "another value")
    assert ok.status_code == 200 and ok.json()["response"]
    assert health.status_code == 200


async def test_no_token_means_open_as_before() -> None:
    async with serve_agent(AgentConfig(kb="hr")) as url:
        async with httpx.AsyncClient(base_url=url) as c:
            assert (await c.post("/", json=ASK)).status_code == 200
