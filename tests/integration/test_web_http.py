"""The web app over HTTP (httpx, in process) against real PostgreSQL: sign-in, every page,
CSRF refusal, roles, tokens and exports."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest_asyncio
import yaml
from web_seed import AGENT, PASSWORD, QUIET, Seeded, seed

from evalloop.adapters import user_store
from evalloop.settings import Settings, WebSettings
from evalloop.web.app import build_app

_CSRF = re.compile(r'name="csrftoken" value="([^"]+)"')


@pytest_asyncio.fixture
async def seeded(pool: asyncpg.Pool) -> Seeded:
    return await seed(pool)


@pytest_asyncio.fixture
async def http(pool: asyncpg.Pool, seeded: Seeded) -> AsyncIterator[httpx.AsyncClient]:
    app = build_app(Settings(web=WebSettings(secret_key="s" * 40)), pool=pool)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://web.test") as c:
        yield c


async def _sign_in(http: httpx.AsyncClient, user: str) -> str:
    """Sign in as ``user``; returns the page's CSRF token."""
    page = await http.get("/login")
    token = _CSRF.search(page.text)
    assert token is not None
    r = await http.post("/login", data={"csrftoken": token.group(1), "username": user,
                                         "password": PASSWORD, "next": "/"})
    assert (r.status_code, r.headers["location"]) == (303, "/")
    return token.group(1)


async def test_pages_need_sign_in_and_show_every_agent(http: httpx.AsyncClient,
                                                       seeded: Seeded) -> None:
    r = await http.get("/agents/hr-agent/feedback")
    assert r.status_code == 303
    assert r.headers["location"].startswith("http://web.test/login?next=")
    await _sign_in(http, "vic")
    home = await http.get("/")
    assert home.status_code == 200
    linked = re.findall(r'<td><a href="http://web.test/agents/([^"/]+)">', home.text)
    assert linked == [AGENT, QUIET]
    # the quiet agent's rate and interval are shown although it is below the minimum volume
    assert "5 %" in home.text and "[1.71 %, 13.7 %]" in home.text
    assert "below minimum (200)" in home.text
    feedback = await http.get(f"/agents/{AGENT}/feedback")
    assert feedback.status_code == 200
    assert feedback.text.count('class="marker-link"') == 1
    assert f'href="http://web.test/agents/{AGENT}/runs/{seeded.run_id}"' in feedback.text
    assert "threshold 2 %" in feedback.text and "leave, vacation, days" in feedback.text
    assert "How many vacation days do I get?" in feedback.text  # an example question
    for tab in ("queue", "golden", "runs"):
        assert (await http.get(f"/agents/{AGENT}/{tab}")).status_code == 200, tab
    run = await http.get(f"/agents/{AGENT}/runs/{seeded.run_id}")
    assert run.status_code == 200 and seeded.flagged[0] in run.text
    assert (await http.get(f"/agents/{AGENT}/runs/not-a-run")).status_code == 404


async def test_wrong_password_is_refused(http: httpx.AsyncClient) -> None:
    token = _CSRF.search((await http.get("/login")).text)
    assert token is not None
    r = await http.post("/login", data={"csrftoken": token.group(1), "username": "rita",
                                         "password": "wrong password!"})
    assert r.status_code == 401 and "Sign-in failed" in r.text
    assert (await http.get("/")).status_code == 303


async def test_a_form_post_without_csrf_token_is_refused(
        http: httpx.AsyncClient, pool: asyncpg.Pool, seeded: Seeded) -> None:
    await _sign_in(http, "rita")
    cid = seeded.candidates["vacation"]
    r = await http.post(f"/agents/{AGENT}/queue/items/{cid}/confirm", data={"row_version": "1"})
    assert r.status_code == 403 and "CSRF" in r.text
    r = await http.post(f"/agents/{AGENT}/queue/items/{cid}/confirm",
                        data={"row_version": "1", "csrftoken": "forged"})
    assert r.status_code == 403
    assert await pool.fetchval("SELECT status FROM review_queue WHERE candidate_id = $1",
                               cid) == "pending"
    assert await pool.fetchval("SELECT count(*) FROM review_actions") == 0


async def test_a_viewer_cannot_change_the_queue(
        http: httpx.AsyncClient, pool: asyncpg.Pool, seeded: Seeded) -> None:
    csrf = await _sign_in(http, "vic")
    cid = seeded.candidates["vacation"]
    for action, extra in (("confirm", {}), ("reject", {"reason": "no"}), ("skip", {})):
        r = await http.post(f"/agents/{AGENT}/queue/items/{cid}/{action}",
                            data={"row_version": "1", "csrftoken": csrf, **extra})
        assert r.status_code == 403, action
    page = await http.get(f"/agents/{AGENT}/queue")
    assert "Viewers read the queue" in page.text and 'id="confirm-form"' not in page.text
    token = await user_store.issue_token(pool, "vic")
    api = await http.post(f"/api/v1/review/items/{cid}/confirm", json={"row_version": 1},
                          headers={"authorization": f"Bearer {token}"})
    assert api.status_code == 403
    assert await pool.fetchval("SELECT status FROM review_queue WHERE candidate_id = $1",
                               cid) == "pending"


