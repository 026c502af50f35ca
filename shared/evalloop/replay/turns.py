"""The replay's intermediate form: untimed turns converted from the public data sets.

A converter (``feedbackqa``, ``taubench``) turns each source record into one :class:`Turn`: what
the user asked, what the agent answered with which retrieved chunks, and the feedback the record
carries (ratings, an escalation, a conversation outcome). :mod:`evalloop.replay.schedule` gives
turns their event times and emits the wire events. Every turn carries ``key``, the identity of
its source record (file + position or id); event ids are ``uuid5(REPLAY_NAMESPACE, key + part)``,
so replaying the same records again produces the same events (idempotent at the recorder).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from uuid import UUID, uuid5

__all__ = [
    "LABEL_SCORES",
    "NEGATIVE_LABELS",
    "POSITIVE_LABELS",
    "REPLAY_NAMESPACE",
    "Chunk",
    "EpisodeEscalation",
    "EpisodeOutcome",
    "Rating",
    "Turn",
    "TurnPool",
    "event_id_for",
    "thumbs_for",
]

#: Namespace of every replay event id (uuid5). Never change it: a re-replay must reproduce ids.
REPLAY_NAMESPACE = UUID("0b5f7d0e-6a34-5c1e-9a0f-3c2d8e71b4a6")

#: FeedbackQA rating labels (data README: "Excellent/Acceptable positive; Could be
#: Improved/Bad negative").
POSITIVE_LABELS = frozenset({"Excellent", "Acceptable"})
NEGATIVE_LABELS = frozenset({"Could be Improved", "Bad"})
#: FeedbackQA's four-point scale on the ``user_rating`` 1-5 ``score`` (``docs/review.md#ranking``):
#: the event carries how bad, not only thumbs. 3 (neutral) is unused; 1-2 are negative and
#: 4-5 positive under the fusion defaults, as the labels are.
LABEL_SCORES: dict[str, int] = {"Bad": 1, "Could be Improved": 2, "Acceptable": 4,
                                "Excellent": 5}

#: Which pool a turn is drawn from when scheduled: ``served`` (no feedback), ``positive``
#: (every rater positive), ``negative`` (every rater negative), ``mixed`` (raters disagree),
#: ``episode`` (a tau-bench conversation with its escalation/outcome).
TurnPool = Literal["served", "positive", "negative", "mixed", "episode"]


def thumbs_for(label: str) -> Literal["up", "down"]:
    """Map a FeedbackQA rating label to thumbs.

    Raises:
        ValueError: ``label`` is not one of the four FeedbackQA labels.
    """
    if label in POSITIVE_LABELS:
        return "up"
    if label in NEGATIVE_LABELS:
        return "down"
    raise ValueError(
        f"expected a FeedbackQA rating label {sorted(POSITIVE_LABELS | NEGATIVE_LABELS)}, "
        f"got {label!r}"
    )


def event_id_for(key: str, part: str) -> UUID:
    """Deterministic event id of ``part`` (e.g. ``"agent_response"``, ``"rating/1"``) of the
    source record ``key``: ``uuid5(REPLAY_NAMESPACE, key + "|" + part)``."""
    return uuid5(REPLAY_NAMESPACE, f"{key}|{part}")


@dataclass(frozen=True, slots=True)
class Chunk:
    """A retrieved knowledge-base passage: ``id`` (same ids as ``evalloop/data/kb``), text, URL."""

    id: str
    text: str
    source: str | None = None


@dataclass(frozen=True, slots=True)
class Rating:
    """One rater's judgement: the FeedbackQA ``label`` and its free-text ``comment``."""

    label: str
    comment: str | None

    @property
    def thumbs(self) -> Literal["up", "down"]:
        """``"up"`` or ``"down"`` (see :func:`thumbs_for`)."""
        return thumbs_for(self.label)

    @property
    def score(self) -> int:
        """The label on the 1-5 scale (:data:`LABEL_SCORES`)."""
        thumbs_for(self.label)  # raises with the expected labels named
        return LABEL_SCORES[self.label]


@dataclass(frozen=True, slots=True)
class EpisodeEscalation:
    """A hand-off to a human: who asked for it (``"agent"`` or ``"user"``) and the summary."""

    requested_by: Literal["user", "agent"]
    reason: str | None


@dataclass(frozen=True, slots=True)
class EpisodeOutcome:
    """How a conversation ended: ``resolved`` (tau-bench reward 1), user follow-ups, abandoned."""

    resolved: bool
    follow_up_count: int
    abandoned: bool


@dataclass(frozen=True, slots=True)
class Turn:
    """One served turn of one agent, before it has an event time.

    Attributes:
        key: identity of the source record (e.g. ``"feedbackqa/UK_feedback_test.json#17"``);
            the namespace of its event ids and conversation id.
        agent_id: the agent that served it (``covid-qa-uk``, ``airline-support``, ...).
        question: the user's message.
        answer: the agent's answer.
        chunks: what the agent retrieved (FeedbackQA: the answering passage).
        ratings: one per rater (empty for served turns and episodes).
        escalation: set when the conversation was handed to a human.
        outcome: set for conversations with a known outcome (tau-bench episodes).
    """

    key: str
    agent_id: str
    question: str
    answer: str
    chunks: tuple[Chunk, ...] = ()
    ratings: tuple[Rating, ...] = ()
    escalation: EpisodeEscalation | None = None
    outcome: EpisodeOutcome | None = None

    @property
    def pool(self) -> TurnPool:
        """The pool the scheduler draws this turn from (see :data:`TurnPool`)."""
        if self.escalation is not None or self.outcome is not None:
            return "episode"
        if not self.ratings:
            return "served"
        downs = sum(r.thumbs == "down" for r in self.ratings)
        if downs == 0:
            return "positive"
        return "negative" if downs == len(self.ratings) else "mixed"
