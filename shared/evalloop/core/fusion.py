"""Signal fusion: feedback events of one turn -> at most one :class:`NegativeCase`.

Pure (values in, values out). Rules: ``docs/rules.md#negative-cases``; every weight is a
configurable default (``settings.FusionSettings``, passed in as :class:`FusionWeights`):

==========================================  ========  ============================
event                                       negative  confidence (default)
==========================================  ========  ============================
``user_rating`` thumbs down                 yes       ``thumbs_down`` (0.7)
``user_rating`` score <= ``low_score_max``  yes       ``low_score`` (0.7)
``user_rating`` thumbs up                   no (+)    ``thumbs_up`` (0.7)
``user_rating`` score >= ``high_score_min``  no (+)   ``high_score`` (0.7)
``operator_correction``                     yes       ``operator_correction`` (0.95)
``safety_trigger`` (any severity)           yes       ``safety_trigger`` (0.9)
``escalation`` requested_by ``agent``       yes       ``agent_escalation`` (0.6)
``conversation_outcome`` abandoned          yes       ``abandoned_outcome`` (0.3)
``conversation_outcome`` not resolved       yes       ``unresolved_outcome`` (0.3)
==========================================  ========  ============================

No signal (``classify`` returns ``None``): ``agent_response`` and ``agent_changed`` (they carry
the interaction, not a judgement), an escalation requested by the ``user`` ("a user asking for a
human is not by itself a failure") or by ``policy`` (a rule that routes a topic to humans is the
designed behaviour; a gate that fired on the answer is a ``safety_trigger``), a resolved,
not-abandoned conversation, and a neutral score (between ``low_score_max`` and
``high_score_min``). A rating whose thumbs and score contradict each other counts as negative
(a reviewer should see it) with the larger of the two weights.

Fusion of one turn (``fused_confidence``):

* ``p_neg = 1 - prod(1 - c)`` over the negative signals (noisy-OR: independent witnesses),
* ``p_pos = 1 - prod(1 - c)`` over the positive signals,
* ``confidence = p_neg * (1 - disagreement_discount * p_pos)``, rounded to 6 decimals.

With the defaults, one positive rating against one thumbs down gives ``0.7 * (1 - 0.5 * 0.7) =
0.455``; positive ratings can at most halve the confidence, never erase a negative: a turn with
any negative signal is a negative case (one turn is counted once).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Literal, NamedTuple, TypeVar
from uuid import UUID, uuid5

from evalloop.events import (
    AgentChanged,
    AgentResponse,
    ContextChunk,
    ConversationOutcome,
    Escalation,
    FeedbackEvent,
    NegativeCase,
    OperatorCorrection,
    SafetyTrigger,
    UserRating,
)

__all__ = [
    "CASE_NAMESPACE",
    "FusionWeights",
    "Signal",
    "SignalKind",
    "TurnKey",
    "case_id_for",
    "classify",
    "fuse",
    "fused_confidence",
    "turn_key",
]

#: Namespace of the deterministic ``case_id`` (uuid5 over the turn key). Never change it: case
#: ids stored and published before would no longer match a re-fused turn.
CASE_NAMESPACE = UUID("6f1c2a57-3b8e-5d0a-9c41-7e2b5f0d8a13")

SignalKind = Literal[
    "thumbs_down",
    "low_score",
    "thumbs_up",
    "high_score",
    "operator_correction",
    "safety_trigger",
    "agent_escalation",
    "abandoned_outcome",
    "unresolved_outcome",
]


@dataclass(frozen=True, slots=True)
class FusionWeights:
    """Confidence (ratio 0-1) of each signal, and the score thresholds (1-5 scale).

    Same field names as ``evalloop.settings.FusionSettings``; build it with
    ``FusionWeights.from_mapping(settings.fusion.model_dump())``. Defaults:
    ``docs/rules.md#negative-cases`` (the numbers are this project's documented choice).
    """

    thumbs_down: float = 0.7
    low_score: float = 0.7
    low_score_max: int = 2
    thumbs_up: float = 0.7
    high_score: float = 0.7
    high_score_min: int = 4
    operator_correction: float = 0.95
    safety_trigger: float = 0.9
    agent_escalation: float = 0.6
    unresolved_outcome: float = 0.3
    abandoned_outcome: float = 0.3
    disagreement_discount: float = 0.5

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "float" and not 0.0 <= value <= 1.0:
                raise ValueError(f"fusion weight {f.name} must be within 0-1, got {value!r}")
        if not 1 <= self.low_score_max < self.high_score_min <= 5:
            raise ValueError(
                "expected 1 <= low_score_max < high_score_min <= 5, got "
                f"low_score_max={self.low_score_max}, high_score_min={self.high_score_min}"
            )

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> FusionWeights:
        """Build from a mapping such as ``settings.fusion.model_dump()``.

        Raises:
            ValueError: a key is not a weight (settings and core drifted apart) or a value
                is out of range.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"unknown fusion weight(s) {unknown}; expected some of {sorted(known)}"
            )
        return cls(**values)  # type: ignore[arg-type]