async def test_reviewer_confirms_with_an_edit_and_rejects(
        http: httpx.AsyncClient, pool: asyncpg.Pool, seeded: Seeded) -> None:
    csrf = await _sign_in(http, "rita")
    cid = seeded.candidates["vacation"]
    r = await http.post(f"/agents/{AGENT}/queue/items/{cid}/confirm", data={
        "csrftoken": csrf, "row_version": "1", "edit_flags": "1",
        "question": "How many vacation days do I get?",
        "expected_answer": "25 days a year for full-time staff.", "category": "routine",
        "difficulty": "easy", "domain": "leave", "tags": ""})
    assert r.status_code == 303
    row = await pool.fetchrow("SELECT status, edits, decided_by FROM review_queue "
                              "WHERE candidate_id = $1", cid)
    assert (row["status"], row["decided_by"]) == ("edited", "rita")
    assert row["edits"] == {"expected_answer": "25 days a year for full-time staff.",
                            "difficulty": "easy", "domain": "leave"}
    golden = await http.get(f"/agents/{AGENT}/golden")
    assert "version 2 of 2" in golden.text and "25 days a year for full-time staff." in golden.text
    assert "1 added, 0 removed, 0 changed" in golden.text
    carry = seeded.candidates["carry"]
    r = await http.post(f"/agents/{AGENT}/queue/items/{carry}/reject",
                        data={"csrftoken": csrf, "row_version": "1", "reason": "a duplicate"})
    assert r.status_code == 303
    assert await pool.fetchval("SELECT decision_reason FROM review_queue WHERE "
                               "candidate_id = $1", carry) == "a duplicate"
    # the same form again: the row moved on, so it is a conflict, shown, nothing written
    r = await http.post(f"/agents/{AGENT}/queue/items/{carry}/reject",
                        data={"csrftoken": csrf, "row_version": "1", "reason": "again"})
    page = await http.get(r.headers["location"])
    assert "Conflict:" in page.text
    assert await pool.fetchval("SELECT count(*) FROM review_actions WHERE action = 'reject'") == 1


async def test_token_sign_in_and_exports(http: httpx.AsyncClient, pool: asyncpg.Pool,
                                         seeded: Seeded) -> None:
    token = await user_store.issue_token(pool, "ada", "ci")
    page = await http.get("/login")
    csrf = _CSRF.search(page.text)
    assert csrf is not None
    r = await http.post("/login", data={"csrftoken": csrf.group(1), "token": token})
    assert r.status_code == 303
    base = f"/agents/{AGENT}/golden/export?set={seeded.golden_set_id}&version=1"
    doc = json.loads((await http.get(base + "&format=json")).text)
    assert (doc["agent"], doc["version"], len(doc["cases"])) == (AGENT, 1, 36)
    as_yaml = yaml.safe_load((await http.get(base + "&format=yaml")).text)
    assert [c["id"] for c in as_yaml["cases"]] == [c["id"] for c in doc["cases"]]
    lines = (await http.get(base + "&format=jsonl")).text.splitlines()
    assert [json.loads(x) for x in lines] == doc["cases"]
    assert (await http.get(base + "&format=csv")).status_code == 400
    api = await http.get("/api/v1/review/queue", params={"agent": AGENT},
                         headers={"authorization": f"Bearer {token}"})
    assert [i["candidate_id"] for i in api.json()["items"]] == [
        str(seeded.candidates[n]) for n in ("vacation", "carry", "parental")]


async def test_up_serves_the_web_app_on_its_port(pg_settings: Settings) -> None:
    import asyncio
    import socket

    from evalloop.cli.up import run_services

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = pg_settings.model_copy(update={"web": WebSettings(port=port)})
    stop = asyncio.Event()
    task = asyncio.create_task(run_services(["web"], settings, stop))
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as c:
            for _ in range(200):
                try:
                    r = await c.get("/healthz")
                    break
                except httpx.ConnectError:
                    await asyncio.sleep(0.05)
            assert (r.status_code, r.json()) == (200, {"status": "ok"})
            assert (await c.get("/static/htmx.min.js")).text.startswith("var htmx=")
            assert (await c.get("/")).status_code == 303
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)


