"""The judgement cache's port: raw answers keyed by what produced them (``docs/judge.md#caching``).

A judgement is cached by judge model + prompt version + case + answer hash (+ a hash of the
inputs the prompt shows: question, passages, reference answer), so re-judging the same answer
costs no judge call. The cache keeps the *raw* P(yes) per dimension and the unscored reasons;
calibration is applied when reading, so a new calibration record re-maps cached answers without
asking the judge again. Transient failures (timeout, endpoint error) are never cached.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from evalloop.core.judge.types import Dimension, Passage, UnscoredReason

__all__ = ["TRANSIENT", "CacheKey", "CachedRaw", "JudgementCache", "input_hash"]

#: Unscored reasons that may succeed on a retry later: a judgement holding one is not cached.
TRANSIENT: frozenset[UnscoredReason] = frozenset({"timeout", "judge_error"})


@dataclass(frozen=True, slots=True)
class CacheKey:
    """What identifies one cached judgement (all hex digests are SHA-256)."""

    judge_model: str
    prompt_version: str
    case_id: str
    answer_sha256: str
    input_sha256: str


@dataclass(frozen=True, slots=True)
class CachedRaw:
    """The judge's raw output for one answer.

    Attributes:
        raw: dimension -> raw P(yes), or ``None`` when unscored.
        unscored: dimension -> ``(reason, detail)`` for unscored dimensions.
        prompt_tokens: tokens the original judgement cost (reported, not charged again).
        completion_tokens: likewise.
    """

    raw: Mapping[Dimension, float | None]
    unscored: Mapping[Dimension, tuple[UnscoredReason, str]]
    prompt_tokens: int = 0
    completion_tokens: int = 0


def input_hash(question: str, passages: Sequence[Passage], expected: str | None) -> str:
    """SHA-256 hex of the inputs a judge prompt shows besides the answer (canonical JSON)."""
    blob = json.dumps(
        {"q": question, "p": [[p.id, p.text] for p in passages], "e": expected},
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class JudgementCache(Protocol):
    """Where judgements are cached (PostgreSQL: ``evalloop.adapters.judge_store``)."""

    async def get(self, key: CacheKey) -> CachedRaw | None:
        """Return the cached raw output for ``key``, or ``None``."""
        ...

    async def put(self, key: CacheKey, value: CachedRaw) -> None:
        """Store ``value`` under ``key`` (an existing entry is kept)."""
        ...
