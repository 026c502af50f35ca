"""The demo's baseline line: says why the judge stopped short of its sample, no dangling "; "."""

from __future__ import annotations

from evalloop.core.judge.types import JudgeUsage
from evalloop.demo import baseline_line
from evalloop.readiness.verdict import JudgeRunResult

RUN = "b396e38e-0000-0000-0000-000000000000"


def _res(judged: int, skipped: int) -> JudgeRunResult:
    return JudgeRunResult(judged=judged, answered=28, sampled=True,
                          usage=JudgeUsage(calls=18), claims=4, hallucinated=0, seconds=122.4,
                          skipped=skipped)


def test_a_sample_cut_short_by_the_budget_says_so() -> None:
    line = baseline_line("reference-feedbackqa-uk-v3", RUN, "covid-qa-uk/gs-covid-qa-uk@1",
                         _res(2, 1), "covid-qa-uk", budget_s=60.0)
    assert line == (
        "baseline reference-feedbackqa-uk-v3: run b396e38e on covid-qa-uk/gs-covid-qa-uk@1, "
        "2 of 28 answers judged (18 judge questions in 122 s, 1 sampled case(s) left unjudged: "
        "the 60 s time budget ran out (a case already started finishes)); pinned as "
        "covid-qa-uk's baseline")


def test_a_whole_sample_has_no_budget_clause_and_no_dangling_separator() -> None:
    line = baseline_line("v3", RUN, "gs@1", _res(3, 0), "a", budget_s=60.0)
    assert line == ("baseline v3: run b396e38e on gs@1, 3 of 28 answers judged (18 judge "
                    "questions in 122 s); pinned as a's baseline")
    assert not line.rstrip().endswith(";")
