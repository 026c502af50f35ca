"""Cluster labels by c-TF-IDF: exact terms and weights on hand-computed examples."""

from __future__ import annotations

import math

import pytest

from evalloop.core.labels import label_clusters, tokenize

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
