"""Fine-tune the packaged MiniLM as the non-answer check's cross-encoder (one command, CPU only).

    PYTHONPATH=shared:. python tools/train_answer_check_ft.py [--dry-run] [--out DIR]

The logistic non-answer check (``minilm-answer-check``, ``tools/train_answer_check.py``) reads
MiniLM sentence vectors and lets friendly non-answers through (chit-chat, congratulations,
trivia: docs/rules.md#non-answer-check). This tool fine-tunes all-MiniLM-L6-v2 as a
cross-encoder on ``[CLS] user [SEP] answer [SEP]`` with one sigmoid output, P(non-answer) --
the gate classifier's network (``evalloop.adapters.gate_finetune_net``) and training loop
(``tools/train_gate_finetune.py``: LoRA rank 16 on every linear layer, lr 1e-3, head lr 1e-3,
batch 16, warm-up then linear decay, seed fixed, 2 threads), each item's loss weighted so that no
question's share of non-answers teaches the label (:func:`question_weights`).

Training data, from ``evalloop/data/gate_corpus/`` (never the held-out corpus, never the fresh
rounds in ``tests/data/fresh/``): ``answer_check_train.yaml`` and ``answer_check_r25.yaml``
(labelled ``answers``; each tester's round is a group) and the answers labelled neither refusal
nor escalation with a user message in ``train_a.yaml`` .. ``train_h.yaml`` (proper answers,
spread over the groups by a hash of their id).

Validation: three folds -- the rounds dealt round-robin, the corpora's answers by hash -- each
predicted by a model trained on the other two; ``high`` is the lowest P (0.05-0.99, step 0.01)
at which at most 1 % of the proper answers are flagged out of fold. The final model is trained
on everything; its LoRA adapters and head go to ``DIR/model.safetensors``, everything else
(``high``, recipe, base model and training files with SHA-256, the validation table) to
``DIR/model.json`` (default DIR: ``evalloop/data/gate_corpus/classifier/answer-check-ft``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from evalloop.adapters import gate_finetune_net as gnet
from tools.train_gate_finetune import DATA, Config, train

NAME = "minilm-answer-check-ft"
OUT = DATA / "classifier" / "answer-check-ft"
RECIPE = Config("lora-r16-1e-3-e3-pair-qbal", "lora", 1e-3, 3, lora_r=16)
FOLDS = 3
MAX_FALSE_FLAGS = 0.01
ROUND_FILES = ("answer_check_train.yaml", "answer_check_r25.yaml")
#: Tried and not shipped (docs/rules.md#non-answer-check): ``--with-relevance`` adds it.
RELEVANCE_FILE = "answer_check_relevance.yaml"
FEEDBACKQA_SOURCES = ("UK", "WHO", "CDC", "Australia")
PROPER_RATINGS = ({"Excellent"}, {"Excellent", "Acceptable"}, {"Acceptable"})


def feedbackqa_items(data_dir: Path) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """FeedbackQA's human-rated validation split as training items: a passage every rater
    called ``Bad`` is a non-answer to its question, one rated only ``Excellent`` and/or
    ``Acceptable`` a proper answer; mixed verdicts are left out. The text is the passage's
    ``reference.section_content``, white space normalised as the replay does
    (:func:`evalloop.replay.feedbackqa.normalise`). The fold is a hash of the question, so a
    question's passages are validated together. Only ``*_feedback_valid.json`` is read (the
    test split is never tuned on: docs/judge.md#feedbackqa).

    Raises:
        FileNotFoundError: ``data_dir/feedbackqa/<Source>_feedback_valid.json`` is missing.
    """
    from evalloop.replay.feedbackqa import normalise

    out: list[dict[str, Any]] = []
    shas: dict[str, str] = {}
    for source in FEEDBACKQA_SOURCES:
        path = data_dir / "feedbackqa" / f"{source}_feedback_valid.json"
        shas[f"feedbackqa/{path.name}"] = gnet.file_sha256(path)
        for n, rec in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            ratings = set(rec["rating"])
            if ratings == {"Bad"}:
                bad = True
            elif ratings in PROPER_RATINGS:
                bad = False
            else:
                continue
            k = int(hashlib.sha256(rec["question"].encode()).hexdigest(), 16) % FOLDS
            out.append({"id": f"fqa-{source.lower()}-{n:04d}", "user": rec["question"],
                        "answer": normalise(rec["passage"]["reference"]["section_content"]),
                        "non_answer": bad, "fold": k})
    return out, shas


def items(data_dir: Path | None = None, *, relevance: bool = False
          ) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Every training item (``user``, ``answer``, ``non_answer``, ``fold``) and the files'
    SHA-256. The shipped weights use neither option (both were tried and not shipped,
    docs/rules.md#non-answer-check): with ``relevance`` the writer's contrast pairs of true but
    irrelevant answers (:data:`RELEVANCE_FILE`) join the rounds; with ``data_dir`` (the shared
    public-data folder) FeedbackQA's rated validation split too (:func:`feedbackqa_items`)."""
    out: list[dict[str, Any]] = []
    shas: dict[str, str] = {}
    rated: list[dict[str, Any]] = []
    if data_dir is not None:
        rated, shas = feedbackqa_items(data_dir)
    for name in ROUND_FILES + ((RELEVANCE_FILE,) if relevance else ()):
        shas[name] = gnet.file_sha256(DATA / name)
        for it in yaml.safe_load((DATA / name).read_text(encoding="utf-8"))["items"]:
            out.append({"id": it["id"], "user": it["user"], "answer": it["answer"],
                        "non_answer": not it["answers"], "round": int(it["round"])})
    rounds = sorted({i["round"] for i in out})  # dealt round-robin in their order
    for it in out:
        it["fold"] = rounds.index(it.pop("round")) % FOLDS
    out.extend(rated)
    for path in sorted(DATA.glob("train_*.yaml")):
        shas[path.name] = gnet.file_sha256(path)
        for it in yaml.safe_load(path.read_text(encoding="utf-8"))["items"]:
            if it["refusal"] or it["escalation"] or not it.get("user"):
                continue
            k = int(hashlib.sha256(it["id"].encode()).hexdigest(), 16) % FOLDS
            out.append({"id": it["id"], "user": it["user"], "answer": it["answer"],
                        "non_answer": False, "fold": k})
    return out, shas


