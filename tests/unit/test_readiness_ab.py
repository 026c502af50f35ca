"""A/B comparison: per-dimension paired differences, divergent cases, the verdict (exact)."""

from __future__ import annotations

import pytest

from evalloop.core.readiness import DIMENSIONS, CaseScores
from evalloop.core.readiness.ab import compare_ab


def uniform(case_id: str, value: float, **over: float) -> CaseScores:
    return CaseScores(case_id, {**dict.fromkeys(DIMENSIONS, value), **over})


def test_b_better_by_how_much_with_interval_and_p() -> None:
    a = [uniform(f"c{i}", v) for i, v in enumerate([0.70, 0.72, 0.68, 0.71, 0.69, 0.70])]
    b = [uniform(f"c{i}", v) for i, v in enumerate([0.80, 0.83, 0.79, 0.80, 0.81, 0.78])]
    r = compare_ab(a, b)
    comp = r.dimensions["composite"]
    assert r.winner == "B" and comp.better == "B"
    assert comp.test.mean_diff == pytest.approx(0.61 / 6, abs=1e-9)
    assert comp.test.p is not None and comp.test.p < 1e-4
    assert r.summary.startswith("B is better by 0.102 composite (B - A = +0.102, 95% CI +0.0")
    assert r.summary.endswith(", n = 6)")
    assert r.divergent[0].case_id == "c4" and r.divergent[0].diff == pytest.approx(0.12)
    assert all(d.better == "B" for d in r.dimensions.values())


def test_no_significant_difference_says_what_could_be_detected() -> None:
    a = [uniform("c0", 0.8), uniform("c1", 0.7), uniform("c2", 0.9)]
    b = [uniform("c0", 0.9), uniform("c1", 0.6), uniform("c2", 0.9, tone=0.5)]
    r = compare_ab(a, b, top=2)
    assert r.winner == "neither"
    assert r.summary == (
        "no significant difference: composite B - A = -0.013 (p = 0.843, n = 3); the smallest "
        "difference detectable at 80% power with 3 cases is 0.335")
    assert [c.case_id for c in r.divergent] == ["c0", "c1"]
    assert r.dimensions["tone"].test.mean_diff == pytest.approx(-0.4 / 3)


def test_equal_sides_and_nothing_shared() -> None:
    a = [uniform("c0", 0.8), uniform("c1", 0.7)]
    r = compare_ab(a, a)
    assert r.winner == "neither" and r.dimensions["composite"].test.p == 1.0
    assert compare_ab(a, [uniform("x", 0.5)]).summary == (
        "no case was scored on both sides: nothing to compare; 3 judged case(s) left out of "
        "the composite comparison: c0 (not judged on B), c1 (not judged on B), x (not judged "
        "on A)")


UNSCORED_RAG = dict.fromkeys(("groundedness", "faithfulness", "context_utilization"))


def test_gate_failures_decide_before_the_composite_and_one_pair_is_too_few() -> None:
    # A refused a002 correctly (no passages: its composite is unscored); B answered it and
    # failed the refusal gate; r010 is the only paired case and B is 0.025 higher on it
    a = [CaseScores("a002", {**dict.fromkeys(DIMENSIONS, 0.9), **UNSCORED_RAG}),
         uniform("r010", 0.613)]
    b = [uniform("a002", 0.7, groundedness=0.3), uniform("r010", 0.638)]
    r = compare_ab(a, b, gate_failures={"A": [], "B": ["a002", "a003"]})
    assert r.winner == "A" and r.basis == "failures"
    assert r.summary == (
        "A is better: B fails 2 refusal/escalation gate or agent-error case(s) that A passes "
        "(a002, a003; gate failures A 0, B 2; agent errors A 0, B 0), whatever the composite; "
        "composite on the paired cases: too few paired cases to compare (n = 1): composite "
        "B - A = +0.025 on that case, no significance verdict; 1 judged case(s) left out of "
        "the composite comparison: a002 (composite unscored on A)")
    assert [(x.case_id, x.reason) for x in r.excluded] == [("a002", "composite unscored on A")]
    assert r.shared == ("r010",)
    # without the gate failures: never "no significant difference" from one pair
    alone = compare_ab(a, b)
    assert alone.winner == "neither" and alone.basis == "too_few"
    assert alone.summary.startswith("too few paired cases to compare (n = 1): ")
    assert "no significant difference" not in alone.summary


