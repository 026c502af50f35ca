"""What each piece of feedback on a turn says, and how strongly: the inputs of candidate
ranking's *severity* and *agreement* (``docs/review.md#ranking``). Pure: values in, values out.

Each signal becomes a :class:`Mark` -- negative, positive or neutral, with a **severity** 0-1
read from the scale the event carries:

=============================================  =========  ===================================
signal                                         direction  severity
=============================================  =========  ===================================
``user_rating`` with a 1-5 ``score``           by score   ``(5 - score) / 4``: 1 -> 1.0,
                                                          2 -> 0.75, 3 -> 0.5 (neutral),
                                                          4 -> 0.25, 5 -> 0
``user_rating`` thumbs only                    by thumbs  down 1.0, up 0
``operator_correction``                        negative   1.0 (a person rewrote the answer)
``safety_trigger``                             negative   critical/high 1.0, medium 0.75,
                                                          low 0.5
``escalation`` requested by the agent          negative   0.75
``conversation_outcome`` abandoned/unresolved  negative   0.5
=============================================  =========  ===================================

A score wins over thumbs when a rating carries both (it is the finer scale). A score is
negative at or below ``low_max`` (2) and positive at or above ``high_min`` (4), the fusion
defaults (``evalloop.core.fusion``).

A turn's :class:`Profile`: ``severity`` = the mean severity of its negative marks (how bad
those who disliked it said it was); ``agreement`` = negative marks / (negative + positive)
(neutral marks abstain): Bad / Excellent / Excellent is 1/3, not three pieces of evidence.
``liked`` is true when positive marks outnumber negative ones: such a turn is not a candidate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Mark", "Profile", "mark_of", "profile_of"]

Direction = Literal["negative", "positive", "neutral"]
_SAFETY = {"critical": 1.0, "high": 1.0, "medium": 0.75, "low": 0.5}


@dataclass(frozen=True, slots=True)
class Mark:
    """One signal's judgement of a turn.

    Attributes:
        direction: ``negative`` / ``positive`` / ``neutral``.
        severity: 0-1 (module table).
        label: short human text for explanations, e.g. ``"score 1/5"``, ``"thumbs down"``.
    """

    direction: Direction
    severity: float
    label: str


@dataclass(frozen=True, slots=True)
class Profile:
    """The marks of one turn, summarised (module docstring).

    Attributes:
        negative, positive, neutral: mark counts.
        severity: mean severity of the negative marks (``None`` without any).
        agreement: ``negative / (negative + positive)`` (``None`` when both are 0).
        labels: every mark's label, in input order.
    """

    negative: int
    positive: int
    neutral: int
    severity: float | None
    agreement: float | None
    labels: tuple[str, ...]

    @property
    def liked(self) -> bool:
        """More positive than negative marks: most who judged the turn liked it."""
        return self.positive > self.negative

    def as_dict(self) -> dict[str, object]:
        """JSON-ready dict (stored as ``review_queue.rating_profile``)."""
        return {"negative": self.negative, "positive": self.positive, "neutral": self.neutral,
                "severity": self.severity, "agreement": self.agreement,
                "labels": list(self.labels)}


def mark_of(event_type: str, payload: Mapping[str, Any], *, low_max: int = 2,
            high_min: int = 4) -> Mark | None:
    """The :class:`Mark` of one stored feedback event (``None``: it judges nothing, e.g. an
    ``agent_response`` or a user's own request for a human).

    Args:
        event_type: the event's type.
        payload: its fields (``score``, ``thumbs``, ``severity``, ``requested_by``,
            ``abandoned``, ``resolved``).
        low_max, high_min: score bounds of negative / positive ratings.
    """
    if event_type == "user_rating":
        score = payload.get("score")
        if isinstance(score, int) and not isinstance(score, bool) and 1 <= score <= 5:
            direction: Direction = ("negative" if score <= low_max else
                                    "positive" if score >= high_min else "neutral")
            return Mark(direction, (5 - score) / 4, f"score {score}/5")
        thumbs = payload.get("thumbs")
        if thumbs == "down":
            return Mark("negative", 1.0, "thumbs down")
        if thumbs == "up":
            return Mark("positive", 0.0, "thumbs up")
        return None
    if event_type == "operator_correction":
        return Mark("negative", 1.0, "operator correction")
    if event_type == "safety_trigger":
        level = str(payload.get("severity", "high"))
        return Mark("negative", _SAFETY.get(level, 1.0), f"safety gate ({level})")
    if event_type == "escalation" and payload.get("requested_by") == "agent":
        return Mark("negative", 0.75, "agent escalated")
    if event_type == "conversation_outcome":
        if payload.get("abandoned"):
            return Mark("negative", 0.5, "abandoned")
        if payload.get("resolved") is False:
            return Mark("negative", 0.5, "unresolved")
    return None


def profile_of(marks: Sequence[Mark]) -> Profile:
    """Summarise a turn's marks (module docstring)."""
    neg = [m for m in marks if m.direction == "negative"]
    pos = sum(m.direction == "positive" for m in marks)
    neutral = sum(m.direction == "neutral" for m in marks)
    judged = len(neg) + pos
    return Profile(
        negative=len(neg), positive=pos, neutral=neutral,
        severity=round(sum(m.severity for m in neg) / len(neg), 6) if neg else None,
        agreement=round(len(neg) / judged, 6) if judged else None,
        labels=tuple(m.label for m in marks))
