"""Re-clustering one agent: cluster, label, check golden-set coverage, rank, queue candidates.

Runs on one connection holding the agent's advisory lock (online ingest of the same agent waits):

1. load the agent's cases of the last ``recluster_window_days`` (event time, newest case as
   "now"), at most ``max_recluster_cases``;
2. :func:`evalloop.core.clustering.recluster` (in a worker thread), carry cluster ids over by
   member overlap, label each cluster by its most representative question and c-TF-IDF terms
   of its questions only (``docs/review.md#cluster-labels``; rater comments and answer
   passages would drown the users' topic);
3. golden coverage: each golden case (question + expected answer, embedded like a case) covers
   the cluster it would join;
4. rank (:mod:`evalloop.core.ranking`; severity and agreement from each evidence event's mark,
   :mod:`evalloop.core.judgements`; turns most raters liked are left out), embed the
   shortlisted questions (cached in ``triage_cases.question_embedding``), drop near-duplicates
   of each other, paraphrases of golden cases and near-duplicates of queue rows a reviewer
   already decided; explain each rank and propose an expected answer with its source
   (:mod:`evalloop.core.expected`);
5. one transaction writes cluster ids, clusters, candidates (idempotent on the question key: a
   pending row is refreshed in place, a withdrawn one comes back), withdraws the pending rows
   not selected this time (so none points at a dead cluster and the per-cluster cap holds:
   ``docs/review.md#re-clustering``) and resets the agent's counter.

The caller publishes ``golden.candidate.proposed.v1`` from the queue's outbox afterwards.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import asyncpg
import numpy as np
from cachetools import LRUCache

from evalloop.adapters.embedder import Embedder, embed
from evalloop.adapters.triage_store import (
    ClusterRow,
    GoldenCase,
    QueueRow,
    agent_lock,
    case_chunk_ids,
    case_details,
    case_marks,
    golden_cases,
    liked_passages,
    load_recluster_input,
    lock_agent_state,
    question_vectors,
    queue_priors,
    rated_answers,
    replace_clusters,
    save_agent_state,
    set_case_clusters,
    set_question_embeddings,
    store_errors,
    upsert_candidates,
    withdraw_unselected,
)
from evalloop.core.clustering import ClusterParams, case_text, match_cluster_ids, recluster
from evalloop.core.expected import (
    Passage,
    ProposedAnswer,
    RatedAnswer,
    loose_question,
    nearest_passages,
    propose,
)
from evalloop.core.judgements import Mark, mark_of, profile_of
from evalloop.core.labels import question_labels
from evalloop.core.ranking import (
    Prior,
    RankedCase,
    RankingParams,
    Selection,
    TriageCase,
    coverage,
    explain,
    question_key,
    score_cases,
    select_candidates,
    shortlist,
)
from evalloop.settings import TriageSettings

__all__ = [
    "CANDIDATE_NAMESPACE",
    "GoldenCache",
    "ReclusterReport",
    "candidate_id",
    "cluster_params",
    "ranking_params",
    "recluster_agent",
]

log = logging.getLogger(__name__)

#: UUIDv5 namespace of candidate ids: ``uuid5(CANDIDATE_NAMESPACE, agent_id + "\n" + key)``.
CANDIDATE_NAMESPACE = uuid.UUID("6f1f5c1e-7a4e-5b7a-9d61-2f0f7a3c9e11")


def candidate_id(agent_id: str, key: str) -> UUID:
    """Deterministic candidate id of an agent's question key (re-proposing = same row)."""
    return uuid.uuid5(CANDIDATE_NAMESPACE, f"{agent_id}\n{key}")


def cluster_params(cfg: TriageSettings) -> ClusterParams:
    """:class:`ClusterParams` from ``settings.triage``."""
    return ClusterParams(
        threshold=cfg.cluster_threshold, min_cluster_size=cfg.min_cluster_size,
        merge_similarity=cfg.merge_similarity, sample_size=cfg.cluster_sample_size,
        seed=cfg.seed,
    )


def ranking_params(cfg: TriageSettings) -> RankingParams:
    """:class:`RankingParams` from ``settings.triage`` (weights: the module defaults)."""
    return RankingParams(
        half_life_days=cfg.recency_half_life_days,
        duplicate_similarity=cfg.duplicate_similarity,
        golden_similarity=cfg.golden_similarity,
        per_cluster=cfg.candidates_per_cluster, max_candidates=cfg.max_candidates,
    )


