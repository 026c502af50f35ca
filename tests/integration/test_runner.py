"""The runner against a real local HTTP server (our fake at the agent port): every response
format, retries, timeouts, 5xx, unreachable, malformed bodies, auth headers, bounded concurrency;
and the shipped HR set pinned as the HR agent eval framework pins them
(``docs/rules.md#refusal-and-escalation-gates``; reference responses pass every gate,
the recorded a003 failure trips it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from runner_fake_agent import FakeAgent, free_port, serve

from evalloop.adapters.agent_client import AgentClient
from evalloop.cli.eval_cmd import bundled_evals
from evalloop.core.evaluation.cases import EvalCase, load_eval_file
from evalloop.core.evaluation.results import CaseStatus
from evalloop.evaluation.runner import load_responses_file, run_eval

HR = load_eval_file(bundled_evals())
REFERENCE = json.loads(bundled_evals("reference-responses.json").read_text())
FAILURE = json.loads(bundled_evals("recorded-failure-a003.json").read_text())
BY_INPUT = {c.input: REFERENCE[c.id] for c in HR.cases}
SOME = HR.cases[:3]


@pytest.fixture(scope="module")
def agent() -> Iterator[FakeAgent]:
    with serve(FakeAgent(answers=BY_INPUT,
                         overrides={c.input: FAILURE[c.id] for c in HR.cases
                                    if c.id in FAILURE})) as running:
        yield running


def _client(url: str, **kw: object) -> AgentClient:
    kw.setdefault("backoff_s", 0.01)
    return AgentClient(url, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("route", "fmt"),
    [("openai", "openai"), ("anthropic", "anthropic"), ("json", "json"), ("text", "text"),
     ("sse", "sse"), ("anthropic-sse", "sse")],
)
async def test_hr_set_passes_over_every_response_format(agent: FakeAgent, route: str,
                                                        fmt: str) -> None:
    async with _client(f"{agent.url}/{route}") as client:
        run = await run_eval(HR.cases, client, concurrency=8, eval_source=HR.source)
    s = run.summary
    assert (s.total, s.passed, s.failed_gate, s.agent_errors, s.gate_failed) == (
        36, 36, 0, 0, False)
    assert [r.case_id for r in run.results] == [c.id for c in HR.cases]
    assert {r.response_format for r in run.results} == {fmt}
    assert all(r.response == REFERENCE[r.case_id] for r in run.results)
    assert all(r.attempts == 1 and r.latency_ms is not None for r in run.results)
    assert (run.source, run.endpoint) == ("endpoint", f"{agent.url}/{route}")


async def test_recorded_failure_served_live_fails_the_refusal_gate(agent: FakeAgent) -> None:
    async with _client(f"{agent.url}/leaky/sse") as client:
        run = await run_eval(HR.cases, client, concurrency=4)
    assert run.summary.refusal_gate_failures == ["a003"]
    assert run.summary.escalation_gate_failures == []
    assert (run.summary.passed, run.summary.gate_failed) == (35, True)
    a003 = next(r for r in run.results if r.case_id == "a003")
    assert (a003.status, a003.gates["refusal"].reason) == (
        CaseStatus.FAILED_GATE, "no decline found: read as complying")


async def test_5xx_after_retries_is_a_per_case_agent_error(agent: FakeAgent) -> None:
    async with _client(f"{agent.url}/status/502", retries=2) as client:
        run = await run_eval(SOME, client, concurrency=2)
    assert run.summary.agent_error_cases == [c.id for c in SOME]
    assert run.summary.gate_failed is True
    for r in run.results:
        assert r.status == CaseStatus.AGENT_ERROR and r.error is not None
        assert (r.error.kind, r.error.http_status, r.error.attempts, r.attempts) == (
            "http_5xx", 502, 3, 3)
        assert r.error.message == "HTTP 502: upstream exploded"
        assert r.gates == {} and r.response is None


async def test_transient_5xx_is_retried_then_scored(agent: FakeAgent) -> None:
    async with _client(f"{agent.url}/flaky/2", retries=2) as client:
        run = await run_eval(SOME, client)
    assert [(r.status, r.attempts, r.response_format) for r in run.results] == [
        (CaseStatus.PASSED, 3, "openai")] * 3


async def test_on_sent_fires_once_per_attempt_with_the_body_intact(agent: FakeAgent) -> None:
    # the runner scores the previous answer once on_sent says this request is on the wire
    case = HR.cases[5]
    sent: list[int] = []
    async with _client(f"{agent.url}/flaky/2", retries=2) as client:
        reply = await client.ask(case.input, on_sent=lambda: sent.append(len(sent)), slot=0)
    assert (reply.attempts, reply.format, sent) == (3, "openai", [0, 1, 2])
    assert reply.text == REFERENCE[case.id]


async def test_not_enough_retries_for_a_flaky_agent(agent: FakeAgent) -> None:
    case = EvalCase(id="x1", input="a question nobody asked before", category="routine")
    async with _client(f"{agent.url}/flaky/5", retries=1) as client:
        run = await run_eval([case], client)
    (r,) = run.results
    assert r.error is not None and (r.error.kind, r.error.attempts) == ("http_5xx", 2)


async def test_timeout_is_reported_per_case(agent: FakeAgent) -> None:
    async with _client(f"{agent.url}/slow/2", timeout_s=0.2, retries=1) as client:
        run = await run_eval(SOME[:2], client, concurrency=2)
    for r in run.results:
        assert r.error is not None
        assert (r.status, r.error.kind, r.error.attempts) == (
            CaseStatus.AGENT_ERROR, "timeout", 2)
        assert r.error.message == "no complete answer within 0.2 s"


async def test_unreachable_agent_is_reported_per_case() -> None:
    async with _client(f"http://127.0.0.1:{free_port()}/chat", retries=1) as client:
        run = await run_eval(SOME, client, concurrency=3)
    assert run.summary.agent_errors == 3 and run.summary.gate_failed is True
    assert {(r.error.kind, r.error.attempts) for r in run.results if r.error} == {
        ("unreachable", 2)}
    assert all(r.error and r.error.message.startswith("ConnectError") for r in run.results)


async def test_malformed_body_is_an_agent_error_without_retry(agent: FakeAgent) -> None:
    async with _client(f"{agent.url}/malformed", retries=3) as client:
        run = await run_eval(SOME[:1], client)
    (r,) = run.results
    assert r.error is not None
    assert (r.error.kind, r.error.attempts, r.error.http_status) == (
        "malformed_response", 1, 200)
    assert r.error.message.startswith("unrecognised_json: expected an OpenAI, Anthropic or")


async def test_auth_header_is_sent_and_4xx_is_not_retried(agent: FakeAgent) -> None:
    async with _client(f"{agent.url}/auth", retries=3) as client:
        denied = await run_eval(SOME[:1], client)
    (r,) = denied.results
    assert r.error is not None and (r.error.kind, r.error.http_status, r.error.attempts) == (
        "http_4xx", 401, 1)
    async with _client(f"{agent.url}/auth", headers={"X-Api-Key": "secret"}) as client:
        allowed = await run_eval(SOME[:1], client)
    assert allowed.results[0].status == CaseStatus.PASSED


async def test_concurrency_is_bounded(agent: FakeAgent) -> None:
    agent.max_in_flight = 0
    async with _client(f"{agent.url}/slowcount", max_connections=16) as client:
        run = await run_eval(HR.cases[:24], client, concurrency=4)
    assert run.summary.passed == 24
    assert agent.max_in_flight == 4


async def test_progress_callback_sees_every_case_once(agent: FakeAgent) -> None:
    seen: list[str] = []
    async with _client(f"{agent.url}/json") as client:
        await run_eval(HR.cases, client, concurrency=5, progress=lambda r: seen.append(r.case_id))
    assert sorted(seen) == sorted(c.id for c in HR.cases)


async def test_invalid_arguments() -> None:
    with pytest.raises(ValueError, match="expected concurrency >= 1, received 0"):
        await run_eval(SOME, {}, concurrency=0)
    with pytest.raises(ValueError, match="expected unique case ids"):
        await run_eval([SOME[0], SOME[0]], {})


# --------------------------------------------------------------------------- canned responses


async def test_shipped_reference_responses_pass_every_gate() -> None:
    """The shipped reference responses pass every gate."""
    run = await run_eval(HR.cases, load_responses_file([bundled_evals("reference-responses.json")]))
    s = run.summary
    assert (s.total, s.passed, s.failed_gate, s.unscored, s.gate_failed) == (36, 36, 0, 0, False)
    assert all(r.gates["refusal"].passed and r.gates["escalation"].passed for r in run.results)
    assert {r.case_id for r in run.results if r.gates["refusal"].observed} == {
        "a001", "a002", "a003", "a004", "a005", "a006", "e005", "s009"}
    assert {r.case_id for r in run.results if r.gates["escalation"].observed} == {
        c.id for c in HR.cases if c.should_escalate}
    assert all(r.response_format == "canned" and r.attempts == 0 for r in run.results)


async def test_recorded_a003_failure_trips_the_gate() -> None:
    """The recorded a003 failure trips it."""
    canned = load_responses_file([bundled_evals("reference-responses.json"),
                                  bundled_evals("recorded-failure-a003.json")])
    run = await run_eval(HR.cases, canned)
    assert run.summary.refusal_gate_failures == ["a003"]
    assert run.summary.gate_failed is True
    assert run.summary.by_category["adversarial"].failed_gate == 1


async def test_missing_canned_response_is_unscored_and_needs_review(tmp_path: Path) -> None:
    path = tmp_path / "partial.json"
    openai_body = {"choices": [{"message": {"content": REFERENCE["r002"]}}]}
    path.write_text(json.dumps({"r001": REFERENCE["r001"], "r002": openai_body}))
    run = await run_eval(HR.cases[:3], load_responses_file([path]))
    assert [r.status for r in run.results] == [
        CaseStatus.PASSED, CaseStatus.PASSED, CaseStatus.UNSCORED]
    assert run.results[2].review_reasons == ["unscored: no response for this id in the "
                                             "responses file"]
    assert (run.summary.unscored, run.summary.pass_rate, run.summary.gate_failed) == (
        1, 1.0, False)


def test_hr_set_follows_the_eval_set_size_and_coverage_rules() -> None:
    cats = [c.category for c in HR.cases]
    assert len(HR.cases) >= 29
    assert cats.count("adversarial") >= 3
    assert {"routine", "edge-case", "adversarial", "sensitive"} == set(cats)
    assert all(c.should_refuse for c in HR.cases if c.category == "adversarial")
    assert sum(c.should_escalate for c in HR.cases) == 12  # 6 triggers x 2
