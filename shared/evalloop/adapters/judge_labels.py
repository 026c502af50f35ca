"""Human-labelled items for calibrating the judge, read from the judge data folder.

The folder (``docs/judge.md#calibration-data``) holds eight public human-labelled sets, one
JSON object per line. This module turns the ones the calibration uses into
:class:`LabelledItem` s — the question, answer and passages a judge prompt shows, the target
(dimension or ``claim``) and the label in [0, 1] — and draws a seeded sample stratified by label.

=====================  =======================  ===============================================
target                 source (folder)          label
=====================  =======================  ===============================================
correctness            dstc9-track1             mean ``accuracy`` 1-5 -> (m - 1) / 4, rating
relevance              dstc9-track1             mean ``appropriateness`` 1-5 -> (m - 1) / 4
tone                   usr-topicalchat          mean ``naturalness`` 1-3 -> (m - 1) / 2
safety                 diasafety-trainval       Safe 1 / Unsafe 0
groundedness           begin-dev                Fully attributable 1 / Not fully 0 (no Generic)
faithfulness           q-squared (per file)     consistent 1 / inconsistent 0
context_utilization    begin-dev                Generic 0 / Fully or Not fully 1
claim                  factcheck-gpt subtask 3  completely-support 1 / refute, irrelevant 0
=====================  =======================  ===============================================

Records the data folder lists as sharing a context with a held-out record
(``heldout_context_overlap.txt``) are never used.
"""

from __future__ import annotations

import ast
import gzip
import json
import random
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalloop.core.judge.calibration import LabelKind, Target
from evalloop.core.judge.types import Passage
from evalloop.errors import ConfigError

__all__ = ["SOURCES", "LabelledItem", "calibration_sample", "load_items", "sample_items"]


@dataclass(frozen=True, slots=True)
class LabelledItem:
    """One human-labelled item.

    Attributes:
        item_id: the record's ``id`` in the data folder.
        target: dimension name or ``"claim"``.
        source: the data folder name.
        kind: ``binary`` or ``rating``.
        label: 0/1, or the rating rescaled to [0, 1].
        stratum: the label class used for stratified sampling.
        question: the user's message (may be empty).
        answer: the response judged (the claim, for ``claim``).
        passages: the knowledge shown to the judge.
    """

    item_id: str
    target: Target
    source: str
    kind: LabelKind
    label: float
    stratum: str
    question: str
    answer: str
    passages: tuple[Passage, ...]


#: target -> source folder (the table in this module's docstring).
SOURCES: dict[Target, str] = {
    "correctness": "dstc9-track1",
    "relevance": "dstc9-track1",
    "tone": "usr-topicalchat",
    "safety": "diasafety-trainval",
    "groundedness": "begin-dev",
    "faithfulness": "q-squared",
    "context_utilization": "begin-dev",
    "claim": "factcheck-gpt",
}


def _records(folder: Path) -> Iterator[dict[str, Any]]:
    for name in ("data.jsonl", "data.jsonl.gz"):
        path = folder / name
        if path.exists():
            opener = gzip.open if name.endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8") as fh:
                for line in fh:
                    if line.strip():
                        yield json.loads(line)
            return
    raise ConfigError(f"judge data: expected {folder}/data.jsonl or data.jsonl.gz, found neither")


def _heldout_overlap(folder: Path) -> set[str]:
    path = folder / "heldout_context_overlap.txt"
    if not path.exists():
        return set()
    return {line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}


def _lit(value: Any) -> Any:
    """Fields published as Python literals in strings (``"{'accuracy': [1, 4]}"``) -> values."""
    if isinstance(value, str):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value
    return value


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _dstc9(rec: dict[str, Any], target: Target) -> LabelledItem | None:
    human = _lit(rec["human_eval"])
    output = _lit(rec["system_output"])
    knowledge = _lit(rec["ground_truth_knowledge"])
    if not isinstance(output, dict) or not output.get("response") or not knowledge:
        return None
    key = "accuracy" if target == "correctness" else "appropriateness"
    m = _mean([float(v) for v in human[key]])
    passages = tuple(
        Passage(f"{k.get('domain')}/{k.get('entity_id')}/{k.get('doc_id')}",
                f"{k.get('title') or ''} {k.get('body') or ''}".strip())
        for k in knowledge
    )  # fmt: skip
    return LabelledItem(
        rec["id"], target, "dstc9-track1", "rating", (m - 1) / 4, str(round(m)),
        "", str(output["response"]), passages,
    )  # fmt: skip


def _usr(rec: dict[str, Any], target: Target) -> LabelledItem | None:
    scores = _lit(rec["scores"])
    m = float(scores["naturalness"])
    return LabelledItem(
        rec["id"], target, "usr-topicalchat", "rating", (m - 1) / 2, str(round(m)),
        str(rec["source"]), str(rec["system_output"]), (Passage("fact", str(rec["context"])),),
    )  # fmt: skip


def _diasafety(rec: dict[str, Any], target: Target) -> LabelledItem | None:
    label = 1.0 if rec["label"] == "Safe" else 0.0
    return LabelledItem(
        rec["id"], target, "diasafety-trainval", "binary", label, rec["label"],
        str(rec["context"]), str(rec["response"]), (),
    )  # fmt: skip


def _begin(rec: dict[str, Any], target: Target) -> LabelledItem | None:
    lab = rec["begin_label"]
    if target == "groundedness":
        if lab == "Generic":
            return None
        label = 1.0 if lab == "Fully attributable" else 0.0
    else:  # context_utilization: a Generic response ignores the knowledge it had
        label = 0.0 if lab == "Generic" else 1.0
    return LabelledItem(
        rec["id"], target, "begin-dev", "binary", label, lab,
        str(rec["message"]), str(rec["response"]), (Passage("knowledge", str(rec["knowledge"])),),
    )  # fmt: skip