@dataclass
class GoldenCache:
    """Embeddings of golden cases by (model, case id, text), kept across runs in memory.

    ``case`` vectors embed question + expected answer (coverage); ``question`` vectors the
    question alone (near-duplicates).
    """

    # bounded (LRU): edited cases leave old keys behind; ~3 KB per MiniLM entry
    vectors: LRUCache[tuple[str, str, str], tuple[np.ndarray, np.ndarray]] = field(
        default_factory=lambda: LRUCache(maxsize=20_000)
    )

    async def get(
        self, embedder: Embedder, cases: list[GoldenCase]
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(case vectors (g, d), question vectors (g, d))`` of ``cases``, embedding the
        ones not cached yet."""
        keys = [(embedder.name, c.case_id, f"{c.question}\0{c.expected_answer}") for c in cases]
        missing = [i for i, k in enumerate(keys) if k not in self.vectors]
        if missing:
            texts = [case_text(cases[i].question, cases[i].expected_answer, None)
                     for i in missing]
            both = await embed(embedder, texts + [cases[i].question for i in missing])
            for j, i in enumerate(missing):
                self.vectors[keys[i]] = (both[j], both[len(missing) + j])
        dim = embedder.dimension
        if not cases:
            return np.zeros((0, dim), np.float32), np.zeros((0, dim), np.float32)
        return (np.stack([self.vectors[k][0] for k in keys]),
                np.stack([self.vectors[k][1] for k in keys]))


@dataclass
class ReclusterReport:
    """What one re-clustering did.

    Attributes:
        agent_id: the agent.
        cases: cases clustered.
        clusters: clusters found.
        uncovered: ids of clusters no golden case covers, largest first.
        kept: candidates written or refreshed this run.
        new_candidates: ids of candidates inserted this run.
        withdrawn: pending candidates withdrawn (not selected again).
        dropped: reason -> count of shortlisted cases left out.
        seconds: phase -> wall seconds (load, cluster, label, rank, write).
    """

    agent_id: str
    cases: int = 0
    clusters: int = 0
    uncovered: list[str] = field(default_factory=list)
    kept: int = 0
    new_candidates: list[UUID] = field(default_factory=list)
    withdrawn: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


#: Cases whose evidence events are read per query while ranking (bounds the rows in memory).
MARKS_CHUNK = 2000


class _RowsOf(Mapping[int, np.ndarray]):
    """``cluster -> its members' rows of x``, sliced when asked for (one cluster's copy at a
    time instead of a second copy of every vector)."""

    def __init__(self, x: np.ndarray, members: dict[int, list[int]]) -> None:
        self._x, self._members = x, members

    def __getitem__(self, k: int) -> np.ndarray:
        return self._x[self._members[k]]

    def __iter__(self) -> Iterator[int]:
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)


def _valid_vector(blob: bytes | None, dim: int) -> np.ndarray | None:
    if blob is None or len(blob) != 4 * dim:
        return None
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


async def _select(
    embedder: Embedder,
    short: list[RankedCase],
    cached: list[np.ndarray | None],
    priors: list[Prior],
    prior_vectors: np.ndarray,
    rp: RankingParams,
) -> tuple[Selection, np.ndarray, list[int], list[np.ndarray]]:
    """Select candidates from ``short`` embedding only the questions the walk reaches.

    :func:`select_candidates` walks the ranking greedily, so its result on a prefix is the
    full result restricted to that prefix: start with ``max_candidates`` + 25% and extend by
    25% until enough are kept or the shortlist ends. Returns the selection, the question
    vectors of the prefix walked, and the positions + vectors embedded now (to cache).
    """
    step = max(1, rp.max_candidates // 4)
    upto = min(len(short), rp.max_candidates + step)
    need_all: list[int] = []
    fresh_all: list[np.ndarray] = []
    while True:
        need = [j for j in range(upto) if cached[j] is None]
        if need:
            vecs = await embed(embedder, [short[j].case.question or "" for j in need])
            for j, v in zip(need, vecs, strict=True):
                cached[j] = v
            need_all += need
            fresh_all += list(vecs)
        qv = (np.stack([v for v in cached[:upto] if v is not None]) if upto
              else np.zeros((0, embedder.dimension), np.float32))
        sel = select_candidates(short[:upto], qv, priors, prior_vectors, rp)
        if len(sel.kept) >= rp.max_candidates or upto >= len(short):
            return sel, qv, need_all, fresh_all
        upto = min(len(short), upto + step)


async def _proposals(conn: asyncpg.Connection, agent_id: str, case_ids: list[UUID],
                     details: dict[UUID, Any]) -> dict[UUID, ProposedAnswer]:
    """A proposed expected answer per kept case (:func:`evalloop.core.expected.propose`)."""
    out: dict[UUID, ProposedAnswer] = {}
    keys = {c: loose_question(details[c]["question"] or "") for c in case_ids}
    rated = []
    for row in await rated_answers(conn, agent_id, sorted(set(keys.values()))):
        marks = [mark_of("user_rating", {"score": int(s) if s else None, "thumbs": t})
                 for s, t in zip(row["scores"], row["thumbs"], strict=True)]
        prof = profile_of([m for m in marks if m is not None])
        sev = [m.severity for m in marks if m is not None]
        rated.append(RatedAnswer(row["question_key"], row["answer"] or "", str(row["event_id"]),
                                 prof.positive, prof.negative,
                                 round(sum(sev) / len(sev), 6) if sev else 1.0))
    rest = []
    for c in case_ids:
        prop = propose(details[c]["question"], details[c]["expected_answer"], rated, None)
        if prop is None:
            rest.append(c)
        else:
            out[c] = prop
    if rest:
        passages = [Passage(i, t) for i, t in await liked_passages(conn, agent_id)]
        own = await case_chunk_ids(conn, rest)
        near = await asyncio.to_thread(
            nearest_passages, [details[c]["question"] for c in rest], passages,
            [own.get(c, set()) for c in rest])
        for c, hit in zip(rest, near, strict=True):
            prop = propose(details[c]["question"], None, (),
                           (passages[hit[0]], hit[1]) if hit else None)
            if prop is not None:
                out[c] = prop
    return out


async def recluster_agent(
    pool: asyncpg.Pool,
    embedder: Embedder,
    cfg: TriageSettings,
    agent_id: str,
    golden_cache: GoldenCache | None = None,
) -> ReclusterReport:
    """Re-cluster, relabel and re-rank one agent (module docstring).

    Raises:
        EmbeddingError: embedding questions / golden cases failed (nothing written).
        StorageError: PostgreSQL failed (the write transaction rolled back).
    """
    report = ReclusterReport(agent_id)
    cache = golden_cache or GoldenCache()
    t0 = time.perf_counter()
    with store_errors(f"re-clustering {agent_id}"):
        async with pool.acquire() as conn, agent_lock(conn, agent_id):
            data = await load_recluster_input(
                conn, agent_id, model=embedder.name, window_days=cfg.recluster_window_days,
                limit=cfg.max_recluster_cases,
            )
            report.cases = len(data)
            t1 = time.perf_counter()
            report.seconds["load"] = t1 - t0
            if not len(data):
                async with conn.transaction():
                    state = await lock_agent_state(conn, agent_id)
                    state.new_cases = 0
                    await save_agent_state(conn, state, reclustered=True)
                return report
            result = await asyncio.to_thread(recluster, data.embeddings, cluster_params(cfg))
            report.clusters = result.k
            t2 = time.perf_counter()
            report.seconds["cluster"] = t2 - t1

            members: dict[int, list[int]] = {i: [] for i in range(result.k)}
            for row, lab in enumerate(result.labels.tolist()):
                members[lab].append(row)
            labels = await asyncio.to_thread(
                question_labels,
                {k: [data.questions[r] or "" for r in rs] for k, rs in members.items()},
                _RowsOf(data.embeddings, members),
                {k: [str(data.case_ids[r]) for r in rs] for k, rs in members.items()},
                n_terms=cfg.label_terms,
            )
            t3 = time.perf_counter()
            report.seconds["label"] = t3 - t2

            golden = await golden_cases(conn, agent_id)
            g_case, g_question = await cache.get(embedder, golden)
            cov = coverage(result.centroids, g_case, cfg.coverage_similarity)

            rp = ranking_params(cfg)
            row_of = {cid: i for i, cid in enumerate(data.case_ids)}
            profiles = {}
            for a in range(0, len(data), MARKS_CHUNK):  # evidence read a chunk at a time
                fields = await case_marks(conn, data.case_ids[a:a + MARKS_CHUNK])
                for cid, evs in fields.items():
                    marks = [mark_of(t, f) for t, f in evs]
                    profiles[cid] = profile_of([m for m in marks if isinstance(m, Mark)])
                del fields
            cases = [
                TriageCase(str(cid), str(lab), conf, ev, occ, q, profiles.get(cid))
                for cid, lab, conf, ev, occ, q in zip(
                    data.case_ids, result.labels.tolist(), data.confidences, data.evidence,
                    data.occurred_at, data.questions, strict=True)
            ]
            liked = sum(1 for c in cases if c.profile is not None and c.profile.liked
                        and c.question)
            sizes = {str(i): int(s) for i, s in enumerate(result.sizes.tolist())}
            # 3x what can be kept per cluster: room for near-duplicates dropped later; only
            # the questions the selection walk reaches are embedded (_select)
            short = shortlist(score_cases(cases, sizes, max(data.occurred_at), rp),
                              3 * rp.per_cluster)
            dim = embedder.dimension
            queue = await queue_priors(conn, agent_id)
            q_vecs = [_valid_vector(r["question_embedding"], dim) for r in queue]
            q_need = [j for j, v in enumerate(q_vecs) if v is None]
            q_fresh = await embed(embedder, [queue[j]["question"] for j in q_need])
            for j, v in zip(q_need, q_fresh, strict=True):
                q_vecs[j] = v
            # a pending row is the same candidate as its question (refreshed in place); a row
            # a reviewer decided blocks its question and near-duplicates: never re-proposed
            # rows a reviewer decided block their question and near-duplicates (never
            # re-proposed); pending and withdrawn rows are re-ranked from scratch: a row
            # selected again is refreshed in place, the others are withdrawn below
            decided = [j for j, r in enumerate(queue)
                       if r["status"] in ("confirmed", "edited", "rejected")]
            priors = [Prior("golden", g.case_id) for g in golden] + [
                Prior("queue", str(queue[j]["candidate_id"])) for j in decided]
            pv = np.vstack([g_question.reshape(-1, dim)] + [
                v[None, :] for j in decided if (v := q_vecs[j]) is not None])
            rows = [row_of[UUID(r.case.case_id)] for r in short]
            stored_q = await question_vectors(conn, [data.case_ids[i] for i in rows], dim)
            sel, qv, need, fresh_q = await _select(
                embedder, short, [stored_q.get(data.case_ids[i]) for i in rows],
                priors, pv, rp,
            )
            del stored_q
            report.kept = len(sel.kept)
            report.dropped = dict(Counter(d.reason for d in sel.dropped))
            if liked:
                report.dropped["most_raters_liked"] = liked
            qv_of = {short[j].case.case_id: qv[j] for j in range(qv.shape[0])}
            kept_ids = [UUID(r.case.case_id) for r in sel.kept]
            details = await case_details(conn, kept_ids)
            proposals = await _proposals(conn, agent_id, kept_ids, details)
            largest = max(sizes.values(), default=1)
            newest = max(data.occurred_at)
            t4 = time.perf_counter()
            report.seconds["rank"] = t4 - t3

            async with conn.transaction():
                state = await lock_agent_state(conn, agent_id)
                ids = match_cluster_ids(data.cluster_ids, result.labels, state.fresh_ids())
                await set_case_clusters(conn, data.case_ids,
                                        [ids[i] for i in result.labels.tolist()])
                await replace_clusters(conn, agent_id, [
                    ClusterRow(ids[i], int(result.sizes[i]), result.centroids[i],
                               label=labels[i].text, terms=labels[i].terms,
                               golden_cases=int(cov[i]))
                    for i in range(result.k)
                ])
                if need:
                    await set_question_embeddings(
                        conn, [data.case_ids[rows[j]] for j in need], np.stack(fresh_q))
                queue_rows = []
                for r in sel.kept:
                    d = details[UUID(r.case.case_id)]
                    lab = int(r.case.cluster_id)
                    key = question_key(d["question"])
                    prop = proposals.get(d["case_id"])
                    age = (newest - r.case.occurred_at).total_seconds() / 86_400
                    queue_rows.append(QueueRow(
                        candidate_id=candidate_id(agent_id, key), agent_id=agent_id,
                        question_key=key, case_id=d["case_id"], cluster_id=ids[lab],
                        cluster_label=labels[lab].text, question=d["question"],
                        answer_given=d["answer"],
                        expected_answer=prop.text if prop else None,
                        evidence_event_ids=list(d["evidence_event_ids"]),
                        confidence=round(r.confidence, 6),
                        confidence_parts={"signal": round(r.signal, 6),
                                          "agreement": round(r.agreement, 6),
                                          "cluster": round(r.cluster, 6),
                                          "recency": round(r.recency, 6)},
                        question_embedding=qv_of[r.case.case_id],
                        expected_answer_source=prop.source if prop else None,
                        expected_answer_ref=prop.ref if prop else None,
                        explanation=explain(r, rp, cluster_size=sizes[r.case.cluster_id],
                                            largest=largest, age_days=max(0.0, age)),
                        rating_profile=(r.case.profile.as_dict() if r.case.profile
                                        else None),
                    ))
                report.new_candidates = await upsert_candidates(conn, queue_rows)
                report.withdrawn = await withdraw_unselected(
                    conn, agent_id, [q.candidate_id for q in queue_rows],
                    "not selected by the re-clustering (cluster gone, its cap taken by "
                    "better candidates, or out of the window)")
                state.new_cases = 0
                await save_agent_state(conn, state, reclustered=True)
            order = np.argsort(-result.sizes, kind="stable")
            report.uncovered = [ids[i] for i in order.tolist() if cov[i] == 0]
            report.seconds["write"] = time.perf_counter() - t4
    log.info(
        "triage: re-clustered %s: %d cases -> %d clusters (%d uncovered), %d candidates "
        "(%d new), dropped %s, %.2f s", agent_id, report.cases, report.clusters,
        len(report.uncovered), report.kept, len(report.new_candidates), report.dropped,
        sum(report.seconds.values()),
    )
    return report