class TurnKey(NamedTuple):
    """The turn a feedback event judges: (agent_id, conversation_id, turn_id)."""

    agent_id: str
    conversation_id: str
    turn_id: str


@dataclass(frozen=True, slots=True)
class Signal:
    """What one event says about its turn.

    Attributes:
        kind: the rule that fired (see the module table).
        negative: ``True`` for evidence of a bad answer, ``False`` for positive evidence.
        confidence: weight of the evidence, ratio 0-1.
        event_id: the event it came from.
        occurred_at: the event's time (UTC).
    """

    kind: SignalKind
    negative: bool
    confidence: float
    event_id: UUID
    occurred_at: datetime


def turn_key(event: FeedbackEvent) -> TurnKey:
    """The :class:`TurnKey` of ``event``."""
    return TurnKey(event.agent_id, event.conversation_id, event.turn_id)


def case_id_for(key: TurnKey) -> UUID:
    """Deterministic case id of a turn: uuid5(:data:`CASE_NAMESPACE`, JSON of the key)."""
    return uuid5(CASE_NAMESPACE, json.dumps(list(key), ensure_ascii=False))


def _rating(event: UserRating, w: FusionWeights) -> Signal | None:
    def sig(kind: SignalKind, negative: bool, conf: float) -> Signal:
        return Signal(kind, negative, conf, event.event_id, event.occurred_at)

    negatives: list[tuple[float, SignalKind]] = []
    if event.thumbs == "down":
        negatives.append((w.thumbs_down, "thumbs_down"))
    if event.score is not None and event.score <= w.low_score_max:
        negatives.append((w.low_score, "low_score"))
    if negatives:
        # max(), ties resolved by the order above (thumbs first): deterministic.
        conf, kind = max(negatives, key=lambda item: item[0])
        return sig(kind, True, conf)
    if event.thumbs == "up":
        return sig("thumbs_up", False, w.thumbs_up)
    if event.score is not None and event.score >= w.high_score_min:
        return sig("high_score", False, w.high_score)
    return None


def classify(event: FeedbackEvent, weights: FusionWeights) -> Signal | None:
    """Map one feedback event to the signal it carries about its turn, if any.

    Stable API: the monitor uses it to decide which turns are negative (``signal.negative``)
    without waiting for the recorder's fused case.

    Args:
        event: any feedback event model.
        weights: the configured weights.

    Returns:
        The :class:`Signal`, or ``None`` when the event judges nothing (see the module docs).
    """
    if isinstance(event, UserRating):
        return _rating(event, weights)
    if isinstance(event, OperatorCorrection):
        return Signal(
            "operator_correction", True, weights.operator_correction, event.event_id,
            event.occurred_at,
        )
    if isinstance(event, SafetyTrigger):
        return Signal(
            "safety_trigger", True, weights.safety_trigger, event.event_id, event.occurred_at
        )
    if isinstance(event, Escalation):
        if event.requested_by == "agent":
            return Signal(
                "agent_escalation", True, weights.agent_escalation, event.event_id,
                event.occurred_at,
            )
        return None
    if isinstance(event, ConversationOutcome):
        if event.abandoned:
            return Signal(
                "abandoned_outcome", True, weights.abandoned_outcome, event.event_id,
                event.occurred_at,
            )
        if not event.resolved:
            return Signal(
                "unresolved_outcome", True, weights.unresolved_outcome, event.event_id,
                event.occurred_at,
            )
        return None
    return None


