"""The web app in a real browser: headless Chromium (Debian's ``/usr/bin/chromium``, driven by
Playwright) against a real uvicorn on a loopback port and real PostgreSQL.

One walk through, as a reviewer would: sign in, open an agent, see the rate chart with the
re-evaluation marker and follow it to its run, confirm a candidate with an edit (keyboard),
see the new golden-set version and its diff, reject one, review a flagged eval case. Each tab
is screenshotted to ``artifacts/screenshots/`` (git-ignored) for a person to look at.

Select with ``pytest -m browser``; CI needs Debian's ``chromium`` package (``.ci/run``).
"""

from __future__ import annotations

import os
import re
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest
import pytest_asyncio
import uvicorn
from web_seed import AGENT, PASSWORD, Seeded, seed

from evalloop.settings import PostgresSettings, Settings, WebSettings
from evalloop.web.app import build_app

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("EVALLOOP_TEST_CHROMIUM", "/usr/bin/chromium")
HAVE_CHROMIUM = Path(CHROMIUM).exists()
SHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(db_dsn: str) -> Iterator[str]:
    """The web app on a real uvicorn (own thread, own event loop and pool) on loopback."""
    port = _free_port()
    settings = Settings(postgres=PostgresSettings(dsn=db_dsn, pool_min=1, pool_max=4),
                        web=WebSettings(port=port, secret_key="b" * 40))
    srv = uvicorn.Server(uvicorn.Config(build_app(settings), host="127.0.0.1", port=port,
                                        log_level="warning", lifespan="on"))
    thread = threading.Thread(target=srv.run, name="web-under-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the web app did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=15)


@pytest_asyncio.fixture
async def seeded(pool: asyncpg.Pool) -> Seeded:
    return await seed(pool)


@pytest_asyncio.fixture
async def browser_page() -> AsyncIterator[object]:
    if not HAVE_CHROMIUM:
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                          args=["--no-sandbox"])
        page = await browser.new_page(viewport={"width": 1360, "height": 900})
        page.set_default_timeout(15_000)
        try:
            yield page
        finally:
            await browser.close()


async def _shot(page: object, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)  # type: ignore[attr-defined]


