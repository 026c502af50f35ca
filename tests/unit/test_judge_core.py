"""The judge's pure side: P(yes) reading, unscored paths, prompts, isotonic maps, metrics."""

from __future__ import annotations

import math

import pytest

from evalloop.adapters.judge_calibrate import merge_raw
from evalloop.core.judge import (
    DIMENSIONS,
    PROMPT_VERSION,
    RUBRICS,
    DimensionScore,
    Judgement,
    Passage,
    Unscored,
    answer_hash,
    claim_prompt,
    dimension_prompt,
    p_yes_from_top_logprobs,
)
from evalloop.core.judge.calibration import (
    CalibrationRecord,
    DimensionCalibration,
    IsotonicMap,
    is_advisory,
    uncalibrated,
)
from evalloop.core.judge.fit import (
    RawLabel,
    balanced_accuracy,
    bootstrap_ci,
    calibrate_target,
    combined_kind,
    cross_validate,
    fit_isotonic,
    fit_record,
    roc_auc,
    spearman,
)
from evalloop.core.judge.prompts import MAX_KNOWLEDGE_CHARS, SYSTEM, nearest_passage

# ---- P(yes) ---------------------------------------------------------------------------------


def test_p_yes_normalises_yes_against_no() -> None:
    assert p_yes_from_top_logprobs([("Yes", math.log(0.6)), ("No", math.log(0.2))]) == (
        pytest.approx(0.75, abs=1e-12)
    )


def test_p_yes_sums_yes_like_tokens_and_ignores_others() -> None:
    top = [
        (" yes", math.log(0.3)),
        ("YES", math.log(0.3)),
        ("no.", math.log(0.2)),
        ("The", math.log(0.2)),
    ]
    assert p_yes_from_top_logprobs(top) == pytest.approx(0.75, abs=1e-12)


def test_p_yes_only_no_is_zero_not_unscored() -> None:
    assert p_yes_from_top_logprobs([("No", -0.01), ("Sure", -5.0)]) == 0.0


@pytest.mark.parametrize(
    ("top", "reason"),
    [
        (None, "no_logprobs"),
        ([], "no_logprobs"),
        ([("The", -0.1), ("Maybe", -2.0)], "unparseable"),
        ([("Yes", float("nan"))], "unparseable"),
        ([("Yes", float("-inf")), ("No", float("-inf"))], "unparseable"),
    ],
)
def test_p_yes_unscored_paths(top: list[tuple[str, float]] | None, reason: str) -> None:
    result = p_yes_from_top_logprobs(top)
    assert isinstance(result, Unscored)
    assert result.reason == reason


# ---- values ---------------------------------------------------------------------------------


def test_dimension_score_refuses_nan_and_out_of_range() -> None:
    with pytest.raises(ValueError, match=r"score must be in \[0, 1\]"):
        DimensionScore("safety", float("nan"), 0.5, "r")
    with pytest.raises(ValueError, match=r"raw must be in \[0, 1\]"):
        DimensionScore("safety", 0.5, 1.2, "r")
    with pytest.raises(ValueError, match="carries no score"):
        DimensionScore("safety", 0.0, None, "r", "timeout")
    unscored = DimensionScore("safety", None, None, "timeout: 30 s", "timeout")
    assert not unscored.scored


def _scores(unscored: set[str]) -> dict[str, DimensionScore]:
    return {
        d: (
            DimensionScore(d, None, None, "unscored (timeout)", "timeout")
            if d in unscored
            else DimensionScore(d, 0.8, 0.9, "ok")
        )
        for d in DIMENSIONS
    }


def test_judgement_all_scored_only_when_seven_are() -> None:
    full = Judgement("c1", answer_hash("a"), "m", PROMPT_VERSION, "cal", _scores(set()))  # type: ignore[arg-type]
    part = Judgement("c1", answer_hash("a"), "m", PROMPT_VERSION, "cal", _scores({"tone"}))  # type: ignore[arg-type]
    assert full.all_scored and full.unscored == {}
    assert not part.all_scored
    assert part.unscored == {"tone": "unscored (timeout)"}
    with pytest.raises(ValueError, match="lacks dimensions"):
        Judgement("c1", "h", "m", "v", "cal", {"tone": _scores(set())["tone"]})


