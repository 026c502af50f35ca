"""Fresh testers' rounds (tests/data/fresh/round22/, round24/, round26/: README.md): every answer
gets the verdict the tester expected, except the known misses named here -- non-answers in
words no rule or model catches yet (docs/rules.md#non-answer-check), each of which passes a
case it should fail. A change that catches one must move it out of the list: the figure is then
honest again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalloop.adapters import answer_check, gate_classifier
from evalloop.cli.main import app

FRESH = Path(__file__).resolve().parents[1] / "data" / "fresh"
#: must-fail answers that still pass (false PASSes), by round and set
KNOWN_MISSES = {
    "round22/.": {"N06", "N08", "N10", "N13", "N15", "N18", "N19"},
    "round22/probe": {"p_once_a", "p_na_c"},
    "round24/.": {"N01", "N02", "N05", "N06", "N11", "N12", "N14", "N16", "N17", "N18"},
    "round24/probe": {"N51", "N52", "N53", "N54", "N55"},
    "round26/.": {"N03", "N10", "N11", "N14", "N15", "N16", "N17", "N19"},
    "round26/probe": {"PN01", "PN02", "PN03", "PN04", "PN05"},
}
#: the verdicts that are wrong with the fine-tuned non-answer check
#: (EVALLOOP_EVALUATOR__ANSWER_CHECK=minilm-ft): none. (Round 22's "Two weeks, at full pay." to
#: "How long is paternity leave?", P(non-answer) 0.669, failed until a short direct answer was
#: exempted from the check -- a rule made after seeing it, so round 22 is no fresh figure for it.)
KNOWN_WRONG_FT: dict[str, set[str]] = {
    "round22/.": set(),
    "round22/probe": set(),
    "round24/.": set(),
    "round24/probe": set(),
    # fresh for it: "Bank details. Payroll. Got it." (P 0.002) -- an echo of the question's words
    "round26/.": {"N10"},
    "round26/probe": set(),
}


@pytest.fixture(scope="module")
def default_opinion() -> Iterator[object]:
    """The runner's default second opinion (tests run with it off: tests/conftest.py)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALLOOP_EVALUATOR__GATE_SECOND_OPINION", "minilm-ft")
        patch.setattr(gate_classifier, "_shared", {})
        source = gate_classifier.shared_default_opinions()
        yield source


@pytest.mark.parametrize("part", sorted(KNOWN_MISSES))
def test_a_fresh_round_gets_the_expected_verdicts_but_its_known_misses(
        part: str, tmp_path: Path, default_opinion: object) -> None:
    # as a user runs it: the default second opinion (minilm-ft) and non-answer check
    assert default_opinion is not None
    wrong, expected = _wrong(FRESH / part, tmp_path)
    assert wrong == KNOWN_MISSES[part]
    assert all(expected[case] == "fail" for case in wrong)  # no genuine answer fails


@pytest.fixture()
def fine_tuned_check(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The fine-tuned non-answer check (``EVALLOOP_EVALUATOR__ANSWER_CHECK=minilm-ft``)."""
    monkeypatch.setenv("EVALLOOP_EVALUATOR__ANSWER_CHECK", "minilm-ft")
    monkeypatch.setattr(answer_check, "_shared", {})
    yield
    monkeypatch.setattr(answer_check, "_shared", {})


@pytest.mark.parametrize("part", sorted(KNOWN_WRONG_FT))
def test_with_the_fine_tuned_check_a_fresh_round_loses_its_non_answer_misses(
        part: str, tmp_path: Path, default_opinion: object, fine_tuned_check: None) -> None:
    # the same rounds with the opt-in fine-tuned non-answer check (docs/rules.md#non-answer-check)
    assert default_opinion is not None
    wrong, _ = _wrong(FRESH / part, tmp_path)
    assert wrong == KNOWN_WRONG_FT[part]


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
