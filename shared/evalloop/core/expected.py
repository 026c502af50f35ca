"""A proposed expected answer for each golden-set candidate, with its source
(``docs/review.md#proposed-expected-answer``). Pure: values in, values out.

In order of preference:

1. ``operator_correction`` -- the answer a human operator wrote for this very turn;
2. ``best_rated_answer`` -- the best-rated answer the agent gave to the same or a
   near-identical question elsewhere (:func:`loose_question`: lower case, punctuation and
   spacing ignored): only answers most raters liked (positive marks outnumber negative ones),
   best agreement first, then mean severity lowest (Excellent before Acceptable), then more
   raters, then the event id;
3. ``knowledge_passage`` -- the knowledge passage nearest the question (TF-IDF cosine of the
   question against passages the agent retrieved in turns most raters liked, at least
   :data:`MIN_PASSAGE_SIMILARITY`), excluding the passage of the answer that failed.

The reviewer accepts or edits it; nothing is proposed when no source qualifies.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

__all__ = [
    "MIN_PASSAGE_SIMILARITY",
    "Passage",
    "ProposedAnswer",
    "RatedAnswer",
    "loose_question",
    "nearest_passages",
    "propose",
]

#: A passage must share at least this TF-IDF cosine with the question to be proposed.
MIN_PASSAGE_SIMILARITY = 0.2
_NON_WORD = re.compile(r"[^a-z0-9]+")


def loose_question(question: str) -> str:
    """The question lower-cased with every run of non-alphanumerics one space, trimmed
    ("How long is parental-leave?" and "how long is parental leave" are the same)."""
    return _NON_WORD.sub(" ", question.lower()).strip()


@dataclass(frozen=True, slots=True)
class RatedAnswer:
    """An answer the agent gave to a question, with its raters' marks.

    Attributes:
        question_key: :func:`loose_question` of the question it answered.
        answer: the answer text.
        ref: its ``agent_response`` event id (text).
        positive, negative: mark counts.
        severity: mean severity of all its rating marks (0 = all Excellent), 0-1.
    """

    question_key: str
    answer: str
    ref: str
    positive: int
    negative: int
    severity: float


@dataclass(frozen=True, slots=True)
class Passage:
    """A knowledge passage: its id (knowledge-base key) and text."""

    id: str
    text: str


@dataclass(frozen=True, slots=True)
class ProposedAnswer:
    """The proposal: ``text``, ``source`` (module list) and ``ref`` (``event:<id>`` or
    ``passage:<id>``; ``None`` for a correction)."""

    text: str
    source: str
    ref: str | None


def _best_rated(key: str, rated: Sequence[RatedAnswer]) -> RatedAnswer | None:
    liked = [r for r in rated if r.question_key == key and r.positive > r.negative
             and r.answer.strip()]
    if not liked:
        return None
    return min(liked, key=lambda r: (-r.positive / (r.positive + r.negative), r.severity,
                                     -(r.positive + r.negative), r.ref))


def nearest_passages(questions: Sequence[str], passages: Sequence[Passage],
                     exclude: Sequence[set[str]] | None = None
                     ) -> list[tuple[int, float] | None]:
    """For each question, the index of the nearest passage and its TF-IDF cosine (``None``
    when there are no passages or no word in common).

    TF-IDF is fitted on the passages (English stop words removed, sublinear tf), so the
    weights say what distinguishes one passage from another. ``exclude[i]``: passage ids not
    to propose for question ``i`` (the passage of the answer that failed).
    """
    if not passages or not questions:
        return [None] * len(questions)
    vec = TfidfVectorizer(stop_words="english", sublinear_tf=True)
    try:
        p = vec.fit_transform([x.text for x in passages])
    except ValueError:  # only stop words
        return [None] * len(questions)
    sims = (vec.transform(list(questions)) @ p.T).toarray()
    out: list[tuple[int, float] | None] = []
    for i, row in enumerate(sims):
        if exclude is not None and exclude[i]:
            row = np.where([x.id in exclude[i] for x in passages], 0.0, row)
        j = int(np.argmax(row))
        out.append((j, float(row[j])) if row[j] > 0 else None)
    return out


def propose(question: str, correction: str | None, rated: Sequence[RatedAnswer],
            nearest: tuple[Passage, float] | None) -> ProposedAnswer | None:
    """The expected answer to propose for one candidate (module docstring).

    Args:
        question: the candidate's question.
        correction: the operator's corrected answer of its turn, if any.
        rated: rated answers of the agent (any questions; those matching are used).
        nearest: the nearest passage and its similarity (:func:`nearest_passages`), if any.
    """
    if correction and correction.strip():
        return ProposedAnswer(correction.strip(), "operator_correction", None)
    best = _best_rated(loose_question(question), rated)
    if best is not None:
        return ProposedAnswer(best.answer.strip(), "best_rated_answer", f"event:{best.ref}")
    if nearest is not None and nearest[1] >= MIN_PASSAGE_SIMILARITY:
        return ProposedAnswer(nearest[0].text.strip(), "knowledge_passage",
                              f"passage:{nearest[0].id}")
    return None
