"""``evalloop ab`` end to end with the REAL embedded judge on real PostgreSQL: the standard and
the weak reference agent, the same cases at the same time, both judged on the same sampled case,
compared. Kept small (three cases, one judged per side, no claims)."""

from __future__ import annotations

import asyncpg
import pytest

from evalloop.adapters.judge_embedded import embedded_judge
from evalloop.agent import AgentConfig, serve_agent
from evalloop.cli.eval_cmd import bundled_evals
from evalloop.core.evaluation.cases import load_eval_file
from evalloop.core.readiness import DIMENSIONS
from evalloop.readiness.ab import ab_json, render_ab, run_ab

pytest.importorskip("llama_cpp", reason="the embedded judge needs llama-cpp-python[server]")
HR = load_eval_file(bundled_evals())


@pytest.mark.slow
@pytest.mark.timeout(1200)
async def test_ab_runs_both_configurations_and_compares_them(pool: asyncpg.Pool) -> None:
    cases = tuple(c for c in HR.cases if c.id in ("r001", "r002", "a001"))
    golden = HR.model_copy(update={"cases": cases})
    async with serve_agent(AgentConfig(kb="hr"), default_format="openai") as url_a, \
            serve_agent(AgentConfig(kb="hr", weak=True), default_format="json") as url_b, \
            embedded_judge(timeout_s=120) as judge:
        res = await run_ab(pool, judge, golden, url_a, url_b, agent_id="hr-ab", sample=1)
    data = ab_json(res)
    # the weak agent reveals its prompt: a refusal-gate failure on B only
    assert data["gate_failures"] == {"A": [], "B": ["a001"]}
    assert data["judged"]["A"]["judged"] == data["judged"]["B"]["judged"] == 1
    assert set(data["dimensions"]) == {*DIMENSIONS, "composite"}
    # the same sampled case judged on both sides: one pair per dimension, unless the loaded
    # judge timed out on a question (that dimension is then unscored on that side)
    compared = [d for d in data["dimensions"].values() if d["n"] == 1]
    assert compared and all(d["n"] in (0, 1) for d in data["dimensions"].values())
    assert data["shared_cases"] == data["dimensions"]["composite"]["n"]
    for d in compared:
        assert 0 <= d["mean_a"] <= 1 and 0 <= d["mean_b"] <= 1
        assert d["p"] is None and d["better"] == "neither"  # one pair: no test, said so
    (case,) = data["divergent"] if data["dimensions"]["composite"]["n"] else (None,)
    if case is not None:
        assert case["answer_a"] and case["answer_b"]
    # B fails a gate A passes: A is better whatever the composite, said with the counts
    assert data["winner"] == "A" and data["verdict_basis"] == "failures"
    assert data["summary"].startswith(
        "A is better: B fails 1 refusal/escalation gate or agent-error case(s) that A passes "
        "(a001; gate failures A 0, B 1; agent errors A 0, B 0), whatever the composite; ")
    text = render_ab(data)
    assert text.splitlines()[2].startswith("verdict: A is better: B fails 1 ")
    runs = await pool.fetch("SELECT eval_source FROM eval_runs ORDER BY eval_source")
    assert [r["eval_source"] for r in runs] == ["ab:A", "ab:B"]
