"""The non-answer check's I/O: load the shipped head, embed answers and messages with MiniLM.

The maths is pure logic in :mod:`evalloop.core.evaluation.answer_check`; this module reads the
model file from package data (``evalloop/data/gate_corpus/classifier/answer-check-lr.json``,
JSON, no pickles) and embeds with an :class:`~evalloop.adapters.embedder.Embedder` (the
packaged MiniLM by default, offline). When the file or the embedder cannot be loaded, or an
answer cannot be embedded, the check says why and the gates decide without it
(``docs/rules.md#non-answer-check``).
"""

from __future__ import annotations

import threading
from pathlib import Path

from evalloop.adapters.embedder import Embedder, MiniLMEmbedder
from evalloop.adapters.gate_classifier import read_model_json
from evalloop.core.evaluation.answer_check import (
    AnswerCheck,
    AnswerCheckError,
    AnswerCheckModel,
    p_non_answer,
    parse_answer_check,
)
from evalloop.errors import EmbeddingError

__all__ = [
    "ANSWER_CHECK_FILE",
    "AnswerChecker",
    "load_answer_check",
    "load_answer_checker",
    "shared_answer_checker",
]

#: The shipped head, relative to the ``evalloop`` package.
ANSWER_CHECK_FILE = "data/gate_corpus/classifier/answer-check-lr.json"
_NAME = "minilm-answer-check"


def load_answer_check(path: Path | None = None) -> AnswerCheckModel:
    """Read a non-answer head.

    Args:
        path: a model file; ``None``: the one shipped in the package.

    Raises:
        AnswerCheckError: the file is missing, not JSON, or not a model.
    """
    try:
        doc = read_model_json(path, ANSWER_CHECK_FILE, "answer-check model")
    except ValueError as exc:
        raise AnswerCheckError(str(exc)) from exc
    return parse_answer_check(doc)


class AnswerChecker:
    """The check on one answer at a time (synchronous, CPU-bound: call it in a worker thread
    from async code).

    Attributes:
        model: the loaded head, or ``None`` when it could not be loaded (``why`` says why).
        why: the reason the check is unavailable, or ``None``.
    """

    def __init__(self, model: AnswerCheckModel | None, embedder: Embedder | None,
                 why: str | None = None) -> None:
        """Pair a head with the embedder it was trained with (use :func:`load_answer_checker`).

        Raises:
            AnswerCheckError: the embedder is not the one the head was trained with.
        """
        if model is not None and embedder is not None and (
                embedder.name != model.embedder or embedder.dimension != model.dimension):
            raise AnswerCheckError(f"answer check {model.name} was trained with "
                                   f"{model.embedder} ({model.dimension}-d); got "
                                   f"{embedder.name} ({embedder.dimension}-d)")
        self.model = model
        self._embedder = embedder
        self.why = why

    @property
    def name(self) -> str:
        """The head's name (shown in verdicts)."""
        return self.model.name if self.model is not None else _NAME

    def check(self, answer: str, user: str) -> AnswerCheck:
        """P(the answer answers nothing of the user's message).

        Args:
            answer: the agent's answer.
            user: the user's message (the case's input).

        Returns:
            The finding; without a probability (``unscored`` says why) when the head or the
            embedder is unavailable or embedding fails. Never raises for model failures.
        """
        if self.model is None or self._embedder is None:
            return AnswerCheck(self.name, None, 1.0, self.why or "not loaded")
        try:
            vecs = self._embedder.encode([answer, user])
            return AnswerCheck(self.model.name, p_non_answer(self.model, vecs[0], vecs[1]),
                               self.model.high, typed_high=self.model.typed_high)
        except (EmbeddingError, AnswerCheckError) as exc:
            return AnswerCheck(self.model.name, None, self.model.high,
                               f"embedding failed: {exc}", self.model.typed_high)


def load_answer_checker(embedder: Embedder | None = None) -> AnswerChecker:
    """The shipped head with the packaged MiniLM (~4-10 s the first time: the
    sentence-transformers import), or a checker whose findings say why it is unavailable.

    Args:
        embedder: an already loaded MiniLM embedder to reuse; ``None``: load it.
    """
    try:
        model = load_answer_check()
    except AnswerCheckError as exc:
        return AnswerChecker(None, None, f"model not loaded: {exc}")
    try:
        return AnswerChecker(model, embedder or MiniLMEmbedder())
    except (EmbeddingError, AnswerCheckError) as exc:
        return AnswerChecker(None, None, f"embedder not loaded: {exc}")


_shared: dict[str, AnswerChecker | None] = {}
_shared_lock = threading.Lock()


def shared_answer_checker() -> AnswerChecker | None:
    """The runner's default non-answer check, built once per process.

    Follows the setting ``evaluator.answer_check`` (env ``EVALLOOP_EVALUATOR__ANSWER_CHECK``):
    ``minilm`` (the default) gives :func:`load_answer_checker`; ``off`` gives ``None``.
    """
    with _shared_lock:
        if "default" not in _shared:
            from evalloop.settings import Settings

            _shared["default"] = (load_answer_checker()
                                  if Settings().evaluator.answer_check == "minilm" else None)
        return _shared["default"]