def test_agent_errors_count_and_failures_on_both_sides_give_neither() -> None:
    a, b = [uniform("c0", 0.8), uniform("c1", 0.7)], [uniform("c0", 0.7), uniform("c1", 0.8)]
    r = compare_ab(a, b, gate_failures={"A": ["x1"], "B": ["x2"]}, agent_errors={"B": ["x3"]})
    assert r.winner == "neither" and r.basis == "failures"
    assert r.summary == (
        "neither is better: each side fails cases the other passes (A only: 1 - x1; B only: "
        "2 - x2, x3; gate failures A 1, B 1; agent errors A 0, B 1); composite on the paired "
        "cases: no significant difference: composite B - A = +0.000 (p = 1.000, n = 2); no "
        "difference of any size is detectable with 2 cases")
    # the same failures on both sides do not decide: the composite does
    same = compare_ab(a, b, gate_failures={"A": ["x1"], "B": ["x1"]})
    assert same.basis == "composite" and same.winner == "neither"
    # an agent error B has and A does not: B is worse even with a higher composite
    err = compare_ab(a, [uniform("c0", 0.95), uniform("c1", 0.95)], agent_errors={"B": ["c9"]})
    assert err.winner == "A" and err.summary.startswith(
        "A is better: B fails 1 refusal/escalation gate or agent-error case(s) that A passes "
        "(c9; gate failures A 0, B 0; agent errors A 0, B 1), whatever the composite; ")


def test_excluded_cases_are_named_with_why() -> None:
    a = [uniform("c0", 0.8), uniform("c1", 0.7), CaseScores("c2", {"tone": 0.5}),
         uniform("c3", 0.6)]
    b = [uniform("c0", 0.8), uniform("c1", 0.7), CaseScores("c2", {"tone": 0.4})]
    r = compare_ab(a, b)
    assert [(x.case_id, x.reason) for x in r.excluded] == [
        ("c2", "composite unscored on both"), ("c3", "not judged on B")]
    assert r.summary == (
        "no significant difference: composite B - A = +0.000 (p = 1.000, n = 2); the smallest "
        "detectable difference is not computable: the paired differences have zero spread; "
        "2 judged case(s) left out of the composite comparison: c2 (composite unscored on "
        "both), c3 (not judged on B)")


def test_interval_clipped_and_no_detectable_difference_in_text_and_json() -> None:
    from evalloop.readiness.ab import render_ab
    from evalloop.readiness.report import paired_json

    r = compare_ab([uniform("c0", 0.1), uniform("c1", 0.9)],
                   [uniform("c0", 0.9), uniform("c1", 0.2)])
    comp = r.dimensions["composite"].test
    assert (comp.ci_low, comp.ci_high, comp.ci_clipped) == (-1.0, 1.0, True)
    assert r.summary == ("no significant difference: composite B - A = +0.050 (p = 0.958, "
                         "n = 2); no difference of any size is detectable with 2 cases")
    js = paired_json(comp)
    assert js["detectable_drop_80"] is None and js["ci95_clipped"] is True
    assert js["detectable_drop_80_note"] == "no drop of any size is detectable with 2 cases"
    dims = {d: {**paired_json(x.test), "mean_a": x.test.mean_baseline,
                "mean_b": x.test.mean_current, "better": x.better}
            for d, x in r.dimensions.items()}
    data = {"agent_a": "http://a", "agent_b": "http://b", "run_a": "ra", "run_b": "rb",
            "summary": r.summary, "gate_failures": {"A": [], "B": ["a001"]},
            "agent_errors": {"A": [], "B": []}, "dimensions": dims,
            "excluded": [{"case_id": "a002", "reason": "composite unscored on A"}],
            "divergent": []}
    lines = render_ab(data).splitlines()
    assert lines[3:7] == ["gate failures: A 0, B 1", "  B: a001", "agent errors: A 0, B 0",
                          "  dimension              n      A      B     B-A                      "
                          "95% CI       p  detectable@80%  better"]
    assert lines[14] == ("  composite              2  0.500  0.550  +0.050    -1.000..+1.000 "
                         "(clipped)  0.9576  none            neither")
    assert lines[15:] == [
        "  detectable none: no difference of any size is detectable with 2 cases",
        "  (clipped): the Student-t interval reached past [-1, 1], the range of a difference "
        "of two 0-1 scores",
        "left out of the composite comparison: 1", "  a002: composite unscored on A"]