def test_answer_hash_is_sha256_of_utf8() -> None:
    assert answer_hash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


# ---- prompts --------------------------------------------------------------------------------


def test_seven_prompts_share_one_prefix_and_end_with_their_rubric() -> None:
    passages = [Passage("p1", "Leave is 25 days."), Passage("p2", "It expires in March.")]
    prompts = {
        d: dimension_prompt(
            d, question="How much leave?", answer="25 days.", passages=passages, expected="25"
        )
        for d in DIMENSIONS
    }
    prefix = "Knowledge:\nLeave is 25 days.\nIt expires in March.\n\nUser message:\nHow much leave?\n\nAssistant's answer:\n25 days.\n\n"  # noqa: E501
    for d, p in prompts.items():
        assert p.system == SYSTEM
        assert p.user.startswith(prefix)
        assert p.user.endswith(f"Question: {RUBRICS[d]} Answer Yes or No.")
    assert prompts["correctness"].user == prefix + (
        "Reference answer:\n25\n\nQuestion: Is the assistant's answer factually correct? "
        "Answer Yes or No."
    )


def test_prompt_omits_blank_question_and_missing_knowledge_and_cuts_long_knowledge() -> None:
    p = dimension_prompt("tone", question=" ", answer="Hi.", passages=[])
    assert p.user.startswith("Assistant's answer:\nHi.\n\nQuestion:")
    long = dimension_prompt(
        "groundedness", question="q", answer="a", passages=[Passage("x", "w" * 5000)]
    )
    knowledge = long.user.split("\n\nUser message:")[0].removeprefix("Knowledge:\n")
    assert len(knowledge) == MAX_KNOWLEDGE_CHARS
    assert knowledge.endswith("…")


def test_claim_prompt_text() -> None:
    p = claim_prompt("Leave is 25 days.", [Passage("p1", "Annual leave: 25 days.")])
    assert p.user == (
        "Knowledge:\nAnnual leave: 25 days.\n\nClaim:\nLeave is 25 days.\n\n"
        "Question: Is the claim supported by the knowledge? Answer Yes or No."
    )


def test_nearest_passage_by_word_overlap() -> None:
    ps = [
        Passage("a", "The office opens at nine."),
        Passage("b", "Annual leave is 25 days a year."),
    ]
    assert nearest_passage("You get 25 days of annual leave.", ps) == ps[1]
    assert nearest_passage("anything", []) is None


# ---- isotonic maps --------------------------------------------------------------------------


def test_isotonic_map_interpolates_and_clips() -> None:
    m = IsotonicMap((0.2, 0.6), (0.1, 0.5))
    assert m(0.4) == pytest.approx(0.3)
    assert m(0.0) == 0.1
    assert m(1.0) == 0.5
    assert m(0.6) == 0.5
    with pytest.raises(ValueError, match="NaN"):
        m(float("nan"))
    with pytest.raises(ValueError, match="non-decreasing"):
        IsotonicMap((0.1, 0.2), (0.5, 0.4))
    with pytest.raises(ValueError, match="strictly increasing"):
        IsotonicMap((0.2, 0.2), (0.1, 0.4))


def test_fit_isotonic_pools_adjacent_violators() -> None:
    m = fit_isotonic([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1])
    assert m.x == (0.1, 0.2, 0.3, 0.4)
    assert m.y == (0.0, 0.5, 0.5, 1.0)
    assert m(0.25) == 0.5
    with pytest.raises(ValueError, match="NaN"):
        fit_isotonic([0.1, float("nan")], [0, 1])


# ---- metrics --------------------------------------------------------------------------------


