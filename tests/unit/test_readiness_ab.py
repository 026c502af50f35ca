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
    assert r.summary.startswith("no significant difference: composite B - A = -0.013 (p = ")
    assert "with 3 cases a difference below" in r.summary
    assert [c.case_id for c in r.divergent] == ["c0", "c1"]
    assert r.dimensions["tone"].test.mean_diff == pytest.approx(-0.4 / 3)


def test_equal_sides_and_nothing_shared() -> None:
    a = [uniform("c0", 0.8), uniform("c1", 0.7)]
    r = compare_ab(a, a)
    assert r.winner == "neither" and r.dimensions["composite"].test.p == 1.0
    assert compare_ab(a, [uniform("x", 0.5)]).summary == (
        "no case was scored on both sides: nothing to compare")
