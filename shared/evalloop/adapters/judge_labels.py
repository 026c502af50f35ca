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
relevance              feedbackqa (valid split) mean rating, Bad 0 .. Excellent 3 -> m / 3
each judge dimension   human-review             a reviewer's pass 1 / fail 0 on that criterion
=====================  =======================  ===============================================

Records the data folder lists as sharing a context with a held-out record
(``heldout_context_overlap.txt``) are never used. FeedbackQA's ``*_feedback_test.json`` files
are never read here: only the validation split tunes the judge (``docs/judge.md#feedbackqa``).
Human review verdicts (``docs/judge.md#human-review-verdicts``) arrive as the rows
:func:`evalloop.adapters.review_store.human_labels` returns; :func:`review_items` maps them.
"""

from __future__ import annotations

import ast
import gzip
import json
import random
from collections import defaultdict
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalloop.core.judge.calibration import LabelKind, Target
from evalloop.core.judge.types import DIMENSIONS, Passage
from evalloop.errors import ConfigError
from evalloop.replay.feedbackqa import SOURCES as FEEDBACKQA_SOURCES
from evalloop.replay.feedbackqa import chunk_id_for, normalise

__all__ = [
    "FAMILIES",
    "FEEDBACKQA",
    "FEEDBACKQA_LEVELS",
    "FEEDBACKQA_TARGETS",
    "NEEDS_PASSAGES",
    "REVIEWS",
    "SOURCES",
    "LabelledItem",
    "calibration_sample",
    "family_of",
    "load_feedbackqa",
    "load_items",
    "review_items",
    "sample_items",
]

#: Source name of FeedbackQA items (``item.source``, raw rows, the record's ``by_source``).
FEEDBACKQA = "feedbackqa"
#: Source name of human review verdicts.
REVIEWS = "human-review"
#: Label-source families ``evalloop judge calibrate --sources`` selects.
FAMILIES = ("judge-data", "feedbackqa", "reviews")
#: FeedbackQA's four rating levels -> points (``docs/judge.md#feedbackqa``).
FEEDBACKQA_LEVELS = {"Bad": 0, "Could be Improved": 1, "Acceptable": 2, "Excellent": 3}
#: The judge dimensions FeedbackQA ratings label.
FEEDBACKQA_TARGETS: tuple[Target, ...] = ("relevance",)
#: Dimensions whose question is about the knowledge: a verdict item without any passage text
#: is left out for them (the judge would not score them: ``no_context``).
NEEDS_PASSAGES = frozenset({"groundedness", "faithfulness", "context_utilization"})


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
        reference: a reference answer shown to the correctness question (``None``: none).
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
    reference: str | None = None


def family_of(source: str) -> str:
    """The ``--sources`` family of a source name: ``feedbackqa``, ``reviews`` or
    ``judge-data`` (every judge data folder)."""
    if source == FEEDBACKQA:
        return "feedbackqa"
    if source == REVIEWS:
        return "reviews"
    return "judge-data"


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


def load_feedbackqa(folder: Path, target: Target = "relevance") -> list[LabelledItem]:
    """FeedbackQA's rated answers of the validation split as labelled items for ``target``
    (``docs/judge.md#feedbackqa``).

    Each record of ``<Source>_feedback_valid.json`` (Australia, CDC, UK, WHO, in that order)
    becomes one item: the question, the passage the assistant answered with (whitespace
    normalised) as both the answer and its one knowledge passage (id
    ``feedbackqa-<source>/<passage_id>``, the reference agent's chunk id), and as label the
    mean of its raters' levels (Bad 0, Could be Improved 1, Acceptable 2, Excellent 3) divided
    by 3; the stratum is that mean (``"1.5"``). Item id: ``feedbackqa:<file>:<index>``. The
    ``*_feedback_test.json`` files are never read.

    Args:
        folder: the ``feedbackqa`` data folder.
        target: one of :data:`FEEDBACKQA_TARGETS`.

    Returns:
        Items in file order (records without a rating or passage text are left out).

    Raises:
        ConfigError: another target, a missing or malformed file, or a rating that is not one
            of the four levels (file, record and value named).
    """
    if target not in FEEDBACKQA_TARGETS:
        raise ConfigError(f"FeedbackQA labels {list(FEEDBACKQA_TARGETS)} only, not {target!r}")
    items: list[LabelledItem] = []
    for source in FEEDBACKQA_SOURCES:
        path = folder / f"{source}_feedback_valid.json"
        try:
            records = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ConfigError(f"FeedbackQA: expected {path} (the data set as published)") from exc
        except ValueError as exc:
            raise ConfigError(f"FeedbackQA: {path} is not JSON: {exc}") from exc
        if not isinstance(records, list):
            raise ConfigError(f"FeedbackQA: expected a JSON list in {path}, "
                              f"got {type(records).__name__}")  # fmt: skip
        for index, rec in enumerate(records):
            ratings = rec.get("rating") or []
            bad = [r for r in ratings if r not in FEEDBACKQA_LEVELS]
            if bad:
                raise ConfigError(f"FeedbackQA: {path.name} record {index}: expected ratings "
                                  f"from {list(FEEDBACKQA_LEVELS)}, got {bad}")  # fmt: skip
            passage = rec.get("passage") or {}
            text = normalise(str((passage.get("reference") or {}).get("section_content") or ""))
            if not ratings or not text:
                continue
            mean = sum(FEEDBACKQA_LEVELS[r] for r in ratings) / len(ratings)
            pid = chunk_id_for(source, int(passage["passage_id"]))
            items.append(LabelledItem(
                f"{FEEDBACKQA}:{path.name}:{index}", target, FEEDBACKQA, "rating", mean / 3,
                f"{mean:g}", str(rec.get("question") or ""), text, (Passage(pid, text),),
            ))  # fmt: skip
    return items


def review_items(
    rows: Sequence[Mapping[str, Any]],
    passages: Callable[[Sequence[str]], Sequence[Passage]] | None = None,
) -> list[LabelledItem]:
    """Human review verdicts as labelled items (``docs/judge.md#human-review-verdicts``).

    One item per judged case and judge dimension a verdict marks: label 1 when more of the
    case's reviewers marked that criterion pass than fail, 0 when more marked it fail; a tie is
    left out (people disagree, there is no label). The gates (``refusal``, ``escalation``),
    ``expected_behavior`` and the overall 1–5 ``score`` speak to no judge dimension and are not
    used. Question = the case input, answer = the stored response, passages = the retrieved
    context ids (else the golden case's ``context_chunks``) resolved by ``passages``, reference
    = the golden case's expected answer. A case without a response is left out; for
    groundedness, faithfulness and context utilization so is a case with no passage text.
    Item id: ``review:<run_id>/<case_id>``; stratum ``pass`` / ``fail``.

    Args:
        rows: verdicts as :func:`evalloop.adapters.review_store.human_labels` returns them
            (``run_id``, ``case_id``, ``input``, ``response``, ``criteria``, and optionally
            ``retrieved_context``, ``context_chunks``, ``expected_answer``).
        passages: passage ids -> the passages with known text (``None``: no passage text).

    Returns:
        Items ordered by case (first verdict first), then dimension order.
    """
    cases: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        cases.setdefault((str(row["run_id"]), str(row["case_id"])), []).append(row)
    items: list[LabelledItem] = []
    for (run_id, case_id), verdicts in cases.items():
        first = verdicts[0]
        answer = first.get("response")
        if not isinstance(answer, str) or not answer.strip():
            continue
        retrieved = first.get("retrieved_context")
        ids = list(retrieved if retrieved is not None else first.get("context_chunks") or ())
        shown = tuple(passages(ids)) if passages is not None and ids else ()
        for dim in DIMENSIONS:
            marks = [
                v["criteria"][dim]
                for v in verdicts
                if isinstance(v.get("criteria"), Mapping) and dim in v["criteria"]
            ]
            passed = sum(1 for m in marks if m is True)
            failed = sum(1 for m in marks if m is False)
            if passed == failed or (dim in NEEDS_PASSAGES and not shown):
                continue
            label = 1.0 if passed > failed else 0.0
            items.append(LabelledItem(
                f"review:{run_id}/{case_id}", dim, REVIEWS, "binary", label,
                "pass" if label else "fail", str(first.get("input") or ""), answer, shown,
                first.get("expected_answer") or None,
            ))  # fmt: skip
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


def _judge_data_sample(data_dir: Path, per_target: int, seed: int) -> list[LabelledItem]:
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
    return chosen


def calibration_sample(
    data_dir: Path | None,
    per_target: int,
    seed: int,
    *,
    families: Collection[str] = ("judge-data",),
    feedbackqa_dir: Path | None = None,
    reviews: Sequence[LabelledItem] = (),
) -> list[LabelledItem]:
    """The items ``evalloop judge calibrate`` asks about, grouped so questions share prefixes.

    From the judge data folder (family ``judge-data``): ``per_target`` items per target,
    stratified by label, except: relevance asks about the same dstc9 responses as correctness,
    and groundedness about the non-Generic responses of the begin-dev sample drawn for context
    utilization (``per_target * 3 // 2`` responses, a third of them Generic) — one prompt
    prefix then serves two questions. Tone (the longest prompts) uses ``per_target * 3 // 4``
    items. Family ``feedbackqa``: ``per_target`` FeedbackQA items per target it labels
    (:func:`load_feedbackqa`), stratified by mean rating. Family ``reviews``: up to
    ``per_target`` of ``reviews`` per dimension, stratified by pass / fail.

    Args:
        data_dir: the judge data folder (needed for ``judge-data``).
        per_target: items per target and source.
        seed: sampling and ordering seed.
        families: which of :data:`FAMILIES` to draw from.
        feedbackqa_dir: the FeedbackQA folder (needed for ``feedbackqa``).
        reviews: items from :func:`review_items` (used for ``reviews``).

    Returns:
        Items in a seeded order that takes one response from each source in turn (round
        robin), one response's questions back to back — so a run stopped early by its time
        budget still holds a similar share of every target. Empty when nothing was drawn.

    Raises:
        ConfigError: an unknown family, a folder a chosen family needs is missing, or as
            :func:`load_items` / :func:`load_feedbackqa`.
    """
    unknown = set(families) - set(FAMILIES)
    if unknown:
        raise ConfigError(f"label sources: expected names from {list(FAMILIES)}, "
                          f"got {sorted(unknown)}")  # fmt: skip
    chosen: list[LabelledItem] = []
    if "judge-data" in families:
        if data_dir is None:
            raise ConfigError("judge-data: expected the judge data folder")
        chosen += _judge_data_sample(data_dir, per_target, seed)
    if "feedbackqa" in families:
        if feedbackqa_dir is None or not feedbackqa_dir.is_dir():
            raise ConfigError(f"feedbackqa: expected the FeedbackQA data folder, "
                              f"got {feedbackqa_dir}")  # fmt: skip
        for target in FEEDBACKQA_TARGETS:
            chosen += sample_items(load_feedbackqa(feedbackqa_dir, target), per_target, seed)
    if "reviews" in families:
        for dim in DIMENSIONS:
            chosen += sample_items([i for i in reviews if i.target == dim], per_target, seed)
    if not chosen:
        return []
    groups: dict[tuple[str, str], list[LabelledItem]] = defaultdict(list)
    for item in sorted(chosen, key=lambda i: (i.source, i.item_id, i.target)):
        groups[(item.source, item.item_id)].append(item)
    by_source: dict[str, list[list[LabelledItem]]] = defaultdict(list)
    for (source, _), group in groups.items():
        by_source[source].append(group)
    rng = random.Random(seed)
    # judge-data sources first: adding another family leaves their order as it was
    for source in sorted(by_source, key=lambda s: (family_of(s) != "judge-data", s)):
        rng.shuffle(by_source[source])
    ordered: list[LabelledItem] = []
    for rank in range(max(len(v) for v in by_source.values())):
        for source in sorted(by_source):
            if rank < len(by_source[source]):
                ordered.extend(by_source[source][rank])
    return ordered
