"""Regression suite: the refusal and escalation gates on the labelled tuning corpus.

``evalloop/data/gate_corpus/corpus.yaml`` holds agent responses (refusals, compliances,
decline-then-comply, terse declines, escalations, refusal + escalation, near-misses of both),
each labelled ``is_refusal`` / ``is_escalation`` by the definitions in
``docs/rules.md#refusal-and-escalation-gates``, in splits ``tuning``, ``holdout``, ``holdout2``,
``tuning2``, ``tuning3``, ``tuning4`` (a tester's false PASSes) and ``tuning5`` (hand-offs by
telling a person, and near-misses). Every split has been
tuned on by now, so this file is a **regression suite**:
the bar is 1.0 -- any item the rules get wrong fails the test with its id and text. How the
gates do on answers nobody tuned for is measured on the frozen held-out corpus
(``tests/unit/test_gates_heldout.py``).

Run with ``-s`` to see the figures per split.
"""

from __future__ import annotations

from importlib.resources import files

import pytest
import yaml

from evalloop.core.evaluation.gates import analyse

BAR = 1.0
CORPUS = yaml.safe_load(
    files("evalloop").joinpath("data/gate_corpus/corpus.yaml").read_text(encoding="utf-8"))


def _confusion(items: list[dict[str, object]], gate: str) -> tuple[int, int, int, list[str]]:
    tp = fp = fn = 0
    wrong = []
    for item in items:
        a = analyse(str(item["text"]))
        observed = (a.refusal if gate == "refusal" else a.escalation) is not None
        expected = bool(item[f"is_{gate}"])
        tp += observed and expected
        fp += observed and not expected
        fn += expected and not observed
        if observed != expected:
            wrong.append(f"{item['id']} ({'FP' if observed else 'FN'}): {item['text']}")
    return tp, fp, fn, wrong


def _figures(items: list[dict[str, object]], gate: str) -> tuple[float, float, list[str]]:
    tp, fp, fn, wrong = _confusion(items, gate)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return precision, recall, wrong


def test_corpus_is_labelled_and_big_enough() -> None:
    ids = [item["id"] for item in CORPUS]
    assert len(ids) == len(set(ids)) == 426
    assert all(isinstance(i["is_refusal"], bool) and isinstance(i["is_escalation"], bool)
               for i in CORPUS)
    kinds = {i["kind"] for i in CORPUS}
    assert kinds == {"refusal", "compliance", "escalation", "refusal+escalation",
                     "near-miss-refusal", "near-miss-escalation", "decline-then-comply"}
    assert sum(i["is_refusal"] for i in CORPUS) == 114
    assert sum(i["is_escalation"] for i in CORPUS) == 103
    assert {i.get("split", "tuning") for i in CORPUS} == {"tuning", "holdout", "holdout2",
                                                           "tuning2", "tuning3", "tuning4",
                                                           "tuning5"}


@pytest.mark.parametrize("gate", ["refusal", "escalation"])
def test_gate_precision_and_recall_meet_the_bar(gate: str) -> None:
    precision, recall, wrong = _figures(CORPUS, gate)
    for split in ("tuning", "holdout", "holdout2", "tuning2", "tuning3", "tuning4",
                  "tuning5"):
        part = [i for i in CORPUS if i.get("split", "tuning") == split]
        p, r, _ = _figures(part, gate)
        print(f"\n[gate corpus] {gate:<10} {split:<8} n={len(part):>3} "
              f"precision={p:.3f} recall={r:.3f}")
    print(f"[gate corpus] {gate:<10} all      n={len(CORPUS):>3} "
          f"precision={precision:.3f} recall={recall:.3f}")
    assert precision >= BAR and recall >= BAR, "\n".join(wrong)
