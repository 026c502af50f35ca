"""Regression rules and the gate's decision table, with exact values."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from evalloop.core.readiness import (
    CHECKPOINTS,
    DIMENSIONS,
    CareCase,
    CareCheck,
    CaseEvidence,
    CaseScores,
    CheckpointRecord,
    GateInputs,
    care_checks,
    compare,
    decide,
    sample_conversations,
)
from evalloop.core.readiness.gate import likely_cause

T = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def uniform(case_id: str, value: float, **over: float | None) -> CaseScores:
    return CaseScores(case_id, {**dict.fromkeys(DIMENSIONS, value), **over})


def approved() -> dict[str, CheckpointRecord]:
    return {n: CheckpointRecord(n, "approved", "ana", T, "ok") for n in CHECKPOINTS}


GOOD_CARE = [CareCheck("golden_set_size", True, "60 cases")]


# --------------------------------------------------------------------------- regression


def test_regression_on_shared_cases_case_drops_and_dimension_warnings() -> None:
    baseline = [uniform(c, 0.9) for c in ("a", "b", "c", "e")]
    current = [uniform("a", 0.7), uniform("b", 0.9), uniform("c", 0.9, groundedness=0.75),
               uniform("d", 0.9)]
    rep = compare(baseline, current, baseline_run_id="r0", current_run_id="r1")
    assert rep.shared_cases == ("a", "b", "c")
    assert rep.only_baseline == ("e",) and rep.only_current == ("d",)
    # case a: composite 0.9 -> 0.7, a drop of 0.2 > 0.15; c: 0.9 -> 0.87 is not
    assert [r.case_id for r in rep.case_regressions] == ["a"]
    reg = rep.case_regressions[0]
    assert reg.drop == pytest.approx(0.2, abs=1e-12)
    assert list(reg.dimensions) == sorted(DIMENSIONS)  # all fell by 0.2: ties sorted by name
    # groundedness: diffs -0.2, 0, -0.15 -> mean drop 0.11667 > 0.10 -> warning
    g = rep.dimensions["groundedness"]
    assert g.drop == pytest.approx(0.35 / 3, abs=1e-12) and g.warning is True
    # composite: diffs -0.2, 0, -0.03 -> mean drop 0.07667: no warning
    comp = rep.dimensions["composite"]
    assert comp.drop == pytest.approx(0.23 / 3, abs=1e-12) and comp.warning is False
    assert comp.test.n == 3 and comp.significant_regression is False
    assert rep.warnings == ["groundedness"]
    # every other dimension fell by 0.2/3 = 0.0667 on average: no warning
    assert rep.dimensions["tone"].warning is False


def test_a_drop_of_exactly_the_threshold_is_not_more_than_it() -> None:
    rep = compare([uniform("a", 0.9), uniform("b", 0.9)], [uniform("a", 0.75), uniform("b", 0.8)])
    assert rep.case_regressions == ()  # 0.15 is not "more than 0.15"
    assert rep.dimensions["tone"].drop == pytest.approx(0.125, abs=1e-12)
    rep = compare([uniform("a", 0.9)], [uniform("a", 0.8)])
    assert rep.dimensions["safety"].warning is False  # exactly 0.10


def test_a_significant_drop_is_a_significant_regression_an_improvement_is_not() -> None:
    base = [uniform(f"c{i}", 0.9) for i in range(6)]
    worse = [uniform(f"c{i}", v) for i, v in enumerate([0.7, 0.72, 0.69, 0.71, 0.7, 0.68])]
    rep = compare(base, worse)
    assert rep.dimensions["composite"].test.p is not None
    assert rep.dimensions["composite"].test.p < 0.05
    assert rep.significant_regressions == [*DIMENSIONS, "composite"]
    better = compare(worse, base)
    assert better.dimensions["composite"].test.significant is True
    assert better.significant_regressions == [] and better.warnings == []


def test_duplicate_case_ids_are_refused() -> None:
    with pytest.raises(ValueError, match=r"current run: expected unique case ids, \['a'\] repeat"):
        compare([uniform("a", 0.9)], [uniform("a", 0.9), uniform("a", 0.8)])


# --------------------------------------------------------------------------- the gate


def good_run(n: int = 5) -> list[CaseScores]:
    return [uniform(f"c{i}", 0.95) for i in range(n)]


def test_go_needs_every_check_and_all_four_checkpoints() -> None:
    cases = good_run()
    d = decide(GateInputs("r1", cases, regression=compare(cases, cases), care=GOOD_CARE,
                          checkpoints=approved()))
    assert d.decision == "GO"
    assert d.why == ("every automated check passes and the four manual checkpoints are "
                     "approved",)
    assert d.remediation == () and d.reeval_within_days is None and d.monitoring_flags == ()
    reg = next(c for c in d.checks if c.name == "regression:composite")
    assert reg.status == "pass" and reg.why == (
        "composite: mean 0.950 -> 0.950 (diff +0.000, p=1.0000, n=5 of 5 shared)")


def test_pending_checkpoints_give_conditional_go_with_a_reevaluation() -> None:
    d = decide(GateInputs("r1", good_run(), baseline_note="no deployed GO run of agent hr"))
    assert d.decision == "CONDITIONAL GO"
    assert d.why == (
        "manual checkpoint(s) pending: sample_review, edge_cases, persona_consistency, "
        "escalation_path",
        "no regression check: no deployed GO run of agent hr",
    )
    assert d.reeval_within_days == 7
    assert next(c for c in d.checks if c.name == "baseline").status == "skipped"


def test_refusal_gate_failure_is_no_go_with_remediation() -> None:
    d = decide(GateInputs("r1", good_run(), refusal_failures=["c1"], checkpoints=approved()))
    assert d.decision == "NO-GO"
    assert d.why == ("1 case(s) failed the refusal gate", "no regression check: no baseline run")
    (r,) = d.remediation
    assert (r.check, r.cases, r.cause) == ("refusal_gate", ("c1",), "policy")
    assert d.reeval_within_days is None


def test_required_minimum_missed_is_no_go_and_names_cases_and_cause() -> None:
    cases = [*good_run(3), uniform("bad", 0.95, safety=0.5)]
    evidence = {"bad": CaseEvidence("bad", retrieved=("kb/a",), expected=("kb/a",),
                                    retrieval_known=True)}
    d = decide(GateInputs("r1", cases, evidence=evidence, checkpoints=approved()))
    assert d.decision == "NO-GO"
    # safety mean (3*0.95 + 0.5)/4 = 0.8375 < 0.90
    assert d.why[0] == ("safety: mean 0.837 (95% CI 0.479-1.000) over 4 cases < minimum 0.90; "
                        "1 case(s) below")
    (r,) = [r for r in d.remediation if r.check == "minimum:safety"]
    assert r.cases == ("bad",) and r.cause == "answer" and r.dimension == "safety"


def test_an_advisory_dimension_cannot_block_alone() -> None:
    cases = [*good_run(3), uniform("low", 0.95, tone=0.1)]  # tone mean 0.7375 >= 0.60
    low_tone = [uniform(f"c{i}", 0.95, tone=0.3) for i in range(4)]  # tone mean 0.30
    d = decide(GateInputs("r1", low_tone, advisory_dimensions={"tone": "AUC 0.61 < 0.75"},
                          checkpoints=approved()))
    assert d.decision == "CONDITIONAL GO"
    minimum = next(c for c in d.checks if c.name == "minimum:tone")
    assert minimum.kind == "advisory" and minimum.status == "fail"
    assert "advisory_dimension:tone" in d.monitoring_flags
    # the same low tone without the advisory flag is a required miss
    assert decide(GateInputs("r1", low_tone, checkpoints=approved())).decision == "NO-GO"
    # an advisory dimension that passes still stops a GO
    d = decide(GateInputs("r1", cases, advisory_dimensions={"tone": "AUC 0.61 < 0.75"},
                          checkpoints=approved()))
    assert d.decision == "CONDITIONAL GO"
    assert d.why[0] == ("GO needs a calibrated judge: tone (AUC 0.61 < 0.75) is advisory with "
                        "this judge; a stronger judge through the OpenAI-compatible adapter, "
                        "calibrated with `evalloop judge calibrate`, can certify it")
    check = next(c for c in d.checks if c.name == "advisory_dimension:tone")
    assert check.why == ("tone: the judge's agreement with people is below the bar "
                         "(AUC 0.61 < 0.75); shown, cannot certify a GO nor block alone")


#: The shipped calibration of the embedded judge (docs/judge.md#calibration-table).
SHIPPED_ADVISORY = {"correctness": "Spearman 0.31 < 0.40", "relevance": "Spearman 0.18 < 0.40",
                    "tone": "Spearman 0.08 < 0.40", "safety": "AUC 0.40 < 0.75",
                    "faithfulness": "AUC 0.55 < 0.75",
                    "context_utilization": "AUC 0.47 < 0.75"}


def test_with_the_shipped_judge_even_a_perfect_run_is_conditional_and_says_why() -> None:
    """All scores 0.95, four approved checkpoints, a clean regression and care: the six advisory
    dimensions of the embedded judge stop the GO, and the decision says so in one reason."""
    cases = good_run()
    d = decide(GateInputs("r1", cases, regression=compare(cases, cases), care=GOOD_CARE,
                          checkpoints=approved(), advisory_dimensions=SHIPPED_ADVISORY,
                          judge_model="qwen2.5-coder-1.5b-instruct-q4_k_m"))
    note = ("GO needs a calibrated judge: correctness (Spearman 0.31 < 0.40), relevance "
            "(Spearman 0.18 < 0.40), tone (Spearman 0.08 < 0.40), safety (AUC 0.40 < 0.75), "
            "faithfulness (AUC 0.55 < 0.75), context_utilization (AUC 0.47 < 0.75) are advisory "
            "with qwen2.5-coder-1.5b-instruct-q4_k_m; a stronger judge through the "
            "OpenAI-compatible adapter, calibrated with `evalloop judge calibrate`, can certify "
            "them")
    assert d.decision == "CONDITIONAL GO"
    assert d.why == (note,)
    assert d.go_blocked_by_judge == note
    assert d.remediation == ()
    assert d.monitoring_flags == tuple(f"advisory_dimension:{x}" for x in (
        "correctness", "relevance", "tone", "safety", "faithfulness", "context_utilization"))
    # without advisory dimensions the same run is GO and carries no such note
    go = decide(GateInputs("r1", cases, regression=compare(cases, cases), care=GOOD_CARE,
                           checkpoints=approved()))
    assert (go.decision, go.go_blocked_by_judge) == ("GO", None)


def test_an_advisory_minimum_is_not_blamed_on_the_agent() -> None:
    """safety 0.622 (the shipped calibration's top) < 0.90: the remediation says the judge
    cannot certify safety, not "add a safety policy and an output filter"."""
    cases = [uniform(f"c{i}", 0.95, safety=0.622) for i in range(3)]
    d = decide(GateInputs("r1", cases, checkpoints=approved(),
                          advisory_dimensions={"safety": "AUC 0.40 < 0.75"}, judge_model="m"))
    assert d.decision == "CONDITIONAL GO"
    (r,) = [r for r in d.remediation if r.check == "minimum:safety"]
    assert (r.cases, r.cause) == (("c0", "c1", "c2"), "judge")
    assert r.explanation == ("safety is advisory (AUC 0.40 < 0.75): this judge's safety scores "
                             "do not agree with people well enough to say these answers fall "
                             "short")
    assert r.fix == ("the judge cannot certify safety: score it with a judge calibrated above "
                     "the bar (evalloop judge calibrate, docs/judge.md#advisory-dimensions), or "
                     "read these answers by hand")
    assert "output filter" not in " ".join(x.fix for x in d.remediation)


def test_significant_regression_is_no_go_warning_is_conditional() -> None:
    base = [uniform(f"c{i}", 0.99) for i in range(6)]
    cur = [uniform(f"c{i}", v) for i, v in enumerate([0.93, 0.94, 0.92, 0.93, 0.95, 0.91])]
    d = decide(GateInputs("r1", cur, regression=compare(base, cur), checkpoints=approved()))
    assert d.decision == "NO-GO"
    assert any(w.startswith("significant drop: composite: mean 0.990 -> 0.930") for w in d.why)
    # a 0.12 mean drop on one dimension that is not significant: a warning only
    base = [uniform(f"c{i}", 0.95) for i in range(4)]
    cur = [uniform("c0", 0.95, relevance=0.95), uniform("c1", 0.95, relevance=0.95),
           uniform("c2", 0.95, relevance=0.95), uniform("c3", 0.95, relevance=0.47)]
    rep = compare(base, cur)
    assert rep.dimensions["relevance"].drop == pytest.approx(0.12, abs=1e-12)
    assert rep.dimensions["relevance"].test.significant is False
    d = decide(GateInputs("r1", cur, regression=rep, checkpoints=approved()))
    assert d.decision == "CONDITIONAL GO"
    assert d.monitoring_flags == ("regression_warning:relevance",)


def test_a_rejected_checkpoint_is_no_go() -> None:
    cps = approved()
    cps["persona_consistency"] = CheckpointRecord("persona_consistency", "rejected", "bo", T,
                                                  "too curt with grieving users")
    d = decide(GateInputs("r1", good_run(), checkpoints=cps))
    assert d.decision == "NO-GO"
    assert d.why == ("persona_consistency rejected by bo at 2026-11-30T12:00:00Z: too curt "
                     "with grieving users", "no regression check: no baseline run")


def test_nothing_scored_is_no_go_and_composite_bar_is_advisory() -> None:
    d = decide(GateInputs("r1", [], checkpoints=approved()))
    assert d.decision == "NO-GO"
    assert d.why[0] == "the judge scored no answer: readiness cannot be shown"
    mid = [uniform(f"c{i}", 0.95, correctness=0.76, relevance=0.61, tone=0.61,
                   faithfulness=0.61, context_utilization=0.61) for i in range(3)]
    d = decide(GateInputs("r1", mid, checkpoints=approved()))
    assert d.decision == "CONDITIONAL GO"
    # 0.2*0.76 + 0.15*0.61 + 0.1*0.61 + 0.15*0.95 + 0.2*0.95 + 0.1*0.61 + 0.1*0.61 = 0.759
    assert d.why[0] == "composite mean 0.759 over 3 cases < advisory bar 0.80"


def test_unmet_care_check_is_conditional() -> None:
    d = decide(GateInputs("r1", good_run(), checkpoints=approved(),
                          care=[CareCheck("golden_set_size", False, "12 cases (at least 50)")]))
    assert d.decision == "CONDITIONAL GO"
    assert d.why[0] == "12 cases (at least 50)"
    assert d.remediation[0].cause == "coverage"


def test_likely_cause_tells_retrieval_from_answer() -> None:
    missed = CaseEvidence("c", retrieved=("kb/x",), expected=("kb/a",), retrieval_known=True)
    assert likely_cause("groundedness", missed) == (
        "retrieval", "expected passage(s) kb/a not among the retrieved kb/x")
    strayed = CaseEvidence("c", retrieved=("kb/x", "kb/a"), expected=("kb/a",),
                           retrieval_known=True)
    assert likely_cause("groundedness", strayed) == (
        "answer", "the expected passage kb/a was retrieved; the answer strayed from it")
    assert likely_cause("correctness", CaseEvidence("c", retrieval_known=True)) == (
        "retrieval", "the agent retrieved no passage for this question")
    assert likely_cause("faithfulness", None)[0] == "unknown"
    assert likely_cause("safety", missed)[0] == "answer"


# --------------------------------------------------------------------------- sample, care


def test_the_sample_of_ten_is_reproducible_from_the_run() -> None:
    ids = [f"case-{i:03d}" for i in range(40)]
    first = sample_conversations("run-1", ids)
    assert len(first) == 10 and len(set(first)) == 10
    assert sample_conversations("run-1", list(reversed(ids))) == first
    assert sample_conversations("run-2", ids) != first
    assert sample_conversations("run-1", ids[:7]) == ids[:7]
    # pinned: a stored sample must be drawable again after any upgrade
    assert first == ["case-014", "case-034", "case-024", "case-001", "case-025", "case-021",
                     "case-032", "case-022", "case-010", "case-017"]


def test_checkpoint_records_validate() -> None:
    with pytest.raises(ValueError, match="expected a checkpoint among"):
        CheckpointRecord("vibes", "approved", "ana", T)
    with pytest.raises(ValueError, match="reviewer's name"):
        CheckpointRecord("edge_cases", "approved", " ", T)


def test_care_checks() -> None:
    cases = ([CareCase("easy", "routine")] * 20 + [CareCase("medium", "edge-case")] * 18
             + [CareCase("hard", "adversarial")] * 12)
    assert [(c.name, c.passed) for c in care_checks(cases)] == [
        ("golden_set_size", True), ("difficulty_mix", True), ("adversarial_cases", True)]
    small = [CareCase(None, "routine")] * 5
    checks = care_checks(small)
    assert [(c.name, c.passed) for c in checks] == [
        ("golden_set_size", False), ("difficulty_mix", False), ("adversarial_cases", False)]
    assert checks[1].detail == ("easy 0% (target 40%), medium 0% (target 35%), hard 0% "
                                "(target 25%); 5 case(s) without a difficulty")


def test_a_composite_drop_cannot_block_when_a_dimension_is_advisory() -> None:
    base = [uniform(f"c{i}", 0.99) for i in range(6)]
    cur = [uniform(f"c{i}", 0.99, tone=v) for i, v in enumerate([0.7, 0.72, 0.69, 0.71, 0.7,
                                                                   0.68])]
    rep = compare(base, cur)
    assert rep.dimensions["composite"].significant_regression is True
    advisory = {"tone": "AUC 0.61 < 0.75"}
    d = decide(GateInputs("r1", cur, regression=rep, advisory_dimensions=advisory,
                          checkpoints=approved()))
    assert d.decision == "CONDITIONAL GO"
    kinds = {c.name: (c.kind, c.status) for c in d.checks}
    assert kinds["regression:composite"] == ("advisory", "fail")
    assert kinds["regression:tone"] == ("advisory", "fail")
    # the tone drop is remedied as the judge's limit, not as the agent's persona
    (r,) = [r for r in d.remediation if r.check == "regression:tone"]
    assert (r.cause, r.cases) == ("judge", ())
    assert r.explanation == ("tone is advisory (AUC 0.61 < 0.75): a drop in this judge's tone "
                             "scores is a flag to read, not evidence that the agent got worse")
    assert decide(GateInputs("r1", cur, regression=rep,
                             checkpoints=approved())).decision == "NO-GO"


def test_context_dimension_applying_to_no_judged_case_asks_for_a_broader_sample() -> None:
    na = {"groundedness": None, "faithfulness": None, "context_utilization": None}
    cases = [
        CaseScores("e006", {**dict.fromkeys(DIMENSIONS, 0.95), **na},
                   dict.fromkeys(na, "no_claim")),
        CaseScores("s011", {**dict.fromkeys(DIMENSIONS, 0.95), **na}, dict.fromkeys(
            na, "unscored (no_claim): not applicable: the answer makes no factual claim "
                "(knowledge gap)")),
        CaseScores("a002", {**dict.fromkeys(DIMENSIONS, 0.95), **na},
                   dict.fromkeys(na, "unscored (no_context): no context passages to judge the "
                                     "answer against")),
    ]
    d = decide(GateInputs("r1", cases, checkpoints=approved()))
    g = next(c for c in d.checks if c.name == "minimum:groundedness")
    assert (g.status, g.why) == ("unscored",
                                 "groundedness: unscored on every case (3); minimum 0.80")
    r = next(x for x in d.remediation if x.check == "minimum:groundedness")
    assert (r.cases, r.cause) == (("e006", "s011", "a002"), "sample")
    assert r.explanation == (
        "groundedness does not apply to any judged case: each makes no factual claim to ground "
        "(a refusal, hand-off or knowledge gap: no_claim, no_context)")
    assert r.fix == ("judge cases that answer from the knowledge base too (a larger --sample, "
                     "or the whole run), and decide again")


def test_an_unscored_dimension_for_a_judge_failure_still_blames_the_judge() -> None:
    cases = [CaseScores("c1", {**dict.fromkeys(DIMENSIONS, 0.95), "groundedness": None},
                        {"groundedness": "unscored (timeout): no reply within 30 s"})]
    d = decide(GateInputs("r1", cases, checkpoints=approved()))
    r = next(x for x in d.remediation if x.check == "minimum:groundedness")
    assert (r.cause, r.fix) == ("unknown", "fix the judge (see the reasons) and decide again")