def question_weights(data: list[dict[str, Any]]) -> np.ndarray:
    """Per-item loss weights ``(n,)`` that take the question's prior out of the labels: where
    one question has both proper answers and non-answers, the smaller class's items are
    weighted up so both classes carry the same total weight for that question (the testers'
    rounds asked "How many days of paternity leave do I get?" 15 times, 14 of them to draw a
    non-answer: unweighted, a proper answer to it was flagged). Questions with one class
    only, and the larger class, keep weight 1. Questions are compared case-folded, with
    surrounding white space and a final "?" removed."""
    def key(q: str) -> str:
        return q.casefold().strip().rstrip("?").strip()

    counts: dict[str, list[int]] = {}
    for it in data:
        counts.setdefault(key(it["user"]), [0, 0])[int(it["non_answer"])] += 1
    out = np.ones(len(data))
    for n, it in enumerate(data):
        c = counts[key(it["user"])]
        mine, other = c[int(it["non_answer"])], c[1 - int(it["non_answer"])]
        if mine and other and mine < other:
            out[n] = other / mine
    return out


def _fit(data: list[dict[str, Any]], enc: list[gnet.Encoded]) -> gnet.GateNet:
    y = np.array([[float(i["non_answer"])] for i in data])
    return train(RECIPE, enc, np.zeros((len(data), 4)), y, weights=question_weights(data))


