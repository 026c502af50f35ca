"""Cluster labels: each cluster's distinctive terms by class-based TF-IDF (c-TF-IDF).

All documents of one cluster are treated as one "class document" (Grootendorst 2022, BERTopic:
``W_{t,c} = tf_{t,c} · log(1 + A / f_t)``, where ``tf_{t,c}`` is the frequency of term ``t`` in
cluster ``c`` divided by the cluster's term count, ``A`` the average number of terms per cluster,
``f_t`` the frequency of ``t`` over all clusters). Terms frequent in one cluster but rare across
the others score highest; words every cluster uses ("answer", "question") fall away.

Deterministic: ties are broken by the term itself (alphabetically). Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

__all__ = ["STOP_WORDS", "ClusterLabel", "label_clusters", "tokenize"]

K = TypeVar("K", bound=Hashable)

#: scikit-learn's English stop list (318 words) plus auxiliaries it lacks and the leftovers of
#: contractions that the tokenizer produces ("doesn", "isn", ...): never topical.
STOP_WORDS: frozenset[str] = frozenset(ENGLISH_STOP_WORDS) | frozenset(
    {"did", "does", "doing", "doesn", "don", "isn", "aren", "wasn", "weren", "didn", "won",
     "wouldn", "shouldn", "couldn", "hasn", "haven", "ll", "ve", "re"}
)

_TOKEN = re.compile(r"[a-z][a-z0-9]+(?:-[a-z0-9]+)*")


def tokenize(text: str, stop_words: frozenset[str] = STOP_WORDS) -> list[str]:
    """Lower-case word tokens of ``text``: letters first, then letters/digits/inner hyphens,
    at least 2 characters long, not in ``stop_words`` (so "COVID-19" -> ``covid-19``)."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in stop_words]


@dataclass(frozen=True, slots=True)
class ClusterLabel:
    """A cluster's label.

    Attributes:
        terms: the distinctive terms, most distinctive first (at most ``n_terms``).
        scores: their c-TF-IDF weights, same order.
        text: the human label: the terms joined by ", " (``"(no terms)"`` when empty).
    """

    terms: tuple[str, ...]
    scores: tuple[float, ...]
    text: str


def label_clusters(
    documents: Mapping[K, Sequence[str]],
    *,
    n_terms: int = 4,
    min_docs: int = 2,
    stop_words: frozenset[str] = STOP_WORDS,
    extra_stop_words: Iterable[str] = (),
) -> dict[K, ClusterLabel]:
    """Label every cluster with its ``n_terms`` most distinctive terms (c-TF-IDF, module doc).

    Args:
        documents: cluster id -> the texts of its cases (e.g. question + rater comment).
        n_terms: terms per label (DESIGN: 3-5; default 4).
        min_docs: a term must occur in at least this many of the cluster's documents (capped
            at the cluster's size), so one case's odd word cannot name a cluster.
        stop_words: words never used as terms.
        extra_stop_words: more words to drop (e.g. words every agent's domain repeats).

    Returns:
        cluster id -> :class:`ClusterLabel`, for every key of ``documents``.

    Raises:
        ValueError: ``n_terms`` < 1 or ``min_docs`` < 1.
    """
    if n_terms < 1 or min_docs < 1:
        raise ValueError(f"expected n_terms >= 1 and min_docs >= 1, got {n_terms}, {min_docs}")
    stops = stop_words | frozenset(w.lower() for w in extra_stop_words)
    tf: dict[K, Counter[str]] = {}
    df: dict[K, Counter[str]] = {}
    for cid, docs in documents.items():
        counts: Counter[str] = Counter()
        present: Counter[str] = Counter()
        for doc in docs:
            toks = tokenize(doc, stops)
            counts.update(toks)
            present.update(set(toks))
        tf[cid] = counts
        df[cid] = present
    overall: Counter[str] = Counter()
    for counts in tf.values():
        overall.update(counts)
    totals = {cid: sum(c.values()) for cid, c in tf.items()}
    avg_terms = sum(totals.values()) / len(totals) if totals else 0.0

    out: dict[K, ClusterLabel] = {}
    for cid, counts in tf.items():
        need = min(min_docs, max(1, len(documents[cid])))
        scored = [
            (counts[t] / totals[cid] * math.log(1.0 + avg_terms / overall[t]), t)
            for t in counts
            if df[cid][t] >= need
        ]
        scored.sort(key=lambda st: (-st[0], st[1]))
        top = scored[:n_terms]
        terms = tuple(t for _, t in top)
        out[cid] = ClusterLabel(
            terms=terms,
            scores=tuple(round(s, 6) for s, _ in top),
            text=", ".join(terms) if terms else "(no terms)",
        )
    return out
