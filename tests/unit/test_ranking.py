"""Candidate ranking: exact confidences, shortlist, near-duplicate removal, coverage."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from evalloop.core.ranking import (
    Dropped,
    Prior,
    RankingParams,
    TriageCase,
    coverage,
    question_key,
    score_cases,
    select_candidates,
    shortlist,
)

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def _case(cid: str, cluster: str = "c1", signal: float = 0.7, evidence: int = 1,
          age_days: float = 0.0, question: str | None = "q?") -> TriageCase:
    return TriageCase(cid, cluster, signal, evidence, NOW - timedelta(days=age_days), question)


def test_confidence_exact_parts() -> None:
    # signal 0.7; 2 pieces of evidence -> 0.5; cluster 3 of largest 7 -> log 4 / log 8 = 2/3;
    # one half-life old -> 0.5
    [r] = score_cases([_case("a", "c1", 0.7, 2, 7.0)], {"c1": 3, "c2": 7}, NOW)
    assert r.signal == 0.7
    assert r.agreement == 0.5
    assert math.isclose(r.cluster, 2 / 3)
    assert r.recency == 0.5
    assert math.isclose(r.confidence, 0.4 * 0.7 + 0.2 * 0.5 + 0.2 * (2 / 3) + 0.2 * 0.5)
    assert math.isclose(r.confidence, 0.6133333333333333)


def test_confidence_bounds_and_edge_values() -> None:
    cases = [
        _case("top", "big", 1.0, 3, 0.0),       # 0.4 + 0.2*0.75 + 0.2 + 0.2 = 0.95
        _case("future", "big", 0.5, 1, -2.0),   # future time: age 0 -> recency 1
        _case("old", "small", 0.5, 1, 14.0),    # two half-lives -> 0.25
        _case("noq", "big", 1.0, 5, 0.0, question="  "),
    ]
    ranked = score_cases(cases, {"big": 9, "small": 1}, NOW)
    by = {r.case.case_id: r for r in ranked}
    assert "noq" not in by
    assert math.isclose(by["top"].confidence, 0.95)
    assert by["future"].recency == 1.0
    assert math.isclose(by["future"].confidence, 0.4 * 0.5 + 0 + 0.2 + 0.2)
    assert by["old"].recency == 0.25
    # size 1 of largest 9 -> log 2 / log 10
    assert math.isclose(by["old"].cluster, math.log(2) / math.log(10))
    assert [r.case.case_id for r in ranked] == ["top", "future", "old"]


def test_ties_break_by_case_id_and_custom_params() -> None:
    p = RankingParams(weight_signal=1.0, weight_agreement=0.0, weight_cluster=0.0,
                      weight_recency=0.0)
    ranked = score_cases([_case("b"), _case("a")], {"c1": 1}, NOW, p)
    assert [r.case.case_id for r in ranked] == ["a", "b"]
    assert [r.confidence for r in ranked] == [0.7, 0.7]
    with pytest.raises(ValueError, match="summing to 1"):
        RankingParams(weight_signal=0.5)
    with pytest.raises(ValueError, match="half_life_days"):
        RankingParams(half_life_days=0)


def test_shortlist_keeps_order_per_cluster() -> None:
    ranked = score_cases(
        [_case(f"x{i}", "c1" if i % 2 else "c2", 0.9 - i / 100, question=f"q{i}")
         for i in range(6)],
        {"c1": 3, "c2": 3}, NOW,
    )
    assert [r.case.case_id for r in shortlist(ranked, 2)] == ["x0", "x1", "x2", "x3"]


def test_shortlist_skips_repeated_questions() -> None:
    ranked = score_cases(
        [_case("a", "c1", 0.9, question="Refund?"), _case("b", "c1", 0.8, question=" refund? "),
         _case("c", "c2", 0.7, question="REFUND?"), _case("d", "c1", 0.6, question="Seat?")],
        {"c1": 3, "c2": 1}, NOW,
    )
    assert [r.case.case_id for r in shortlist(ranked, 2)] == ["a", "d"]


def test_question_key_normalises_case_and_space() -> None:
    assert question_key("What is  X?\n") == question_key("what is x?")
    assert question_key("what is x?") != question_key("what is y?")
    assert len(question_key("a")) == 64


def _vec(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float64)
    return v / np.linalg.norm(v)


def test_select_drops_duplicates_golden_and_queue_repeats() -> None:
    cases = [
        _case("a", "c1", 0.9, question="refund?"),
        _case("b", "c1", 0.8, question="refund please?"),    # 0.95 to a -> duplicate
        _case("c", "c2", 0.7, question="baggage?"),          # 0.93 to golden g1
        _case("d", "c2", 0.6, question="seat?"),             # same key as queue row q1
        _case("e", "c3", 0.5, question="meals?"),            # 0.93 to queue row q2
        _case("f", "c3", 0.4, question="wifi?"),
    ]
    ranked = score_cases(cases, {"c1": 1, "c2": 1, "c3": 1}, NOW)
    assert [r.case.case_id for r in ranked] == ["a", "b", "c", "d", "e", "f"]
    qv = np.array([
        _vec(1, 0, 0, 0, 0),
        _vec(0.95, math.sqrt(1 - 0.95**2), 0, 0, 0),
        _vec(0, 0, 0.93, math.sqrt(1 - 0.93**2), 0),
        _vec(0, 0, 0, 0, 1),
        _vec(0, 0, 0, 1, 0),
        _vec(0, 1, 0, 0, 0),
    ])
    priors = [Prior("golden", "g1"), Prior("queue", "q1", question_key("Seat?")),
              Prior("queue", "q2", question_key("other"))]
    pv = np.array([_vec(0, 0, 1, 0, 0), _vec(0, 0, 0, 0, 1),
                   _vec(0, 0, math.sqrt(1 - 0.93**2), 0.93, 0)])
    sel = select_candidates(ranked, qv, priors, pv)
    assert [r.case.case_id for r in sel.kept] == ["a", "d", "f"]
    assert sel.dropped == [
        Dropped("b", "duplicate", "a", 0.95),
        Dropped("c", "in_golden_set", "g1", 0.93),
        Dropped("e", "in_queue", "q2", 0.93),
    ]


def test_select_threshold_is_inclusive_and_configurable() -> None:
    ranked = score_cases([_case("a", question="x"), _case("b", question="y")], {"c1": 1}, NOW)
    qv = np.array([_vec(1, 0), _vec(0.92, math.sqrt(1 - 0.92**2))])
    assert [d.reason for d in select_candidates(ranked, qv).dropped] == ["duplicate"]
    loose = RankingParams(duplicate_similarity=0.93)
    assert [r.case.case_id for r in select_candidates(ranked, qv, params=loose).kept] == ["a", "b"]


def test_select_limits_per_cluster_and_overall() -> None:
    cases = [_case(f"k{i}", "c1" if i < 3 else "c2", 0.9 - i / 100, question=f"q{i}")
             for i in range(5)]
    ranked = score_cases(cases, {"c1": 3, "c2": 2}, NOW)
    qv = np.eye(5)
    p = RankingParams(per_cluster=2, max_candidates=3)
    sel = select_candidates(ranked, qv, params=p)
    assert [r.case.case_id for r in sel.kept] == ["k0", "k1", "k3"]
    assert sel.dropped == [Dropped("k2", "cluster_full"), Dropped("k4", "limit")]
    with pytest.raises(ValueError, match="expected 1 prior vectors"):
        select_candidates(ranked, qv, [Prior("golden", "g")], np.zeros((0, 5)))


def test_coverage_counts_golden_cases_per_cluster() -> None:
    cents = np.array([[1.0, 0.0, 0.0], [0.0, 0.9, 0.0], [0.0, 0.0, 0.8]])
    golden = np.array([[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [0.0, 0.6, 0.8], [-1.0, 0.0, 0.0]])
    # [0.8,0.6,0]: 0.8 vs 0.54 -> cluster 0; [0,0.6,0.8]: 0.54 vs 0.64 -> cluster 2;
    # [-1,0,0]: best 0 < 0.5 -> none
    assert coverage(cents, golden, 0.5).tolist() == [2, 0, 1]
    assert coverage(cents, np.zeros((0, 3)), 0.5).tolist() == [0, 0, 0]
    assert coverage(np.zeros((0, 3)), golden, 0.5).tolist() == []