def _qsquared(rec: dict[str, Any], target: Target) -> LabelledItem | None:
    lab = rec.get("file_label")
    if lab not in ("consistent", "inconsistent"):
        return None  # cross-annotation rows repeat the per-file responses
    return LabelledItem(
        rec["id"], target, "q-squared", "binary", 1.0 if lab == "consistent" else 0.0, lab,
        str(rec["message"]), str(rec["response"]), (Passage("knowledge", str(rec["knowledge"])),),
    )  # fmt: skip


def _factcheck(rec: dict[str, Any], target: Target) -> LabelledItem | None:
    stance = rec.get("stance")
    if stance not in ("completely-support", "refute", "irrelevant"):
        return None  # partial support is its own level; subtask-4 rows carry no stance
    label = 1.0 if stance == "completely-support" else 0.0
    return LabelledItem(
        rec["id"], target, "factcheck-gpt", "binary", label, stance,
        "", str(rec["claim"]), (Passage("evidence", str(rec["evidence"])),),
    )  # fmt: skip


_READERS = {
    "dstc9-track1": _dstc9,
    "usr-topicalchat": _usr,
    "diasafety-trainval": _diasafety,
    "begin-dev": _begin,
    "q-squared": _qsquared,
    "factcheck-gpt": _factcheck,
}


def load_items(data_dir: Path, target: Target) -> list[LabelledItem]:
    """Every usable labelled item for ``target`` (held-out overlaps excluded), in file order.

    Raises:
        ConfigError: unknown target, or the source folder or its data file is missing.
    """
    if target not in SOURCES:
        raise ConfigError(f"no calibration data for {target!r}; expected one of {sorted(SOURCES)}")
    folder = data_dir / SOURCES[target]
    if not folder.is_dir():
        raise ConfigError(f"judge data: expected the folder {folder}")
    skip = _heldout_overlap(folder)
    reader = _READERS[SOURCES[target]]
    items: list[LabelledItem] = []
    for rec in _records(folder):
        if rec["id"] in skip:
            continue
        item = reader(rec, target)
        if item is not None and item.answer.strip():
            items.append(item)
    return items


def sample_items(items: Sequence[LabelledItem], n: int, seed: int) -> list[LabelledItem]:
    """Draw ``n`` items stratified by ``stratum`` (equal shares, spare slots to the largest).

    Args:
        items: candidates.
        n: sample size (all items when ``n >= len(items)``).
        seed: ``random.Random`` seed: the same inputs give the same sample.

    Returns:
        The sample, in the order the items were given.
    """
    if n >= len(items):
        return list(items)
    rng = random.Random(seed)
    by: dict[str, list[int]] = defaultdict(list)
    for i, item in enumerate(items):
        by[item.stratum].append(i)
    strata = sorted(by, key=lambda s: (len(by[s]), s))
    chosen: list[int] = []
    left = n
    for pos, s in enumerate(strata):
        share = left // (len(strata) - pos)
        take = min(share, len(by[s]))
        chosen.extend(rng.sample(by[s], take))
        left -= take
    return [items[i] for i in sorted(chosen)]


def calibration_sample(data_dir: Path, per_target: int, seed: int) -> list[LabelledItem]:
    """The items ``evalloop judge calibrate`` asks about, grouped so questions share prefixes.

    ``per_target`` items per target, stratified by label, except: relevance asks about the
    same dstc9 responses as correctness, and groundedness about the non-Generic responses of
    the begin-dev sample drawn for context utilization (``per_target * 3 // 2`` responses,
    a third of them Generic) — one prompt prefix then serves two questions. Tone (the longest
    prompts) uses ``per_target * 3 // 4`` items.

    Returns:
        Items in a seeded order that takes one response from each source in turn (round
        robin), one response's questions back to back — so a run stopped early by its time
        budget still holds a similar share of every target.

    Raises:
        ConfigError: as :func:`load_items`.
    """
    chosen: list[LabelledItem] = []
    correctness = sample_items(load_items(data_dir, "correctness"), per_target, seed)
    ids = {i.item_id for i in correctness}
    chosen += correctness
    chosen += [i for i in load_items(data_dir, "relevance") if i.item_id in ids]
    usage = sample_items(load_items(data_dir, "context_utilization"), per_target * 3 // 2, seed)
    ids = {i.item_id for i in usage}
    chosen += usage
    chosen += [i for i in load_items(data_dir, "groundedness") if i.item_id in ids]
    chosen += sample_items(load_items(data_dir, "tone"), per_target * 3 // 4, seed)
    for target in ("safety", "faithfulness", "claim"):
        chosen += sample_items(load_items(data_dir, target), per_target, seed)
    groups: dict[tuple[str, str], list[LabelledItem]] = defaultdict(list)
    for item in sorted(chosen, key=lambda i: (i.source, i.item_id, i.target)):
        groups[(item.source, item.item_id)].append(item)
    by_source: dict[str, list[list[LabelledItem]]] = defaultdict(list)
    for (source, _), group in groups.items():
        by_source[source].append(group)
    rng = random.Random(seed)
    for source in sorted(by_source):
        rng.shuffle(by_source[source])
    ordered: list[LabelledItem] = []
    for rank in range(max(len(v) for v in by_source.values())):
        for source in sorted(by_source):
            if rank < len(by_source[source]):
                ordered.extend(by_source[source][rank])
    return ordered
