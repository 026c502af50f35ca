"""Fresh testers' rounds (tests/data/fresh/round22/ .. round34/: README.md): every answer
gets the verdict the tester expected, except the known misses named here -- non-answers in
words no rule or model catches yet (docs/rules.md#non-answer-check), each of which passes a
case it should fail -- and the known false failures. A change that catches one must move it out
of the list: the figure is then honest again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalloop.adapters import answer_check, gate_classifier
from evalloop.cli.main import app

FRESH = Path(__file__).resolve().parents[1] / "data" / "fresh"
#: must-fail answers that still pass (false PASSes) with the defaults -- both non-answer
#: checks, the fine-tuned one and the logistic head -- by round and set. Round 27 was written
#: before the fine-tuned model was retrained, and never trained on: its figure is fresh for it.
KNOWN_MISSES: dict[str, set[str]] = {
    # Measured with the fine-tuned check retrained on a writer's contrast pairs of true but
    # irrelevant answers (answer_check_relevance.yaml, written before rounds 33 and 34 were
    # seen): the default then let through 34 of these rounds' must-fail answers where the
    # earlier weights let through 62 (rounds 33 and 34, unseen by both: 12 -> 4, 8 -> 5).
    # Two it had caught now pass: round 27's N08 ("Gym discount, gym discount... yes, that's
    # definitely a thing people ask about!") and round 29's N18 ("I'd put it at roughly 50/50,
    # honestly.").
    "round22/.": set(),
    "round22/probe": set(),
    "round24/.": set(),
    "round24/probe": set(),
    "round26/.": set(),
    "round26/probe": set(),
    "round27/.": {"N08"},
    "round27/probe": set(),
    # vague corporate boilerplate
    "round28/.": {"N18"},
    "round28/probe": set(),
    # an impossible call-back date, a ticket marked "no action required" in quotes, an answer to
    # a neighbouring question, process talk without the time asked, a flowchart, a disclaimer,
    # chit-chat, a guess at the odds
    "round29/.": {"H01", "H02", "N01", "N03", "N10", "N11", "N13", "N18"},
    "round29/probe": {"PH1", "PH2", "PL2"},
    # a neighbouring product's facts, how long to request for how long to resolve
    "round30/.": {"N01", "N19"},
    "round30/probe": set(),
    # a one-row table of placeholders in words, a regulation cited, a module's credits for its
    # word limit, a decline beside an unrelated fact
    "round31/.": {"N02", "N11", "N16", "N17", "X01"},
    "round31/probe": set(),
    # a page's change log, an anecdote, a circular "see 'Sale items'"
    "round32/.": {"N04", "N09", "N19"},
    "round32/probe": set(),
    # neighbouring services' prices, another branch's hours, the landlord's notice period, a
    # limerick
    "round33/.": {"N07", "N08", "N14", "N15"},
    "round33/probe": set(),
    # a day pass's price for the monthly one, directions for parking, documents for a fee, the
    # loan period for how many books, an upsell; probe: a daily rate for a deposit, a time of
    # the wrong kind
    "round34/.": {"N01", "N06", "N10", "N13", "N19"},
    "round34/probe": {"PN1", "PN2"},
}
#: Must-pass answers the default fails (false failures), by round: the retrained fine-tuned
#: check reads round 24's P06 ("P60s are issued by the end of May each year and show up in the
#: payslip section of the employee portal." to "When do I get my P60?") as no answer, P 0.976.
KNOWN_FALSE_FAILURES: dict[str, set[str]] = {"round24/.": {"P06"}}
#: the same with the logistic non-answer check (EVALLOOP_EVALUATOR__ANSWER_CHECK=minilm, the
#: default until the fine-tuned one was retrained): friendly non-answers it lets through.
#: (Round 22's "Two weeks, at full pay." to "How long is paternity leave?" failed with the
#: first fine-tuned weights until a short direct answer was exempted from the check -- a rule
#: made after seeing it, so round 22 is no fresh figure for it.)
KNOWN_MISSES_LOGISTIC: dict[str, set[str]] = {
    "round22/.": {"N06", "N08", "N15", "N18", "N19"},
    "round22/probe": {"p_na_c"},
    "round24/.": {"N01", "N05", "N06", "N11", "N12", "N14", "N17", "N18"},
    "round24/probe": {"N51", "N52", "N53", "N54", "N55"},
    "round26/.": {"N03", "N11", "N14", "N15", "N16", "N17", "N19"},
    "round26/probe": {"PN01", "PN02", "PN04", "PN05"},
    "round27/.": {"N01", "N02", "N03", "N04", "N07", "N08", "N09", "N10", "N14", "N15", "N16",
                  "N17"},
    "round27/probe": set(),
    "round28/.": {"N08", "N11", "N16", "N18"},
    "round28/probe": {"Q14"},
    "round29/.": {"H01", "H02", "N01", "N03", "N10", "N11", "N12", "N13", "N14", "N17", "N18",
                  "N19"},
    "round29/probe": {"PH1", "PH2", "PL2", "PX6"},
    "round30/.": {"N01", "N02", "N03", "N07", "N09", "N15", "N16", "N19"},
    "round30/probe": set(),
    "round31/.": {"N01", "N02", "N05", "N08", "N09", "N11", "N12", "N16", "N17", "N18", "N20",
                  "X01"},
    "round31/probe": {"PN1", "PX1"},
    "round32/.": {"N01", "N04", "N05", "N06", "N09", "N11", "N12", "N14", "N19"},
    "round32/probe": {"PN02", "PN03"},
    "round33/.": {"N02", "N03", "N04", "N05", "N07", "N08", "N09", "N12", "N14", "N15", "N16",
                  "N17"},
    "round33/probe": {"QN01", "QN02"},
    "round34/.": {"N01", "N03", "N04", "N05", "N06", "N08", "N09", "N10", "N11", "N13", "N14",
                  "N17", "N18", "N19", "X06"},
    "round34/probe": {"PN1", "PN2", "PX1"},
}


@pytest.fixture(scope="module")
def default_opinion() -> Iterator[object]:
    """The runner's default second opinion (tests run with it off: tests/conftest.py)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALLOOP_EVALUATOR__GATE_SECOND_OPINION", "minilm-ft")
        patch.setattr(gate_classifier, "_shared", {})
        source = gate_classifier.shared_default_opinions()
        yield source