async def test_users_cli_creates_lists_and_issues_tokens(db_dsn: str, pool: asyncpg.Pool
                                                         ) -> None:
    import asyncio

    from typer.testing import CliRunner

    from evalloop.cli.main import app

    def run(*args: str, stdin: str | None = None) -> tuple[int, str]:
        result = CliRunner().invoke(app, [*args, "--db", db_dsn], input=stdin)
        return result.exit_code, result.output

    code, out = await asyncio.to_thread(run, "users", "create", "ada", "--role", "admin",
                                        "--with-password", stdin="correct horse battery\n")
    assert (code, out.splitlines()[-1]) == (0, "created ada (admin, password set)")
    assert await user_store.authenticate_password(pool, "ada", "correct horse battery")
    code, out = await asyncio.to_thread(run, "users", "create", "ada")
    assert (code, "user 'ada' exists already" in out) == (2, True)
    code, out = await asyncio.to_thread(run, "users", "create", "bob", "--role", "owner")
    assert (code, "got 'owner'" in out) == (2, True)
    code, out = await asyncio.to_thread(run, "users", "token", "nobody")
    assert (code, "no user 'nobody'" in out) == (2, True)
    code, token = await asyncio.to_thread(run, "users", "token", "ada", "--label", "ci")
    user = await user_store.authenticate_token(pool, token.strip())
    assert (code, user.username if user else None) == (0, "ada")
    code, out = await asyncio.to_thread(run, "users", "list", "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["username"], r["role"], r["has_password"], r["tokens"]) for r in rows] == [
        ("ada", "admin", True, 1)]


async def test_an_unreachable_database_is_a_503_page(db_dsn: str) -> None:
    from evalloop.adapters.postgres import connect_pool

    closed = await connect_pool(db_dsn, min_size=1, max_size=1)
    await closed.close()
    app = build_app(Settings(web=WebSettings(secret_key="s" * 40)), pool=closed)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://web.test") as c:
        token = _CSRF.search((await c.get("/login")).text)
        assert token is not None
        r = await c.post("/login", data={"csrftoken": token.group(1), "username": "ada",
                                         "password": PASSWORD})
    assert r.status_code == 503 and "database could not be reached" in r.text


async def test_demo_serve_prints_a_token_that_signs_in_and_stops_on_sigterm(
        pool: asyncpg.Pool, pg_settings: Settings) -> None:
    import asyncio
    import io
    import os
    import signal
    import socket

    from rich.console import Console

    from evalloop.cli.demo import serve_after
    from evalloop.demo import DemoReport

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = io.StringIO()
    hook = serve_after(Console(file=out, width=200), "127.0.0.1", port)
    report = DemoReport(dsn="postgresql://demo", kept=False, origin="test", schedule=[])
    task = asyncio.create_task(hook(report, pool, pg_settings))
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as c:
        for _ in range(400):
            try:
                await c.get("/healthz")
                break
            except httpx.ConnectError:
                await asyncio.sleep(0.05)
        printed = out.getvalue()
        assert f"web app http://127.0.0.1:{port}/" in printed
        assert "Ctrl-C stops it and drops the demo database." in printed
        token = re.search(r"evl_[A-Za-z0-9_-]{43}", printed)
        assert token is not None
        r = await c.get("/api/v1/review/queue",
                        headers={"authorization": f"Bearer {token.group(0)}"})
        assert (r.status_code, r.json()) == (200, {"items": []})
        assert (await user_store.get_user(pool, "demo")).role.value == "admin"  # type: ignore[union-attr]
        os.kill(os.getpid(), signal.SIGTERM)  # the hook's handler stops the server
        await asyncio.wait_for(task, 20)


async def test_retiring_a_case_makes_a_version_and_a_viewer_cannot(
        http: httpx.AsyncClient, pool: asyncpg.Pool, seeded: Seeded) -> None:
    csrf = await _sign_in(http, "vic")
    form = {"csrftoken": csrf, "set": seeded.golden_set_id, "case": "r001",
            "expected_version": "1", "reason": "policy changed"}
    assert (await http.post(f"/agents/{AGENT}/golden/retire", data=form)).status_code == 403
    await http.post("/logout", data={"csrftoken": csrf})
    csrf = await _sign_in(http, "rita")
    r = await http.post(f"/agents/{AGENT}/golden/retire", data={**form, "csrftoken": csrf})
    page = await http.get(r.headers["location"])
    assert "Retired r001: version 2." in page.text
    assert "0 added, 1 removed, 0 changed" in page.text
    rows = await pool.fetch("SELECT version, case_count, created_by, diff FROM "
                            "golden_set_versions WHERE agent_id = $1 ORDER BY version", AGENT)
    assert [(v["version"], v["case_count"], v["created_by"]) for v in rows] == [
        (1, 36, "seed"), (2, 35, "rita")]
    assert rows[1]["diff"] == {"added": [], "removed": ["r001"], "changed": []}
    # the same (now stale) form again: a conflict, no third version
    r = await http.post(f"/agents/{AGENT}/golden/retire", data={**form, "csrftoken": csrf,
                                                                "case": "r002"})
    assert "Not retired:" in (await http.get(r.headers["location"])).text
    assert await pool.fetchval("SELECT count(*) FROM golden_set_versions") == 2
