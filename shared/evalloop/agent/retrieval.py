"""Passage retrieval of the reference agent: TF-IDF over the knowledge base's chunks.

TF-IDF (scikit-learn) starts in well under a second on a few hundred passages and needs no
model files; unigrams + bigrams with sub-linear term frequency, the chunk's title counted with
its text (headings carry the topic words users ask with). A query is expanded with the policy
words for a few everyday phrasings users write instead ("my father passed away" -> death,
compassionate, bereavement): a bag of words cannot tell they mean the same. Measured on the
hr-policy-qa question sets (tests/integration/test_agent_http.py): see the test for the
hit-rate bars.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from evalloop.agent.kb import Chunk

__all__ = ["Hit", "Retriever", "expand_query"]

#: Everyday phrasings -> the policy words for the same thing (appended to the query).
_EXPANSIONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), words) for pattern, words in (
        (r"\b(?:passed away|died|dies|lost my|funeral|bereave\w*)\b",
         "death compassionate leave bereavement"),
        (r"\b(?:having a baby|new baby|pregnan\w*|expecting)\b", "maternity paternity leave"),
        (r"\b(?:off sick|ill|unwell|doctor's note)\b", "sick leave medical"),
    ))


def expand_query(query: str) -> str:
    """``query`` with the policy words for the everyday phrasings it uses (:data:`_EXPANSIONS`):
    "My father passed away this morning." -> "... death compassionate leave bereavement"."""
    extra = [words for pattern, words in _EXPANSIONS if pattern.search(query)]
    return " ".join([query, *extra])


@dataclass(frozen=True, slots=True)
class Hit:
    """A retrieved chunk and its cosine similarity to the query (0-1)."""

    chunk: Chunk
    score: float


class Retriever:
    """Rank ``chunks`` by TF-IDF cosine similarity to a query."""

    def __init__(self, chunks: list[Chunk]) -> None:
        """Index ``chunks`` (at least one).

        Raises:
            ValueError: ``chunks`` is empty.
        """
        if not chunks:
            raise ValueError("a retriever needs at least one chunk; got an empty knowledge base")
        self.chunks = list(chunks)
        self._vec = TfidfVectorizer(
            ngram_range=(1, 2), sublinear_tf=True, stop_words="english", min_df=1,
            token_pattern=r"(?u)\b\w[\w$%.-]*\w\b|\b\w\b",
        )
        self._matrix = self._vec.fit_transform([f"{c.title} {c.text}" for c in self.chunks])

    def search(self, query: str, k: int = 3) -> list[Hit]:
        """The ``k`` best chunks for ``query``, best first; chunks with zero similarity are
        left out (a query sharing no term with the knowledge base returns ``[]``); the query
        is expanded first (:func:`expand_query`)."""
        q = self._vec.transform([expand_query(query)])
        scores = (self._matrix @ q.T).toarray().ravel()
        order = np.argsort(-scores, kind="stable")[:k]
        return [Hit(self.chunks[i], float(scores[i])) for i in order if scores[i] > 0]

    def similarity(self, query: str, texts: list[str]) -> np.ndarray:
        """Cosine similarity (0-1) of ``query`` to each of ``texts`` in the index's vocabulary;
        shape ``(len(texts),)``."""
        q = self._vec.transform([query])
        return np.asarray((self._vec.transform(texts) @ q.T).toarray()).ravel()
