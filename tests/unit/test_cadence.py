"""The eval cadence (docs/rules.md#eval-cadence): which cases each re-evaluation trigger selects
(pure)."""

from __future__ import annotations

import pytest

from evalloop.core.cadence import WEEKLY_SAMPLE_SIZE, document_keys, select_cases, touches
from evalloop.core.evaluation.cases import EvalCase


def _case(cid: str, chunks: tuple[str, ...] = (), tags: tuple[str, ...] = ()) -> EvalCase:
    return EvalCase(id=cid, input=f"question {cid}", context_chunks=chunks, tags=tags)


CASES = [
    _case("c01", ("hr-policy/leave/marriage-leave",)),
    _case("c02", ("hr-policy/leave/maternity-leave/1", "hr-policy/leave/maternity-leave/2")),
    _case("c03", ("hr-policy/benefits/transport-claims/1",)),
    _case("c04", ("hr-procedures/problem-resolution/complaint-or-anti-harassment-policy/3",)),
    _case("c05", (), ("adversarial", "refusal")),
    _case("c06", (), ("hr-policy/benefits",)),  # a tag naming a section
    _case("c07", ("hr-policy/leave-of-absence",)),  # a sibling whose name extends "leave"
    _case("c08", ("HR-Policy/Leave/No-Pay-Leave",)),  # ids compare case-insensitively
] + [_case(f"r{i:02d}", (f"hr-procedures/hiring/selection/{i}",)) for i in range(1, 13)]
ALL = tuple(c.id for c in CASES)


@pytest.mark.parametrize("trigger", ["negative_rate", "system_prompt", "model_version", "manual"])
def test_full_set_triggers(trigger: str) -> None:
    sel = select_cases(CASES, trigger)
    assert sel.case_ids == ALL
    assert sel.full_set is True
    assert sel.sample_seed is None


@pytest.mark.parametrize(
    ("changed", "expected"),
    [
        (["hr-policy/leave/marriage-leave"], ("c01",)),
        (["hr-policy/leave/maternity-leave/2"], ("c02",)),
        (["hr-policy/leave"], ("c01", "c02", "c08")),  # a section: every chunk under it
        (["hr-policy/leave/"], ("c01", "c02", "c08")),
        (["hr-policy/benefits"], ("c03", "c06")),  # by chunk and by tag
        (["hr-policy"], ("c01", "c02", "c03", "c06", "c07", "c08")),  # a whole document
        (["HR_Policy.pdf"], ()),  # a file name is not an id prefix: no guessing
        (["hr-procedures/problem-resolution", "hr-policy/benefits/transport-claims"],
         ("c03", "c04")),
        (["hr-procedures/hiring/selection/1"], ("r01",)),  # not r10, r11, r12
        (["refusal"], ("c05",)),
        (["payroll-handbook"], ()),  # touches nothing: nothing to run
    ],
)
def test_knowledge_base_runs_only_touched_cases(
    changed: list[str], expected: tuple[str, ...]
) -> None:
    sel = select_cases(CASES, "knowledge_base", changed_documents=changed)
    assert sel.case_ids == expected
    assert sel.full_set is False
    assert sel.rule.startswith(f"knowledge_base: {len(expected)} of 20 cases touch")


def test_knowledge_base_without_documents_runs_the_full_set() -> None:
    for changed in ([], ["", "  "]):
        sel = select_cases(CASES, "knowledge_base", changed_documents=changed)
        assert sel.case_ids == ALL
        assert sel.rule == "knowledge_base: no changed documents named, full set"


def test_weekly_sample_is_seeded_and_reproducible() -> None:
    a = select_cases(CASES, "weekly_sample", sample_seed=2026)
    assert a.case_ids == select_cases(CASES, "weekly_sample", sample_seed=2026).case_ids
    assert len(a.case_ids) == WEEKLY_SAMPLE_SIZE == 10
    assert a.sample_seed == 2026
    # Pinned draw (random.Random(seed).sample over the ids, returned in set order): a seed
    # recorded in last month's job must select the same cases today.
    assert a.case_ids == ("c04", "r01", "r02", "r03", "r05", "r07", "r08", "r09", "r10", "r12")
    other = select_cases(CASES, "weekly_sample", sample_seed=7)
    assert other.case_ids != a.case_ids
    assert select_cases(CASES, "weekly_sample", sample_seed=7, sample_size=3).case_ids == (
        "c05", "r03", "r05"
    )


def test_weekly_sample_of_a_small_set_is_the_whole_set() -> None:
    sel = select_cases(CASES[:4], "weekly_sample", sample_seed=1)
    assert sel.case_ids == ("c01", "c02", "c03", "c04")
    assert sel.full_set is True


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="explicit sample_seed; got None"):
        select_cases(CASES, "weekly_sample")
    with pytest.raises(ValueError, match="sample_size >= 1; got 0"):
        select_cases(CASES, "weekly_sample", sample_seed=1, sample_size=0)
    with pytest.raises(ValueError, match="unknown trigger 'hourly'"):
        select_cases(CASES, "hourly")


def test_document_keys_and_touches() -> None:
    assert document_keys(" hr-policy/leave/ ") == {"hr-policy/leave"}
    assert document_keys("") == frozenset()
    assert touches("hr-policy", "hr-policy/leave/marriage-leave")
    assert not touches("hr-policy/leave", "hr-policy/leave-of-absence")
    assert not touches("hr-policy/leave/marriage-leave", "hr-policy/leave")
