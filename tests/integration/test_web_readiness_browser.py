"""The readiness tabs in a real browser: headless Chromium (Debian's ``/usr/bin/chromium``,
driven by Playwright) against a real uvicorn and real PostgreSQL, on data written through the
readiness store (``readiness_seed``).

A reviewer opens the agent, walks Scoring → Regression → Hallucinations → Gate → A/B with the
keys 5-9, filters the hallucinations by run, and approves the sample-review checkpoint on the
Gate tab (the stored row is checked). Each tab is screenshotted to ``artifacts/screenshots/``
(``r*-<tab>.png``; git-ignored).

Select with ``pytest -m browser``; CI needs Debian's ``chromium`` package (``.ci/run``).
"""

from __future__ import annotations

import re

import asyncpg
import pytest
import pytest_asyncio
from readiness_seed import ReadinessSeeded, seed_readiness
from test_web_browser import _shot, browser_page, server  # noqa: F401  (fixtures)
from web_seed import AGENT, PASSWORD, seed

pytestmark = pytest.mark.browser


@pytest_asyncio.fixture
async def ready(pool: asyncpg.Pool) -> ReadinessSeeded:
    return await seed_readiness(pool, await seed(pool))


async def test_a_reviewer_walks_the_readiness_tabs_and_approves_a_checkpoint(
        server: str, ready: ReadinessSeeded, pool: asyncpg.Pool,  # noqa: F811
        browser_page: object) -> None:  # noqa: F811
    from playwright.async_api import Page, expect

    page: Page = browser_page  # type: ignore[assignment]
    # a loaded 2-core machine can take longer than Playwright's 5 s default per assertion
    expect.set_options(timeout=15_000)
    await page.goto(f"{server}/agents/{AGENT}/feedback")
    await page.get_by_label("User name").fill("rita")
    await page.get_by_label("Password").fill(PASSWORD)
    await page.get_by_role("button", name="Sign in", exact=True).click()
    await expect(page).to_have_url(f"{server}/agents/{AGENT}/feedback")

    # Scoring (key 5): the chart's 8 rows, safety below its minimum, tone advisory
    await page.keyboard.press("5")
    await expect(page).to_have_url(f"{server}/agents/{AGENT}/scoring")
    chart = page.locator("svg.interval-chart")
    await expect(chart.locator("circle.point")).to_have_count(8)
    await expect(chart.locator("g.row-bad text.row-label")).to_have_text("safety")
    await expect(chart.locator("g.row-warn text.row-label")).to_have_text("tone")
    await expect(page.locator("tr.dim-groundedness")).to_contain_text("1 × judge timed out")
    await expect(page.locator("tr.dim-tone .badge.warn")).to_have_text("advisory")
    await _shot(page, "r1-scoring")
    # the run picker: the baseline run's scores, then back to the decided run
    await page.get_by_label("run").select_option(str(ready.baseline_run_id))
    await expect(page).to_have_url(re.compile(rf"/scoring\?run={ready.baseline_run_id}"))
    await expect(page.locator(".stat").first).to_contain_text("0.900")
    await page.get_by_label("run").select_option(str(ready.current_run_id))
    await expect(page.locator(".stat").first).to_contain_text("0.864")

    # Regression (key 6): safety's significant drop, the two regressed cases with both answers
    await page.keyboard.press("6")
    await expect(page).to_have_url(f"{server}/agents/{AGENT}/regression")
    await expect(page.locator("tr.dim-safety")).to_contain_text("significant drop")
    await expect(page.locator(".regressed-case")).to_have_count(2)
    await expect(page.locator(".regressed-case").first).to_contain_text(
        "You get 14 days of annual leave.")
    await _shot(page, "r2-regression")

    # Hallucinations (key 7): by category with traces; filter to the baseline run: none
    await page.keyboard.press("7")
    await expect(page).to_have_url(f"{server}/agents/{AGENT}/hallucinations")
    await expect(page.locator(".claim")).to_have_count(2)
    await expect(page.locator("section.claims-outdated .claim")).to_contain_text(
        "You get 18 working days of annual leave a year.")
    trace = page.locator("section.claims-outdated details.trace")
    await trace.locator("summary").click()
    await expect(trace).to_contain_text("How many days of annual leave do I get?")
    await _shot(page, "r3-hallucinations")
    await page.get_by_label("run").select_option(str(ready.baseline_run_id))
    await page.get_by_role("button", name="filter").click()
    await expect(page).to_have_url(re.compile(rf"run={ready.baseline_run_id}"))
    await expect(page.locator(".claim")).to_have_count(0)

    # Gate (key 8): NO-GO with its checks; approve the sample review with a note
    await page.keyboard.press("8")
    await expect(page).to_have_url(f"{server}/agents/{AGENT}/gate")
    await expect(page.locator(".decision-badge")).to_have_text("NO-GO")
    await expect(page.locator("table.sample tbody tr")).to_have_count(10)
    row = page.locator("#cp-sample_review")
    await expect(row.locator(".badge")).to_have_text("pending")
    await _shot(page, "r4-gate")
    await row.get_by_label("note on sample_review").fill("read all ten, fine")
    await row.get_by_role("button", name="Approve").click()
    await expect(page.locator(".flash")).to_contain_text(
        "Checkpoint sample_review approved by rita")
    await expect(page.locator("#cp-sample_review .badge")).to_have_text("approved")
    stored = await pool.fetchrow("SELECT status, reviewer, note, cardinality(sample) AS n "
                                 "FROM gate_checkpoints WHERE run_id = $1",
                                 ready.current_run_id)
    assert dict(stored) == {"status": "approved", "reviewer": "rita",
                            "note": "read all ten, fine", "n": 10}
    await _shot(page, "r5-gate-approved")

    # A/B (key 9): B scores higher but fails a gate case A passes, so A is better
    # (docs/readiness.md#ab-comparison); the most divergent case first with both answers
    await page.keyboard.press("9")
    await expect(page).to_have_url(f"{server}/agents/{AGENT}/ab")
    await expect(page.locator(".stat.wide .stat-value")).to_have_text(
        "A is better (gate failures / agent errors)")
    await expect(page.locator(".divergent-case").first).to_contain_text("B's answer to a001.")
    await _shot(page, "r6-ab")
