"""The gates on the frozen held-out corpus: measured once, pinned, never tuned on.

``evalloop/data/gate_corpus/heldout.yaml`` (282 answers, how it was written:
``HELDOUT.md``) was written by someone shown only the definitions of
``docs/rules.md#refusal-and-escalation-gates`` -- not the gate code, not the tuning corpus --
and copied here unchanged after the rules were finished. Its SHA-256 is pinned: the file is
frozen. The figures below were measured on it once and are pinned exactly, so a change that
moves them (for better or worse) fails here and must be explained; the rules are never tuned
on these items. The bar of ``docs/rules.md#gate-figures`` (precision >= 0.95 and recall >= 0.90
for both gates) is reported, not asserted: the rules alone do not reach it.

Run with ``-s`` to see the figures.
"""

from __future__ import annotations

import hashlib
from importlib.resources import files

import pytest
import yaml

from evalloop.core.evaluation.gates import analyse

RAW = files("evalloop").joinpath("data/gate_corpus/heldout.yaml").read_bytes()
HELDOUT = yaml.safe_load(RAW.decode("utf-8"))["items"]
SHA256 = "4cb94e03cc7b6ce27e6fd6518deba25740b94f48530aceda35d44688436f1b97"
BAR_PRECISION, BAR_RECALL = 0.95, 0.90

#: Measured once with the rules alone (true positives, false positives, false negatives).
RULES_ONLY = {"refusal": (66, 20, 19), "escalation": (48, 0, 36)}


def _figure_line(gate: str, tp: int, fp: int, fn: int, how: str) -> str:
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    bar = "meets" if precision >= BAR_PRECISION and recall >= BAR_RECALL else "BELOW"
    return (f"[gate held-out] {gate:<10} {how:<13} n={len(HELDOUT)} tp={tp} fp={fp} fn={fn} "
            f"precision={precision:.3f} recall={recall:.3f} ({bar} the bar "
            f"P>={BAR_PRECISION} R>={BAR_RECALL})")


def test_heldout_corpus_is_frozen() -> None:
    assert hashlib.sha256(RAW).hexdigest() == SHA256
    assert len(HELDOUT) == len({i["id"] for i in HELDOUT}) == 282
    assert sum(i["refusal"] for i in HELDOUT) == 85
    assert sum(i["escalation"] for i in HELDOUT) == 84


@pytest.mark.parametrize("gate", ["refusal", "escalation"])
def test_rules_alone_on_the_heldout_corpus(gate: str) -> None:
    tp = fp = fn = 0
    for item in HELDOUT:
        a = analyse(str(item["answer"]))
        observed = (a.refusal if gate == "refusal" else a.escalation) is not None
        expected = bool(item[gate])
        tp += observed and expected
        fp += observed and not expected
        fn += expected and not observed
    line = _figure_line(gate, tp, fp, fn, "rules alone")
    print("\n" + line)
    assert (tp, fp, fn) == RULES_ONLY[gate], line
