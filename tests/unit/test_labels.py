"""Cluster labels by c-TF-IDF: exact terms and weights on hand-computed examples."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalloop.core import labels as labels_mod
from evalloop.core.labels import (
    describes,
    label_clusters,
    label_coverage,
    medoid,
    question_labels,
    shorten,
    tokenize,
)

DOCS = {
    "a": ["Refund policy for flights", "refund for cancelled flights"],
    "b": ["Baggage allowance for flights", "baggage fees"],
}


def test_tokenize() -> None:
    assert tokenize("Is COVID-19 testing free? It doesn't say!") == [
        "covid-19", "testing", "free", "say"
    ]
    assert tokenize("A b cd 3x") == ["cd"]


def test_terms_and_weights_exact() -> None:
    # tokens a: refund x2, flights x2, policy, cancelled (6); b: baggage x2, allowance,
    # flights, fees (5). A = 5.5 terms per cluster on average; f(refund)=2, f(flights)=3.
    labels = label_clusters(DOCS)
    assert labels["a"].terms == ("refund", "flights")  # policy/cancelled: in 1 doc only
    assert labels["a"].scores == (
        round(2 / 6 * math.log(1 + 5.5 / 2), 6),
        round(2 / 6 * math.log(1 + 5.5 / 3), 6),
    )
    assert labels["a"].text == "refund, flights"
    assert labels["b"].terms == ("baggage",)
    assert labels["b"].scores == (round(2 / 5 * math.log(1 + 5.5 / 2), 6),)


def test_min_docs_one_and_alphabetical_ties() -> None:
    labels = label_clusters(DOCS, n_terms=3, min_docs=1)
    # cancelled and policy tie at 1/6 * log(6.5): alphabetical order decides
    assert labels["a"].terms == ("refund", "flights", "cancelled")
    assert labels["a"].scores[2] == round(1 / 6 * math.log(6.5), 6)
    assert labels["b"].terms == ("baggage", "allowance", "fees")


def test_singleton_cluster_uses_its_own_words_and_empty_cluster_has_none() -> None:
    labels = label_clusters({"x": ["quarantine hotel quarantine"], "y": [], "z": ["the of"]})
    assert labels["x"].terms == ("quarantine", "hotel")
    assert labels["y"].terms == () and labels["y"].text == "(no terms)"
    assert labels["z"].terms == ()


def test_extra_stop_words_and_determinism() -> None:
    labels = label_clusters(DOCS, extra_stop_words=["Refund"])
    assert labels["a"].terms == ("flights",)
    assert label_clusters(DOCS) == label_clusters(dict(reversed(DOCS.items())))


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="n_terms >= 1"):
        label_clusters(DOCS, n_terms=0)


# --- question labels: the medoid question + question-only terms (docs/review.md#cluster-labels)

QUESTIONS = {
    "travel": ["Can I travel abroad this summer?",
               "Is international travel allowed now?",
               "Do I need a test to travel abroad?"],
    "shops": ["Which businesses remain open?", "Are hair salons open?", ""],
}
VECTORS = {
    "travel": np.array([[1.0, 0.0], [0.8, 0.6], [0.6, 0.8]]),  # the middle one is the medoid
    "shops": np.array([[0.0, 1.0], [0.0, 2.0], [1.0, 0.0]]),  # first two tie; third: no question
}
IDS = {"travel": ["t1", "t2", "t3"], "shops": ["s2", "s1", "s3"]}


def test_medoid_highest_mean_similarity_ties_to_smallest_id() -> None:
    assert medoid(VECTORS["travel"], IDS["travel"]) == 1
    assert medoid(np.array([[0.0, 1.0], [0.0, 2.0]]), ["s2", "s1"]) == 1  # tie: "s1" < "s2"
    assert medoid(np.array([[3.0, 4.0]]), ["only"]) == 0
    assert medoid(np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.1]]), ["a", "b", "c"]) == 1
    with pytest.raises(ValueError, match="expected \\(n, d\\) vectors"):
        medoid(np.zeros((2, 3)), ["a"])


def test_medoid_over_several_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    # blocks of 2 rows: the sum and the means are gathered block by block, same answer
    monkeypatch.setattr(labels_mod, "_BLOCK", 2)
    assert medoid(VECTORS["travel"], IDS["travel"]) == 1
    assert medoid(np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.1]]), ["a", "b", "c"]) == 1
    # 5 rows, 3 blocks: (0.8, 0.6) has the highest mean similarity to the other four
    five = np.array([[1.0, 0.0], [0.0, 1.0], [0.8, 0.6], [0.6, 0.8], [2.0, 0.0]])
    assert medoid(five, ["a", "b", "c", "d", "e"]) == 2


def test_shorten_at_a_word_boundary() -> None:
    assert shorten("  Is   it open?\n") == "Is it open?"
    assert shorten("one two three four", 12) == "one two…"
    assert shorten("abcdefghijkl", 6) == "abcde…"
    assert shorten("x" * 80) == "x" * 80
    long = ("Which businesses are allowed to remain open during the lockdown in my province, "
            "and until when?")
    assert shorten(long) == ("Which businesses are allowed to remain open during the lockdown "
                             "in my province…")
    assert len(shorten(long)) <= 80


def test_question_labels_exact() -> None:
    labels = question_labels(QUESTIONS, VECTORS, IDS)
    # travel terms (questions only): travel x3 (3 docs), abroad x2 (2 docs); the rest once
    assert labels["travel"].terms == ("travel", "abroad")
    assert labels["travel"].text == "Is international travel allowed now? — abroad"
    # shops: "open" in 2 questions; medoid among the two with a question: tie -> id "s1"
    assert labels["shops"].terms == ("open",)
    assert labels["shops"].text == "Are hair salons open?"


def test_question_labels_ignore_comments_and_fall_back_to_terms() -> None:
    labels = question_labels({"e": ["", ""]}, {"e": np.eye(2)}, {"e": ["a", "b"]})
    assert labels["e"].text == "(no terms)"
    with pytest.raises(ValueError, match="expected as many questions, vectors and ids"):
        question_labels({"e": ["q"]}, {"e": np.eye(2)}, {"e": ["a"]})


def test_label_coverage_and_describes() -> None:
    # the reviewer's example: a "schools, funding" label over questions about open businesses
    shops = ["Which businesses remain open?", "Are hair salons open?", "Can shops open?"]
    assert label_coverage("schools, funding, teachers", shops) == 0.0
    assert not describes("schools, funding, teachers", shops)
    assert label_coverage("Are hair salons open? — businesses", shops) == 1.0
    assert describes("Are hair salons open? — businesses", shops)
    assert label_coverage("hair salons", shops) == 1 / 3
    assert not describes("hair salons", shops)
    assert label_coverage("businesses, hair", [*shops[:2], "Is travel allowed?", "x"]) == 0.5
    assert not describes("businesses, hair", [*shops[:2], "Is travel allowed?", "x"])  # half
    assert label_coverage("anything", []) is None and not describes("anything", [])