def _noisy_or(confidences: Iterable[float]) -> float:
    return 1.0 - math.prod(1.0 - c for c in confidences)


def fused_confidence(signals: Iterable[Signal], weights: FusionWeights) -> float:
    """Fuse the signals of one turn into one confidence (ratio 0-1; 0.0 = not negative).

    ``p_neg * (1 - disagreement_discount * p_pos)`` with both terms noisy-OR (module docs),
    rounded to 6 decimals. The order of ``signals`` does not change the result.
    """
    sigs = sorted(signals, key=lambda s: (s.negative, s.confidence))
    p_neg = _noisy_or(s.confidence for s in sigs if s.negative)
    if p_neg == 0.0:
        return 0.0
    p_pos = _noisy_or(s.confidence for s in sigs if not s.negative)
    return round(p_neg * (1.0 - weights.disagreement_discount * p_pos), 6)


_T = TypeVar("_T")


def _first(values: Iterable[_T | None]) -> _T | None:
    for value in values:
        if value is not None:
            return value
    return None


def fuse(events: Sequence[FeedbackEvent], weights: FusionWeights) -> NegativeCase | None:
    """Fuse every stored event of one turn into its negative case.

    Args:
        events: the events of ONE turn, in any order (re-fusing the same set gives the same
            case). ``agent_changed`` events are ignored.
        weights: the configured weights.

    Returns:
        ``None`` when no event is a negative signal; otherwise the :class:`NegativeCase` with
        ``case_id`` = :func:`case_id_for` of the turn; ``confidence`` per
        :func:`fused_confidence`; ``occurred_at`` = the earliest ``agent_response`` time, else
        the earliest signal's; ``question``/``answer``/``context_chunks`` each from the
        earliest ``agent_response`` carrying it, else the earliest event carrying it;
        ``comment`` = the distinct comments of negative ratings, oldest first, joined by a
        newline; ``expected_answer`` = the latest operator correction's answer;
        ``signals`` (distinct kinds, negative and positive) and ``evidence_event_ids`` (every
        fused event) sorted.

    Raises:
        ValueError: the events belong to more than one turn.
    """
    turn = [e for e in events if not isinstance(e, AgentChanged)]
    keys = {turn_key(e) for e in turn}
    if len(keys) > 1:
        raise ValueError(f"fuse() takes the events of one turn, got {len(keys)}: {sorted(keys)}")
    if not turn:
        return None
    ordered = sorted(turn, key=lambda e: (e.occurred_at, e.event_id))
    classified = [(e, classify(e, weights)) for e in ordered]
    signals = [s for _, s in classified if s is not None]
    if not any(s.negative for s in signals):
        return None

    responses = [e for e in ordered if isinstance(e, AgentResponse)]
    carriers = responses + [e for e in ordered if not isinstance(e, AgentResponse)]
    occurred_at = responses[0].occurred_at if responses else signals[0].occurred_at
    comments: list[str] = []
    for e, s in classified:
        if isinstance(e, UserRating) and s is not None and s.negative and e.comment:
            if e.comment not in comments:
                comments.append(e.comment)
    corrections = [e for e in ordered if isinstance(e, OperatorCorrection)]
    chunks: list[ContextChunk] | None = _first(e.context_chunks for e in carriers)
    key = keys.pop()
    return NegativeCase(
        case_id=case_id_for(key),
        agent_id=key.agent_id,
        conversation_id=key.conversation_id,
        turn_id=key.turn_id,
        occurred_at=occurred_at,
        confidence=fused_confidence(signals, weights),
        signals=sorted({s.kind for s in signals}),
        evidence_event_ids=sorted(e.event_id for e in ordered),
        question=_first(e.question for e in carriers),
        answer=_first(e.answer for e in carriers),
        comment="\n".join(comments) if comments else None,
        expected_answer=corrections[-1].corrected_answer if corrections else None,
        context_chunks=chunks,
    )