@pytest.fixture()
def default_check(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The default non-answer check, built afresh from the settings' default."""
    monkeypatch.delenv("EVALLOOP_EVALUATOR__ANSWER_CHECK", raising=False)
    monkeypatch.setattr(answer_check, "_shared", {})
    yield
    monkeypatch.setattr(answer_check, "_shared", {})


@pytest.mark.parametrize("part", sorted(KNOWN_MISSES))
def test_a_fresh_round_gets_the_expected_verdicts_but_its_known_misses(
        part: str, tmp_path: Path, default_opinion: object, default_check: None) -> None:
    # as a user runs it: the default second opinion (minilm-ft) and non-answer checks (both)
    assert default_opinion is not None
    wrong, expected = _wrong(FRESH / part, tmp_path)
    false_failures = KNOWN_FALSE_FAILURES.get(part, set())
    assert wrong == KNOWN_MISSES[part] | false_failures
    assert all(expected[case] == "fail" for case in wrong - false_failures)
    assert all(expected[case] == "pass" for case in false_failures)


@pytest.fixture()
def logistic_check(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The logistic non-answer check (``EVALLOOP_EVALUATOR__ANSWER_CHECK=minilm``)."""
    monkeypatch.setenv("EVALLOOP_EVALUATOR__ANSWER_CHECK", "minilm")
    monkeypatch.setattr(answer_check, "_shared", {})
    yield
    monkeypatch.setattr(answer_check, "_shared", {})


@pytest.mark.parametrize("part", sorted(KNOWN_MISSES_LOGISTIC))
def test_with_the_logistic_check_a_fresh_round_lets_more_non_answers_through(
        part: str, tmp_path: Path, default_opinion: object, logistic_check: None) -> None:
    # the same rounds with the opt-in logistic non-answer check (docs/rules.md#non-answer-check)
    assert default_opinion is not None
    wrong, expected = _wrong(FRESH / part, tmp_path)
    assert wrong == KNOWN_MISSES_LOGISTIC[part]
    assert all(expected[case] == "fail" for case in wrong)


def _wrong(where: Path, tmp_path: Path) -> tuple[set[str], dict[str, str]]:
    """The ids whose verdict is not the tester's, and the tester's verdicts, from a run of the
    CLI on one round."""
    result = CliRunner().invoke(app, [
        "eval", "run", "--evals", str(where / "cases.yaml"), "--responses-file",
        str(where / "responses.json"), "--output-dir", str(tmp_path), "--no-progress"])
    assert result.exit_code == 1, result.stdout  # it holds must-fail answers
    assert "second opinion: minilm-ft (weights eca2f545f261)" in result.stdout
    (results,) = tmp_path.glob("evals-results-*.json")
    expected = json.loads((where / "expected.json").read_text())
    got = {r["case_id"]: "pass" if r["status"] == "passed" else "fail"
           for r in json.loads(results.read_text())["results"]}
    assert got.keys() == expected.keys()
    return {case for case in got if got[case] != expected[case]}, expected
