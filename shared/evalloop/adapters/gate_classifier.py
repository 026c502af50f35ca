"""The gates' classifier second opinion: load the shipped head, embed answers with MiniLM.

The inference maths and the feature blocks are pure logic in
:mod:`evalloop.core.evaluation.gate_classifier`; this module does the I/O: it reads the model
file from package data (``evalloop/data/gate_corpus/classifier/minilm-lr.json``, JSON, no
pickles) and embeds each answer's texts with an :class:`~evalloop.adapters.embedder.Embedder`
(the packaged MiniLM by default, offline). When the embedder or the file cannot be loaded, or an
answer cannot be embedded, the opinions say why and the rules decide
(``docs/rules.md#second-opinion``).
"""

from __future__ import annotations

import json
import threading
from importlib.resources import files
from pathlib import Path
from typing import Any, Protocol

from evalloop.adapters.embedder import Embedder, MiniLMEmbedder
from evalloop.adapters.gate_opinion import absent_opinions
from evalloop.core.evaluation.gate_classifier import (
    ClassifierError,
    GateClassifier,
    classifier_opinions,
    parse_classifier,
    plan_embeddings,
)
from evalloop.core.evaluation.gates import Analysis, analyse
from evalloop.core.evaluation.second_opinion import Gate, Opinion
from evalloop.errors import EmbeddingError

__all__ = [
    "CLASSIFIER_FILE",
    "ClassifierOpinions",
    "OpinionSource",
    "UnavailableOpinions",
    "load_default_opinions",
    "load_finetuned_opinions",
    "load_gate_classifier",
    "read_model_json",
    "shared_default_opinions",
]

#: The shipped classifier, relative to the ``evalloop`` package.
CLASSIFIER_FILE = "data/gate_corpus/classifier/minilm-lr.json"
_DEFAULT_NAME = "minilm-lr"


def load_gate_classifier(path: Path | None = None) -> GateClassifier:
    """Read a classifier file.

    Args:
        path: a model file; ``None``: the one shipped in the package.

    Returns:
        The parsed classifier.

    Raises:
        ClassifierError: the file is missing, not JSON, or not a classifier.
    """
    try:
        doc = read_model_json(path, CLASSIFIER_FILE, "gate classifier")
    except ValueError as exc:
        raise ClassifierError(str(exc)) from exc
    return parse_classifier(doc)


def read_model_json(path: Path | None, packaged: str, what: str) -> dict[str, Any]:
    """Read a model's JSON document: ``path``, or ``packaged`` (relative to the ``evalloop``
    package) when ``path`` is ``None``.

    Raises:
        ValueError: the file is missing, not UTF-8 JSON, or not a JSON object (the message
            names ``what`` and the file).
    """
    where = str(path) if path is not None else f"evalloop/{packaged}"
    try:
        text = (path.read_text(encoding="utf-8") if path is not None
                else files("evalloop").joinpath(packaged).read_text(encoding="utf-8"))
        doc = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read the {what} {where}: {exc}") from exc
    if not isinstance(doc, dict):
        raise ValueError(f"{what} {where}: expected a JSON object, got {type(doc).__name__}")
    return doc


class OpinionSource(Protocol):
    """Anything that gives both gates' opinions on one answer (the runner's port)."""

    @property
    def model(self) -> str:
        """The model's name, shown in verdicts."""
        ...

    def opinions(self, answer: str, user: str | None = None,
                 analysis: Analysis | None = None) -> dict[Gate, Opinion]:
        """Both gates' opinions; never raises for model failures (the opinion says why)."""
        ...


