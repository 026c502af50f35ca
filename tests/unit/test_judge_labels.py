"""Calibration items read from the judge data folder (``../shared/data/judge``): label
mappings, held-out overlaps left out, the seeded stratified sample. Counts were read off the
folder's files (each folder's README gives the label counts)."""

from __future__ import annotations

from collections import Counter

import pytest

from evalloop.adapters.judge_labels import calibration_sample, load_items, sample_items
from evalloop.agent.kb import shared_data_dir
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