def test_metrics_exact_values() -> None:
    assert roc_auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == 0.75
    assert balanced_accuracy([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == 0.75
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert roc_auc([0.1, 0.2], [1, 1]) is None
    assert spearman([0.5, 0.5, 0.5], [1, 2, 3]) is None


def test_bootstrap_ci_is_seeded_and_brackets_the_estimate() -> None:
    scores = [0.1, 0.2, 0.3, 0.35, 0.4, 0.6, 0.7, 0.8, 0.9, 0.95]
    labels = [0, 0, 1, 0, 0, 1, 0, 1, 1, 1]
    first = bootstrap_ci(scores, labels, "auc", resamples=500, seed=3)
    assert first == bootstrap_ci(scores, labels, "auc", resamples=500, seed=3)
    assert first is not None
    auc = roc_auc(scores, labels)
    assert auc == pytest.approx(21 / 25)  # 21 of 25 positive-negative pairs ordered
    assert first[0] <= auc <= first[1] <= 1.0
    with pytest.raises(ValueError, match="metric"):
        bootstrap_ci(scores, labels, "f1")


@pytest.mark.parametrize(
    ("kind", "auc", "rho", "advisory"),
    [
        ("binary", 0.74, None, True),
        ("binary", 0.75, None, False),
        ("binary", None, None, True),
        ("rating", None, 0.39, True),
        ("rating", None, 0.40, False),
    ],
)
def test_advisory_bar(kind: str, auc: float | None, rho: float | None, advisory: bool) -> None:
    assert is_advisory(kind, auc, rho) is advisory  # type: ignore[arg-type]
    assert is_advisory(kind, auc, rho, 20) is advisory  # type: ignore[arg-type]
    assert is_advisory(kind, auc, rho, 19)  # type: ignore[arg-type]


def test_cross_validate_and_calibrate_a_separable_target() -> None:
    raw = [0.55, 0.6, 0.62, 0.7, 0.72, 0.9, 0.92, 0.93, 0.95, 0.97] * 2
    labels = ([0.0] * 5 + [1.0] * 5) * 2
    oof = cross_validate(raw, labels, "binary", folds=5, seed=1)
    assert len(oof) == 20 and all(0.0 <= v <= 1.0 for v in oof)
    assert oof == cross_validate(raw, labels, "binary", folds=5, seed=1)
    cal = calibrate_target("groundedness", raw, labels, "binary", sources=["x"], resamples=200)
    assert cal.auc == 1.0 and cal.balanced_accuracy == 1.0 and not cal.advisory
    assert cal.mapping(0.5) == 0.0 and cal.mapping(0.99) == 1.0
    with pytest.raises(ValueError, match="at least 4"):
        cross_validate([0.1, 0.2], [0, 1], "binary")


def test_calibration_record_round_trip_and_uncalibrated_defaults() -> None:
    rows = [
        RawLabel(f"i{i}", "tone", "usr", "rating", label, raw)
        for i, (label, raw) in enumerate(
            [(0.0, 0.5), (0.5, 0.6), (1.0, 0.9), (0.5, 0.7), (1.0, 0.95), (0.0, 0.4)]
        )
    ] + [RawLabel("u", "tone", "usr", "rating", 1.0, None, "timeout")]
    record = fit_record(
        rows, judge_model="m", prompt_version="v", created_at="2026-01-01T00:00:00+00:00",
        resamples=100,
    )  # fmt: skip
    tone = record.targets["tone"]
    assert tone.n == 6 and tone.unscored == 1 and tone.kind == "rating"
    assert "little labelled data" in tone.note
    assert record.calibration_id == "m/v/2026-01-01T00:00:00+00:00"
    again = CalibrationRecord.from_dict(record.as_dict())
    assert again == record
    assert record.calibrate("safety", 0.42) == 0.42  # uncalibrated target: identity
    assert record.advisory("safety")
    assert uncalibrated("m", "v").advisory("tone")
    with pytest.raises(ValueError, match="malformed"):
        DimensionCalibration.from_dict({"target": "tone"})


# ---- combining label sources (docs/judge.md#combining-sources) --------------------------------


def test_combined_kind() -> None:
    assert combined_kind(["binary", "binary"]) == "binary"
    assert combined_kind(["rating", "binary"]) == "rating"
    with pytest.raises(ValueError, match="at least one"):
        combined_kind([])


def test_fit_record_pools_sources_and_counts_each() -> None:
    dstc9 = [(0.0, 0.5), (0.25, 0.55), (0.5, 0.6), (0.75, 0.8), (1.0, 0.9), (1.0, 0.85)]
    fqa = [(0.0, 0.4), (1 / 3, 0.45), (2 / 3, 0.7), (1.0, 0.95), (1.0, None)]
    review = [(0.0, 0.3), (1.0, 0.97), (0.0, 0.65)]
    rows = (
        [RawLabel(f"d{i}", "relevance", "dstc9-track1", "rating", y, x)
         for i, (y, x) in enumerate(dstc9)]
        + [RawLabel(f"f{i}", "relevance", "feedbackqa", "rating", y, x,
                    None if x is not None else "timeout") for i, (y, x) in enumerate(fqa)]
        + [RawLabel(f"r{i}", "relevance", "human-review", "binary", y, x)
           for i, (y, x) in enumerate(review)]
        + [RawLabel(f"s{i}", "safety", "human-review", "binary", float(i % 2), 0.2 + 0.5 * (i % 2))
           for i in range(6)]
    )  # fmt: skip
    record = fit_record(rows, judge_model="m", prompt_version="v",
                        created_at="2026-01-01T00:00:00+00:00", resamples=100)  # fmt: skip
    rel = record.targets["relevance"]
    assert (rel.kind, rel.n, rel.unscored) == ("rating", 13, 1)
    assert rel.sources == ("dstc9-track1", "feedbackqa", "human-review")
    assert [(b.source, b.kind, b.n, b.unscored) for b in rel.by_source] == [
        ("dstc9-track1", "rating", 6, 0), ("feedbackqa", "rating", 4, 1),
        ("human-review", "binary", 3, 0)]  # fmt: skip
    # raw ranks per source, against scipy / sklearn on that source's items alone
    assert rel.by_source[0].raw_rank == pytest.approx(0.9856107606091623)
    assert rel.by_source[1].raw_rank == pytest.approx(1.0)
    assert rel.by_source[2].raw_rank == pytest.approx(1.0)
    safety = record.targets["safety"]
    assert safety.kind == "binary" and safety.auc == 1.0
    assert [(b.source, b.n) for b in safety.by_source] == [("human-review", 6)]
    assert CalibrationRecord.from_dict(record.as_dict()) == record
    old = record.as_dict()
    del old["targets"]["safety"]["by_source"]  # records written before sources were combined
    assert CalibrationRecord.from_dict(old).targets["safety"].by_source == ()


def test_one_source_with_two_kinds_is_refused() -> None:
    rows = [RawLabel(f"i{i}", "tone", "usr", "rating" if i else "binary", 0.0, 0.5)
            for i in range(5)]  # fmt: skip
    with pytest.raises(ValueError, match=r"source usr: mixed label kinds \['binary', 'rating'\]"):
        fit_record(rows, judge_model="m", prompt_version="v", created_at="t")


def test_merge_raw_keeps_the_first_row_of_each_item() -> None:
    a = [RawLabel("i1", "tone", "usr", "rating", 0.5, 0.7)]
    b = [RawLabel("i1", "tone", "usr", "rating", 0.5, 0.2),
         RawLabel("i1", "tone", "feedbackqa", "rating", 0.5, 0.3),
         RawLabel("i1", "safety", "usr", "binary", 1.0, 0.9)]  # fmt: skip
    assert merge_raw(a, b) == [a[0], b[1], b[2]]
