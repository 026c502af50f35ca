"""The non-answer check's I/O: load the shipped head, embed answers and messages with MiniLM.

The maths is pure logic in :mod:`evalloop.core.evaluation.answer_check`; this module reads the
model file from package data (``evalloop/data/gate_corpus/classifier/answer-check-lr.json``,
JSON, no pickles) and embeds with an :class:`~evalloop.adapters.embedder.Embedder` (the
packaged MiniLM by default, offline). When the file or the embedder cannot be loaded, or an
answer cannot be embedded, the check says why and the gates decide without it
(``docs/rules.md#non-answer-check``).
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any

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
    "ANSWER_CHECK_FT_DIR",
    "AnswerChecker",
    "BothAnswerCheckers",
    "FineTunedAnswerChecker",
    "load_answer_check",
    "load_answer_checker",
    "load_answer_checker_ft",
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
                 why: str | None = None, name: str | None = None) -> None:
        """Pair a head with the embedder it was trained with (use :func:`load_answer_checker`);
        ``name`` names a stand-in without a model (default ``minilm-answer-check``).

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
        self._name = name or _NAME

    @property
    def name(self) -> str:
        """The head's name (shown in verdicts)."""
        return self.model.name if self.model is not None else self._name

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


#: The fine-tuned cross-encoder (``tools/train_answer_check_ft.py``), relative to the package.
ANSWER_CHECK_FT_DIR = "data/gate_corpus/classifier/answer-check-ft"


class FineTunedAnswerChecker:
    """The non-answer check as a fine-tuned MiniLM cross-encoder over (user's message, answer)
    with one sigmoid output, P(non-answer) (docs/rules.md#non-answer-check). Synchronous and
    CPU-bound, one answer at a time per instance (call it in a worker thread from async code).

    Attributes:
        name: the model's name (``minilm-answer-check-ft``), shown in verdicts.
        high: the threshold chosen by validation (at most 1 % of proper answers flagged).
        sidecar: the parsed ``model.json``.
    """

    def __init__(self, net: Any, tokenizer: Any, sidecar: dict[str, Any]) -> None:
        """Wrap a loaded network (use :func:`load_answer_checker_ft`)."""
        self._net = net
        self._tokenizer = tokenizer
        self.sidecar = sidecar
        self.name = str(sidecar.get("name", "minilm-answer-check-ft"))
        self.high = float(sidecar["high"])
        self._lock = threading.Lock()

    def check(self, answer: str, user: str) -> AnswerCheck:
        """P(the answer answers nothing of the user's message), 0-1, against :attr:`high`.

        Returns:
            The finding; without a probability (``unscored`` says why) when the model fails on
            this answer. Never raises for model failures.
        """
        from evalloop.adapters import gate_finetune_net as gnet

        try:
            with self._lock:
                enc = gnet.encode_pairs(self._tokenizer, [user], [answer],
                                        int(self.sidecar.get("max_len", gnet.MAX_LEN)))
                p = float(gnet.predict(self._net, enc, [[0.0] * 4])[0, 0])
        except Exception as exc:  # torch / tokenizer errors
            return AnswerCheck(self.name, None, self.high, f"model failed: {exc}")
        return AnswerCheck(self.name, p, self.high)


def load_answer_checker_ft(directory: Path | None = None) -> FineTunedAnswerChecker:
    """Load the fine-tuned non-answer check: the packaged MiniLM + the shipped LoRA adapters and
    head, both checked by SHA-256 (a few seconds: torch and transformers are imported here).

    Args:
        directory: a model directory with ``model.json`` and ``model.safetensors``; ``None``:
            the one shipped in the package (:data:`ANSWER_CHECK_FT_DIR`).

    Raises:
        AnswerCheckError: a file is missing or corrupt, the base model is not the one it was
            trained on, the weights do not fit the recipe, or ``high`` is not in (0, 1).
    """
    from evalloop.adapters.gate_finetune import FineTuneError, load_net, read_sidecar

    try:
        sidecar, weights, where = read_sidecar(directory, ANSWER_CHECK_FT_DIR)
        high = sidecar.get("high")
        if not isinstance(high, (int, float)) or not 0.0 < float(high) < 1.0:
            raise FineTuneError(f"{where}/model.json: expected high in (0, 1), got {high!r}")
        net, tokenizer = load_net(sidecar, weights, where)
    except FineTuneError as exc:
        raise AnswerCheckError(str(exc)) from exc
    return FineTunedAnswerChecker(net, tokenizer, sidecar)