class ClassifierOpinions:
    """Both gates' opinions from the classifier, one answer at a time (synchronous, CPU-bound:
    call it in a worker thread from async code).

    Attributes:
        classifier: the loaded classifier.
        embedder: the embedder its vectors come from.
    """

    def __init__(self, classifier: GateClassifier, embedder: Embedder) -> None:
        """Pair a classifier with the embedder it was trained with.

        Raises:
            ClassifierError: the embedder is not the one the classifier was trained with.
        """
        if embedder.name != classifier.embedder or embedder.dimension != classifier.dimension:
            raise ClassifierError(
                f"classifier {classifier.name} was trained with {classifier.embedder} "
                f"({classifier.dimension}-d); got {embedder.name} ({embedder.dimension}-d)")
        self.classifier = classifier
        self.embedder = embedder

    @property
    def model(self) -> str:
        """The classifier's name (shown in verdicts)."""
        return self.classifier.name

    def opinions(self, answer: str, user: str | None = None,
                 analysis: Analysis | None = None) -> dict[Gate, Opinion]:
        """P(refusal) and P(escalation) for one answer.

        Args:
            answer: the agent's answer.
            user: the user's message (the case's input), or ``None``.
            analysis: the rules' analysis of ``answer`` (computed when ``None``).

        Returns:
            ``{gate: Opinion}``; when embedding fails, opinions without a probability that
            say why (the rules decide). Never raises for embedder failures.
        """
        plan = plan_embeddings(answer, user)
        try:
            vectors = self.embedder.encode(list(plan.texts))
            return classifier_opinions(self.classifier, vectors, plan,
                                       analysis if analysis is not None else analyse(answer))
        except (EmbeddingError, ClassifierError) as exc:
            return absent_opinions(self.classifier.name, f"embedding failed: {exc}")


class UnavailableOpinions:
    """The stand-in when the classifier could not be loaded: every opinion says why."""

    def __init__(self, model: str, why: str) -> None:
        """``model``: the classifier that was to answer; ``why``: one line."""
        self._model = model
        self.why = why

    @property
    def model(self) -> str:
        """The classifier that was to answer."""
        return self._model

    def opinions(self, answer: str, user: str | None = None,
                 analysis: Analysis | None = None) -> dict[Gate, Opinion]:
        """Opinions without a probability, carrying the reason (the rules decide)."""
        return absent_opinions(self.model, self.why)


def load_default_opinions(embedder: Embedder | None = None) -> ClassifierOpinions | \
        UnavailableOpinions:
    """The default second opinion: the shipped classifier with the packaged MiniLM.

    Loading MiniLM takes ~10 s the first time (sentence-transformers' import); build this once
    per process and share it.

    Args:
        embedder: an already loaded embedder to reuse (must be the packaged MiniLM); ``None``:
            load it.

    Returns:
        The classifier's opinions, or a stand-in whose opinions say why it is unavailable
        (``second opinion unavailable (minilm-lr: ...); rules decide`` in the verdicts).
    """
    try:
        classifier = load_gate_classifier()
    except ClassifierError as exc:
        return UnavailableOpinions(_DEFAULT_NAME, f"classifier not loaded: {exc}")
    try:
        return ClassifierOpinions(classifier, embedder or MiniLMEmbedder())
    except (EmbeddingError, ClassifierError) as exc:
        return UnavailableOpinions(classifier.name, f"embedder not loaded: {exc}")


def load_finetuned_opinions(directory: Path | None = None) -> OpinionSource:
    """The fine-tuned MiniLM cross-encoder (``minilm-ft``), or a stand-in that says why not.

    Args:
        directory: a model directory (``model.json`` + ``model.safetensors``); ``None``: the
            one shipped in the package.

    Returns:
        The model's opinions, or a stand-in whose opinions say why it is unavailable
        (``second opinion unavailable (minilm-ft: model not loaded: ...); rules decide``).
    """
    from evalloop.adapters.gate_finetune import FINETUNE_NAME, FineTuneError, load_finetuned

    try:
        return load_finetuned(directory)
    except FineTuneError as exc:
        return UnavailableOpinions(FINETUNE_NAME, f"model not loaded: {exc}")


_shared: dict[str, OpinionSource | None] = {}
_shared_lock = threading.Lock()


def shared_default_opinions() -> OpinionSource | None:
    """The runner's default second opinion, built once per process.

    Follows the setting ``evaluator.gate_second_opinion`` (env
    ``EVALLOOP_EVALUATOR__GATE_SECOND_OPINION``): ``minilm-ft`` (the default) gives
    :func:`load_finetuned_opinions` (trusted on the gates of
    :data:`evalloop.adapters.gate_finetune.TRUSTED_GATES`); ``classifier`` gives
    :func:`load_default_opinions` (MiniLM is loaded once, on first use, ~10 s); ``off`` gives
    ``None`` (the rules alone). A model that cannot be loaded is not retried: every verdict
    says why it is unavailable.
    """
    with _shared_lock:
        if "default" not in _shared:
            from evalloop.settings import Settings

            wanted = Settings().evaluator.gate_second_opinion
            source: OpinionSource | None = None
            if wanted == "classifier":
                source = load_default_opinions()
            elif wanted == "minilm-ft":
                source = load_finetuned_opinions()
            _shared["default"] = source
        return _shared["default"]