def main(argv: list[str] | None = None) -> int:
    """Validate, train, write; returns the exit code (0)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="validate only; write nothing")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--oof", type=Path, help="write the out-of-fold P(non-answer) per id here")
    ap.add_argument("--reuse-oof", type=Path, help="take the out-of-fold P(non-answer) per id "
                    "from this file (an earlier run's --oof over the same items) instead of "
                    "training the folds again")
    ap.add_argument("--with-relevance", action="store_true", help="add the contrast pairs of "
                    f"true but irrelevant answers ({RELEVANCE_FILE}; tried, not shipped)")
    ap.add_argument("--with-feedbackqa", action="store_true", help="add FeedbackQA's "
                    "human-rated validation split (tried, not shipped)")
    ap.add_argument("--data", type=Path, help="with --with-feedbackqa: the shared public-data "
                    "folder holding feedbackqa/ (default: EVALLOOP_SHARED_DATA or ../shared/data)")
    args = ap.parse_args(argv)
    from evalloop.agent.kb import shared_data_dir

    data_dir = None
    if args.with_feedbackqa:
        data_dir = args.data or shared_data_dir()
        if data_dir is None:
            ap.error("the shared public-data folder (feedbackqa/) was not found: pass --data DIR")
    import torch

    torch.set_num_threads(2)
    data, shas = items(data_dir, relevance=args.with_relevance)
    tok = gnet.load_tokenizer(gnet.base_model_path())
    enc = gnet.encode_pairs(tok, [i["user"] for i in data], [i["answer"] for i in data])
    y = np.array([i["non_answer"] for i in data])
    folds = np.array([i["fold"] for i in data])
    print(f"{len(data)} items, {int(y.sum())} non-answers, {FOLDS} folds: "
          f"{[int((folds == k).sum()) for k in range(FOLDS)]}", flush=True)
    oof = np.zeros(len(data))
    if args.reuse_oof is not None:
        earlier = json.loads(args.reuse_oof.read_text(encoding="utf-8"))
        if set(earlier) != {i["id"] for i in data}:
            ap.error(f"{args.reuse_oof} holds other items than these {len(data)}")
        oof = np.array([earlier[i["id"]] for i in data])
    for k in range(0 if args.reuse_oof is not None else FOLDS):
        t0 = time.time()
        train_idx = np.flatnonzero(folds != k)
        test_idx = np.flatnonzero(folds == k)
        net = _fit([data[i] for i in train_idx], [enc[i] for i in train_idx])
        oof[test_idx] = gnet.predict(net, [enc[i] for i in test_idx],
                                     np.zeros((len(test_idx), 4)))[:, 0]
        print(f"fold {k}: {len(train_idx)} trained, {len(test_idx)} predicted, "
              f"{time.time() - t0:.0f} s", flush=True)
    table = []
    for t in np.round(np.arange(0.05, 1.00, 0.01), 2):
        table.append({"high": float(t), "non_answers": int(y.sum()),
                      "caught": int((oof[y] >= t).sum()), "answers": int((~y).sum()),
                      "flagged": int((oof[~y] >= t).sum())})
    high = next(r["high"] for r in table if r["flagged"] <= MAX_FALSE_FLAGS * r["answers"])
    chosen = next(r for r in table if r["high"] == high)
    print(json.dumps(chosen))
    if args.oof is not None:
        args.oof.write_text(json.dumps({i["id"]: round(float(p), 4) for i, p in zip(
            data, oof, strict=True)}), encoding="utf-8")
    print(f"chosen: high={high}")
    if args.dry_run:
        return 0
    from safetensors.torch import save

    net = _fit(data, enc)
    weights = save(gnet.as_float_mapping(gnet.trainable_state(net)))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "model.safetensors").write_bytes(weights)
    doc = {
        "name": NAME, "high": high, "max_len": gnet.MAX_LEN,
        "config": {"name": RECIPE.name, "mode": RECIPE.mode, "lr": RECIPE.lr,
                   "epochs": RECIPE.epochs, "rules": False, "lora_r": RECIPE.lora_r,
                   "inputs": "pair", "outputs": 1,
                   "weights": "per question, the smaller class weighted up to the larger's "
                              "total (question_weights)"},
        "weights sha256": hashlib.sha256(weights).hexdigest(),
        "base sha256": gnet.file_sha256(gnet.base_model_path() / "model.safetensors"),
        "provenance": {"files": shas, "items": len(data), "non_answers": int(y.sum()),
                       "validation": {"how": f"{FOLDS} folds: tester rounds round-robin, "
                                             "corpora answers by hash of id",
                                      "max_false_flags": MAX_FALSE_FLAGS, "chosen": chosen,
                                      "table": table},
                       "command": "PYTHONPATH=shared:. python tools/train_answer_check_ft.py"},
    }
    (args.out / "model.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
