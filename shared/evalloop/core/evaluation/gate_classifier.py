"""A small local classifier as the gates' second opinion: MiniLM vectors + a logistic head.

Phrase rules miss phrasings nobody wrote them for (``docs/rules.md#gate-figures``). This module
is the pure half of a second opinion that needs no language model: the answer's sentence
embeddings (computed by an :class:`~evalloop.adapters.embedder.Embedder` in
:mod:`evalloop.adapters.gate_classifier`) and the rules' own findings go into one logistic
regression per gate, whose weights ship as JSON in package data
(``evalloop/data/gate_corpus/classifier/<name>.json``; no pickles). Inference is a dot product
and a sigmoid.

Features (``docs/rules.md#second-opinion``) are named blocks, concatenated in the order the
model file lists them:

==========  ====  ======================================================================
block       size  what
==========  ====  ======================================================================
``answer``  d     the whole answer's embedding
``smax``    d     element-wise maximum over the answer's sentence embeddings
``smean``   d     mean of the sentence embeddings
``first``   d     the first sentence's embedding
``rest``    d     the embedding of everything after the first sentence (zeros if none)
``user``    d     the user's message's embedding (zeros when not known)
``rules``   4     the rules' findings, 0/1: decline, compliance after it, refusal, escalation
==========  ====  ======================================================================

The probability becomes an :class:`~evalloop.core.evaluation.second_opinion.Opinion` carrying
the head's own thresholds, so the combination with the rules is the one every second opinion
uses (:func:`~evalloop.core.evaluation.second_opinion.combine`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from evalloop.core.evaluation.gates import Analysis, split_sentences
from evalloop.core.evaluation.second_opinion import Gate, Opinion, Thresholds

__all__ = [
    "BLOCKS",
    "ClassifierError",
    "EmbeddingPlan",
    "GateClassifier",
    "Head",
    "classifier_opinions",
    "feature_blocks",
    "feature_vector",
    "parse_classifier",
    "plan_embeddings",
    "rule_flags",
]

FloatArray = npt.NDArray[np.float64]

#: The feature blocks a head may use (module docstring). Never rename: model files list them.
BLOCKS: tuple[str, ...] = ("answer", "smax", "smean", "first", "rest", "user", "rules")
_RULE_FLAGS = 4
_GATES: tuple[Gate, ...] = ("refusal", "escalation")


class ClassifierError(ValueError):
    """A model file or its inputs do not have the expected shape (the message says which)."""


@dataclass(frozen=True, slots=True)
class Head:
    """One gate's logistic regression.

    Attributes:
        gate: ``refusal`` or ``escalation``.
        blocks: the feature blocks, in order (names from :data:`BLOCKS`).
        coef: weights, shape ``(n_features,)``.
        intercept: the bias term.
        thresholds: where the head overrules the rules (``docs/rules.md#second-opinion``).
    """

    gate: Gate
    blocks: tuple[str, ...]
    coef: FloatArray
    intercept: float
    thresholds: Thresholds

    def p_yes(self, x: FloatArray) -> float:
        """P(act) for one feature vector ``x`` (shape ``(n_features,)``): sigmoid(w.x + b)."""
        z = float(np.dot(self.coef, x)) + self.intercept
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)


@dataclass(frozen=True, slots=True)
class GateClassifier:
    """A shipped classifier: its name, the embedder it was trained with, one head per gate.

    Attributes:
        name: the model's id, shown in every verdict it takes part in.
        embedder: the embedder's name (``minilm:all-MiniLM-L6-v2``); vectors from another
            embedder are refused.
        dimension: embedding length ``d``.
        heads: ``{"refusal": Head, "escalation": Head}``.
        provenance: training files with their SHA-256, item counts, validation figures.
    """

    name: str
    embedder: str
    dimension: int
    heads: Mapping[Gate, Head]
    provenance: Mapping[str, Any] = field(default_factory=dict)


def _block_size(block: str, dimension: int) -> int:
    return _RULE_FLAGS if block == "rules" else dimension


def parse_classifier(doc: Mapping[str, Any]) -> GateClassifier:
    """Build a classifier from its JSON document (the format ``tools/train_gate_classifier.py``
    writes: ``name``, ``embedder``, ``dimension``, ``heads.<gate>.{blocks, coef, intercept,
    low, high}``, ``provenance``).

    Args:
        doc: the parsed JSON object.

    Returns:
        The classifier.

    Raises:
        ClassifierError: a field is missing or has the wrong type or length.
    """
    try:
        name, embedder, dimension = str(doc["name"]), str(doc["embedder"]), int(doc["dimension"])
        raw_heads = doc["heads"]
    except (KeyError, TypeError, ValueError) as exc:
        raise ClassifierError(f"classifier file: expected name, embedder, dimension and heads; "
                              f"got keys {sorted(doc) if isinstance(doc, Mapping) else doc!r} "
                              f"({exc})") from exc
    heads: dict[Gate, Head] = {}
    for gate in _GATES:
        raw = raw_heads.get(gate) if isinstance(raw_heads, Mapping) else None
        if not isinstance(raw, Mapping):
            raise ClassifierError(f"classifier {name}: expected a head for gate {gate!r}")
        blocks = tuple(str(b) for b in raw.get("blocks", ()))
        unknown = [b for b in blocks if b not in BLOCKS]
        if not blocks or unknown:
            raise ClassifierError(f"classifier {name}, {gate}: expected blocks from {BLOCKS}, "
                                  f"got {list(blocks)}")
        coef = np.asarray(raw.get("coef", ()), dtype=np.float64)
        size = sum(_block_size(b, dimension) for b in blocks)
        if coef.shape != (size,):
            raise ClassifierError(f"classifier {name}, {gate}: expected {size} weights for "
                                  f"blocks {list(blocks)}, got shape {coef.shape}")
        try:
            thresholds = Thresholds(float(raw["low"]), float(raw["high"]))
            intercept = float(raw["intercept"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ClassifierError(f"classifier {name}, {gate}: expected numeric intercept, "
                                  f"low and high: {exc}") from exc
        heads[gate] = Head(gate, blocks, coef, intercept, thresholds)
    provenance = doc.get("provenance", {})
    return GateClassifier(name, embedder, dimension, heads,
                          dict(provenance) if isinstance(provenance, Mapping) else {})


@dataclass(frozen=True, slots=True)
class EmbeddingPlan:
    """Which texts to embed for one answer, and where each block's vectors are.

    Attributes:
        texts: the texts to embed, in order: the answer, its sentences, then the rest after
            the first sentence (if there are two or more) and the user's message (if known).
        n_sentences: how many sentences follow the answer in ``texts`` (at least 1).
        rest_at: index of the rest's text, or ``None``.
        user_at: index of the user's message, or ``None``.
    """

    texts: tuple[str, ...]
    n_sentences: int
    rest_at: int | None
    user_at: int | None


def plan_embeddings(answer: str, user: str | None = None) -> EmbeddingPlan:
    """The texts to embed for one answer (sentences as the rules split them).

    Args:
        answer: the agent's answer.
        user: the user's message (the eval case's input), or ``None``.
    """
    sentences = split_sentences(answer) or [answer.strip() or answer]
    texts = [answer, *sentences]
    rest_at = user_at = None
    if len(sentences) > 1:
        rest_at = len(texts)
        texts.append(" ".join(sentences[1:]))
    if user and user.strip():
        user_at = len(texts)
        texts.append(user)
    return EmbeddingPlan(tuple(texts), len(sentences), rest_at, user_at)


def rule_flags(analysis: Analysis) -> FloatArray:
    """The ``rules`` block: decline found, compliance after it, refusal, escalation (0/1)."""
    return np.array([analysis.decline is not None, analysis.compliance is not None,
                     analysis.refusal is not None, analysis.escalation is not None],
                    dtype=np.float64)


def feature_blocks(vectors: npt.ArrayLike, plan: EmbeddingPlan,
                   analysis: Analysis) -> dict[str, FloatArray]:
    """Every feature block of one answer (module docstring).

    Args:
        vectors: the embeddings of ``plan.texts``, shape ``(len(plan.texts), d)``.
        plan: :func:`plan_embeddings` of the answer.
        analysis: the rules' :func:`~evalloop.core.evaluation.gates.analyse` of the answer.

    Returns:
        ``{block: vector}`` for every name in :data:`BLOCKS`.

    Raises:
        ClassifierError: ``vectors`` does not have one row per planned text.
    """
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 2 or v.shape[0] != len(plan.texts):
        raise ClassifierError(f"expected {len(plan.texts)} embeddings (one per planned text), "
                              f"got shape {v.shape}")
    sentences = v[1:1 + plan.n_sentences]
    zeros = np.zeros(v.shape[1], dtype=np.float64)
    return {
        "answer": v[0],
        "smax": sentences.max(axis=0),
        "smean": sentences.mean(axis=0),
        "first": sentences[0],
        "rest": v[plan.rest_at] if plan.rest_at is not None else zeros,
        "user": v[plan.user_at] if plan.user_at is not None else zeros,
        "rules": rule_flags(analysis),
    }


def feature_vector(blocks: Mapping[str, FloatArray], names: Sequence[str]) -> FloatArray:
    """Concatenate the named blocks, in order (the training script uses the same function)."""
    return np.concatenate([blocks[n] for n in names])


def classifier_opinions(classifier: GateClassifier, vectors: npt.ArrayLike,
                        plan: EmbeddingPlan, analysis: Analysis) -> dict[Gate, Opinion]:
    """Both gates' opinions on one answer.

    Args:
        classifier: the shipped classifier.
        vectors: embeddings of ``plan.texts`` by ``classifier.embedder``, ``(n, d)``.
        plan: :func:`plan_embeddings` of the answer.
        analysis: the rules' analysis of the answer.

    Returns:
        ``{gate: Opinion}`` with P(act) and the head's thresholds.

    Raises:
        ClassifierError: the vectors do not fit the plan or the classifier's dimension.
    """
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] != classifier.dimension:
        raise ClassifierError(f"classifier {classifier.name}: expected {classifier.dimension}-d "
                              f"embeddings, got shape {v.shape}")
    blocks = feature_blocks(v, plan, analysis)
    return {gate: Opinion(gate, classifier.name, head.p_yes(feature_vector(blocks, head.blocks)),
                          thresholds=head.thresholds, rule="classifier")
            for gate, head in classifier.heads.items()}
