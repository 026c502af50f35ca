"""The non-answer check: does an answer to a question that should be answered answer it?

The rules know non-answers by their phrases ("No idea, honestly.", "It's all set out in
section 7 of the Staff Handbook."); a non-answer in words nobody listed passes them
(``docs/rules.md#non-answer-check``). This module is the pure half of a small model that reads
meaning instead: a logistic regression over the packaged MiniLM's embeddings of the answer and
of the user's message, shipped as JSON in package data
(``evalloop/data/gate_corpus/classifier/answer-check-lr.json``; no pickles). Inference is a dot
product and a sigmoid; the embeddings come from an
:class:`~evalloop.adapters.embedder.Embedder` (:mod:`evalloop.adapters.answer_check`).

Features (``d`` = the embedder's dimension, 384 for MiniLM; vectors L2-normalised):

==========  ====  ===============================================================
block       size  what
==========  ====  ===============================================================
``answer``  d     the whole answer's embedding ``a``
``match``   d     element-wise product ``a * u`` with the user's message ``u``
``cosine``  1     ``sum(a * u)``, the cosine similarity of answer and question
==========  ====  ===============================================================

The check is **direction-safe**: it may only fail a case to be answered, never pass one
(:func:`evalloop.core.evaluation.gates.refusal_gate`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from evalloop.core.evaluation.second_opinion import AnswerCheck

__all__ = [
    "AnswerCheck",
    "AnswerCheckError",
    "AnswerCheckModel",
    "answer_features",
    "p_non_answer",
    "parse_answer_check",
]

FloatArray = npt.NDArray[np.float64]


class AnswerCheckError(ValueError):
    """A model file or its inputs do not have the expected shape (the message says which)."""


@dataclass(frozen=True, slots=True)
class AnswerCheckModel:
    """A fitted non-answer head.

    Attributes:
        name: the model's name, shown in verdicts (``minilm-answer-check``).
        embedder: the embedder it was trained with (its ``name``).
        dimension: that embedder's vector size.
        coef: the weights, ``2 * dimension + 1`` floats (blocks of the module docstring).
        intercept: the bias.
        high: P(non-answer) at or above which a case to be answered fails (0-1; chosen so
            that at most 1 % of proper answers in validation reach it).
        typed_high: the lower P(non-answer) at or above which an answer that gives no amount
            or time fails a question asking for one (0-1, at most ``high``; chosen so that at
            most 1 % of the proper answers to such questions in validation are newly flagged),
            or ``None`` (a model file without it: that rule is off).
    """

    name: str
    embedder: str
    dimension: int
    coef: FloatArray
    intercept: float
    high: float
    typed_high: float | None = None


def parse_answer_check(doc: dict[str, Any]) -> AnswerCheckModel:
    """Build a model from its JSON document.

    Args:
        doc: ``{"name", "embedder", "dimension", "coef", "intercept", "high", ...}``, and
            optionally ``typed_high``.

    Returns:
        The model.

    Raises:
        AnswerCheckError: a key is missing or has the wrong type or size, ``high`` is not in
            (0, 1), or ``typed_high`` is given and not in (0, ``high``].
    """
    try:
        name, embedder = str(doc["name"]), str(doc["embedder"])
        dimension = int(doc["dimension"])
        coef = np.asarray(doc["coef"], dtype=np.float64)
        intercept, high = float(doc["intercept"]), float(doc["high"])
    except (KeyError, TypeError, ValueError) as exc:
        raise AnswerCheckError(f"answer-check model: expected name, embedder, dimension, coef, "
                               f"intercept and high; got keys {sorted(doc)} ({exc})") from exc
    if coef.shape != (2 * dimension + 1,):
        raise AnswerCheckError(f"answer-check model {name}: expected {2 * dimension + 1} weights "
                               f"for dimension {dimension}, got shape {coef.shape}")
    typed = doc.get("typed_high")
    if typed is not None and (isinstance(typed, bool) or not isinstance(typed, (int, float))
                              or not 0.0 < float(typed) <= high):
        raise AnswerCheckError(f"answer-check model {name}: expected typed_high in (0, high="
                               f"{high}] or absent, got {typed!r}")
    if not 0.0 < high < 1.0 or not math.isfinite(intercept):
        raise AnswerCheckError(f"answer-check model {name}: expected 0 < high < 1 and a finite "
                               f"intercept, got high={high}, intercept={intercept}")
    return AnswerCheckModel(name, embedder, dimension, coef, intercept, high,
                            None if typed is None else float(typed))


def answer_features(answer_vec: npt.ArrayLike, user_vec: npt.ArrayLike) -> FloatArray:
    """The feature vector of one answer (module docstring): ``[a, a * u, sum(a * u)]``.

    Args:
        answer_vec: the answer's embedding, shape ``(d,)``.
        user_vec: the user's message's embedding, shape ``(d,)``.

    Raises:
        AnswerCheckError: the two vectors differ in shape or are not 1-D.
    """
    a = np.asarray(answer_vec, dtype=np.float64)
    u = np.asarray(user_vec, dtype=np.float64)
    if a.ndim != 1 or a.shape != u.shape:
        raise AnswerCheckError(f"expected two 1-D vectors of one size, got {a.shape} and "
                               f"{u.shape}")
    match = a * u
    return np.concatenate([a, match, [float(match.sum())]])


def p_non_answer(model: AnswerCheckModel, answer_vec: npt.ArrayLike,
                 user_vec: npt.ArrayLike) -> float:
    """P(the answer answers nothing of the user's question), 0-1.

    Raises:
        AnswerCheckError: the vectors do not have the model's dimension.
    """
    x = answer_features(answer_vec, user_vec)
    if x.shape != model.coef.shape:
        raise AnswerCheckError(f"model {model.name} expects {model.dimension}-d vectors, got "
                               f"{(x.shape[0] - 1) // 2}-d")
    z = float(x @ model.coef) + model.intercept
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))
