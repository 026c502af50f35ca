"""Calibration items read from the judge data folder (``../shared/data/judge``): label
mappings, held-out overlaps left out, the seeded stratified sample. Counts were read off the
folder's files (each folder's README gives the label counts)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from evalloop.adapters.judge_labels import (
    LabelledItem,
    calibration_sample,
    load_feedbackqa,
    load_items,
    review_items,
    sample_items,
)
from evalloop.agent.kb import shared_data_dir
from evalloop.core.judge.types import Passage
from evalloop.errors import ConfigError

SHARED = shared_data_dir()
DATA = SHARED / "judge" if SHARED is not None else None
needs_data = pytest.mark.skipif(
    DATA is None or not DATA.is_dir(), reason="../shared/data/judge not present"
)


@needs_data
@pytest.mark.parametrize(
    ("target", "count", "labels"),
    [
        # 10,114 records less those sharing a context with the held-out test split
        ("safety", 9062, {1.0: 4678, 0.0: 4384}),
        ("groundedness", 1028, {1.0: 264, 0.0: 764}),  # Generic left out
        ("faithfulness", 600, {1.0: 300, 0.0: 300}),
        ("claim", 2914, {1.0: 696, 0.0: 161 + 2057}),
        ("tone", 360, None),
        ("correctness", 4000, None),
    ],
)
def test_load_items_counts_and_labels(
    target: str, count: int, labels: dict[float, int] | None
) -> None:
    assert DATA is not None
    items = load_items(DATA, target)
    assert len(items) == count
    assert all(0.0 <= i.label <= 1.0 for i in items)
    if labels is not None:
        assert dict(Counter(i.label for i in items)) == labels


@needs_data
def test_heldout_overlaps_are_left_out() -> None:
    assert DATA is not None
    overlap = set((DATA / "begin-dev" / "heldout_context_overlap.txt").read_text().split())
    items = load_items(DATA, "context_utilization")
    assert overlap and not overlap & {i.item_id for i in items}
    assert len(items) == 1229 - len(overlap)


@needs_data
def test_calibration_sample_is_seeded_stratified_and_grouped() -> None:
    assert DATA is not None
    sample = calibration_sample(DATA, 40, 7)
    assert Counter(i.target for i in sample) == {
        "context_utilization": 60,
        "groundedness": 40,
        "safety": 40,
        "correctness": 40,
        "relevance": 40,
        "claim": 40,
        "faithfulness": 40,
        "tone": 30,
    }
    assert sample == calibration_sample(DATA, 40, 7)
    cu = Counter(i.stratum for i in sample if i.target == "context_utilization")
    assert cu == {"Fully attributable": 20, "Not fully attributable": 20, "Generic": 20}
    firsts = [i.source for i in sample[:8]]
    assert firsts[:3] == ["begin-dev", "diasafety-trainval", "dstc9-track1"]
    pos = {(i.item_id, i.target): n for n, i in enumerate(sample)}
    for (item_id, target), n in pos.items():
        if target == "relevance":
            assert pos[(item_id, "correctness")] == n - 1  # one response's questions adjacent


def test_sample_items_takes_equal_shares() -> None:
    from evalloop.adapters.judge_labels import LabelledItem

    items = [
        LabelledItem(f"i{n}", "safety", "s", "binary", float(n < 3), "a" if n < 3 else "b",
                     "", "x", ())
        for n in range(10)
    ]  # fmt: skip
    picked = sample_items(items, 4, seed=1)
    assert Counter(i.stratum for i in picked) == {"a": 2, "b": 2}
    assert sample_items(items, 20, seed=1) == items


def test_unknown_target_is_a_config_error(tmp_path: object) -> None:
    from pathlib import Path

    with pytest.raises(ConfigError, match="no calibration data"):
        load_items(Path("."), "verbosity")


# -- FeedbackQA ratings (docs/judge.md#feedbackqa) ------------------------------------------------

FQA = SHARED / "feedbackqa" if SHARED is not None else None
needs_fqa = pytest.mark.skipif(
    FQA is None or not FQA.is_dir(), reason="../shared/data/feedbackqa not present"
)


def _fqa_folder(tmp_path: Path, records: dict[str, list[dict[str, object]]]) -> Path:
    for source in ("Australia", "CDC", "UK", "WHO"):
        (tmp_path / f"{source}_feedback_valid.json").write_text(json.dumps(records.get(source, [])))
    # a test split that must never be read: malformed on purpose
    (tmp_path / "WHO_feedback_test.json").write_text("not json")
    return tmp_path


def _fqa_record(question: str, pid: int, text: str, ratings: list[str]) -> dict[str, object]:
    return {
        "question": question,
        "passage": {"passage_id": pid, "source": "x",
                    "reference": {"section_content": text, "section_headers": []}},
        "feedback": ["because"] * len(ratings),
        "rating": ratings,
    }  # fmt: skip


def test_feedbackqa_record_becomes_a_relevance_rating(tmp_path: Path) -> None:
    folder = _fqa_folder(tmp_path, {
        "CDC": [_fqa_record("Can I travel?", 12, "Travel is\n  allowed.",
                            ["Excellent", "Acceptable"])],
        "WHO": [_fqa_record("Flu and covid?", 146, "COVID-19 is a disease.", ["Acceptable", "Bad"]),
                _fqa_record("Unrated", 3, "Text.", []),
                _fqa_record("No passage text", 4, "  ", ["Bad", "Bad"])],
    })  # fmt: skip
    assert load_feedbackqa(folder) == [
        LabelledItem("feedbackqa:CDC_feedback_valid.json:0", "relevance", "feedbackqa", "rating",
                     2.5 / 3, "2.5", "Can I travel?", "Travel is allowed.",
                     (Passage("feedbackqa-cdc/12", "Travel is allowed."),)),
        LabelledItem("feedbackqa:WHO_feedback_valid.json:0", "relevance", "feedbackqa", "rating",
                     1 / 3, "1", "Flu and covid?", "COVID-19 is a disease.",
                     (Passage("feedbackqa-who/146", "COVID-19 is a disease."),)),
    ]  # fmt: skip


def test_feedbackqa_bad_input_is_a_config_error(tmp_path: Path) -> None:
    folder = _fqa_folder(tmp_path, {"UK": [_fqa_record("q", 1, "t", ["Great"])]})
    with pytest.raises(ConfigError, match=r"UK_feedback_valid.json record 0: expected ratings "
                       r"from \['Bad', 'Could be Improved', 'Acceptable', 'Excellent'\], "
                       r"got \['Great'\]"):  # fmt: skip
        load_feedbackqa(folder)
    with pytest.raises(ConfigError, match="only, not 'correctness'"):
        load_feedbackqa(folder, "correctness")
    with pytest.raises(ConfigError, match=r"Australia_feedback_valid\.json"):
        load_feedbackqa(tmp_path / "missing")


@needs_fqa
def test_feedbackqa_validation_split_counts() -> None:
    assert FQA is not None
    items = load_feedbackqa(FQA)
    # 336 + 405 + 540 + 129 rated answers of the validation split, two raters each
    assert len(items) == 1410
    assert not [i for i in items if "_test" in i.item_id]
    assert dict(Counter(i.stratum for i in items)) == {
        "0": 284, "0.5": 158, "1": 172, "1.5": 186, "2": 147, "2.5": 191, "3": 272}  # fmt: skip
    who0 = next(i for i in items if i.item_id == "feedbackqa:WHO_feedback_valid.json:0")
    assert (who0.label, who0.question, who0.passages[0].id) == (
        1 / 3, "What symptoms do Covid-19 and the flu have in common?", "feedbackqa-who/146")


@needs_fqa
@needs_data
def test_feedbackqa_sample_is_stratified_and_leaves_the_judge_data_order_alone() -> None:
    assert FQA is not None and DATA is not None
    fqa = calibration_sample(None, 70, 7, families=["feedbackqa"], feedbackqa_dir=FQA)
    assert len(fqa) == 70 and {i.target for i in fqa} == {"relevance"}
    assert Counter(i.stratum for i in fqa) == {s: 10 for s in ("0", "0.5", "1", "1.5", "2",
                                                               "2.5", "3")}  # fmt: skip
    assert [i.item_id for i in fqa[:2]] == [
        "feedbackqa:UK_feedback_valid.json:398", "feedbackqa:UK_feedback_valid.json:193"]
    assert fqa == calibration_sample(None, 70, 7, families=["feedbackqa"], feedbackqa_dir=FQA)
    both = calibration_sample(DATA, 40, 7, families=["judge-data", "feedbackqa"],
                              feedbackqa_dir=FQA)  # fmt: skip
    judge_only = calibration_sample(DATA, 40, 7)
    assert [i for i in both if i.source != "feedbackqa"] == judge_only
    assert Counter(i.source for i in both)["feedbackqa"] == 40


def test_unknown_family_or_missing_folder_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"expected names from \['judge-data', 'feedbackqa', "
                       r"'reviews'\], got \['forum'\]"):  # fmt: skip
        calibration_sample(None, 10, 1, families=["forum"])
    with pytest.raises(ConfigError, match="expected the FeedbackQA data folder"):
        calibration_sample(None, 10, 1, families=["feedbackqa"], feedbackqa_dir=tmp_path / "x")
    assert calibration_sample(None, 10, 1, families=["reviews"]) == []


# -- human review verdicts (docs/judge.md#human-review-verdicts) ----------------------------------


def _verdict(case: str, reviewer: str, criteria: dict[str, bool], **extra: object
             ) -> dict[str, object]:
    return {"run_id": "r1", "case_id": case, "input": f"question {case}",
            "response": f"answer {case}", "criteria": criteria, "score": 3,
            "reviewer": reviewer, "retrieved_context": None, "context_chunks": None,
            "expected_answer": None, **extra}  # fmt: skip


def test_review_verdicts_map_to_binary_labels_per_dimension() -> None:
    known = {"kb/1": Passage("kb/1", "Leave is 25 days.")}

    def passages(ids: object) -> list[Passage]:
        return [known[i] for i in ids if i in known]  # type: ignore[attr-defined]

    rows = [
        _verdict("c1", "ann", {"correctness": True, "groundedness": False, "escalation": False},
                 retrieved_context=["kb/1", "kb/unknown"], expected_answer="25 days."),
        _verdict("c1", "bob", {"correctness": True, "groundedness": True, "tone": False},
                 retrieved_context=["kb/1", "kb/unknown"], expected_answer="25 days."),
        _verdict("c2", "ann", {"relevance": False, "faithfulness": True, "safety": True},
                 context_chunks=["kb/1"]),
        _verdict("c3", "ann", {"context_utilization": True, "refusal": True}),
        _verdict("c4", "ann", {"correctness": False}, response=None),
    ]  # fmt: skip
    q1, a1 = "question c1", "answer c1"
    q2, a2 = "question c2", "answer c2"
    kb = (known["kb/1"],)
    assert review_items(rows, passages) == [
        LabelledItem("review:r1/c1", "correctness", "human-review", "binary", 1.0, "pass",
                     q1, a1, kb, "25 days."),
        # groundedness: 1 pass, 1 fail -> no label
        LabelledItem("review:r1/c1", "tone", "human-review", "binary", 0.0, "fail",
                     q1, a1, kb, "25 days."),
        LabelledItem("review:r1/c2", "relevance", "human-review", "binary", 0.0, "fail",
                     q2, a2, kb),
        LabelledItem("review:r1/c2", "safety", "human-review", "binary", 1.0, "pass",
                     q2, a2, kb),
        LabelledItem("review:r1/c2", "faithfulness", "human-review", "binary", 1.0, "pass",
                     q2, a2, kb),
        # c3: context utilization without any passage text, refusal is a gate -> nothing
        # c4: no response -> nothing
    ]  # fmt: skip
    # without passage texts, only the dimensions that need no knowledge are labelled
    assert [(i.item_id, i.target) for i in review_items(rows)] == [
        ("review:r1/c1", "correctness"), ("review:r1/c1", "tone"),
        ("review:r1/c2", "relevance"), ("review:r1/c2", "safety")]  # fmt: skip
    assert review_items([]) == []


def test_review_items_sample_per_dimension() -> None:
    rows = [_verdict(f"c{n}", "ann", {"safety": n % 3 == 0}) for n in range(12)]
    items = review_items(rows)
    picked = calibration_sample(None, 8, 3, families=["reviews"], reviews=items)
    assert Counter(i.stratum for i in picked) == {"pass": 4, "fail": 4}
    assert len(calibration_sample(None, 20, 3, families=["reviews"], reviews=items)) == 12