async def test_a_reviewer_walks_through_the_loop(
        server: str, seeded: Seeded, pool: asyncpg.Pool, browser_page: object) -> None:
    from playwright.async_api import Page, expect

    page: Page = browser_page  # type: ignore[assignment]
    # sign in (the first page redirects to the sign-in form)
    await page.goto(server + "/")
    await expect(page).to_have_url(re.compile(re.escape(server) + r"/login\?next="))
    await _shot(page, "0-sign-in")
    await page.get_by_label("User name").fill("rita")
    await page.get_by_label("Password").fill(PASSWORD)
    await page.get_by_role("button", name="Sign in", exact=True).click()
    await expect(page.get_by_role("heading", name="Agents")).to_be_visible()
    await expect(page.locator("table.agents tbody tr")).to_have_count(2)
    await _shot(page, "1-agents")

    # open the agent: the rate chart, its threshold, and the re-evaluation marker
    await page.get_by_role("link", name=AGENT, exact=True).first.click()
    await expect(page).to_have_url(f"{server}/agents/{AGENT}/feedback")
    chart = page.locator("svg.chart")
    await expect(chart).to_be_visible()
    await expect(chart.locator("polygon.band")).to_have_count(1)
    await expect(chart.locator("text.threshold-label")).to_have_text("threshold 2 %")
    marker = chart.locator("a.marker-link")
    await expect(marker).to_have_count(1)
    await _shot(page, "2-feedback-loop")
    await marker.locator("line").click(force=True)
    await expect(page).to_have_url(f"{server}/agents/{AGENT}/runs/{seeded.run_id}")
    await expect(page.locator("h1")).to_contain_text("gate")

    # the review queue, by keyboard: edit the first candidate, then confirm it
    await page.keyboard.press("2")
    await expect(page).to_have_url(f"{server}/agents/{AGENT}/queue")
    await expect(page.locator("#queue-list li.selected")).to_contain_text(
        "How many vacation days do I get?")
    await expect(page.locator(".why-rank")).to_be_visible()
    await expect(page.locator(".correction")).to_have_text(
        "Full-time staff get 25 days of paid vacation a year.")
    await _shot(page, "3-review-queue")
    selected = page.locator("#queue-list li.selected")
    await page.keyboard.press("j")
    await expect(selected).to_contain_text("Can I carry over unused leave?")
    await page.keyboard.press("k")
    await expect(selected).to_contain_text("How many vacation days do I get?")
    await page.keyboard.press("e")
    await expect(page.locator("#f-question")).to_be_focused()
    form = page.locator("#confirm-form")
    await form.get_by_label("Expected answer").fill(
        "Full-time staff get 25 days of paid vacation a year; part-time staff pro rata.")
    await form.get_by_label("Difficulty").select_option("easy")
    await form.get_by_label("Domain").fill("leave")
    await page.keyboard.press("Escape")
    await page.keyboard.press("c")
    flash = page.locator(".flash")
    await expect(flash).to_contain_text("Edited and confirmed")
    await expect(flash).to_contain_text("version 2")
    row = await pool.fetchrow("SELECT status, decided_by, edits FROM review_queue "
                              "WHERE candidate_id = $1", seeded.candidates["vacation"])
    assert (row["status"], row["decided_by"]) == ("edited", "rita")
    assert row["edits"]["difficulty"] == "easy"

    # the next candidate is selected: reject it with a reason (r, type, Enter)
    await expect(page.locator("#queue-list li.selected")).to_contain_text(
        "Can I carry over unused leave?")
    await page.keyboard.press("r")
    await page.keyboard.type("not a policy question")
    await page.keyboard.press("Enter")
    await expect(page.locator(".flash")).to_contain_text("Rejected")
    assert await pool.fetchval(
        "SELECT decision_reason FROM review_queue WHERE candidate_id = $1",
        seeded.candidates["carry"]) == "not a policy question"

    # the new golden-set version and its diff (the flash linked it; open it from the tab)
    await page.keyboard.press("3")
    await expect(page.locator(".golden-head h2")).to_contain_text("version 2 of 2")
    diff = page.locator("#diff")
    await expect(diff).to_contain_text("v1 → v2: 1 added, 0 removed, 0 changed")
    await expect(diff.locator(".diff-case.added")).to_contain_text("part-time staff pro rata")
    await expect(page.locator("table.care tbody tr")).to_have_count(7)
    await _shot(page, "4-golden-sets")

    # review a flagged eval case: pass/fail per criterion, a score, a note
    await page.keyboard.press("4")
    await expect(page.locator("table.runs tbody tr")).to_have_count(1)
    await _shot(page, "5-eval-runs")
    await page.locator("ul.waiting a").first.click()
    first = seeded.flagged[0]
    await expect(page.locator("#eval-case h2")).to_contain_text(first)
    verdict = page.locator("form.verdict-form")
    await verdict.get_by_label("correctness pass").check()
    await verdict.get_by_label("tone fail").check()
    await verdict.get_by_label("Score (1-5)").select_option("4")
    await verdict.get_by_label("Note").fill("right facts, curt tone")
    await _shot(page, "6-eval-case-review")
    await verdict.get_by_role("button", name="Store verdict").click()
    await expect(page.locator(".flash")).to_contain_text(f"Verdict on {first} stored")
    stored = await pool.fetchrow("SELECT reviewer, criteria, score, note FROM "
                                 "eval_human_reviews WHERE run_id = $1 AND case_id = $2",
                                 seeded.run_id, first)
    assert dict(stored) == {"reviewer": "rita", "criteria": {"correctness": True, "tone": False},
                            "score": 4, "note": "right facts, curt tone"}
