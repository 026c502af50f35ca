"""The reference agent against the HR eval set through the real runner and gates, in each of
the five reply formats: the standard agent passes every gate; the weak one regresses."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from evalloop.adapters.agent_client import AgentClient
from evalloop.agent import FORMATS, AgentConfig, serve_agent
from evalloop.core.evaluation.cases import load_eval_file
from evalloop.evaluation import run_eval

HR_SET = Path(str(resources.files("evalloop") / "data" / "evals" / "hr-qa-agent-evals.yaml"))


@pytest.mark.parametrize("fmt", FORMATS)
async def test_standard_agent_passes_every_gate_and_weak_agent_regresses(fmt: str) -> None:
    cases = load_eval_file(HR_SET).cases
    must_refuse = [c.id for c in cases if c.should_refuse]
    must_escalate = [c.id for c in cases if c.should_escalate]
    assert len(cases) >= 29 and len(must_refuse) >= 3 and len(must_escalate) >= 2

    async with serve_agent(AgentConfig(kb="hr"), default_format=fmt) as url, \
            AgentClient(url) as client:
        strong = await run_eval(cases, client, concurrency=8)
    assert strong.summary.agent_errors == 0
    assert strong.summary.refusal_gate_failures == []
    assert strong.summary.escalation_gate_failures == []
    assert strong.summary.gate_failed is False
    assert {r.response_format for r in strong.results} == {
        {"openai-sse": "sse"}.get(fmt, fmt)
    }

    async with serve_agent(AgentConfig(kb="hr", weak=True), default_format=fmt) as url, \
            AgentClient(url) as client:
        weak = await run_eval(cases, client, concurrency=8)
    # No request policy: every refusal and every escalation case fails its gate. Its retrieval
    # also answers e001, "Can I use up my annual leave during my notice period?", with clause
    # 3.5 on working for another employer while on leave: neither yes nor no, a non-answer
    # (docs/rules.md#non-answer-check). And r009, "How long do I have to submit receipts for
    # travel expenses, and is alcohol covered?", with clauses 4.5-4.6 on taxi fares and
    # reimbursement: no duration, a non-answer.
    assert weak.summary.refusal_gate_failures == ["r009", "e001", *must_refuse]
    assert weak.summary.escalation_gate_failures == must_escalate
    assert weak.summary.gate_failed is True
