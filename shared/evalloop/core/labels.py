"""Cluster labels: each cluster's distinctive terms by class-based TF-IDF (c-TF-IDF).

All documents of one cluster are treated as one "class document" (Grootendorst 2022, BERTopic:
``W_{t,c} = tf_{t,c} · log(1 + A / f_t)``, where ``tf_{t,c}`` is the frequency of term ``t`` in
cluster ``c`` divided by the cluster's term count, ``A`` the average number of terms per cluster,
``f_t`` the frequency of ``t`` over all clusters). Terms frequent in one cluster but rare across
the others score highest; words every cluster uses ("answer", "question") fall away.

Deterministic: ties are broken by the term itself (alphabetically). Pure: no I/O.

:func:`question_labels` builds the label shown to people (``docs/review.md#cluster-labels``):
the cluster's most representative question (its medoid) followed by distinctive terms of its
QUESTIONS only, so a label describes the questions under it by construction.
:func:`label_coverage` measures that: the share of a cluster's questions sharing a content word
with its label.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

__all__ = [
    "STOP_WORDS", "ClusterLabel", "describes", "label_clusters", "label_coverage", "medoid",
    "question_labels", "shorten", "tokenize",
]

K = TypeVar("K", bound=Hashable)

#: scikit-learn's English stop list (318 words) plus auxiliaries it lacks and the leftovers of
#: contractions that the tokenizer produces ("doesn", "isn", ...): never topical.
STOP_WORDS: frozenset[str] = frozenset(ENGLISH_STOP_WORDS) | frozenset(
    {"did", "does", "doing", "doesn", "don", "isn", "aren", "wasn", "weren", "didn", "won",
     "wouldn", "shouldn", "couldn", "hasn", "haven", "ll", "ve", "re"}
)

#: Rows per block in :func:`medoid` (its memory is one block, whatever the cluster's size).
_BLOCK = 2048

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


def medoid(vectors: np.ndarray, ids: Sequence[str]) -> int:
    """Index of the most representative member: the highest mean cosine similarity to the
    OTHER members (``docs/review.md#cluster-labels``).

    Args:
        vectors: ``(n, d)`` embeddings, any scale (rows are normalised here; a zero row has
            similarity 0 to everything).
        ids: ``n`` member ids; ties (means equal to 9 decimals) go to the smallest id.

    Time is O(n·d) and memory one block of rows: the mean similarity of row i to the others
    is ``(u_i · sum_j u_j - u_i · u_i) / (n - 1)``, never an ``(n, n)`` matrix.

    Returns:
        The row index of the medoid (0 for a single member).

    Raises:
        ValueError: no members, or ``vectors`` and ``ids`` differ in length.
    """
    m = np.asarray(vectors)
    if m.ndim != 2 or m.shape[0] == 0 or m.shape[0] != len(ids):
        raise ValueError(f"expected (n, d) vectors for n = {len(ids)} ids (n >= 1), "
                         f"got shape {m.shape}")
    n = m.shape[0]
    if n == 1:
        return 0

    def unit(a: int) -> np.ndarray:  # rows a.. of the block, normalised, float64
        blk = np.asarray(m[a:a + _BLOCK], dtype=np.float64)
        norms = np.linalg.norm(blk, axis=1, keepdims=True)
        out: np.ndarray = np.divide(blk, norms, out=np.zeros_like(blk), where=norms > 0)
        return out

    # sum_j u_i · u_j = u_i · (sum_j u_j): O(n·d) time, O(block·d) memory, never the (n, n)
    # matrix (a 20,000-member cluster would need 3.2 GB for it)
    total = np.zeros(m.shape[1], dtype=np.float64)
    for a in range(0, n, _BLOCK):
        total += unit(a).sum(axis=0)
    means = np.empty(n, dtype=np.float64)
    for a in range(0, n, _BLOCK):
        u = unit(a)
        means[a:a + u.shape[0]] = (u @ total - np.einsum("ij,ij->i", u, u)) / (n - 1)
    return min(range(n), key=lambda i: (-round(float(means[i]), 9), ids[i]))


def shorten(text: str, limit: int = 80) -> str:
    """``text`` with its whitespace collapsed, cut to at most ``limit`` characters at a word
    boundary with "…" appended when cut (one over-long word is cut inside the word).

    Raises:
        ValueError: ``limit`` < 2.
    """
    if limit < 2:
        raise ValueError(f"expected limit >= 2, got {limit}")
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    head = flat[: limit - 1]
    cut = head.rfind(" ")
    if head[-1].isalnum() and flat[limit - 1].isalnum() and cut > 0:  # inside a word
        head = head[:cut]
    return head.rstrip(" ,;:-") + "…"


def question_labels(
    questions: Mapping[K, Sequence[str]],
    vectors: Mapping[K, np.ndarray],
    ids: Mapping[K, Sequence[str]],
    *,
    n_terms: int = 4,
    show_terms: int = 3,
    max_chars: int = 80,
    stop_words: frozenset[str] = STOP_WORDS,
) -> dict[K, ClusterLabel]:
    """Label every cluster by its questions (``docs/review.md#cluster-labels``).

    ``text`` = the medoid question (:func:`medoid` over the members that have a question),
    shortened to ``max_chars`` (:func:`shorten`), then " — " and up to ``show_terms`` of the
    cluster's c-TF-IDF terms over its questions only (:func:`label_clusters`) that the shown
    question does not already contain. ``terms`` are the c-TF-IDF terms themselves.

    Args:
        questions: cluster id -> its members' questions ("" for a member without one).
        vectors: cluster id -> ``(n, d)`` member embeddings, same order as ``questions``.
        ids: cluster id -> member ids (tie-break of the medoid), same order.
        n_terms: terms computed per cluster (``terms``).
        show_terms: most terms shown after the question.
        max_chars: longest question shown, in characters.
        stop_words: words never used as terms.

    Returns:
        cluster id -> :class:`ClusterLabel`, for every key of ``questions``; a cluster with no
        question is labelled by its terms alone (``"(no terms)"`` when none).

    Raises:
        ValueError: lengths differ within a cluster, or ``n_terms`` < 1.
    """
    terms = label_clusters({k: [q for q in qs if q] for k, qs in questions.items()},
                           n_terms=n_terms, stop_words=stop_words)
    out: dict[K, ClusterLabel] = {}
    for k, qs in questions.items():
        vecs, kid = np.asarray(vectors[k]), ids[k]
        if not (len(qs) == len(kid) == (vecs.shape[0] if vecs.ndim == 2 else -1)):
            raise ValueError(f"cluster {k!r}: expected as many questions, vectors and ids, got "
                             f"{len(qs)}, {vecs.shape}, {len(kid)}")
        have = [i for i, q in enumerate(qs) if q and q.strip()]
        lab = terms[k]
        if not have:
            out[k] = lab
            continue
        best = have[medoid(vecs[have], [kid[i] for i in have])]
        shown = shorten(qs[best], max_chars)
        seen = set(tokenize(shown, stop_words))
        extra = [t for t in lab.terms if t not in seen][:show_terms]
        text = f"{shown} — {', '.join(extra)}" if extra else shown
        out[k] = ClusterLabel(terms=lab.terms, scores=lab.scores, text=text)
    return out


def label_coverage(label: str, questions: Sequence[str],
                   stop_words: frozenset[str] = STOP_WORDS) -> float | None:
    """Share (0-1) of ``questions`` that share at least one content word (:func:`tokenize`)
    with ``label`` (``docs/review.md#cluster-labels``); ``None`` when there is no question."""
    if not questions:
        return None
    words = set(tokenize(label, stop_words))
    hit = sum(1 for q in questions if words & set(tokenize(q, stop_words)))
    return hit / len(questions)


def describes(label: str, questions: Sequence[str],
              stop_words: frozenset[str] = STOP_WORDS) -> bool:
    """Whether ``label`` describes its cluster: MOST (more than half) of its ``questions``
    share a content word with it (:func:`label_coverage`); ``False`` with no question."""
    share = label_coverage(label, questions, stop_words)
    return share is not None and share > 0.5