def load_answer_checker(embedder: Embedder | None = None) -> AnswerChecker:
    """The shipped head with the packaged MiniLM (~4-10 s the first time: the
    sentence-transformers import), or a checker whose findings say why it is unavailable.

    Args:
        embedder: an already loaded MiniLM embedder to reuse; ``None``: load it.
    """
    try:
        model = load_answer_check()
    except AnswerCheckError as exc:
        return AnswerChecker(None, None, f"model not loaded: {exc}", "minilm-answer-check-ft")
    try:
        return AnswerChecker(model, embedder or MiniLMEmbedder())
    except (EmbeddingError, AnswerCheckError) as exc:
        return AnswerChecker(None, None, f"embedder not loaded: {exc}")


class BothAnswerCheckers:
    """The fine-tuned check and the logistic head on every answer: the finding is the
    fine-tuned one's with the logistic one's as ``also``, and either may fail the case
    (docs/rules.md#non-answer-check: each lets through non-answers the other catches).
    Synchronous and CPU-bound (call it in a worker thread from async code).

    Attributes:
        first: the fine-tuned check (or a stand-in that says why it is unavailable).
        second: the logistic head.
        name: both names, ``"<first> + <second>"``, shown in the run summary.
        why: why neither is available, or ``None``.
    """

    def __init__(self, first: FineTunedAnswerChecker | AnswerChecker,
                 second: AnswerChecker) -> None:
        """Pair the two (use :func:`shared_answer_checker` with ``answer_check=both``)."""
        self.first = first
        self.second = second
        self.name = f"{first.name} + {second.name}"
        whys = [f"{c.name}: {getattr(c, 'why', None)}" for c in (first, second)
                if getattr(c, "why", None)]
        self.why = "; ".join(whys) if len(whys) == 2 else None

    def describe(self) -> str:
        """One line for the run summary: both names, or the one that runs and why the other
        does not."""
        down = [c for c in (self.first, self.second) if getattr(c, "why", None)]
        if len(down) == 1:
            up = self.second if down[0] is self.first else self.first
            return f"{up.name} ({down[0].name} unavailable: {getattr(down[0], 'why', '')})"
        return self.name

    def check(self, answer: str, user: str) -> AnswerCheck:
        """Both findings on one answer: the first's, with the second's as ``also``.

        Returns:
            The finding; a check that is unavailable or fails says why in its ``unscored``
            (the other still counts). Never raises for model failures.
        """
        return dataclasses.replace(self.first.check(answer, user),
                                   also=self.second.check(answer, user))


_shared: dict[str, AnswerChecker | FineTunedAnswerChecker | BothAnswerCheckers | None] = {}
_shared_lock = threading.Lock()


def _fine_tuned_or_why() -> FineTunedAnswerChecker | AnswerChecker:
    try:
        return load_answer_checker_ft()
    except AnswerCheckError as exc:
        return AnswerChecker(None, None, f"model not loaded: {exc}", "minilm-answer-check-ft")


def shared_answer_checker() -> AnswerChecker | FineTunedAnswerChecker | BothAnswerCheckers | None:
    """The runner's default non-answer check, built once per process.

    Follows the setting ``evaluator.answer_check`` (env ``EVALLOOP_EVALUATOR__ANSWER_CHECK``):
    ``both`` (the default) gives :class:`BothAnswerCheckers` of the fine-tuned check and the
    logistic head; ``minilm-ft`` gives :func:`load_answer_checker_ft` alone (or, when it cannot
    be loaded, a checker whose findings say why: the gates then decide without it); ``minilm``
    gives :func:`load_answer_checker` alone; ``off`` gives ``None``.
    """
    with _shared_lock:
        if "default" not in _shared:
            from evalloop.settings import Settings

            which = Settings().evaluator.answer_check
            if which == "both":
                _shared["default"] = BothAnswerCheckers(_fine_tuned_or_why(),
                                                        load_answer_checker())
            elif which == "minilm-ft":
                _shared["default"] = _fine_tuned_or_why()
            else:
                _shared["default"] = load_answer_checker() if which == "minilm" else None
        return _shared["default"]
