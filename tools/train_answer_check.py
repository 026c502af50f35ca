"""Train the non-answer check and write its JSON (one command, deterministic).

    PYTHONPATH=shared python tools/train_answer_check.py [--cache emb.npz] [--dry-run]

Reads, from ``evalloop/data/gate_corpus/``: ``answer_check_train.yaml`` (six testers' answers to
questions that should be answered, labelled ``answers`` true/false) and the answers labelled
neither refusal nor escalation in ``train_a.yaml`` .. ``train_h.yaml`` that have a user message
(proper answers, ``answers`` true) -- never the held-out corpus. Embeds answers and messages
with the packaged MiniLM (:class:`evalloop.adapters.embedder.MiniLMEmbedder`), builds the
features of :mod:`evalloop.core.evaluation.answer_check`, and:

1. validates by leaving one group out: each tester's round, and the training corpora's answers
   split into as many groups by a hash of their id; out-of-fold P(non-answer) for every item,
   for each C in (0.3, 1, 3);
2. chooses, per C, ``high``: the lowest threshold (0.50-0.99, step 0.01) at which at most 1 %
   of the proper answers are flagged out of fold; and the C with the highest recall of
   non-answers at its ``high``;
3. for the chosen C, chooses ``typed_high``: the lowest threshold (0.05-``high``, step 0.05) at
   which, out of fold, the answers to questions asking for an amount or a time
   (:data:`~evalloop.core.evaluation.speech_patterns.ASKS_AMOUNT`) that give none
   (:data:`~evalloop.core.evaluation.speech_patterns.GIVES_AMOUNT`) and reach it but not
   ``high`` -- the answers this second rule newly flags -- are at most 1 % of the proper answers
   to such questions;
4. fits on everything and writes ``classifier/answer-check-lr.json``: weights, ``high``,
   ``typed_high``, the validation tables and provenance (files with SHA-256, counts).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from sklearn.linear_model import LogisticRegression

from evalloop.core.evaluation.answer_check import answer_features
from evalloop.core.evaluation.speech_patterns import ASKS_AMOUNT, GIVES_AMOUNT

CORPUS = "data/gate_corpus"
OUT = f"{CORPUS}/classifier/answer-check-lr.json"
MAX_FALSE_FLAGS = 0.01
#: The packaged MiniLM as :class:`evalloop.adapters.embedder.MiniLMEmbedder` names it (the
#: loader refuses a model trained with another embedder).
EMBEDDER, DIMENSION = "minilm:model", 384
CS = (0.3, 1.0, 3.0)


def _items() -> tuple[list[dict[str, Any]], dict[str, str]]:
    root = files("evalloop").joinpath(CORPUS)
    shas: dict[str, str] = {}
    text = root.joinpath("answer_check_train.yaml").read_text(encoding="utf-8")
    shas["answer_check_train.yaml"] = hashlib.sha256(text.encode()).hexdigest()
    items = [{"id": i["id"], "user": i["user"], "answer": i["answer"], "answers": i["answers"],
              "group": f"round {i['round']}"} for i in yaml.safe_load(text)["items"]]
    rounds = sorted({i["group"] for i in items})
    for letter in "abcdefgh":
        name = f"train_{letter}.yaml"
        text = root.joinpath(name).read_text(encoding="utf-8")
        shas[name] = hashlib.sha256(text.encode()).hexdigest()
        for it in yaml.safe_load(text)["items"]:
            if it["refusal"] or it["escalation"] or not it.get("user"):
                continue
            k = int(hashlib.sha256(it["id"].encode()).hexdigest(), 16) % len(rounds)
            items.append({"id": it["id"], "user": it["user"], "answer": it["answer"],
                          "answers": True, "group": f"corpora {k}"})
    return items, shas


def _embed(items: list[dict[str, Any]], cache: Path | None) -> np.ndarray:
    texts = [t for i in items for t in (i["answer"], i["user"])]
    key = hashlib.sha256("\x00".join(texts).encode()).hexdigest()
    if cache is not None and cache.exists():
        saved = np.load(cache)
        if str(saved["key"]) == key:
            return np.asarray(saved["x"])
    from evalloop.adapters.embedder import MiniLMEmbedder

    vecs = MiniLMEmbedder().encode(texts)
    x = np.stack([answer_features(vecs[2 * k], vecs[2 * k + 1]) for k in range(len(items))])
    if cache is not None:
        np.savez(cache, key=key, x=x)
    return x


def _typed_threshold(items: list[dict[str, Any]], y: np.ndarray, oof: np.ndarray,
                     high: float) -> tuple[float, list[dict[str, Any]]]:
    """``typed_high`` (step 3 of the module docstring) and its validation table."""
    asks = np.array([ASKS_AMOUNT.search(i["user"].lower()) is not None for i in items])
    gives = np.array([GIVES_AMOUNT.search(i["answer"].lower()) is not None for i in items])
    typed = asks & ~gives
    proper = int((asks & ~y).sum())
    table = []
    chosen = high
    for t in np.round(np.arange(0.05, high, 0.05), 2):
        newly = typed & (oof >= t) & (oof < high)
        row = {"typed_high": float(t), "asked": int(asks.sum()), "proper_answers": proper,
               "newly_flagged": int((newly & ~y).sum()),
               "newly_caught": int((newly & y).sum()),
               "caught": int(((oof >= high) & y).sum() + (newly & y).sum()),
               "non_answers": int(y.sum())}
        table.append(row)
        if row["newly_flagged"] <= MAX_FALSE_FLAGS * proper and chosen == high:
            chosen = float(t)
    return round(chosen, 2), table


def main(argv: list[str] | None = None) -> int:
    """Train, validate and write the model; returns the exit code (0)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, help="embedding cache (.npz)")
    ap.add_argument("--dry-run", action="store_true", help="validate only; write nothing")
    args = ap.parse_args(argv)
    items, shas = _items()
    x = _embed(items, args.cache)
    y = np.array([not i["answers"] for i in items])  # 1 = non-answer
    groups = [i["group"] for i in items]
    # a round and one share of the corpora's answers leave together
    pairs = list(zip(sorted({g for g in groups if g.startswith("round")}),
                     sorted({g for g in groups if g.startswith("corpora")}), strict=True))
    table = []
    best: tuple[float, float, float] | None = None
    oofs: dict[float, np.ndarray] = {}
    for c in CS:
        oof = np.zeros(len(items))
        for held in pairs:
            test = np.array([g in held for g in groups])
            head = LogisticRegression(C=c, max_iter=5000, class_weight="balanced")
            head.fit(x[~test], y[~test])
            oof[test] = head.predict_proba(x[test])[:, 1]
        oofs[c] = oof
        high = next(t for t in np.arange(0.50, 1.00, 0.01)
                    if (oof[~y] >= t).mean() <= MAX_FALSE_FLAGS)
        recall = float((oof[y] >= high).mean())
        flags = int((oof[~y] >= high).sum())
        table.append({"C": c, "high": round(float(high), 2), "non_answers": int(y.sum()),
                      "caught": int((oof[y] >= high).sum()), "answers": int((~y).sum()),
                      "flagged": flags, "recall": round(recall, 3)})
        if best is None or recall > best[0]:
            best = (recall, c, round(float(high), 2))
    assert best is not None
    _, c, high = best
    for row in table:
        print(json.dumps(row))
    print(f"chosen: C={c}, high={high}")
    typed_high, typed_table = _typed_threshold(items, y, oofs[c], high)
    for row in typed_table:
        print(json.dumps(row))
    print(f"chosen: typed_high={typed_high}")
    if args.dry_run:
        return 0
    head = LogisticRegression(C=c, max_iter=5000, class_weight="balanced").fit(x, y)
    doc = {
        "name": "minilm-answer-check", "embedder": EMBEDDER, "dimension": DIMENSION,
        "coef": [round(float(v), 8) for v in head.coef_[0]],
        "intercept": round(float(head.intercept_[0]), 8), "high": high,
        "typed_high": typed_high,
        "provenance": {
            "recipe": "logistic regression, class_weight balanced, features [a, a*u, a.u]",
            "C": c, "files": shas, "items": len(items), "non_answers": int(y.sum()),
            "validation": {"how": "leave one tester round and one share of the corpora's "
                                  "answers out", "max_false_flags": MAX_FALSE_FLAGS,
                           "table": table, "typed_table": typed_table},
        },
    }
    out = Path(str(files("evalloop").joinpath(OUT)))
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
