"""The judge's value types and its port: seven dimensions, one score each, per-claim support.

A judge answers one yes/no question per dimension and reads the probability of "yes" from the
model's token log-probabilities (``docs/judge.md#how-a-score-is-read``). That raw P(yes) is
mapped to a calibrated 0-1 score by the dimension's isotonic map
(``docs/judge.md#calibration``). A dimension the judge could not score carries
``unscored_reason`` and ``score is None`` — never 0, never NaN (``docs/judge.md#unscored``).

Shapes::

    Judgement ── scores: {Dimension -> DimensionScore}   (always all seven keys)
                 all_scored  ⇔  every DimensionScore.score is not None
    ClaimSupport ── claim, raw/score P(supported), nearest passage (id, text)

The ``Judge`` protocol is the port; adapters live in ``evalloop.adapters.judge_openai``
(any OpenAI-compatible endpoint, and the embedded llama.cpp server started by
``evalloop.adapters.llama_server``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

__all__ = [
    "DIMENSIONS",
    "ClaimSupport",
    "Dimension",
    "DimensionScore",
    "Judge",
    "JudgeUsage",
    "Judgement",
    "Passage",
    "Unscored",
    "UnscoredReason",
    "YesNoPrompt",
    "answer_hash",
]

Dimension = Literal[
    "correctness",
    "relevance",
    "tone",
    "safety",
    "groundedness",
    "faithfulness",
    "context_utilization",
]

#: The seven dimensions in report order (``docs/judge.md#rubrics``). Never reorder: reports and
#: the composite's weights are keyed by these names.
DIMENSIONS: tuple[Dimension, ...] = (
    "correctness",
    "relevance",
    "tone",
    "safety",
    "groundedness",
    "faithfulness",
    "context_utilization",
)

UnscoredReason = Literal[
    "timeout",  # the judge did not answer within its timeout (after retries)
    "no_logprobs",  # the reply carried no token log-probabilities
    "unparseable",  # no yes-like or no-like token among the top log-probabilities
    "judge_error",  # the endpoint failed (HTTP error, connection refused) after retries
    "no_context",  # a context dimension asked with no passages to judge against
    "no_claim",  # a context dimension of an answer that makes no factual claim (hand-off, gap)
    "empty_answer",  # nothing to judge
]


@dataclass(frozen=True, slots=True)
class Unscored:
    """Why a yes/no question produced no probability.

    Attributes:
        reason: machine-readable cause (one of ``UnscoredReason``).
        detail: one human-readable line (e.g. the HTTP status and message).
    """

    reason: UnscoredReason
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.reason}: {self.detail}" if self.detail else self.reason


@dataclass(frozen=True, slots=True)
class YesNoPrompt:
    """One yes/no question as two chat messages.

    Put everything shared between questions about the same answer at the *start* of ``user``
    and the question last, so a server that keeps its key/value cache (llama.cpp does) only
    evaluates the differing tail (``docs/judge.md#prompts``).

    Attributes:
        system: the system message.
        user: the user message; it should end with the question and "Answer Yes or No.".
    """

    system: str
    user: str


@dataclass(frozen=True, slots=True)
class Passage:
    """One context passage an answer is judged against.

    Attributes:
        id: stable identifier (chunk id, document id) shown in reports; unique within a case.
        text: the passage text.
    """

    id: str
    text: str


@dataclass(frozen=True, slots=True)
class DimensionScore:
    """One dimension's result for one answer.

    Attributes:
        dimension: which of the seven.
        score: calibrated score in [0, 1] (probability a human would say "yes"), or ``None``
            when unscored.
        raw: the judge's raw P(yes) in [0, 1], or ``None`` when unscored.
        reason: one short line saying what was asked and what came back.
        unscored_reason: ``None`` when scored; else why not (``Unscored.reason``), with the
            detail in ``reason``.
        advisory: the calibration in use found this dimension below the agreement bar
            (``docs/judge.md#advisory-dimensions``): shown, but it cannot alone fail a gate.
    """

    dimension: Dimension
    score: float | None
    raw: float | None
    reason: str
    unscored_reason: UnscoredReason | None = None
    advisory: bool = False

    def __post_init__(self) -> None:
        if self.unscored_reason is None:
            if self.score is None or self.raw is None:
                raise ValueError(f"{self.dimension}: a scored dimension needs score and raw")
            for name, value in (("score", self.score), ("raw", self.raw)):
                if not 0.0 <= value <= 1.0:  # also rejects NaN
                    raise ValueError(f"{self.dimension}: {name} must be in [0, 1], got {value}")
        elif self.score is not None or self.raw is not None:
            raise ValueError(f"{self.dimension}: an unscored dimension carries no score or raw")

    @property
    def scored(self) -> bool:
        """True when ``score`` holds a number."""
        return self.unscored_reason is None


@dataclass(frozen=True, slots=True)
class JudgeUsage:
    """Tokens and cost of judge calls (a run's total, or one judgement's share).

    Attributes:
        calls: requests sent to the judge endpoint (cache hits send none).
        prompt_tokens: prompt tokens the endpoint reported.
        completion_tokens: completion tokens the endpoint reported.
        cache_hits: judgements served from the judgement cache.
        cost_usd: ``prompt_tokens`` and ``completion_tokens`` priced by the judge's configured
            USD per million tokens (0 for the embedded judge).
    """

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: JudgeUsage) -> JudgeUsage:
        return JudgeUsage(
            calls=self.calls + other.calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cache_hits=self.cache_hits + other.cache_hits,
            cost_usd=self.cost_usd + other.cost_usd,
        )


@dataclass(frozen=True, slots=True)
class Judgement:
    """All seven dimension scores for one answer to one case.

    Attributes:
        case_id: the case the answer answers.
        answer_sha256: ``answer_hash(answer)`` (hex), part of the cache key.
        judge_model: the judge's model identifier (part of the cache key).
        prompt_version: version of the rubric prompts (part of the cache key).
        calibration_id: the calibration record that mapped raw to calibrated scores.
        scores: one ``DimensionScore`` per dimension, keyed by every name in ``DIMENSIONS``.
        usage: tokens and cost spent on this judgement (all zero except ``cache_hits`` = 1
            when it came from the cache).
        cached: True when served from the judgement cache.

    Raises:
        ValueError: (on construction) ``scores`` lacks a dimension or a key mismatches its
            value's ``dimension``.
    """

    case_id: str
    answer_sha256: str
    judge_model: str
    prompt_version: str
    calibration_id: str
    scores: Mapping[Dimension, DimensionScore]
    usage: JudgeUsage = field(default_factory=JudgeUsage)
    cached: bool = False

    def __post_init__(self) -> None:
        missing = [d for d in DIMENSIONS if d not in self.scores]
        if missing:
            raise ValueError(f"judgement for {self.case_id!r} lacks dimensions {missing}")
        for key, value in self.scores.items():
            if key != value.dimension:
                raise ValueError(f"scores[{key!r}] holds a {value.dimension!r} score")

    @property
    def all_scored(self) -> bool:
        """True when all seven dimensions are scored (the composite needs all seven)."""
        return all(self.scores[d].scored for d in DIMENSIONS)

    @property
    def unscored(self) -> dict[Dimension, str]:
        """Dimension -> reason for every unscored dimension (empty when ``all_scored``)."""
        return {d: self.scores[d].reason for d in DIMENSIONS if not self.scores[d].scored}


@dataclass(frozen=True, slots=True)
class ClaimSupport:
    """Whether one claim is supported by the passages.

    Attributes:
        claim: the claim text as given.
        raw: the judge's raw P(supported) in [0, 1], or ``None`` when unscored.
        score: calibrated P(supported) in [0, 1], or ``None`` when unscored.
        nearest_passage_id: id of the passage most similar to the claim (``None`` when no
            passages were given).
        nearest_passage_text: that passage's text (``None`` likewise).
        unscored_reason: ``None`` when scored, else why not; ``reason`` holds the detail.
        reason: one short line saying what was asked and what came back.
    """

    claim: str
    raw: float | None
    score: float | None
    nearest_passage_id: str | None
    nearest_passage_text: str | None
    reason: str
    unscored_reason: UnscoredReason | None = None

    @property
    def scored(self) -> bool:
        """True when ``score`` holds a number."""
        return self.unscored_reason is None


def answer_hash(answer: str) -> str:
    """Return the SHA-256 hex of ``answer`` in UTF-8 (the answer part of the cache key)."""
    return hashlib.sha256(answer.encode("utf-8")).hexdigest()


@runtime_checkable
class Judge(Protocol):
    """The port every judge implements (``docs/judge.md``).

    Attributes:
        model: identifier of the judging model (e.g. ``qwen2.5-coder-1.5b-instruct-q4_k_m``);
            part of the judgement cache key.
    """

    model: str

    async def judge(
        self,
        *,
        case_id: str,
        question: str,
        answer: str,
        passages: Sequence[Passage],
        expected: str | None = None,
    ) -> Judgement:
        """Score ``answer`` on all seven dimensions.

        Args:
            case_id: the case's id (cache key part; shown in reports).
            question: what the user asked.
            answer: the agent's answer.
            passages: the context the answer should rest on (retrieved chunks, or the case's
                ``context_chunks``); may be empty — then the context dimensions are unscored
                with ``no_context``.
            expected: the case's reference answer, when it has one (used by correctness).

        Returns:
            A ``Judgement`` holding all seven dimensions (some possibly unscored). Never raises
            for a judge failure on one question: that question becomes unscored.
        """
        ...

    async def claim_support(self, claim: str, passages: Sequence[Passage]) -> ClaimSupport:
        """Ask whether ``claim`` is supported by ``passages``.

        Args:
            claim: one atomic statement.
            passages: the context to check it against (may be empty: then unscored,
                ``no_context``).

        Returns:
            A ``ClaimSupport``; a judge failure makes it unscored, never raises.
        """
        ...

    async def p_yes(self, prompt: YesNoPrompt) -> float | Unscored:
        """Ask one yes/no question; return P(yes) in [0, 1] or why it could not be read.

        Args:
            prompt: the question (see ``YesNoPrompt`` for prefix reuse).

        Returns:
            P(yes) normalised against "no" (``docs/judge.md#how-a-score-is-read``), or an
            ``Unscored`` with the reason. Never raises for endpoint failures.
        """
        ...

    def usage(self) -> JudgeUsage:
        """Return the tokens and cost this judge has spent since it was built."""
        ...
