"""Pure review logic: marks and profiles, the ranking fixes (exact orders), rank explanations,
golden-set care checks, edits, verdicts and the reviewer value."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from evalloop.core.evaluation.cases import EvalCase
from evalloop.core.golden_care import ClusterGap, care_checks
from evalloop.core.judgements import Mark, mark_of, profile_of
from evalloop.core.ranking import (
    Dropped,
    Prior,
    RankingParams,
    TriageCase,
    explain,
    score_cases,
    select_candidates,
)
from evalloop.core.review import (
    CandidateDraft,
    Reviewer,
    parse_edits,
    parse_verdict,
    to_golden_case,
)
from evalloop.errors import ReviewInputError

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
FQA = {"Bad": 1, "Could be Improved": 2, "Acceptable": 4, "Excellent": 5}


def _rated(cid: str, *labels: str, cluster: str = "c1", age_days: float = 0.0,
           question: str | None = None) -> TriageCase:
    marks = [mark_of("user_rating", {"thumbs": "down" if FQA[x] <= 2 else "up",
                                     "score": FQA[x]}) for x in labels]
    prof = profile_of([m for m in marks if m is not None])
    return TriageCase(cid, cluster, 0.97, len(labels), NOW - timedelta(days=age_days),
                      question or f"question {cid}?", prof)


# --------------------------------------------------------------------------- marks


def test_marks_read_the_scale_the_event_carries() -> None:
    assert mark_of("user_rating", {"thumbs": "down", "score": 1}) == Mark("negative", 1.0,
                                                                          "score 1/5")
    assert mark_of("user_rating", {"thumbs": "down", "score": 2}) == Mark("negative", 0.75,
                                                                          "score 2/5")
    assert mark_of("user_rating", {"score": 3}) == Mark("neutral", 0.5, "score 3/5")
    assert mark_of("user_rating", {"thumbs": "up"}) == Mark("positive", 0.0, "thumbs up")
    assert mark_of("user_rating", {"thumbs": "down"}) == Mark("negative", 1.0, "thumbs down")
    assert mark_of("operator_correction", {}) == Mark("negative", 1.0, "operator correction")
    assert mark_of("safety_trigger", {"severity": "medium"}) == Mark(
        "negative", 0.75, "safety gate (medium)")
    assert mark_of("escalation", {"requested_by": "user"}) is None
    assert mark_of("conversation_outcome", {"resolved": False}) == Mark("negative", 0.5,
                                                                        "unresolved")
    assert mark_of("agent_response", {}) is None


def test_profile_agreement_is_agreement_not_evidence_count() -> None:
    p = _rated("x", "Bad", "Excellent", "Excellent").profile
    assert p is not None
    assert (p.negative, p.positive, p.severity, p.agreement, p.liked) == (
        1, 2, 1.0, 0.333333, True)
    q = _rated("y", "Bad", "Bad", "Bad").profile
    assert q is not None
    assert (q.negative, q.positive, q.severity, q.agreement, q.liked) == (3, 0, 1.0, 1.0, False)


# --------------------------------------------------------------------------- ranking fixes


def test_severity_orders_bad_above_could_be_improved() -> None:
    cases = [
        _rated("cbi3", "Could be Improved", "Could be Improved", "Could be Improved"),
        _rated("mixed", "Bad", "Could be Improved", "Could be Improved"),
        _rated("bad3", "Bad", "Bad", "Bad"),
        _rated("bad2", "Bad", "Bad"),
    ]
    ranked = score_cases(cases, {"c1": 4}, NOW)
    assert [r.case.case_id for r in ranked] == ["bad2", "bad3", "mixed", "cbi3"]
    assert [round(r.confidence, 6) for r in ranked] == [1.0, 1.0, 0.933333, 0.9]
    # what the ranking did before (fused confidence + evidence count): three Could be
    # Improved ranked above two Bads
    old = score_cases([TriageCase(c.case_id, c.cluster_id, f, n, c.occurred_at, c.question)
                       for c, f, n in zip(cases, (0.973, 0.973, 0.973, 0.91), (3, 3, 3, 2),
                                          strict=True)], {"c1": 4}, NOW)
    assert [r.case.case_id for r in old] == ["bad3", "cbi3", "mixed", "bad2"]


def test_a_turn_most_raters_liked_leaves_the_queue() -> None:
    cases = [_rated("liked", "Bad", "Excellent", "Excellent"),
             _rated("split", "Bad", "Excellent"),
             _rated("bad", "Bad")]
    ranked = score_cases(cases, {"c1": 3}, NOW)
    assert [(r.case.case_id, r.agreement) for r in ranked] == [("bad", 1.0), ("split", 0.5)]
    assert math.isclose(ranked[1].confidence, 0.4 * 1.0 + 0.2 * 0.5 + 0.2 + 0.2)


def test_explanation_writes_the_sum_out() -> None:
    [r] = score_cases([_rated("a", "Bad", "Could be Improved", age_days=7.0)],
                      {"c1": 3, "c2": 7}, NOW)
    assert explain(r, cluster_size=3, largest=7, age_days=7.0) == (
        "0.783 = 0.4 x severity 0.88 (score 1/5, score 2/5) + 0.2 x agreement 1.00 (2 of 2 "
        "negative) + 0.2 x cluster 0.67 (3 of 7 cases) + 0.2 x recency 0.50 (7.0 days old)")
    plain = score_cases([TriageCase("b", "c1", 0.7, 2, NOW, "q?")], {"c1": 1}, NOW)[0]
    assert explain(plain) == (
        "0.780 = 0.4 x signal 0.70 (fused confidence) + 0.2 x agreement 0.50 (2 pieces of "
        "evidence) + 0.2 x cluster 1.00 + 0.2 x recency 1.00")


def _vec(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float64)
    return v / np.linalg.norm(v)


def test_paraphrase_of_a_golden_case_is_not_proposed() -> None:
    ranked = score_cases([_rated("para", "Bad"), _rated("other", "Could be Improved")],
                         {"c1": 2}, NOW)
    s = 0.79
    qv = np.array([_vec(s, math.sqrt(1 - s * s), 0), _vec(0, 0, 1)])
    golden = [Prior("golden", "g7")]
    sel = select_candidates(ranked, qv, golden, np.array([_vec(1, 0, 0)]))
    assert [r.case.case_id for r in sel.kept] == ["other"]
    assert sel.dropped == [Dropped("para", "in_golden_set", "g7", 0.79)]
    # the same similarity to a decided queue row is not a duplicate (0.92 applies there)
    sel = select_candidates(ranked, qv, [Prior("queue", "q1")], np.array([_vec(1, 0, 0)]))
    assert [r.case.case_id for r in sel.kept] == ["para", "other"]
    # documented, configurable bar
    loose = RankingParams(golden_similarity=0.8)
    sel = select_candidates(ranked, qv, golden, np.array([_vec(1, 0, 0)]), loose)
    assert [r.case.case_id for r in sel.kept] == ["para", "other"]


# --------------------------------------------------------------------------- care checks


def _gc(i: int, difficulty: str | None, *tags: str, category: str = "routine") -> EvalCase:
    return EvalCase(id=f"g{i}", input=f"q{i}", difficulty=difficulty, tags=tags,
                    category=category)


def test_care_checks_pass_on_a_healthy_set() -> None:
    diffs = ["easy"] * 20 + ["medium"] * 18 + ["hard"] * 12
    cases = []
    for i, d in enumerate(diffs):
        tags = [f"domain:{'leave' if i % 2 else 'pay'}"]
        if i < 4:
            tags.append("trigger:harassment" if i < 2 else "trigger:medical")
        if i < 10:
            tags.append("universal")
        cases.append(_gc(i, d, *tags, category="adversarial" if i < 3 else "routine"))
    checks = {c.name: c for c in care_checks(
        cases, in_production=True, domains=["leave", "pay"],
        triggers=["harassment", "medical"], gaps=[])}
    assert {n: (c.status, c.value) for n, c in checks.items()} == {
        "size": ("pass", 50),
        "difficulty_mix": ("pass", {"easy": 0.4, "medium": 0.36, "hard": 0.24}),
        "domain_coverage": ("pass", {"leave": 25, "pay": 25}),
        "adversarial": ("pass", 3),
        "escalation_triggers": ("pass", {"harassment": 2, "medical": 2}),
        "universal": ("pass", 10),
        "coverage_gaps": ("pass", 0),
    }
    assert {c.source for c in checks.values()} == {"docs/rules.md#eval-set-size-and-coverage"}
    assert checks["size"].bar == ">= 50"


def test_care_checks_name_what_fails_and_what_is_unknown() -> None:
    cases = [_gc(i, "easy" if i < 8 else None, "domain:leave") for i in range(10)]
    checks = {c.name: c for c in care_checks(
        cases, in_production=False, domains=["leave", "pay"], triggers=None,
        gaps=[ClusterGap("c4", "refund, card", 12), ClusterGap("c7", "x", 2),
              ClusterGap("c9", None, 3)])}
    assert (checks["size"].status, checks["size"].bar, checks["size"].why) == (
        "fail", ">= 25", "10 cases (before production), 15 short of 25")
    assert checks["difficulty_mix"].value == {"easy": 0.8, "medium": 0.0, "hard": 0.0}
    assert checks["difficulty_mix"].why == (
        "easy 80 % (target 40 %); medium 0 % (target 35 %); hard 0 % (target 25 %); "
        "2 case(s) have no difficulty")
    assert (checks["domain_coverage"].status, checks["domain_coverage"].why) == (
        "fail", "1 of 2 knowledge domains below 5: pay (0)")
    assert checks["escalation_triggers"].status == "unknown"
    assert checks["adversarial"].why == "0 adversarial cases, 3 short of 3"
    assert (checks["coverage_gaps"].status, checks["coverage_gaps"].value,
            checks["coverage_gaps"].why) == (
        "fail", 2, "2 cluster(s) of recent negatives have no golden case; largest: "
        "refund, card (12), c9 (3)")
    assert checks["coverage_gaps"].details == {
        "gaps": [{"cluster_id": "c4", "label": "refund, card", "size": 12},
                 {"cluster_id": "c9", "label": None, "size": 3}], "small_clusters": 1}
    unknown = {c.name: c.status for c in care_checks([], in_production=None)}
    assert unknown == {"size": "fail", "difficulty_mix": "fail", "domain_coverage": "unknown",
                       "adversarial": "fail", "escalation_triggers": "unknown",
                       "universal": "fail", "coverage_gaps": "unknown"}


# --------------------------------------------------------------------------- edits, verdicts


def test_edits_are_validated_and_become_the_golden_case() -> None:
    edits = parse_edits({"expected_answer": "  25 days. ", "tags": ["policy", "policy "],
                         "domain": "Leave", "difficulty": "hard", "should_refuse": True,
                         "category": "adversarial", "notes": ""})
    assert edits == {"expected_answer": "25 days.", "tags": ["policy"], "domain": "Leave",
                     "difficulty": "hard", "should_refuse": True, "category": "adversarial",
                     "notes": None}
    case = to_golden_case(CandidateDraft("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "Q?", "A",
                                         ("kb-1",), "leave"), edits,
                          reviewer=Reviewer("ann"), at=NOW)
    assert (case.id, case.input, case.expected_answer, case.tags, case.should_refuse,
            case.category, case.notes, case.context_chunks, case.created_by) == (
        "fb-0f1e2d3c4b5a", "Q?", "25 days.",
        ("policy", "domain:Leave", "refusal", "adversarial"), True, "adversarial", None,
        ("kb-1",), "ann")
    with pytest.raises(ReviewInputError) as err:
        parse_edits({"question": " ", "should_escalate": "yes", "tags": "x"})
    assert [p.field for p in err.value.problems] == [
        "edits.question", "edits.should_escalate", "edits.tags"]


def test_verdicts_and_reviewers_are_validated() -> None:
    assert parse_verdict({"criteria": {"tone": False}, "score": 4, "note": " ok "}) == (
        {"tone": False}, 4, "ok")
    with pytest.raises(ReviewInputError) as err:
        parse_verdict({"criteria": {}, "score": True, "extra": 1})
    assert [p.field for p in err.value.problems] == ["criteria", "score", "body"]
    assert Reviewer("ann", "viewer").can_act is False
    with pytest.raises(ValueError, match="reviewer role"):
        Reviewer("ann", "owner")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="reviewer name"):
        Reviewer("")


# --------------------------------------------------------------------------- expected answers


def test_proposed_expected_answer_prefers_correction_then_best_rated_then_passage() -> None:
    from evalloop.core.expected import (
        Passage,
        ProposedAnswer,
        RatedAnswer,
        loose_question,
        nearest_passages,
        propose,
    )

    q = "How long does the virus survive on surfaces?"
    key = loose_question(q)
    assert key == loose_question("how long does the virus survive on surfaces") == (
        "how long does the virus survive on surfaces")
    rated = [
        RatedAnswer(key, "Up to 72 hours on plastic.", "e1", 2, 0, 0.125),     # Exc + Acc
        RatedAnswer(key, "Up to three days.", "e2", 2, 0, 0.0),                # Exc + Exc
        RatedAnswer(key, "Hours.", "e3", 1, 2, 0.75),                          # disliked
        RatedAnswer("other question", "Unrelated.", "e4", 5, 0, 0.0),
    ]
    passages = [Passage("kb-mask", "Wear a mask in crowded indoor places."),
                Passage("kb-surface", "The virus can survive on surfaces such as plastic "
                                      "and steel for up to 72 hours."),
                Passage("kb-bad", "The virus survive surfaces virus surfaces.")]
    near = nearest_passages([q, "Where can I buy bread?"], passages,
                            [{"kb-bad"}, set()])
    assert near[0] is not None and near[0][0] == 1
    assert near[1] is None
    hit = (passages[1], near[0][1])
    assert propose(q, " Operator: 3 days. ", rated, hit) == ProposedAnswer(
        "Operator: 3 days.", "operator_correction", None)
    assert propose(q, None, rated, hit) == ProposedAnswer(
        "Up to three days.", "best_rated_answer", "event:e2")
    assert propose(q, None, rated[2:], hit) == ProposedAnswer(
        passages[1].text, "knowledge_passage", "passage:kb-surface")
    assert propose(q, None, (), (passages[0], 0.19)) is None
