"""Signal fusion (core/fusion.py): every rule of docs/rules.md#negative-cases, with exact values."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid5

import pytest

from evalloop.core.fusion import (
    CASE_NAMESPACE,
    FusionWeights,
    Signal,
    TurnKey,
    case_id_for,
    classify,
    fuse,
    fused_confidence,
    turn_key,
)
from evalloop.events import ContextChunk, FeedbackEvent, NegativeCase, parse_event
from evalloop.settings import FusionSettings

W = FusionWeights()
T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def uid(n: int) -> UUID:
    return UUID(int=n)


def ev(event_type: str, n: int, *, minutes: int = 0, turn: str = "t1", **fields: Any) -> Any:
    """A valid event of ``event_type`` with event_id UUID(int=n) at T0 + minutes."""
    data: dict[str, Any] = {
        "event_type": event_type,
        "event_id": str(uid(n)),
        "agent_id": "cdc",
        "conversation_id": "c1",
        "turn_id": turn,
        "occurred_at": (T0 + timedelta(minutes=minutes)).isoformat(),
        **fields,
    }
    return parse_event(data)


def response(n: int = 1, **kw: Any) -> Any:
    kw.setdefault("question", "Can I travel?")
    kw.setdefault("answer", "Yes.")
    return ev("agent_response", n, **kw)


def rating(n: int, **kw: Any) -> Any:
    return ev("user_rating", n, **kw)


# ------------------------------------------------------------------ weights


def test_weights_match_settings_field_for_field() -> None:
    weights = FusionWeights.from_mapping(FusionSettings().model_dump())
    assert weights == FusionWeights()


def test_weights_from_mapping_rejects_unknown_keys() -> None:
    with pytest.raises(ValueError, match=r"unknown fusion weight\(s\) \['thumbs_sideways'\]"):
        FusionWeights.from_mapping({"thumbs_sideways": 0.5})


def test_weights_reject_out_of_range_confidence() -> None:
    with pytest.raises(ValueError, match=r"weight safety_trigger must be within 0-1, got 1\.5"):
        FusionWeights(safety_trigger=1.5)


def test_weights_reject_overlapping_score_bands() -> None:
    with pytest.raises(ValueError, match="low_score_max=3, high_score_min=3"):
        FusionWeights(low_score_max=3, high_score_min=3)


# ------------------------------------------------------------------ classify


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"thumbs": "down"}, ("thumbs_down", True, 0.7)),
        ({"thumbs": "up"}, ("thumbs_up", False, 0.7)),
        ({"score": 1}, ("low_score", True, 0.7)),
        ({"score": 2}, ("low_score", True, 0.7)),
        ({"score": 3}, None),
        ({"score": 4}, ("high_score", False, 0.7)),
        ({"score": 5}, ("high_score", False, 0.7)),
        ({"thumbs": "up", "score": 1}, ("low_score", True, 0.7)),  # contradiction -> negative
        ({"thumbs": "down", "score": 5}, ("thumbs_down", True, 0.7)),
        ({"thumbs": "down", "score": 1}, ("thumbs_down", True, 0.7)),  # tie: thumbs first
    ],
)
def test_classify_ratings(fields: dict[str, Any], expected: tuple[str, bool, float] | None) -> None:
    event = rating(7, minutes=3, **fields)
    sig = classify(event, W)
    if expected is None:
        assert sig is None
    else:
        assert sig == Signal(expected[0], expected[1], expected[2], uid(7),  # type: ignore[arg-type]
                             T0 + timedelta(minutes=3))


def test_classify_rating_contradiction_takes_larger_weight() -> None:
    weights = FusionWeights(thumbs_down=0.4, low_score=0.8)
    sig = classify(rating(1, thumbs="down", score=2), weights)
    assert sig is not None and (sig.kind, sig.confidence) == ("low_score", 0.8)


def test_classify_low_score_max_is_configurable() -> None:
    weights = FusionWeights(low_score_max=3)
    sig = classify(rating(1, score=3), weights)
    assert sig is not None and (sig.kind, sig.negative) == ("low_score", True)


@pytest.mark.parametrize(
    ("event_type", "fields", "expected"),
    [
        ("operator_correction", {"corrected_answer": "No."}, ("operator_correction", True, 0.95)),
        (
            "safety_trigger",
            {"gate": "pii", "category": "privacy", "severity": "low", "action": "logged"},
            ("safety_trigger", True, 0.9),
        ),
        ("escalation", {"requested_by": "agent"}, ("agent_escalation", True, 0.6)),
        ("escalation", {"requested_by": "user"}, None),
        ("escalation", {"requested_by": "policy"}, None),
        ("conversation_outcome", {"resolved": False}, ("unresolved_outcome", True, 0.3)),
        (
            "conversation_outcome",
            {"resolved": False, "abandoned": True},
            ("abandoned_outcome", True, 0.3),
        ),
        (
            "conversation_outcome",
            {"resolved": True, "abandoned": True},
            ("abandoned_outcome", True, 0.3),
        ),
        ("conversation_outcome", {"resolved": True}, None),
        ("agent_response", {"answer": "x"}, None),
        ("agent_changed", {"change_kind": "model_version", "new_version": "v2"}, None),
    ],
)
def test_classify_other_events(
    event_type: str, fields: dict[str, Any], expected: tuple[str, bool, float] | None
) -> None:
    sig = classify(ev(event_type, 9, **fields), W)
    if expected is None:
        assert sig is None
    else:
        assert sig is not None
        assert (sig.kind, sig.negative, sig.confidence, sig.event_id) == (*expected, uid(9))


def test_classify_uses_configured_weights() -> None:
    weights = FusionWeights(
        thumbs_down=0.11, operator_correction=0.22, safety_trigger=0.33, agent_escalation=0.44,
        unresolved_outcome=0.05, abandoned_outcome=0.06, thumbs_up=0.07, high_score=0.08,
    )
    got = [
        classify(e, weights).confidence  # type: ignore[union-attr]
        for e in (
            rating(1, thumbs="down"),
            ev("operator_correction", 2, corrected_answer="No."),
            ev("safety_trigger", 3, gate="g", category="c", severity="high", action="blocked"),
            ev("escalation", 4, requested_by="agent"),
            ev("conversation_outcome", 5, resolved=False),
            ev("conversation_outcome", 6, resolved=False, abandoned=True),
            rating(7, thumbs="up"),
            rating(8, score=5),
        )
    ]
    assert got == [0.11, 0.22, 0.33, 0.44, 0.05, 0.06, 0.07, 0.08]


# ------------------------------------------------------------------ fused confidence


def sig(kind: str, negative: bool, conf: float, n: int = 1) -> Signal:
    return Signal(kind, negative, conf, uid(n), T0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("signals", "expected"),
    [
        ([], 0.0),
        ([sig("thumbs_up", False, 0.7)], 0.0),
        ([sig("thumbs_down", True, 0.7)], 0.7),
        ([sig("thumbs_down", True, 0.7), sig("low_score", True, 0.7)], 0.91),  # 1 - 0.3*0.3
        ([sig("operator_correction", True, 0.95), sig("safety_trigger", True, 0.9)], 0.995),
        ([sig("abandoned_outcome", True, 0.3)], 0.3),
        ([sig("thumbs_down", True, 0.7), sig("thumbs_up", False, 0.7)], 0.455),  # 0.7*(1-.35)
        (
            [sig("operator_correction", True, 0.95), sig("thumbs_up", False, 0.7)],
            0.6175,  # 0.95 * (1 - 0.5*0.7)
        ),
        (
            # two positives: p_pos = 1 - 0.3*0.3 = 0.91; 0.7 * (1 - 0.455) = 0.3815
            [sig("thumbs_down", True, 0.7), sig("thumbs_up", False, 0.7),
             sig("high_score", False, 0.7)],
            0.3815,
        ),
        (
            # 1 - 0.3*0.7*0.4 = 0.916
            [sig("thumbs_down", True, 0.7), sig("unresolved_outcome", True, 0.3),
             sig("agent_escalation", True, 0.6)],
            0.916,
        ),
    ],
)
def test_fused_confidence_exact(signals: list[Signal], expected: float) -> None:
    assert fused_confidence(signals, W) == expected


def test_fused_confidence_is_order_independent() -> None:
    signals = [
        sig("thumbs_down", True, 0.7, 1), sig("unresolved_outcome", True, 0.3, 2),
        sig("agent_escalation", True, 0.6, 3), sig("thumbs_up", False, 0.7, 4),
    ]
    results = {fused_confidence(p, W) for p in itertools.permutations(signals)}
    assert results == {0.5954}  # (1 - 0.3*0.7*0.4) * (1 - 0.5*0.7)


def test_fused_confidence_discount_is_configurable() -> None:
    signals = [sig("thumbs_down", True, 0.7), sig("thumbs_up", False, 0.7)]
    assert fused_confidence(signals, FusionWeights(disagreement_discount=0.0)) == 0.7
    assert fused_confidence(signals, FusionWeights(disagreement_discount=1.0)) == 0.21


# ------------------------------------------------------------------ case ids


def test_case_id_is_uuid5_over_the_turn_key() -> None:
    key = TurnKey("cdc", "c1", "t1")
    assert case_id_for(key) == uuid5(CASE_NAMESPACE, json.dumps(["cdc", "c1", "t1"]))
    # pinned: a changed namespace would orphan every stored case
    assert case_id_for(key) == UUID("aa432807-1597-5737-9605-fb3a12dba30e")


def test_case_id_distinguishes_ambiguous_concatenations() -> None:
    assert case_id_for(TurnKey("a", "b:c", "d")) != case_id_for(TurnKey("a", "b", "c:d"))


def test_turn_key_of_an_event() -> None:
    assert turn_key(rating(1, thumbs="down", turn="t9")) == TurnKey("cdc", "c1", "t9")


# ------------------------------------------------------------------ fuse


def test_fuse_without_negative_signal_is_none() -> None:
    events: list[FeedbackEvent] = [
        response(1),
        rating(2, thumbs="up"),
        rating(3, score=3),
        ev("escalation", 4, requested_by="user"),
        ev("conversation_outcome", 5, resolved=True),
    ]
    assert fuse(events, W) is None
    assert fuse([], W) is None
    assert fuse([ev("agent_changed", 6, change_kind="system_prompt", new_version="p2")], W) is None


def test_fuse_full_turn_exact_case() -> None:
    chunks = [{"id": "kb-1", "text": "Travel is allowed.", "source": "cdc"}]
    events: list[FeedbackEvent] = [
        rating(30, minutes=5, thumbs="down", comment="wrong country"),
        response(10, minutes=1, context_chunks=chunks),
        ev("operator_correction", 20, minutes=9, corrected_answer="Only with a test."),
        ev("operator_correction", 21, minutes=7, corrected_answer="older correction"),
        rating(40, minutes=6, thumbs="up", comment="fine by me"),
    ]
    case = fuse(events, W)
    key = TurnKey("cdc", "c1", "t1")
    p_neg = 1 - 0.3 * 0.05 * 0.05  # thumbs down + two corrections
    assert case == NegativeCase(
        case_id=case_id_for(key),
        agent_id="cdc",
        conversation_id="c1",
        turn_id="t1",
        occurred_at=T0 + timedelta(minutes=1),
        confidence=round(p_neg * (1 - 0.5 * 0.7), 6),
        signals=["operator_correction", "thumbs_down", "thumbs_up"],
        evidence_event_ids=[uid(10), uid(20), uid(21), uid(30), uid(40)],
        question="Can I travel?",
        answer="Yes.",
        comment="wrong country",
        expected_answer="Only with a test.",
        context_chunks=[ContextChunk(id="kb-1", text="Travel is allowed.", source="cdc")],
    )
    assert case is not None and case.confidence == 0.649513


def test_fuse_is_independent_of_input_order() -> None:
    events: list[FeedbackEvent] = [
        response(1),
        rating(2, minutes=1, score=1, comment="a"),
        rating(3, minutes=2, thumbs="down", comment="b"),
        ev("safety_trigger", 4, minutes=3, gate="g", category="c", severity="high",
           action="blocked"),
    ]
    cases = [fuse(list(p), W) for p in itertools.permutations(events)]
    assert all(c == cases[0] for c in cases) and len(cases) == 24
    assert cases[0] is not None and cases[0].comment == "a\nb"


def test_fuse_without_agent_response_uses_earliest_signal_and_any_carrier() -> None:
    events: list[FeedbackEvent] = [
        ev("conversation_outcome", 3, minutes=20, resolved=False),
        rating(2, minutes=10, thumbs="up", question="Q from rating", answer="A from rating"),
        ev("escalation", 1, minutes=2, requested_by="user", question="Q from escalation"),
    ]
    case = fuse(events, W)
    assert case is not None
    # the user escalation judges nothing; the earliest SIGNAL is the thumbs up at +10 min
    assert case.occurred_at == T0 + timedelta(minutes=10)
    assert case.question == "Q from escalation"  # earliest event carrying a question
    assert case.answer == "A from rating"
    assert case.confidence == round(0.3 * (1 - 0.35), 6) == 0.195
    assert case.signals == ["thumbs_up", "unresolved_outcome"]
    assert case.evidence_event_ids == [uid(1), uid(2), uid(3)]
    assert case.comment is None and case.expected_answer is None and case.context_chunks is None


def test_fuse_prefers_agent_response_interaction_over_earlier_events() -> None:
    events: list[FeedbackEvent] = [
        rating(1, minutes=0, thumbs="down", question="rating's Q", answer="rating's A",
               context_chunks=[{"id": "r"}]),
        response(2, minutes=5, question="served Q", answer="served A",
                 context_chunks=[{"id": "s", "text": "S"}]),
    ]
    case = fuse(events, W)
    assert case is not None
    assert (case.question, case.answer) == ("served Q", "served A")
    assert case.context_chunks == [ContextChunk(id="s", text="S")]
    assert case.occurred_at == T0 + timedelta(minutes=5)


def test_fuse_falls_back_per_field_when_agent_response_lacks_it() -> None:
    events: list[FeedbackEvent] = [
        ev("agent_response", 1, answer="served A"),
        rating(2, minutes=1, thumbs="down", question="rating's Q"),
    ]
    case = fuse(events, W)
    assert case is not None and (case.question, case.answer) == ("rating's Q", "served A")


def test_fuse_comments_from_negative_ratings_only_distinct_oldest_first() -> None:
    events: list[FeedbackEvent] = [
        rating(1, minutes=3, thumbs="down", comment="second"),
        rating(2, minutes=1, score=1, comment="first"),
        rating(3, minutes=4, score=2, comment="first"),
        rating(4, minutes=2, thumbs="up", comment="positive comment"),
        rating(5, minutes=5, score=3, comment="neutral comment"),
        rating(6, minutes=6, thumbs="down"),
    ]
    case = fuse(events, W)
    assert case is not None and case.comment == "first\nsecond"


def test_fuse_latest_correction_wins_ties_by_event_id() -> None:
    events: list[FeedbackEvent] = [
        ev("operator_correction", 2, minutes=5, corrected_answer="B"),
        ev("operator_correction", 1, minutes=5, corrected_answer="A"),
    ]
    case = fuse(events, W)
    assert case is not None and case.expected_answer == "B"
    assert case.confidence == round(1 - 0.05 * 0.05, 6) == 0.9975


def test_fuse_ignores_agent_changed_and_rejects_mixed_turns() -> None:
    events: list[FeedbackEvent] = [
        rating(1, thumbs="down"),
        ev("agent_changed", 2, change_kind="knowledge_base", new_version="kb2"),
    ]
    case = fuse(events, W)
    assert case is not None and case.evidence_event_ids == [uid(1)]
    with pytest.raises(ValueError, match="one turn, got 2"):
        fuse([rating(1, thumbs="down"), rating(2, thumbs="down", turn="t2")], W)


def test_fuse_weak_negative_alone_is_a_case() -> None:
    case = fuse([response(1), ev("conversation_outcome", 2, resolved=True, abandoned=True)], W)
    assert case is not None
    assert (case.confidence, case.signals) == (0.3, ["abandoned_outcome"])
