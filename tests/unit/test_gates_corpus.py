"""Precision and recall of the refusal and escalation gates on the labelled corpus.

``evalloop/data/gate_corpus/corpus.yaml`` holds agent responses (refusals, compliances,
escalations, refusal + escalation, near-misses of both, varied phrasings), each labelled
``is_refusal`` / ``is_escalation``, in splits:

* ``tuning`` (132): written first; the detector was developed on them (two were added later
  from the reference agent's replies).
* ``holdout`` (42): written afterwards, measured once before any change: refusal precision
  0.917 / recall 0.733, escalation precision 0.923 / recall 0.923. The misses were generalised
  into rules (progressive "won't be giving", "off-limits for me", "my guidelines don't allow
  me", "let's", gerund subjects vs announcements, candour idioms), not patched item by item.
* ``holdout2`` (30): written after all of that, measured once before any change: refusal
  precision 1.000 / recall 0.800, escalation precision 1.000 / recall 0.600 -- the detector
  is precise, and its recall on unseen phrasing is the weak side. The misses became rules
  ("I'm going to decline", "turn it down", "I'll ask a member of HR to", passive "has been
  escalated", "the right person is", pronoun objects "connect you with them").

The bar: precision and recall >= 0.95 for each gate over the whole corpus. Run with ``-s`` to
see the figures per split.
"""

from __future__ import annotations

from importlib.resources import files

import pytest
import yaml

from evalloop.core.evaluation.gates import analyse

BAR = 0.95
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
    assert len(ids) == len(set(ids)) == 204
    assert all(isinstance(i["is_refusal"], bool) and isinstance(i["is_escalation"], bool)
               for i in CORPUS)
    kinds = {i["kind"] for i in CORPUS}
    assert kinds == {"refusal", "compliance", "escalation", "refusal+escalation",
                     "near-miss-refusal", "near-miss-escalation"}
    assert sum(i["is_refusal"] for i in CORPUS) == 62
    assert sum(i["is_escalation"] for i in CORPUS) == 57


@pytest.mark.parametrize("gate", ["refusal", "escalation"])
def test_gate_precision_and_recall_meet_the_bar(gate: str) -> None:
    precision, recall, wrong = _figures(CORPUS, gate)
    for split in ("tuning", "holdout", "holdout2"):
        part = [i for i in CORPUS if i.get("split", "tuning") == split]
        p, r, _ = _figures(part, gate)
        print(f"\n[gate corpus] {gate:<10} {split:<8} n={len(part):>3} "
              f"precision={p:.3f} recall={r:.3f}")
    print(f"[gate corpus] {gate:<10} all      n={len(CORPUS):>3} "
          f"precision={precision:.3f} recall={recall:.3f}")
    assert precision >= BAR and recall >= BAR, "\n".join(wrong)