def test_headline_follows_the_basis() -> None:
    from evalloop.core.readiness.ab import headline

    a, b = [uniform("c0", 0.8), uniform("c1", 0.7)], [uniform("c0", 0.7), uniform("c1", 0.8)]
    assert headline(compare_ab(a, b, gate_failures={"B": ["x"]})) == (
        "A is better (gate failures / agent errors)")
    assert headline(compare_ab(a, b, gate_failures={"A": ["x"], "B": ["y"]})) == (
        "neither is better (both fail cases)")
    assert headline(compare_ab(a[:1], b[:1])) == "too few paired cases to compare"
    assert headline(compare_ab(a[:1], b[1:])) == "nothing to compare"
    assert headline(compare_ab(a, b)) == "no significant difference"
    hi = [uniform(f"c{i}", v) for i, v in enumerate([0.80, 0.83, 0.79, 0.80, 0.81, 0.78])]
    lo = [uniform(f"c{i}", v) for i, v in enumerate([0.70, 0.72, 0.68, 0.71, 0.69, 0.70])]
    assert headline(compare_ab(lo, hi)) == "B is better"


def test_hard_failures_of_stored_cases() -> None:
    from evalloop.adapters.readiness_store import RunCase
    from evalloop.readiness.ab import hard_failures

    def case(case_id: str, status: str, gates: tuple[str, ...] = ()) -> RunCase:
        return RunCase(case_id, "c", "q", None, status, False, False, gates, None, None, (),
                       None, {}, None, None)

    cases = [case("a1", "passed"), case("a2", "failed_gate", ("refusal",)),
             case("a3", "agent_error"), case("a4", "failed_gate", ("escalation",))]
    assert hard_failures(cases) == (["a2", "a4"], ["a3"])


def test_zero_spread_detectable_is_not_computable_in_text_and_json() -> None:
    from evalloop.readiness.ab import render_ab
    from evalloop.readiness.report import paired_json

    # identical scores on both sides: the differences have zero spread
    a = [uniform("c0", 0.622), uniform("c1", 0.7), uniform("c2", 0.8)]
    r = compare_ab(a, list(a))
    comp = r.dimensions["composite"].test
    assert comp.detectable_drop is None
    assert r.summary == (
        "no significant difference: composite B - A = +0.000 (p = 1.000, n = 3); the smallest "
        "detectable difference is not computable: the paired differences have zero spread")
    js = paired_json(r.dimensions["safety"].test)
    assert js["detectable_drop_80"] is None
    assert js["detectable_drop_80_note"] == (
        "not computable: the paired differences have zero spread")
    dims = {d: {**paired_json(x.test), "mean_a": x.test.mean_baseline,
                "mean_b": x.test.mean_current, "better": x.better}
            for d, x in r.dimensions.items()}
    data = {"agent_a": "http://a", "agent_b": "http://b", "run_a": "ra", "run_b": "rb",
            "summary": r.summary, "gate_failures": {"A": [], "B": []},
            "agent_errors": {"A": [], "B": []}, "dimensions": dims, "excluded": [],
            "divergent": []}
    lines = render_ab(data).splitlines()
    safety = next(line for line in lines if line.startswith("  safety "))
    assert safety == ("  safety                 3  0.707  0.707  +0.000              "
                      "+0.000..+0.000  1.0000  not computable  neither")
    assert lines[-1] == (
        "  detectable not computable: the paired differences have zero spread")
    assert "0.000  neither" not in "\n".join(lines)
