"""Every kind of reply a real agent or proxy sends, over real HTTP (our fake at the agent port),
gets the one true verdict (docs/rules.md#endpoint-contract): no text is never a pass, a
refusal field is an answer, choice 0 of n, HTML pages, rate limits with Retry-After, byte-order
marks and charsets, spec SSE framing, and every transport failure as a named agent error."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest
from runner_fake_agent import (
    REFUSAL_TEXT,
    TRUNCATED_BODY,
    TRUNCATED_LENGTH,
    FakeAgent,
    serve,
    serve_truncated,
)

from evalloop.adapters.agent_client import AgentCallError, AgentClient, retry_after_seconds
from evalloop.cli.eval_cmd import bundled_evals
from evalloop.core.evaluation.cases import EvalCase, EvalCaseError, load_eval_file
from evalloop.core.evaluation.report import render_summary
from evalloop.core.evaluation.results import CaseStatus
from evalloop.evaluation.runner import load_responses_file, run_eval

HR = load_eval_file(bundled_evals())
REFERENCE = json.loads(bundled_evals("reference-responses.json").read_text())
BY_ID = {c.id: c for c in HR.cases}
ROUTINE = BY_ID["r001"]
SALARY = BY_ID["a003"]  # should_refuse: another employee's salary


@pytest.fixture(scope="module")
def agent() -> Iterator[FakeAgent]:
    answers = {c.input: REFERENCE[c.id] for c in HR.cases}
    answers["latin-1 question"] = "Congés payés: 25 jours, à poser avant mai."
    with serve(FakeAgent(answers=answers)) as running:
        yield running


def _client(url: str, **kw: object) -> AgentClient:
    kw.setdefault("backoff_s", 0.01)
    kw.setdefault("jitter_seed", 7)
    return AgentClient(url, **kw)  # type: ignore[arg-type]


async def _one(url: str, case: EvalCase = ROUTINE, **kw: object):  # type: ignore[no-untyped-def]
    async with _client(url, **kw) as client:
        run = await run_eval([case], client)
    return run.results[0], run.summary


# --------------------------------------------------------------------------- 1. no text


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("body", "the body carried no answer text"),
        ("json", "JSON 'response' carried no answer text"),
        ("openai-tools", "OpenAI completion message with tool calls only"),
        ("sse-tools", "event stream carried no answer text (tool calls only)"),
        ("anthropic-sse-tools", "event stream carried no answer text (tool calls only)"),
        ("zwsp", "JSON 'response' carried no letter or digit: '\\u200b\\u200b'"),
        ("dots", "JSON 'response' carried no letter or digit: '...'"),
    ],
)
async def test_no_text_in_any_format_is_the_same_failed_case(agent: FakeAgent, kind: str,
                                                             message: str) -> None:
    for case in (ROUTINE, SALARY):
        r, s = await _one(f"{agent.url}/empty/{kind}", case, retries=2)
        assert r.status == CaseStatus.AGENT_ERROR and r.error is not None
        assert (r.error.kind, r.error.message, r.error.http_status, r.error.attempts) == (
            "no_text", message, 200, 1)
        assert (r.response, r.gates, s.passed, s.agent_error_cases, s.gate_failed) == (
            None, {}, 0, [case.id], True)


async def test_a_canned_html_page_is_not_an_answer(tmp_path: Path) -> None:
    path = tmp_path / "responses.json"
    path.write_text(json.dumps({"r001": "<!DOCTYPE html><html><title>502</title></html>"}))
    run = await run_eval(HR.cases[:1], load_responses_file([path]))
    r = run.results[0]
    assert r.error is not None
    assert (r.status, r.error.kind, r.error.message) == (
        CaseStatus.AGENT_ERROR, "html_page", "the answer is an HTML page, not an answer")


async def test_canned_responses_without_text_agree_with_live_ones(tmp_path: Path) -> None:
    path = tmp_path / "responses.json"
    tool_calls = {"choices": [{"message": {"role": "assistant", "content": None,
                                           "tool_calls": [{"id": "c1", "type": "function"}]}}]}
    path.write_text(json.dumps({"r001": "", "r002": {"response": ""}, "r003": tool_calls,
                                "r004": "   "}))
    run = await run_eval(HR.cases[:4], load_responses_file([path]))
    assert [(r.status, r.error.kind if r.error else None, r.attempts) for r in run.results] == [
        (CaseStatus.AGENT_ERROR, "no_text", 0)] * 4
    assert [r.error.message for r in run.results if r.error] == [
        "the answer is empty (canned format)", "JSON 'response' carried no answer text",
        "OpenAI completion message with tool calls only", "the answer is empty (canned format)"]
    assert (run.summary.passed, run.summary.gate_failed) == (0, True)


async def test_canned_replies_without_a_letter_or_digit_are_no_text(tmp_path: Path) -> None:
    path = tmp_path / "responses.json"
    path.write_text(json.dumps({"r001": "\u200b\u200b", "r002": "...", "r003": "\u2014",
                                "r004": "\U0001f44d", "r005": "14"}))
    run = await run_eval(HR.cases[:5], load_responses_file([path]))
    assert [(r.status, r.error.kind if r.error else None) for r in run.results] == [
        (CaseStatus.AGENT_ERROR, "no_text")] * 4 + [(run.results[4].status, None)]
    assert run.results[4].status != CaseStatus.AGENT_ERROR
    assert [r.error.message for r in run.results if r.error] == [
        "the answer has no letter or digit: '\\u200b\\u200b' (canned format)",
        "the answer has no letter or digit: '...' (canned format)",
        "the answer has no letter or digit: '\\u2014' (canned format)",
        "the answer has no letter or digit: '\\U0001f44d' (canned format)"]


# --------------------------------------------------------------------------- 2. refusal field


@pytest.mark.parametrize(("fmt", "read_as"), [("openai", "openai"), ("sse", "sse")])
async def test_openai_refusal_field_is_the_scored_answer(agent: FakeAgent, fmt: str,
                                                         read_as: str) -> None:
    r, s = await _one(f"{agent.url}/refusal/{fmt}", SALARY)
    assert (r.status, r.response, r.response_format) == (CaseStatus.PASSED, REFUSAL_TEXT, read_as)
    assert r.gates["refusal"].observed is True and s.gate_failed is False


# --------------------------------------------------------------------------- 3. n > 1


async def test_sse_with_three_choices_reads_choice_0(agent: FakeAgent) -> None:
    r, _ = await _one(f"{agent.url}/choices/3")
    assert (r.status, r.response, r.response_format) == (
        CaseStatus.PASSED, REFERENCE["r001"], "sse")


# --------------------------------------------------------------------------- 4. HTML


@pytest.mark.parametrize(("route", "status", "attempts"),
                         [("html/200", 200, 1), ("html/403", 403, 1), ("html/502", 502, 3),
                          ("html-as-text", 200, 1)])
async def test_an_html_page_is_an_agent_error_whatever_the_status(
        agent: FakeAgent, route: str, status: int, attempts: int) -> None:
    r, s = await _one(f"{agent.url}/{route}", retries=2)
    assert r.error is not None
    assert (r.status, r.error.kind, r.error.http_status, r.error.attempts) == (
        CaseStatus.AGENT_ERROR, "html_page", status, attempts)
    assert "HTML page" in r.error.message and s.gate_failed is True


# ------------------------------------------------- replies too deep to decode, other documents


@pytest.mark.parametrize(
    ("kind", "failure", "message"),
    [
        ("json-deep", "malformed_response",
         "malformed_json: nested too deep to decode: " + "[" * 37 + "..."),
        ("sse-deep", "malformed_response",
         "malformed_json: stream event data nested too deep to decode"),
        ("xml", "non_text_document",
         "a body of type application/xml is not an answer (Content-Type 'application/xml'; "
         "the contract reads text, an event stream or JSON)"),
        ("xml-as-text", "non_text_document",
         "an XML document is not an answer (Content-Type 'text/plain; charset=utf-8'; the "
         "contract reads text, an event stream or JSON)"),
        ("pdf", "non_text_document",
         "a body of type application/pdf is not an answer (Content-Type 'application/pdf'; "
         "the contract reads text, an event stream or JSON)"),
        ("png", "non_text_document",
         "a body of type image/png is not an answer (Content-Type 'image/png'; the contract "
         "reads text, an event stream or JSON)"),
        ("octet", "non_text_document",
         "a body of type application/octet-stream is not an answer (Content-Type "
         "'application/octet-stream'; the contract reads text, an event stream or JSON)"),
        ("error-and-text", "malformed_response",
         "error_object: agent answered an error: upstream failed"),
        ("charset-base64", "not_text",
         "charset 'base64' in Content-Type 'text/plain; charset=base64' is not a text encoding"),
        ("charset-undefined", "not_text",
         "body is not text in the declared charset undefined (decoding with 'undefined' codec "
         "failed (UnicodeError: undefined encoding))"),
    ],
)
async def test_a_reply_that_is_no_answer_fails_its_case_and_the_run_goes_on(
        agent: FakeAgent, kind: str, failure: str, message: str) -> None:
    # only the salary case gets the bad reply; the routine case of the same run is answered
    agent.raw_for = {SALARY.input}
    try:
        async with _client(f"{agent.url}/raw/{kind}", retries=2) as client:
            run = await run_eval([SALARY, ROUTINE], client)
    finally:
        agent.raw_for = set()
    r, good = run.results
    assert r.status == CaseStatus.AGENT_ERROR and r.error is not None
    assert (r.error.kind, r.error.message, r.error.http_status, r.error.attempts) == (
        failure, message, 200, 1)
    assert (r.response, r.gates) == (None, {})
    assert (good.status, good.response) == (CaseStatus.PASSED, REFERENCE["r001"])
    assert (run.summary.passed, run.summary.agent_error_cases, run.summary.gate_failed) == (
        1, ["a003"], True)


async def test_canned_error_beside_text_is_an_error_object(tmp_path: Path) -> None:
    path = tmp_path / "responses.json"
    path.write_text(json.dumps({"a003": {"error": "upstream failed",
                                         "text": "I can't share that."},
                                "r001": {"error": None, "text": REFERENCE["r001"]}}))
    canned = load_responses_file([path])
    run = await run_eval([SALARY, ROUTINE], canned)
    bad, good = run.results
    assert bad.error is not None
    assert (bad.status, bad.error.kind, bad.error.message) == (
        CaseStatus.AGENT_ERROR, "malformed_response",
        "error_object: agent answered an error: upstream failed")
    assert good.status == CaseStatus.PASSED
    # a canned reply was never requested: the report names the file, not "after 0 attempt(s)"
    assert ("  a003 [adversarial] malformed_response in the responses file: error_object: "
            "agent answered an error: upstream failed") in render_summary(run).splitlines()


@pytest.mark.parametrize(("body", "start"), [("[" * 100_000, "[" * 40),
                                             ('{"a003": ' + "[" * 100_000 + "}",
                                              '{"a003": ' + "[" * 31)])
def test_a_responses_file_nested_too_deep_is_a_file_error(tmp_path: Path, body: str,
                                                          start: str) -> None:
    path = tmp_path / "responses.json"
    path.write_text(body)
    with pytest.raises(EvalCaseError) as caught:
        load_responses_file([path])
    assert str(caught.value) == (
        "responses.json: (line 1, column 1): expected valid JSON: arrays and objects nested less "
        f"deeply (this is too deep to read), received '{start}...'")


@pytest.mark.parametrize(("name", "body"), [
    ("evals.yaml", "- id: a1\n  input: How long is paternity leave?\n"),
    ("evals.yaml", "agent: hr\ncases:\n- id: a1\n  input: How long is paternity leave?\n"),
    ("golden.json", '{"id": "g", "cases": [{"id": "a1", "question": "q"}]}'),
])
def test_an_eval_file_given_as_responses_says_which_is_which(tmp_path: Path, name: str,
                                                             body: str) -> None:
    path = tmp_path / name
    path.write_text(body)
    with pytest.raises(EvalCaseError) as caught:
        load_responses_file([path])
    assert str(caught.value) == (
        f"{name}: (document): expected a responses file: a JSON object mapping eval id -> "
        "response text, received an eval file (its cases have an id and an input or "
        "question); pass it with --evals, and the answers with --responses-file")


def test_a_yaml_file_that_is_no_eval_set_keeps_the_json_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.yaml"
    path.write_text("- just a note\n")
    with pytest.raises(EvalCaseError) as caught:
        load_responses_file([path])
    assert str(caught.value) == (
        "notes.yaml: (line 1, column 1): expected valid JSON: a value (string, number, "
        "object, array, true, false or null), received '- just a note'")


# --------------------------------------------------------------------------- 5. rate limits


async def test_retry_after_seconds_is_honoured_then_answered(agent: FakeAgent) -> None:
    case = EvalCase(id="rl1", input=ROUTINE.input + " (rl1)", category="routine")
    agent.answers[case.input] = REFERENCE["r001"]
    r, _ = await _one(f"{agent.url}/ratelimit/1?after=1", case, retries=2, timeout_s=5)
    first, second = agent.times[case.input]
    assert (r.status, r.attempts) == (CaseStatus.PASSED, 2)
    assert 1.0 <= second - first < 2.5  # Retry-After 1 s + its jitter (<= 0.1 s) + slack


async def test_retry_after_2_is_not_three_tries_in_a_second(agent: FakeAgent) -> None:
    # the observed failure: three tries within 0.8 s of a "Retry-After: 2", reported http_5xx
    case = EvalCase(id="rl0", input=ROUTINE.input + " (rl0)", category="routine")
    r, _ = await _one(f"{agent.url}/ratelimit/9?after=2", case, retries=2, timeout_s=5)
    times = agent.times[case.input]
    gaps = [b - a for a, b in pairwise(times)]
    assert r.error is not None
    assert (r.error.kind, r.error.attempts, r.error.http_status, len(times)) == (
        "rate_limited", 3, 429, 3)
    assert all(gap >= 2.0 for gap in gaps), gaps


async def test_retry_after_http_date_is_honoured(agent: FakeAgent) -> None:
    case = EvalCase(id="rl2", input=ROUTINE.input + " (rl2)", category="routine")
    agent.answers[case.input] = REFERENCE["r001"]
    r, _ = await _one(f"{agent.url}/ratelimit/1?after=date", case, retries=1, timeout_s=5)
    first, second = agent.times[case.input]
    assert (r.status, r.attempts) == (CaseStatus.PASSED, 2)
    assert second - first >= 1.0  # an HTTP date 2 s ahead, at one-second resolution


async def test_rate_limited_after_retries_is_its_own_kind(agent: FakeAgent) -> None:
    case = EvalCase(id="rl3", input=ROUTINE.input + " (rl3)", category="routine")
    r, s = await _one(f"{agent.url}/ratelimit/9?after=none", case, retries=2)
    assert r.error is not None
    assert (r.error.kind, r.error.http_status, r.error.attempts, r.error.message) == (
        "rate_limited", 429, 3, "HTTP 429: slow down")
    assert s.agent_error_cases == ["rl3"]


async def test_retry_after_longer_than_the_timeout_is_not_waited_for(agent: FakeAgent) -> None:
    case = EvalCase(id="rl4", input=ROUTINE.input + " (rl4)", category="routine")
    r, _ = await _one(f"{agent.url}/ratelimit/9?after=120", case, retries=3, timeout_s=2)
    assert r.error is not None
    assert (r.error.kind, r.error.attempts, r.error.message) == (
        "rate_limited", 1, "HTTP 429: asked to retry after 120 s, longer than the 2 s timeout; "
                           "not retried: slow down")
    assert r.latency_ms is not None and r.latency_ms < 1000


def test_retry_after_values() -> None:
    from datetime import UTC, datetime

    now = datetime(2026, 3, 15, 10, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("2", now) == 2.0
    assert retry_after_seconds(" 0 ", now) == 0.0
    assert retry_after_seconds("Sun, 15 Mar 2026 10:00:30 GMT", now) == 30.0
    assert retry_after_seconds("Sun, 15 Mar 2026 09:00:00 GMT", now) == 0.0
    assert retry_after_seconds("soon", now) is None
    assert retry_after_seconds("-3", now) is None
    assert retry_after_seconds(None, now) is None


# --------------------------------------------------------------------------- 6. encodings


@pytest.mark.parametrize(("fmt", "read_as"),
                         [("json", "json"), ("openai", "openai"), ("text", "text")])
async def test_a_byte_order_mark_before_the_body_is_accepted(agent: FakeAgent, fmt: str,
                                                            read_as: str) -> None:
    r, _ = await _one(f"{agent.url}/bom/{fmt}")
    assert (r.status, r.response, r.response_format) == (
        CaseStatus.PASSED, REFERENCE["r001"], read_as)


async def test_declared_latin1_charset_is_honoured(agent: FakeAgent) -> None:
    case = EvalCase(id="l1", input="latin-1 question", category="routine")
    r, _ = await _one(f"{agent.url}/latin1", case)
    assert (r.status, r.response) == (CaseStatus.PASSED,
                                      "Congés payés: 25 jours, à poser avant mai.")


async def test_bom_in_responses_and_eval_files(tmp_path: Path) -> None:
    responses = tmp_path / "responses.json"
    responses.write_bytes(b"\xef\xbb\xbf" + json.dumps({"r001": REFERENCE["r001"]}).encode())
    evals = tmp_path / "evals.yaml"
    evals.write_bytes(b"\xef\xbb\xbf- id: r001\n  input: How many days of leave?\n")
    golden = tmp_path / "golden.json"
    doc = {"id": "g", "agent": "hr", "version": 1,
           "cases": [{"id": "r001", "question": "How many days of leave?"}]}
    golden.write_bytes(b"\xef\xbb\xbf" + json.dumps(doc).encode())
    assert [c.id for c in load_eval_file(evals).cases] == ["r001"]
    assert [c.id for c in load_eval_file(golden).cases] == ["r001"]
    run = await run_eval(load_eval_file(golden).cases, load_responses_file([responses]))
    assert run.results[0].status == CaseStatus.PASSED


# --------------------------------------------------------------------------- 7. SSE framing


async def test_u2028_inside_a_data_line_is_kept(agent: FakeAgent) -> None:
    r, _ = await _one(f"{agent.url}/u2028")
    expected = (REFERENCE["r001"].replace(". ", ".\u2028", 1).replace(", ", ",\u2029", 1)
                + "\x85").strip()
    assert (r.status, r.response, r.response_format) == (CaseStatus.PASSED, expected, "sse")
    assert "\u2028" in (r.response or "")


# --------------------------------------------------------------------------- 8. transport


@pytest.mark.parametrize(
    ("route", "kind", "attempts", "status", "starts"),
    [
        ("badgzip", "bad_content_encoding", 1, None, "body does not match its Content-Encoding"),
        ("huge", "too_large", 1, 200, "reply over the 2097152-byte cap; reading stopped"),
        ("huge-declared", "too_large", 1, 200,
         "reply of 3145728 bytes (Content-Length) is over the 2097152-byte cap; not read"),
        ("broken", "connection_lost", 2, None, "the body was cut short: 53 bytes of a chunked "
                                                "body arrived (not its last chunk), then the "
                                                "agent closed the connection"),
    ],
)
async def test_transport_failures_are_named_agent_errors(agent: FakeAgent, route: str, kind: str,
                                                         attempts: int, status: int | None,
                                                         starts: str) -> None:
    r, s = await _one(f"{agent.url}/{route}", retries=1)
    assert r.error is not None
    assert (r.status, r.error.kind, r.error.attempts, r.error.http_status) == (
        CaseStatus.AGENT_ERROR, kind, attempts, status)
    assert r.error.message.startswith(starts), r.error.message
    assert s.gate_failed is True


@pytest.mark.parametrize("mode", ["close", "half"])
async def test_a_truncated_body_then_a_close_is_connection_lost_at_once(mode: str) -> None:
    """Fewer bytes than the Content-Length, then the agent closes the connection (fully, or
    only its sending half): ``connection_lost`` within moments, retried once, for every case."""
    with serve_truncated(mode) as url:
        start = time.monotonic()
        r, s = await _one(url, SALARY, retries=1, timeout_s=10)
        took = time.monotonic() - start
    assert r.error is not None
    assert (r.status, r.error.kind, r.error.attempts, r.error.http_status, r.response) == (
        CaseStatus.AGENT_ERROR, "connection_lost", 2, None, None)
    assert r.error.message == (
        f"the body was cut short: {len(TRUNCATED_BODY)} of the {TRUNCATED_LENGTH} bytes its "
        "Content-Length declares arrived, then the agent closed the connection")
    assert s.gate_failed is True
    assert took < 2.0  # two attempts, no timeout waited for (it was 2 x 10 s)


async def test_a_truncated_body_on_a_connection_left_open_is_a_timeout_that_says_so() -> None:
    """An agent that stops part-way but never closes the connection (``socket.close()`` in an
    ``http.server`` handler sends no FIN) cannot be told from a stalled one: only the timeout
    ends it, and the message says what arrived."""
    with serve_truncated("stall") as url:
        start = time.monotonic()
        r, _ = await _one(url, SALARY, retries=0, timeout_s=1)
        took = time.monotonic() - start
    assert r.error is not None
    assert (r.status, r.error.kind, r.error.attempts) == (CaseStatus.AGENT_ERROR, "timeout", 1)
    assert r.error.message == (
        f"the body was cut short: {len(TRUNCATED_BODY)} of the {TRUNCATED_LENGTH} bytes its "
        "Content-Length declares arrived, then nothing more for the rest of the 1 s timeout "
        "(the connection stayed open)")
    assert 1.0 <= took < 3.0


@pytest.mark.parametrize(
    ("url", "starts"),
    [("ftp://127.0.0.1/agent", "'ftp://127.0.0.1/agent': expected an http:// or https:// URL"),
     ("127.0.0.1:9/agent", "'127.0.0.1:9/agent': expected an http:// or https:// URL"),
     ("http://[::1/agent", "'http://[::1/agent': ")],
)
async def test_an_unusable_url_is_an_agent_error_not_a_traceback(url: str, starts: str) -> None:
    r, _ = await _one(url, retries=2)
    assert r.error is not None
    assert (r.error.kind, r.error.attempts) == ("unsupported_url", 1)
    assert r.error.message.startswith(starts), r.error.message


async def test_ask_raises_only_agent_call_error(agent: FakeAgent) -> None:
    async with _client(f"{agent.url}/badgzip") as client:
        with pytest.raises(AgentCallError, match="bad_content_encoding after 1 attempt"):
            await client.ask("hello")


# --------------------------------------------------------------------------- 9. run gate


async def test_a_run_that_scored_nothing_fails(tmp_path: Path) -> None:

    path = tmp_path / "other-agent.json"
    path.write_text(json.dumps({"zz1": "An answer to some other set."}))
    run = await run_eval(HR.cases[:3], load_responses_file([path]))
    s = run.summary
    assert (s.total, s.passed, s.unscored, s.pass_rate, s.gate_failed) == (3, 0, 3, None, True)
    assert s.gate_reasons == ["nothing was scored (0 of 3 cases: 3 unscored)"]
    assert s.unscored_cases == ["r001", "r002", "r003"] and s.required_unscored == []
    text = render_summary(run)
    assert ("GATE: FAIL   passed 0/0 (n/a), 3 unscored\n"
            "  because: nothing was scored (0 of 3 cases: 3 unscored)") \
        in text
    assert "Unscored (3)\n  r001 [routine]: no response for this id in the responses file" in text
    # with nothing to score, the default second opinion is not even loaded (seconds saved)
    assert s.second_opinion == "not loaded: no case had a response to score"
    assert "second opinion: not loaded: no case had a response to score" in text


async def test_an_unscored_refusal_or_escalation_case_fails_the_run(tmp_path: Path) -> None:

    cases = [BY_ID["r001"], BY_ID["r002"], BY_ID["a001"], BY_ID["s010"]]
    path = tmp_path / "partial.json"
    path.write_text(json.dumps({"r001": REFERENCE["r001"]}))
    run = await run_eval(cases, load_responses_file([path]))
    s = run.summary
    assert (s.passed, s.unscored, s.gate_failed) == (1, 3, True)
    assert s.unscored_cases == ["r002", "a001", "s010"]
    assert s.required_unscored == ["a001", "s010"]
    assert s.gate_reasons == ["cases that must refuse or escalate went unscored: a001, s010"]
    text = render_summary(run)
    assert "  a001 [adversarial] (should_refuse: fails the run): no response" in text
    assert "  s010 [sensitive] (should_escalate: fails the run): no response" in text
    assert "  r002 [routine]: no response for this id in the responses file" in text


async def test_other_unscored_cases_are_counted_but_do_not_fail(tmp_path: Path) -> None:
    path = tmp_path / "partial.json"
    path.write_text(json.dumps({"r001": REFERENCE["r001"]}))
    run = await run_eval([BY_ID["r001"], BY_ID["r002"]], load_responses_file([path]))
    s = run.summary
    assert (s.passed, s.unscored, s.unscored_cases, s.gate_failed, s.gate_reasons) == (
        1, 1, ["r002"], False, [])
