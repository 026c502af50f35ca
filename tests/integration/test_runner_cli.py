"""`evalloop eval run`: output files, the exit-code gate (docs/exit-codes.md), usage errors,
--json; against canned responses and a real local HTTP server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from runner_fake_agent import FakeAgent, free_port, serve
from typer.testing import CliRunner

from evalloop.cli.eval_cmd import bundled_evals
from evalloop.cli.main import app
from evalloop.core.evaluation.cases import load_eval_file

HR_FILE = bundled_evals()
REFERENCE_FILE = bundled_evals("reference-responses.json")
FAILURE_FILE = bundled_evals("recorded-failure-a003.json")
REFERENCE = json.loads(REFERENCE_FILE.read_text())
runner = CliRunner()


@pytest.fixture(scope="module")
def agent() -> Iterator[FakeAgent]:
    cases = load_eval_file(HR_FILE).cases
    with serve(FakeAgent(answers={c.input: REFERENCE[c.id] for c in cases})) as running:
        yield running


def _eval(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["eval", "run", "--evals", str(HR_FILE), "--output-dir",
                                 str(tmp_path), "--no-progress", *args])
    return result.exit_code, result.stdout, result.stderr


def test_reference_responses_exit_0_and_write_both_files(tmp_path: Path) -> None:
    code, out, _ = _eval(tmp_path, "--responses-file", str(REFERENCE_FILE))
    assert code == 0, out
    (results,) = tmp_path.glob("evals-results-*.json")
    (summary,) = tmp_path.glob("evals-summary-*.txt")
    assert summary.name == results.name.replace("results", "summary").replace(".json", ".txt")
    doc = json.loads(results.read_text())
    assert len(doc["results"]) == 36
    assert doc["summary"]["passed"] == 36 and doc["summary"]["gate_failed"] is False
    assert doc["source"] == "responses_file" and doc["endpoint"] is None
    first = doc["results"][0]
    assert (first["case_id"], first["status"], first["scores"], first["composite"],
            first["judge"]) == ("r001", "passed", {}, None, None)
    assert set(first["gates"]) == {"refusal", "escalation"}
    text = summary.read_text()
    assert "GATE: PASS   passed 36/36 (100.0%)" in text
    assert "Requires human review (18)" in text
    assert text in out


def test_recorded_failure_exits_1_and_no_fail_on_gates_exits_0(tmp_path: Path) -> None:
    args = ("--responses-file", str(REFERENCE_FILE), "--responses-file", str(FAILURE_FILE))
    code, out, _ = _eval(tmp_path / "gated", *args)
    assert code == 1
    assert "GATE: FAIL   passed 35/36 (97.2%)" in out
    assert ("a003 [adversarial] refusal gate: no decline found: read as complying (a refusal "
            "expected: yes, found: no)") in out
    code, out, _ = _eval(tmp_path / "report-only", *args, "--no-fail-on-gates")
    assert code == 0
    assert "GATE: FAIL" in out  # the report still says so


def test_category_filter(tmp_path: Path) -> None:
    code, out, _ = _eval(tmp_path, "--responses-file", str(REFERENCE_FILE), "--category",
                         "adversarial")
    assert code == 0
    assert "evals:  hr-qa-agent-evals.yaml (6 cases)" in out


def test_live_endpoint_with_progress_bar(agent: FakeAgent, tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "run", "--endpoint", f"{agent.url}/sse", "--evals",
                                 str(HR_FILE), "--output-dir", str(tmp_path), "--concurrency",
                                 "6"])
    assert result.exit_code == 0, result.stdout
    assert "36/36" in result.stderr  # the progress bar, on stderr
    assert f"agent:  {agent.url}/sse [hr-qa-agent]" in result.stdout


def test_auth_header_from_the_environment(
    agent: FakeAgent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = ["--endpoint", f"{agent.url}/auth", "--category", "routine", "--retries", "0"]
    assert _eval(tmp_path / "a", *base)[0] == 1
    monkeypatch.setenv("AGENT_KEY", "secret")
    assert _eval(tmp_path / "b", *base, "--header-env", "X-Api-Key=AGENT_KEY")[0] == 0


@pytest.mark.parametrize(("args", "message"), [
    (["--header", "X-Api-Key: secret"],
     "--header X-Api-Key: credentials on the command line are visible in ps; use --header-env "
     "X-Api-Key=ENV_VAR"),
    (["--header", "Authorization: Bearer abc"],
     "--header Authorization: credentials on the command line are visible in ps; use "
     "--header-env Authorization=ENV_VAR"),
    (["--header-env", "Authorization=NO_SUCH_VAR_Q"],
     "--header-env Authorization: the environment variable NO_SUCH_VAR_Q is not set or empty"),
    (["--header-env", "Authorization"],
     "--header-env: expected 'Name=ENV_VAR', received 'Authorization'"),
    (["--db", "postgresql://app:hunter2@db.internal/x"],
     "--db postgresql://app:***@db.internal/x: a password on the command line is visible in ps;"
     " set EVALLOOP_POSTGRES__DSN instead"),
])
def test_secrets_on_the_command_line_are_refused(
    agent: FakeAgent, tmp_path: Path, args: list[str], message: str
) -> None:
    code, _, err = _eval(tmp_path, "--endpoint", f"{agent.url}/auth", *args)
    assert code == 2
    assert " ".join(err.split()) == f"error: {message}"
    assert "hunter2" not in err and "Bearer abc" not in err


def test_an_endpoint_with_credentials_is_refused(agent: FakeAgent, tmp_path: Path) -> None:
    url = agent.url.replace("http://", "http://bob:pw@") + "/auth?token=abc&v=1"
    code, _, err = _eval(tmp_path, "--endpoint", url)
    assert code == 2
    shown = agent.url.replace("http://", "http://bob:***@") + "/auth?token=***&v=1"
    assert " ".join(err.split()) == (
        f"error: --endpoint {shown}: carries credentials (user:password@ or a token parameter);"
        " pass them with --header-env Name=ENV_VAR")


def test_unreachable_agent_exits_1(tmp_path: Path) -> None:
    code, out, _ = _eval(tmp_path, "--endpoint", f"http://127.0.0.1:{free_port()}",
                         "--category", "adversarial", "--retries", "0", "--timeout", "2")
    assert code == 1
    assert "agent errors: 6" in out
    assert "a001 [adversarial] unreachable after 1 attempt(s): ConnectError" in out
    # agent errors count as failed cases, so the headline and the reason agree: 0 of 6 passed,
    # and nothing was scored because every case was an agent error
    assert "GATE: FAIL   passed 0/6 (0.0%)\n" in out
    assert "  because: nothing was scored (0 of 6 cases: 6 agent errors)\n" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--responses-file", "x.json", "--endpoint", "http://127.0.0.1:1"],
         "give exactly one of --endpoint URL or --responses-file FILE"),
        ([], "give exactly one of --endpoint URL or --responses-file FILE"),
        (["--responses-file", str(REFERENCE_FILE), "--category", "tone"],
         "no cases in category 'tone' (categories present: adversarial, edge-case, routine, "
         "sensitive)"),
        (["--endpoint", "http://127.0.0.1:1", "--header", "NoColonHere"],
         "expected a header as 'Name: value', received 'NoColonHere'"),
        (["--endpoint", "http://127.0.0.1:1", "--format", "xml"],
         "expected a response format among"),
        (["--responses-file", "/nonexistent/responses.json"], "a readable UTF-8 JSON file"),
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    code, _, err = _eval(tmp_path, *args)
    assert code == 2
    assert message in " ".join(err.split())
    assert not list(tmp_path.glob("evals-*"))


def test_bad_eval_file_exits_2_naming_case_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("- id: a1\n  input: hi\n  should_refuse: maybe\n")
    result = runner.invoke(app, ["eval", "run", "--evals", str(bad), "--responses-file",
                                 str(REFERENCE_FILE), "--no-progress"])
    assert result.exit_code == 2
    assert ("bad.yaml: cases[0] (id 'a1').should_refuse: expected a boolean (true/false), "
            "received 'maybe'") in " ".join(result.stderr.split())


def test_evals_and_golden_set_are_exclusive(tmp_path: Path) -> None:
    code, _, err = _eval(tmp_path, "--golden-set", "hr-qa-agent", "--responses-file",
                         str(REFERENCE_FILE))
    assert code == 2
    assert "give exactly one of --evals FILE or --golden-set AGENT[@VERSION]" in err


def test_responses_matching_no_case_exit_1_not_pass(tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"zz9": "An answer for another eval set."}))
    code, out, _ = _eval(tmp_path, "--responses-file", str(other), "--category", "routine")
    assert code == 1
    assert ("GATE: FAIL   passed 0/0 (n/a), 12 unscored\n"
            "  because: nothing was scored (0 of 12 cases: 12 unscored)") \
        in out
    assert "Unscored (12)" in out


def test_empty_answers_exit_1(agent: FakeAgent, tmp_path: Path) -> None:
    code, out, _ = _eval(tmp_path, "--endpoint", f"{agent.url}/empty/sse-tools", "--category",
                         "adversarial", "--retries", "0")
    assert code == 1
    assert ("a001 [adversarial] no_text after 1 attempt(s), HTTP 200: event stream carried no "
            "answer text (tool calls only)") in out


def test_json_prints_the_run_summary_as_one_object(tmp_path: Path) -> None:
    code, out, err = _eval(tmp_path, "--responses-file", str(REFERENCE_FILE), "--responses-file",
                           str(FAILURE_FILE), "--json")
    assert code == 1 and err == ""
    (line,) = out.splitlines()
    doc = json.loads(line)
    assert (doc["total"], doc["passed"], doc["failed_gate"], doc["gate_failed"],
            doc["refusal_gate_failures"], doc["exit_code"], doc["stored"], doc["source"]) == (
        36, 35, 1, True, ["a003"], 1, False, "responses_file")
    assert doc["gate_reasons"] == ["refusal gate failed (a refusal was required): a003"]
    assert doc["results_file"].startswith(str(tmp_path))
    assert doc["second_opinion"] == "off (the rules alone)"  # the tests' setting


def test_unreachable_database_for_storing_exits_3(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # a DSN with a password comes from the environment (--db with one is refused: ps shows it)
    dsn = f"postgresql://u:p@127.0.0.1:{free_port()}/evalloop"
    monkeypatch.setenv("EVALLOOP_POSTGRES__DSN", dsn)
    code, _, err = _eval(tmp_path, "--responses-file", str(REFERENCE_FILE), "--category",
                           "adversarial")
    assert code == 3
    assert err.startswith("error: ") and len(err.splitlines()) == 1
    assert "127.0.0.1" in err and "u:***@" in err


def test_files_with_a_byte_order_mark_run(tmp_path: Path) -> None:
    evals = tmp_path / "bom.yaml"
    evals.write_bytes(b"\xef\xbb\xbf" + HR_FILE.read_bytes())
    responses = tmp_path / "bom.json"
    responses.write_bytes(b"\xef\xbb\xbf" + REFERENCE_FILE.read_bytes())
    result = runner.invoke(app, ["eval", "run", "--evals", str(evals), "--responses-file",
                                 str(responses), "--output-dir", str(tmp_path), "--no-progress"])
    assert result.exit_code == 0, result.stderr
    assert "GATE: PASS   passed 36/36 (100.0%)" in result.stdout


def test_a_reply_nested_too_deep_fails_its_case_not_the_run(agent: FakeAgent,
                                                            tmp_path: Path) -> None:
    code, out, err = _eval(tmp_path, "--endpoint", f"{agent.url}/raw/json-deep", "--category",
                           "adversarial", "--retries", "0")
    assert (code, err) == (1, "")
    assert ("a001 [adversarial] malformed_response after 1 attempt(s), HTTP 200: malformed_json: "
            "nested too deep to decode: " + "[" * 37 + "...") in out
    (results,) = tmp_path.glob("evals-results-*.json")
    assert len(list(tmp_path.glob("evals-summary-*.txt"))) == 1
    doc = json.loads(results.read_text())
    assert [(r["status"], r["error"]["kind"]) for r in doc["results"]] == [
        ("agent_error", "malformed_response")] * 6


def test_a_responses_file_nested_too_deep_exits_2(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"a001": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, _, err = _eval(tmp_path, "--responses-file", str(deep))
    assert code == 2
    assert err == ("error: deep.json: (line 1, column 1): expected valid JSON: arrays and objects "
                   "nested less deeply (this is too deep to read), received '{\"a001\": "
                   + "[" * 31 + "...'\n")
    assert not list(tmp_path.glob("evals-*"))


def test_an_id_answered_twice_in_one_file_exits_2(tmp_path: Path) -> None:
    # JSON keeps the last of two equal keys: the first answer would vanish unseen
    twice = tmp_path / "twice.json"
    twice.write_text('{"a001": "I can\'t share that.", "a003": "Ten days.", '
                     '"a001": "Here it is: ...", "a001": {"response": "Third."}}')
    code, _, err = _eval(tmp_path, "--responses-file", str(twice))
    assert code == 2
    assert err == ("error: twice.json: a001: expected one answer per eval id in a file, "
                   "received 3 answers for 'a001'; the file's reader would keep only the last\n")
    assert not list(tmp_path.glob("evals-*"))


def test_a_response_id_that_matches_no_case_is_named(tmp_path: Path) -> None:
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps({"zz9": "A typo'd id.", "zz1": "Another."}), encoding="utf-8")
    code, _, err = _eval(tmp_path, "--responses-file", str(REFERENCE_FILE), "--responses-file",
                         str(extra), "--json")
    assert code == 0
    assert err == ("warning: 2 response id(s) match no case of hr-qa-agent-evals.yaml: zz1, "
                   "zz9\n")


def test_a_response_id_in_other_case_says_which_case_it_means(tmp_path: Path) -> None:
    # ids match exactly: "A001" is no answer to a001, and the warning says which it means
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps({"A001": "I can't share that.", "a003x": "Ten days."}),
                     encoding="utf-8")
    code, _, err = _eval(tmp_path, "--responses-file", str(REFERENCE_FILE), "--responses-file",
                         str(extra), "--json")
    assert code == 0
    assert err == ("warning: 2 response id(s) match no case of hr-qa-agent-evals.yaml: A001 "
                   "(did you mean a001?), a003x (did you mean a003?)\n")


def _doc_blocks(section: str, lang: str) -> list[str]:
    """The ``lang`` code blocks of one section of docs/rules.md, in order."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "rules.md").read_text()
    body = text.split(section + "\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    return [b.split("```", 1)[0] for b in body.split(f"```{lang}\n")[1:]]


def test_the_documented_eval_set_and_responses_file_run_as_documented(tmp_path: Path) -> None:
    smallest, with_metadata = _doc_blocks("## Eval case format", "yaml")
    (responses,) = _doc_blocks("### Responses file", "json")
    (tmp_path / "smallest.yaml").write_text(smallest)
    (tmp_path / "meta.yaml").write_text(with_metadata)
    (tmp_path / "responses.json").write_text(responses)
    assert [(c.id, c.should_refuse, c.category) for c in
            load_eval_file(tmp_path / "smallest.yaml").cases] == [
        ("q1", False, "routine"), ("a1", True, "adversarial")]
    meta = load_eval_file(tmp_path / "meta.yaml")
    assert (meta.set_id, meta.agent, [c.id for c in meta.cases]) == ("hr-evals", "hr-qa-agent",
                                                                      ["q1"])
    result = runner.invoke(app, ["eval", "run", "--evals", str(tmp_path / "smallest.yaml"),
                                 "--responses-file", str(tmp_path / "responses.json"),
                                 "--output-dir", str(tmp_path), "--no-progress"])
    assert result.exit_code == 0, result.stdout
    assert "GATE: PASS   passed 2/2 (100.0%)" in result.stdout
