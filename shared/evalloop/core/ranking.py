"""Golden-set candidates: confidence, near-duplicate removal, and golden-set coverage.

**Confidence** of a candidate (a negative case) is a weighted sum of four parts, each 0-1
(``docs/review.md#ranking``: severity, agreement, cluster size, recency):

- ``signal`` — the **severity** of the case read from the scale each event carries
  (:mod:`evalloop.core.judgements`): the mean severity of its negative marks, so two raters
  saying Bad (score 1: 1.0) outrank three saying Could be Improved (score 2: 0.75). A case
  without marks (``profile`` None) falls back to its fused confidence.
- ``agreement`` — negative marks / (negative + positive): Bad / Excellent / Excellent is 1/3.
  A case that most raters liked (more positive than negative marks) is not a candidate at
  all: :func:`score_cases` leaves it out. Without marks: ``1 - 0.5 ** (evidence - 1)``.
- ``cluster`` — ``log(1 + size) / log(1 + largest size)`` over the agent's clusters: a failure
  that recurs in a big topic matters more; log so one huge cluster does not flatten the rest.
- ``recency`` — ``0.5 ** (age / half_life)``, age = ``now - occurred_at`` (event time, UTC;
  future times count as age 0). Default half-life 7 days: last week's failure weighs half as
  much as today's, one from a month ago about a twentieth.

Default weights 0.4 / 0.2 / 0.2 / 0.2 (the evidence itself first; the rest break ties).
:func:`explain` writes the sum out for the reviewer.

**Near-duplicates**: going down the ranking, a candidate is dropped when the cosine similarity
of its *question* embedding to a question already kept or already decided in the review queue
is at least ``duplicate_similarity`` (default 0.92), or to a golden case's question at least
``golden_similarity`` (default 0.75: a paraphrase of a golden case at 0.79 is not a new
case). A queue row with the same ``key`` (normalised question hash) is the same candidate, not
a duplicate.

**Coverage**: a golden case covers the cluster it would join online (highest ``v · centroid``,
at least ``min_similarity``; :mod:`evalloop.core.clustering`). Clusters no golden case covers
are reported, largest first.

Pure: values in, values out.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from evalloop.core.judgements import Profile

__all__ = [
    "Dropped",
    "Prior",
    "RankedCase",
    "RankingParams",
    "Selection",
    "TriageCase",
    "coverage",
    "explain",
    "question_key",
    "score_cases",
    "select_candidates",
    "shortlist",
]

SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class RankingParams:
    """Weights (summing to 1) and thresholds of the ranking (module docstring).

    Attributes:
        weight_signal, weight_agreement, weight_cluster, weight_recency: part weights, >= 0,
            summing to 1 (so confidence stays 0-1).
        half_life_days: recency half-life, days (> 0).
        duplicate_similarity: question cosine similarity at or above which a candidate is a
            near-duplicate of another candidate or a decided queue row (0-1).
        golden_similarity: question cosine similarity at or above which a candidate is a
            paraphrase of a golden case (0-1).
        per_cluster: at most this many candidates per cluster.
        max_candidates: at most this many candidates per ranking run (all clusters).
    """

    weight_signal: float = 0.4
    weight_agreement: float = 0.2
    weight_cluster: float = 0.2
    weight_recency: float = 0.2
    half_life_days: float = 7.0
    duplicate_similarity: float = 0.92
    golden_similarity: float = 0.75
    per_cluster: int = 3
    max_candidates: int = 200

    def __post_init__(self) -> None:
        """Reject weights that do not sum to 1 and non-positive sizes (``ValueError``)."""
        weights = (self.weight_signal, self.weight_agreement, self.weight_cluster,
                   self.weight_recency)
        if min(weights) < 0 or not math.isclose(sum(weights), 1.0, abs_tol=1e-9):
            raise ValueError(f"expected 4 weights >= 0 summing to 1, got {weights}")
        if self.half_life_days <= 0:
            raise ValueError(f"half_life_days: expected > 0, got {self.half_life_days}")
        if self.per_cluster < 1 or self.max_candidates < 1:
            raise ValueError("per_cluster and max_candidates: expected >= 1")


@dataclass(frozen=True, slots=True)
class TriageCase:
    """What ranking needs of a negative case.

    Attributes:
        case_id: the case's id (text).
        cluster_id: its cluster.
        signal: fused confidence 0-1.
        evidence: number of evidence events (signals / raters), >= 1.
        occurred_at: event time (timezone-aware).
        question: the user's question (cases without one cannot become candidates).
        profile: the marks of its signals (:mod:`evalloop.core.judgements`); ``None`` when
            unknown (then ``signal`` and ``evidence`` stand in, module docstring).
    """

    case_id: str
    cluster_id: str
    signal: float
    evidence: int
    occurred_at: datetime
    question: str | None
    profile: Profile | None = None


@dataclass(frozen=True, slots=True)
class RankedCase:
    """A case with its confidence and the parts it is made of (all 0-1)."""

    case: TriageCase
    confidence: float
    signal: float
    agreement: float
    cluster: float
    recency: float


def _part_cluster(size: int, largest: int) -> float:
    if largest <= 0 or size <= 0:
        return 0.0
    return math.log1p(size) / math.log1p(largest)


def score_cases(
    cases: Sequence[TriageCase],
    cluster_sizes: Mapping[str, int],
    now: datetime,
    params: RankingParams | None = None,
) -> list[RankedCase]:
    """Score every case that has a question and that most raters did not like (formula:
    module docstring).

    Args:
        cases: the agent's cases.
        cluster_sizes: cluster id -> member count (a missing cluster counts as size 1).
        now: reference time for recency (UTC; e.g. the agent's newest event time).
        params: :class:`RankingParams`.

    Returns:
        Ranked cases, highest confidence first (ties: case id ascending). Cases with no
        question (or only whitespace), and cases whose profile is ``liked``, are left out.
    """
    p = params or RankingParams()
    largest = max(cluster_sizes.values(), default=1)
    out: list[RankedCase] = []
    for c in cases:
        if not (c.question and c.question.strip()):
            continue
        prof = c.profile
        if prof is not None and prof.liked:
            continue
        if prof is not None and prof.severity is not None and prof.agreement is not None:
            signal, agreement = prof.severity, prof.agreement
        else:
            signal = min(1.0, max(0.0, c.signal))
            agreement = 1.0 - 0.5 ** (max(1, c.evidence) - 1)
        cluster = _part_cluster(cluster_sizes.get(c.cluster_id, 1), max(largest, 1))
        age_days = max(0.0, (now - c.occurred_at).total_seconds() / SECONDS_PER_DAY)
        recency = 0.5 ** (age_days / p.half_life_days)
        conf = (p.weight_signal * signal + p.weight_agreement * agreement
                + p.weight_cluster * cluster + p.weight_recency * recency)
        out.append(RankedCase(c, min(1.0, max(0.0, conf)), signal, agreement, cluster, recency))
    out.sort(key=lambda r: (-r.confidence, r.case.case_id))
    return out


def explain(r: RankedCase, params: RankingParams | None = None, *, cluster_size: int | None = None,
            largest: int | None = None, age_days: float | None = None) -> str:
    """Why a candidate ranks where it does, in one line: the weighted sum written out.

    E.g. ``"0.912 = 0.4 x severity 1.00 (score 1/5, score 1/5) + 0.2 x agreement 1.00 (2 of 2
    negative) + 0.2 x cluster 0.81 (14 of 26 cases) + 0.2 x recency 0.75 (2.9 days old)"``.

    Args:
        r: the ranked case.
        params: the weights used.
        cluster_size, largest: the case's cluster size and the agent's largest (shown when
            given).
        age_days: the case's age (shown when given).
    """
    p = params or RankingParams()
    prof = r.case.profile
    if prof is not None and prof.severity is not None:
        sev = f"severity {r.signal:.2f} ({', '.join(prof.labels)})"
        agr = (f"agreement {r.agreement:.2f} ({prof.negative} of "
               f"{prof.negative + prof.positive} negative)")
    else:
        sev = f"signal {r.signal:.2f} (fused confidence)"
        agr = f"agreement {r.agreement:.2f} ({r.case.evidence} pieces of evidence)"
    clu = f"cluster {r.cluster:.2f}" + (f" ({cluster_size} of {largest} cases)"
                                         if cluster_size is not None and largest else "")
    rec = f"recency {r.recency:.2f}" + (f" ({age_days:.1f} days old)"
                                         if age_days is not None else "")
    return (f"{r.confidence:.3f} = {p.weight_signal:g} x {sev} + {p.weight_agreement:g} x "
            f"{agr} + {p.weight_cluster:g} x {clu} + {p.weight_recency:g} x {rec}")


def shortlist(ranked: Sequence[RankedCase], per_cluster: int) -> list[RankedCase]:
    """The first ``per_cluster`` cases of each cluster with distinct questions, in ranking order.

    A case whose :func:`question_key` was already taken (the same question asked again, in any
    cluster) is skipped: one question is one candidate. Use ``per_cluster`` larger than the
    final count (e.g. 3x) so that near-duplicates dropped later can be replaced; only the
    shortlist's questions need embedding.
    """
    taken: dict[str, int] = {}
    keys: set[str] = set()
    out: list[RankedCase] = []
    for r in ranked:
        n = taken.get(r.case.cluster_id, 0)
        if n >= per_cluster:
            continue
        key = question_key(r.case.question or "")
        if key in keys:
            continue
        keys.add(key)
        taken[r.case.cluster_id] = n + 1
        out.append(r)
    return out


_SPACE = re.compile(r"\s+")


def question_key(question: str) -> str:
    """Idempotency key of a candidate question: sha256 hex of the lower-cased question with
    whitespace collapsed (so "What is  X?" and "what is x?" are the same candidate)."""
    norm = _SPACE.sub(" ", question.strip().lower())
    return hashlib.sha256(norm.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Prior:
    """A question already known: in the golden set or in the review queue.

    Attributes:
        source: ``"golden"`` or ``"queue"``.
        ref: its id there (golden case id / candidate id).
        key: :func:`question_key` of a pending queue row (``None`` for golden cases and rows
            a reviewer decided): a candidate with the same key is that row itself, not a
            duplicate of it.
    """

    source: str
    ref: str
    key: str | None = None


@dataclass(frozen=True, slots=True)
class Dropped:
    """A candidate left out: ``reason`` is ``duplicate``, ``in_golden_set``, ``in_queue``,
    ``cluster_full`` or ``limit``; ``of`` names the case / golden case / queue row it repeats."""

    case_id: str
    reason: str
    of: str | None = None
    similarity: float | None = None


@dataclass(frozen=True, slots=True)
class Selection:
    """Result of :func:`select_candidates`: ``kept`` in ranking order, and what was dropped."""

    kept: list[RankedCase] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)


def select_candidates(
    ranked: Sequence[RankedCase],
    question_vectors: npt.ArrayLike,
    priors: Sequence[Prior] = (),
    prior_vectors: npt.ArrayLike | None = None,
    params: RankingParams | None = None,
) -> Selection:
    """Walk the ranking and keep candidates that repeat nothing (module docstring).

    Args:
        ranked: candidates in ranking order (e.g. a :func:`shortlist`).
        question_vectors: ``(len(ranked), d)`` unit embeddings of their questions.
        priors: golden-set / queue questions that block near-duplicates.
        prior_vectors: ``(len(priors), d)`` their unit embeddings.
        params: :class:`RankingParams` (``duplicate_similarity``, ``per_cluster``,
            ``max_candidates``).

    Returns:
        :class:`Selection`.

    Raises:
        ValueError: a vector count does not match.
    """
    p = params or RankingParams()
    qv = np.asarray(question_vectors, dtype=np.float64)
    if qv.ndim != 2 or qv.shape[0] != len(ranked):
        raise ValueError(f"expected {len(ranked)} question vectors (2-d), got shape {qv.shape}")
    pv = (np.asarray(prior_vectors, dtype=np.float64) if prior_vectors is not None
          else np.zeros((0, qv.shape[1])))
    if pv.ndim != 2 or pv.shape[0] != len(priors) or (priors and pv.shape[1] != qv.shape[1]):
        raise ValueError(
            f"expected {len(priors)} prior vectors of dimension {qv.shape[1]}, got shape "
            f"{pv.shape}"
        )
    prior_sims = qv @ pv.T if len(priors) else np.zeros((len(ranked), 0))
    keys = [question_key(r.case.question or "") for r in ranked]
    sel = Selection()
    kept_idx: list[int] = []
    per: dict[str, int] = {}
    for i, r in enumerate(ranked):
        cid = r.case.case_id
        if per.get(r.case.cluster_id, 0) >= p.per_cluster:
            sel.dropped.append(Dropped(cid, "cluster_full"))
            continue
        blocked: Dropped | None = None
        floor = min(p.duplicate_similarity, p.golden_similarity)
        for j in np.argsort(-prior_sims[i], kind="stable"):
            s = float(prior_sims[i, j])
            if s < floor:
                break
            pr = priors[j]
            if pr.key is not None and pr.key == keys[i]:
                continue  # the queue row of this very question
            bar = p.golden_similarity if pr.source == "golden" else p.duplicate_similarity
            if s < bar:
                continue
            reason = "in_golden_set" if pr.source == "golden" else "in_queue"
            blocked = Dropped(cid, reason, pr.ref, round(s, 6))
            break
        if blocked is None and kept_idx:
            sims = qv[kept_idx] @ qv[i]
            j = int(sims.argmax())
            if float(sims[j]) >= p.duplicate_similarity:
                blocked = Dropped(cid, "duplicate", ranked[kept_idx[j]].case.case_id,
                                  round(float(sims[j]), 6))
        if blocked is not None:
            sel.dropped.append(blocked)
            continue
        if len(kept_idx) >= p.max_candidates:
            sel.dropped.append(Dropped(cid, "limit"))
            continue
        kept_idx.append(i)
        per[r.case.cluster_id] = per.get(r.case.cluster_id, 0) + 1
        sel.kept.append(r)
    return sel


def coverage(
    centroids: npt.ArrayLike,
    golden_vectors: npt.ArrayLike,
    min_similarity: float,
) -> npt.NDArray[np.int64]:
    """How many golden cases each cluster holds (0 = not covered by the golden set).

    Args:
        centroids: ``(k, d)`` cluster centroids (mean member unit vectors).
        golden_vectors: ``(g, d)`` unit embeddings of golden cases, embedded like cases.
        min_similarity: a golden case joins its best cluster only at or above this.

    Returns:
        ``(k,)`` int64 count of golden cases per cluster.
    """
    c = np.asarray(centroids, dtype=np.float64)
    g = np.asarray(golden_vectors, dtype=np.float64)
    counts = np.zeros(c.shape[0], dtype=np.int64)
    if c.shape[0] == 0 or g.size == 0:
        return counts
    sims = g.reshape(-1, c.shape[1]) @ c.T
    best = sims.argmax(axis=1)
    ok = sims[np.arange(sims.shape[0]), best] >= min_similarity
    np.add.at(counts, best[ok], 1)
    return counts
