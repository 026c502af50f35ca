"""FeedbackQA -> turns: one agent per source (WHO, CDC, UK, Australia).

Source: FeedbackQA (McGill-NLP/feedbackqa @ 0e37bee, experiments/feedbackQA_data; Apache-2.0),
kept unchanged under ``../shared/data/feedbackqa`` (data README). Mapping (data README, "Mapping
hints"; the details are this converter's choice):

* ``<Source>_feedback_{valid,test}.json``: each rated record -> one turn of agent
  ``covid-qa-<source>`` whose question is the record's ``question``, whose answer is the passage
  text (``passage.reference.section_content``, whitespace normalised as in ``evalloop/data/kb``)
  and whose only context chunk is that passage; one :class:`~evalloop.replay.turns.Rating` per
  rater (``rating[i]`` with ``feedback[i]`` as its comment). Key:
  ``feedbackqa/<file>#<index in file>`` (the records have no ids).
* ``faq_base/<Source>_{train,valid,test}.json``: each ``examples`` entry (question -> the
  correct ``passage_id`` of ``passages``) -> one turn with no feedback (real traffic is mostly
  unrated). Key: ``feedbackqa/faq_base/<file>#<example id>`` (ids repeat across splits, not
  within a file).

Chunk ids are ``feedbackqa-<source>/<passage_id>``, the ids of the reference agent's knowledge
base (``evalloop/data/kb/feedbackqa-<source>``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalloop.replay.turns import Chunk, Rating, Turn, thumbs_for

__all__ = ["SOURCES", "agent_id_for", "chunk_id_for", "load_feedbackqa", "normalise"]

#: FeedbackQA's four sources, in the data set's spelling.
SOURCES = ("Australia", "CDC", "UK", "WHO")
_SPLITS_RATED = ("valid", "test")
_SPLITS_FAQ = ("train", "valid", "test")


def agent_id_for(source: str) -> str:
    """Agent id of a FeedbackQA source: ``"UK"`` -> ``"covid-qa-uk"``."""
    return f"covid-qa-{source.lower()}"


def chunk_id_for(source: str, passage_id: int) -> str:
    """Knowledge-base chunk id of a passage: ``("UK", 12)`` -> ``"feedbackqa-uk/12"``."""
    return f"feedbackqa-{source.lower()}/{passage_id}"


def normalise(text: str) -> str:
    """Collapse runs of whitespace (the passages are hard-wrapped at ~80 columns)."""
    return " ".join(text.split())


def _read(path: Path) -> Any:
    try:
        with path.open(encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError as exc:
        raise FileNotFoundError(
            f"FeedbackQA file {path} is missing; expected the data set as published under "
            "../shared/data/feedbackqa (see its README)"
        ) from exc


def _chunk(source: str, passage: dict[str, Any], where: str) -> Chunk:
    try:
        pid = int(passage["passage_id"])
        text = normalise(passage["reference"]["section_content"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(
            f"{where}: expected a passage with passage_id and reference.section_content, "
            f"got keys {sorted(passage) if isinstance(passage, dict) else type(passage)}"
        ) from exc
    return Chunk(id=chunk_id_for(source, pid), text=text, source=passage.get("uri"))


def _rated(root: Path, source: str) -> list[Turn]:
    agent = agent_id_for(source)
    turns: list[Turn] = []
    for split in _SPLITS_RATED:
        name = f"{source}_feedback_{split}.json"
        for i, rec in enumerate(_read(root / name)):
            where = f"{name}#{i}"
            labels, comments = rec.get("rating") or [], rec.get("feedback") or []
            if len(labels) != len(comments):
                raise ValueError(
                    f"{where}: expected one feedback text per rating, got {len(labels)} "
                    f"ratings and {len(comments)} feedback texts"
                )
            for label in labels:
                thumbs_for(label)  # raises with the expected labels named
            chunk = _chunk(source, rec["passage"], where)
            turns.append(
                Turn(
                    key=f"feedbackqa/{where}",
                    agent_id=agent,
                    question=rec["question"].strip(),
                    answer=chunk.text,
                    chunks=(chunk,),
                    ratings=tuple(
                        Rating(label=label, comment=(comment or "").strip() or None)
                        for label, comment in zip(labels, comments, strict=True)
                    ),
                )
            )
    return turns


def _served(root: Path, source: str) -> list[Turn]:
    agent = agent_id_for(source)
    turns: list[Turn] = []
    for split in _SPLITS_FAQ:
        name = f"{source}_{split}.json"
        data = _read(root / "faq_base" / name)
        passages = {p["passage_id"]: p for p in data["passages"]}
        for ex in data["examples"]:
            where = f"faq_base/{name}#{ex['id']}"
            passage = passages.get(ex["passage_id"])
            if passage is None:
                raise ValueError(
                    f"{where}: passage_id {ex['passage_id']} is not among the file's passages"
                )
            chunk = _chunk(source, passage, where)
            turns.append(
                Turn(
                    key=f"feedbackqa/{where}",
                    agent_id=agent,
                    question=ex["question"].strip(),
                    answer=chunk.text,
                    chunks=(chunk,),
                )
            )
    return turns


def load_feedbackqa(root: Path, sources: tuple[str, ...] = SOURCES) -> list[Turn]:
    """Convert the FeedbackQA folder ``root`` into turns (rated records, then FAQ examples).

    Args:
        root: the ``feedbackqa`` folder (``<Source>_feedback_*.json`` and ``faq_base/``).
        sources: which sources to read (default all four).

    Returns:
        Per source, in file order: every rated record (valid, test), then every ``faq_base``
        example (train, valid, test). With the published data: 3,405 rated turns carrying
        9,808 ratings, and 7,499 served turns.

    Raises:
        FileNotFoundError: a file of the data set is missing.
        ValueError: a record does not have the published structure (named in the message).
    """
    unknown = sorted(set(sources) - set(SOURCES))
    if unknown:
        raise ValueError(f"unknown FeedbackQA source(s) {unknown}; expected some of {SOURCES}")
    turns: list[Turn] = []
    for source in sources:
        turns.extend(_rated(root, source))
        turns.extend(_served(root, source))
    return turns
