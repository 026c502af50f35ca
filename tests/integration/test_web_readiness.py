"""The readiness tabs over HTTP (httpx, in process) against real PostgreSQL, on data written
through the readiness store (``readiness_seed``): Scoring, Regression, Hallucinations, Gate
(with a checkpoint approved and rejected, CSRF-checked) and A/B."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import asyncpg
import httpx
import pytest_asyncio
from readiness_seed import ReadinessSeeded, seed_readiness
from web_seed import AGENT, PASSWORD, seed

from evalloop.settings import Settings, WebSettings
from evalloop.web.app import build_app

_CSRF = re.compile(r'name="csrftoken" value="([^"]+)"')


@pytest_asyncio.fixture
async def ready(pool: asyncpg.Pool) -> ReadinessSeeded:
    return await seed_readiness(pool, await seed(pool))


@pytest_asyncio.fixture
async def http(pool: asyncpg.Pool, ready: ReadinessSeeded) -> AsyncIterator[httpx.AsyncClient]:
    app = build_app(Settings(web=WebSettings(secret_key="s" * 40)), pool=pool)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://web.test") as c:
        yield c


async def _sign_in(http: httpx.AsyncClient, user: str) -> str:
    token = _CSRF.search((await http.get("/login")).text)
    assert token is not None
    r = await http.post("/login", data={"csrftoken": token.group(1), "username": user,
                                         "password": PASSWORD, "next": "/"})
    assert r.status_code == 303
    return token.group(1)


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


async def test_scoring_shows_means_intervals_minimums_unscored_and_advisory(
        http: httpx.AsyncClient, ready: ReadinessSeeded) -> None:
    await _sign_in(http, "vic")
    r = await http.get(f"/agents/{AGENT}/scoring")
    assert r.status_code == 200
    text = _text(r.text)
    # the newest decided run is shown by default
    assert f'<option value="{ready.current_run_id}" selected>' in r.text
    assert "composite (mean over 35 cases) 0.864 95 % CI [0.825, 0.904]" in text
    assert "cases scored 36 / 36 1 without a composite" in text
    assert "minimums 6 of 7 met below: safety" in text
    assert "safety 36 0.825 [0.790, 0.860] 0.90 below 0" in text
    assert "groundedness 35 0.871 [0.831, 0.912] 0.80 met 1 1 × judge timed out" in text
    assert "tone advisory 36 0.872" in text
    assert "composite 35 0.864 [0.825, 0.904] 0.80 met 1 1 × unscored: groundedness not scored" \
        in text
    # the chart: 8 rows (7 dimensions + composite), safety red, tone amber
    assert r.text.count('<circle class="point"') == 8
    assert r.text.count('<g class="row row-bad">') == 1
    assert r.text.count('<g class="row row-warn">') == 1
    # per case: r001 scored 0.40 everywhere, r003's groundedness unscored with its reason
    assert "r001 How many days of annual leave" in text and "0.400" in text
    assert 'title="judge timed out">—</td>' in r.text
    baseline = await http.get(f"/agents/{AGENT}/scoring?run={ready.baseline_run_id}")
    assert "composite (mean over 36 cases) 0.900" in _text(baseline.text)
    assert (await http.get(f"/agents/{AGENT}/scoring?run={ready.ab_a}")).status_code == 404
    assert (await http.get(f"/agents/{AGENT}/scoring?run=nope")).status_code == 404


async def test_regression_against_the_pinned_baseline(http: httpx.AsyncClient,
                                                      ready: ReadinessSeeded) -> None:
    await _sign_in(http, "vic")
    r = await http.get(f"/agents/{AGENT}/regression")
    text = _text(r.text)
    assert f"baseline (pinned) {str(ready.baseline_run_id)[:8]}" in text
    assert "shared cases 36 only in the baseline 0, only in this run 0" in text
    assert ("composite difference -0.036 p 0.0779; smallest drop detectable at 80 % power "
            "0.057") in text
    assert ("safety 36 0.900 0.825 -0.075 [-0.110, -0.040] -4.30 0.0001 -0.72 0.050 "
            "significant drop") in text
    # the rules' order, not JSONB's
    rows = re.findall(r'<tr class="dim-([a-z_]+)">', r.text)
    assert rows == ["correctness", "relevance", "tone", "safety", "groundedness",
                    "faithfulness", "context_utilization", "composite"]
    assert "Regressed cases (2)" in text
    assert "r001 composite 0.900 → 0.400 −0.500" in text
    assert "current answer You get 14 days of annual leave." in text
    assert "baseline answer Under the Annual Leave policy" in text
    # the baseline itself has no baseline (it is the pinned run)
    own = await http.get(f"/agents/{AGENT}/regression?run={ready.baseline_run_id}")
    assert "No comparison" in _text(own.text)


async def test_hallucinations_by_category_with_traces_and_filters(
        http: httpx.AsyncClient, ready: ReadinessSeeded) -> None:
    await _sign_in(http, "vic")
    r = await http.get(f"/agents/{AGENT}/hallucinations?since=24h")
    text = _text(r.text)
    assert "claims checked 3 1 supported by the knowledge base, 0 unscored" in text
    assert ("hallucinated 2 fabricated 1 · exaggerated 0 · conflated 0 · outdated 1 · "
            "implicit assumption 0") in text
    assert re.findall(r'<section class="claims claims-([a-z_]+)">', r.text) == [
        "fabricated", "outdated"]
    assert ("“You get 14 days of annual leave.” run " + str(ready.current_run_id)[:8]
            + " · case r001 · claim 1 · support 0.12") in text
    assert "nearest passage hr-policy/leave/annual-leave/1 Grade N4 and above" in text
    assert "suggested correction You get 18 working days of annual leave a year." in text
    # the trace: the case's question and answer, what the agent retrieved, what was checked
    assert ("trace: the question, the answer, the passages checked Question: How many days of "
            "annual leave do I get? I&#39;m on Grade N5 and joined 4 years ago. answer (claim 1 "
            "of it checked) You get 14 days of annual leave.") in text
    assert "Checked against: hr-policy/leave/sick-leave/1" in text
    base = await http.get(f"/agents/{AGENT}/hallucinations?since=all&run="
                          f"{ready.baseline_run_id}")
    assert "claims checked 0" in _text(base.text)
    assert (await http.get(f"/agents/{AGENT}/hallucinations?since=1y")).status_code == 400


async def test_gate_decision_checks_remediation_and_sample(http: httpx.AsyncClient,
                                                           ready: ReadinessSeeded) -> None:
    from evalloop.core.readiness.checkpoints import sample_conversations

    await _sign_in(http, "vic")
    r = await http.get(f"/agents/{AGENT}/gate")
    text = _text(r.text)
    assert ready.decision == "NO-GO"
    assert '<div class="decision-badge">NO-GO</div>' in r.text
    assert "safety: mean 0.825 (95% CI 0.790-0.860) over 36 cases &lt; minimum 0.90" in text
    assert r.text.count('<tr class="check check-') == 28
    assert r.text.count('<tr class="check check-fail check-required">') == 2
    assert r.text.count('<tr class="check check-fail check-advisory">') == 4
    assert "2 required check(s) failed (each can make NO-GO), 4 advisory (can only stop a GO), " \
        "4 pending." in text
    assert "Likely cause: answer" in text and "Fix: add the request kind" in text
    # pending: the decision's 4 checkpoint checks, and the 4 checkpoints' state now
    assert r.text.count('<span class="badge warn">pending</span>') == 8
    assert "Approve" not in text  # a viewer gets no forms
    ids = [c for c in re.findall(r"<tr><td><code>([a-z0-9]+)</code></td>", r.text)]
    assert ids == sample_conversations(str(ready.current_run_id), ids + [
        f"{p}{i:03d}" for p, n in (("r", 12), ("e", 6), ("a", 6), ("s", 12))
        for i in range(1, n + 1)])
    assert len(ids) == 10


async def test_a_reviewer_approves_and_rejects_checkpoints(
        http: httpx.AsyncClient, pool: asyncpg.Pool, ready: ReadinessSeeded) -> None:
    url = f"/agents/{AGENT}/gate/{ready.current_run_id}/checkpoints"
    # a viewer may not
    token = await _sign_in(http, "vic")
    r = await http.post(f"{url}/edge_cases", data={"csrftoken": token, "verdict": "approve"})
    assert r.status_code == 403
    await http.post("/logout", data={"csrftoken": token})
    token = await _sign_in(http, "rita")
    # no CSRF token: refused, nothing stored
    r = await http.post(f"{url}/edge_cases", data={"verdict": "approve"})
    assert r.status_code == 403
    # a rejection needs a note
    r = await http.post(f"{url}/edge_cases", data={"csrftoken": token, "verdict": "reject"})
    assert r.status_code == 303
    assert "a rejection needs a note" in _text((await http.get(r.headers["location"])).text)
    assert await pool.fetchval("SELECT count(*) FROM gate_checkpoints") == 0
    r = await http.post(f"{url}/sample_review", data={
        "csrftoken": token, "verdict": "approve", "note": "read all ten"})
    assert r.status_code == 303
    assert r.headers["location"].endswith(f"/agents/{AGENT}/gate?run={ready.current_run_id}")
    page = _text((await http.get(r.headers["location"])).text)
    assert "Checkpoint sample_review approved by rita." in page
    assert "approved by rita" in page and "“read all ten”" in page
    r = await http.post(f"{url}/escalation_path", data={
        "csrftoken": token, "verdict": "reject", "note": "e006 was not handed off"})
    rows = await pool.fetch("SELECT name, status, reviewer, note, sample FROM gate_checkpoints"
                            " ORDER BY id")
    from evalloop.core.readiness.checkpoints import sample_conversations

    cases = [c["case_id"] for c in await pool.fetch(
        "SELECT case_id FROM eval_results WHERE run_id = $1", ready.current_run_id)]
    assert [tuple(r) for r in rows] == [
        ("sample_review", "approved", "rita", "read all ten",
         sample_conversations(str(ready.current_run_id), cases)),
        ("escalation_path", "rejected", "rita", "e006 was not handed off", None)]
    audit = (await http.get(f"/agents/{AGENT}/gate")).text
    assert "Audit (2 verdicts)" in audit
    assert (await http.post(f"{url}/nonsense", data={"csrftoken": token,
                                                     "verdict": "approve"})).status_code == 404


async def test_ab_comparison_per_dimension_and_divergent_cases(
        http: httpx.AsyncClient, ready: ReadinessSeeded) -> None:
    await _sign_in(http, "vic")
    r = await http.get(f"/agents/{AGENT}/ab")
    text = _text(r.text)
    assert ("B is better by 0.017 composite (B - A = +0.017, 95% CI +0.004 to +0.029, "
            "p = 0.0121, n = 36)") in text
    assert "safety 36 0.900 0.917 +0.017 [+0.004, +0.029] 0.0121 0.44 B" in text
    # B's run fails the refusal gate on a001, A's does not: A is better whatever the composite
    assert ("verdict (36 shared scored cases) A is better (gate failures / agent errors) A is "
            "better: B fails 1 refusal/escalation gate or agent-error case(s) that A passes "
            "(a001; gate failures A 0, B 1; agent errors A 0, B 0), whatever the composite; "
            "composite on the paired cases: B is better by 0.017 composite") in text
    cases = re.findall(r'<div class="card divergent-case">\s*<h3><code>([a-z0-9]+)</code>',
                       r.text)
    assert cases == ["a001", "a002", "a003", "a004", "a005"]
    assert "B's answer B&#39;s answer to a001." in text
    other = await http.get("/agents/quiet-agent/ab")
    assert "No A/B comparison is stored for quiet-agent" in _text(other.text)


async def test_a_run_never_decided_is_compared_with_todays_baseline(
        http: httpx.AsyncClient, pool: asyncpg.Pool, ready: ReadinessSeeded) -> None:
    from readiness_seed import BAD_ANSWERS, _judge

    from evalloop.adapters.golden_store import save_eval_run
    from evalloop.cli.eval_cmd import bundled_evals
    from evalloop.core.evaluation.cases import load_eval_file
    from evalloop.evaluation.runner import load_responses_file, run_eval

    cases = list(load_eval_file(bundled_evals()).cases)
    version = await pool.fetchval("SELECT golden_set_version_id FROM eval_runs WHERE run_id = $1",
                                  ready.current_run_id)
    canned = load_responses_file([bundled_evals("reference-responses.json")])
    run = await run_eval(cases, {**canned, **BAD_ANSWERS}, agent_id=AGENT,
                         golden_set_version_id=version)
    await save_eval_run(pool, run)
    await _judge(pool, run.run_id, [c.id for c in cases], current=True)
    await _sign_in(http, "vic")
    text = _text((await http.get(f"/agents/{AGENT}/regression?run={run.run_id}")).text)
    assert f"baseline (pinned) {str(ready.baseline_run_id)[:8]} today's baseline (the run " \
        "was never decided)" in text
    assert ("safety 36 0.900 0.825 -0.075 [-0.110, -0.040] -4.30 0.0001 -0.72 0.050 "
            "significant drop") in text
    assert "Regressed cases (2)" in text
    gate = _text((await http.get(f"/agents/{AGENT}/gate?run={run.run_id}")).text)
    assert "This run was never decided." in gate
    # the default run is still the newest *decided* one
    default = (await http.get(f"/agents/{AGENT}/gate")).text
    assert f'<option value="{ready.current_run_id}" selected>' in default


async def test_an_agent_without_runs_gets_every_tab_saying_so(http: httpx.AsyncClient) -> None:
    await _sign_in(http, "vic")
    for tab, says in (("scoring", "No evaluation run of quiet-agent yet."),
                      ("regression", "No evaluation run of quiet-agent yet."),
                      ("gate", "No evaluation run of quiet-agent yet."),
                      ("hallucinations", "No hallucinated claim in this window."),
                      ("ab", "No A/B comparison is stored for quiet-agent.")):
        r = await http.get(f"/agents/quiet-agent/{tab}")
        assert r.status_code == 200, tab
        assert says in _text(r.text), tab


async def test_decided_runs_lists_newest_first_and_finds_one_run(
        pool: asyncpg.Pool, ready: ReadinessSeeded, http: httpx.AsyncClient) -> None:
    from evalloop.adapters import readiness_store as store

    runs = await store.decided_runs(pool, AGENT)
    # A/B runs are not listed; the decided run first (started last), with its decision
    assert [(r.run_id, r.decision, r.scored) for r in runs] == [
        (ready.current_run_id, "NO-GO", 36), (ready.baseline_run_id, None, 36)]
    assert [r.run_id for r in await store.decided_runs(pool, AGENT, limit=1)] == [
        ready.current_run_id]
    one = await store.decided_runs(pool, AGENT, limit=1, run_id=ready.baseline_run_id)
    assert [r.run_id for r in one] == [ready.baseline_run_id]
    assert await store.decided_runs(pool, AGENT, run_id=ready.ab_a) == []
    assert await store.claim_counts(pool, agent_id=AGENT, since=ready_since()) == {
        "claims": 3, "supported": 1, "unscored": 0, "fabricated": 1, "outdated": 1}
    await _sign_in(http, "vic")
    r = await http.get(f"/agents/{AGENT}/hallucinations?run={ready.ab_a}")
    assert r.status_code == 404


def ready_since() -> datetime:
    return datetime(2000, 1, 1, tzinfo=UTC)
