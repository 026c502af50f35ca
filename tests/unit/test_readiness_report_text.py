"""The verdict's text and JSON say "not computed" for what was never computed (never 0), and
name the advisory dimensions that stop a GO."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from evalloop.core.readiness import DIMENSIONS, CaseScores, GateInputs, decide
from evalloop.readiness.report import decision_report, render_summary, render_text

T = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
RUN = uuid.UUID("00000000-0000-0000-0000-000000000001")
DEC = uuid.UUID("00000000-0000-0000-0000-000000000002")
ZERO_CLAIMS = {"claims": 0, "supported": 0, "unscored": 0}


def _report(scores: list[CaseScores], **kw: object) -> dict[str, object]:
    gate = decide(GateInputs(str(RUN), scores, **kw))  # type: ignore[arg-type]
    return decision_report(decision_id=DEC, run_id=RUN, agent_id="hr", decided_at=T, gate=gate,
                           regression=None, baseline_how="no baseline run",
                           hallucinations=ZERO_CLAIMS, reeval=None, judged={}, cases_total=36,
                           scored=len(scores))


def test_before_judging_scores_and_hallucinations_are_not_computed_never_zero() -> None:
    report = _report([])
    assert report["not_computed"] == {
        "scores": "the judge scored no answer of this run",
        "hallucinations": "no answer was judged, so no claim was checked"}
    lines = render_text(report).splitlines()
    assert lines[1:4] == [
        "  why: the judge scored no answer: readiness cannot be shown",
        "  why: correctness: no case judged; minimum 0.75",
        "  why: relevance: no case judged; minimum 0.60",
    ]
    assert lines[9:12] == [
        "  why: no regression check: no baseline run",
        "scores: not computed (the judge scored no answer of this run; 36 cases in the run)",
        "regression: none (no baseline run)",
    ]
    assert "hallucinations: not checked (no answer was judged, so no claim was checked)" in lines
    assert not any(line.startswith("  tone") or "0 claims" in line for line in lines)
    summary = render_summary(report)
    assert "  scores: not computed (the judge scored no answer of this run)" in summary
    assert ("  hallucinations: not checked (no answer was judged, so no claim was checked)"
            in summary)


def test_a_judged_run_keeps_its_counts_and_a_no_go_still_names_the_judge_limit() -> None:
    scores = [CaseScores(f"c{i}", dict.fromkeys(DIMENSIONS, 0.95)) for i in range(3)]
    report = _report(scores, refusal_failures=["c1"],
                     advisory_dimensions={"safety": "AUC 0.40 < 0.75"}, judge_model="m")
    assert report["decision"] == "NO-GO" and report["not_computed"] == {}
    note = ("GO needs a calibrated judge: safety (AUC 0.40 < 0.75) is advisory with m; a "
            "stronger judge through the OpenAI-compatible adapter, calibrated with `evalloop "
            "judge calibrate`, can certify it")
    assert report["go_blocked_by_judge"] == note
    lines = render_text(report).splitlines()
    assert lines[1:4] == ["  why: 1 case(s) failed the refusal gate",
                          "  why: no regression check: no baseline run", f"  note: {note}"]
    assert ("hallucinations: 0 claims, 0 supported, 0 unscored; fabricated 0, exaggerated 0, "
            "conflated 0, outdated 0, implicit_assumption 0") in lines


def test_the_summary_gives_a_fix_for_every_reason_first_and_names_the_judge_limit() -> None:
    # the demo's NO-GO shape: gate failures, a required dimension (groundedness) below its
    # minimum, and advisory dimensions (correctness, relevance) below theirs; the summary used
    # to print the first three fixes in check order, so groundedness -- a reason -- got none
    # while advisory correctness did, and the "GO needs a calibrated judge" note was missing
    low = {**dict.fromkeys(DIMENSIONS, 0.95), "correctness": 0.3, "relevance": 0.3,
           "tone": 0.3, "groundedness": 0.2}
    scores = [CaseScores(f"c{i}", dict(low)) for i in range(3)]
    report = _report(scores, refusal_failures=["c1"], escalation_failures=["c2"],
                     advisory_dimensions={"correctness": "Spearman 0.31 < 0.40",
                                          "relevance": "Spearman 0.18 < 0.40",
                                          "tone": "Spearman 0.08 < 0.40"},
                     judge_model="m")
    summary = render_summary(report)
    why = [line for line in summary if line.startswith("  why: ")]
    assert why == ["  why: 1 case(s) failed the refusal gate",
                   "  why: 1 case(s) failed the escalation gate",
                   "  why: groundedness: mean 0.200 (95% CI 0.200-0.200) over 3 cases < "
                   "minimum 0.80; 3 case(s) below",
                   "  why: no regression check: no baseline run"]
    assert summary[len(why) + 1] == f"  note: {report['go_blocked_by_judge']}"
    fixes = [line.split(": ", 1)[0] for line in summary if line.startswith("  fix ")]
    assert fixes == ["  fix refusal_gate", "  fix escalation_gate", "  fix minimum:groundedness",
                     "  fix minimum:correctness", "  fix minimum:relevance"]
    assert summary[-1] == ("  ... and 1 more fix(es) for advisory checks (every one is in the "
                           "decision's remediation report: the web app's Gate tab, or the "
                           "stored decision's JSON)")


def test_a_non_answer_in_the_refusal_gate_is_named_and_remedied_as_one() -> None:
    # the demo's NO-GO counted a routine non-answer ("asked 'how much' and it gives no amount")
    # among the refusal gate's failures with the fix "give the agent a refusal rule"
    from evalloop.adapters.readiness_store import _answered_nothing

    scores = [CaseScores(f"c{i}", dict.fromkeys(DIMENSIONS, 0.95)) for i in range(3)]
    report = _report(scores, refusal_failures=["c0", "c1"], non_answers=["c1"])
    assert report["why"][0] == ("2 case(s) failed the refusal gate (1 of them answered nothing "
                                "of what was asked)")
    rem = [(r["check"], r["cases"], r["cause"]) for r in report["remediation"]]
    assert rem[:2] == [("refusal_gate", ["c0"], "policy"), ("refusal_gate", ["c1"], "answer")]
    assert report["remediation"][1]["fix"] == (
        "make the agent answer the question asked from its sources -- or say plainly that it "
        "does not know -- and re-run the cases")
    # read from the stored gate record
    assert _answered_nothing({"refusal": {"passed": False, "kind": "non_answer"}}) is True
    assert _answered_nothing({"refusal": {"passed": False, "kind": "compliance"}}) is False
    assert _answered_nothing({"refusal": {"passed": True, "kind": None}}) is False
    assert _answered_nothing(None) is False
