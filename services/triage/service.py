"""The triage service: negative cases -> topic clusters -> ranked golden-set candidates.

Consumes ``feedback.negative.v1`` (:class:`~evalloop.events.NegativeCase`, key ``agent_id``) in
batches, in group ``evalloop-triage``:

1. decode; a record that is not a valid ``NegativeCase`` is logged with the reason and skipped
   (the case itself is stored by the recorder, so nothing is lost; re-running triage over
   ``negative_cases`` would pick it up);
2. per agent (the latest version of each case in the batch): embed new or changed cases, assign
   clusters online, store (``services.triage.online``);
3. when an agent has ``recluster_every`` new cases since its last run, and at least
   ``recluster_growth`` times its clustered cases (``docs/review.md#re-clustering``),
   re-cluster, relabel, re-rank and queue candidates (``services.triage.pipeline``); a
   background loop also
   re-clusters agents with new cases whose last run is older than ``recluster_interval_s``,
   and :meth:`TriageService.recluster` runs one on demand;
4. publish ``golden.candidate.proposed.v1`` for every queued candidate not yet announced (an
   outbox in ``review_queue.published_at``: new candidates only, at least once, also after a
   crash), then return so the transport commits the offsets.

The triage service also announces golden-set versions that reviewers made
(``golden.set.published.v1`` from the ``golden_outbox``; ``evalloop.review.outbox``): at start
and on every tick of its loop, so a version confirmed from the command line, or while the web
app's bus was down, is announced within ``recluster_check_s`` seconds.

Idempotent under redelivery: a case whose text is unchanged is not re-embedded nor counted, and
re-proposing a question updates its pending row without a new announcement.

The embedder is injected (``Deps.embedder`` or the constructor) so one loaded model can
serve every consumer in a process (``evalloop demo``); without one, ``settings.triage`` builds it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, ClassVar
from uuid import UUID

from cachetools import LRUCache
from pydantic import ValidationError

from evalloop.adapters import malloc
from evalloop.adapters.bus import Record
from evalloop.adapters.embedder import Embedder, build_embedder
from evalloop.adapters.triage_store import agents_due, mark_published, store_errors, unpublished
from evalloop.errors import BusError, EmbeddingError, StorageError
from evalloop.events import CandidateProposed, GoldenSetPublished, NegativeCase, dump_event
from evalloop.locks import KeyedLocks
from evalloop.review.outbox import publish_pending
from evalloop.runtime import Consumes, Deps, Publishes, Service
from evalloop.topics import GROUP_TRIAGE
from services.triage.online import IngestOutcome, ingest_cases
from services.triage.pipeline import GoldenCache, ReclusterReport, recluster_agent

__all__ = ["TriageService", "TriageStats", "decode_cases"]

log = logging.getLogger(__name__)


@dataclass
class TriageStats:
    """Counters since start: records seen / skipped as invalid, cases embedded / unchanged,
    re-clusterings run, candidates announced."""

    records: int = 0
    invalid: int = 0
    embedded: int = 0
    unchanged: int = 0
    reclusters: int = 0
    proposed: int = 0


def decode_cases(records: list[Record]) -> tuple[dict[str, dict[UUID, NegativeCase]], int]:
    """Decode a batch into ``agent_id -> case_id -> case`` (a later record of the same case
    wins: it is the re-fused, newer version) and the number of invalid records (logged)."""
    by_agent: dict[str, dict[UUID, NegativeCase]] = defaultdict(dict)
    invalid = 0
    for rec in records:
        try:
            case = NegativeCase.model_validate_json(rec.value)
        except ValidationError as exc:
            invalid += 1
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or '(record)'}: {e['msg']}"
                for e in exc.errors(include_url=False)[:5]
            )
            log.error(
                "triage: skipping %s[%d]@%d: expected a NegativeCase JSON object: %s",
                rec.topic, rec.partition, rec.offset, problems,
            )
            continue
        by_agent[case.agent_id][case.case_id] = case
    return by_agent, invalid


class TriageService(Service):
    """Embeds and clusters negative cases and proposes golden-set candidates (module doc)."""

    name: ClassVar[str] = "triage"
    consumes: ClassVar[tuple[Consumes, ...]] = (
        Consumes("feedback_negative", GROUP_TRIAGE, "on_negative_cases", NegativeCase,
                 max_records=500),
    )
    publishes: ClassVar[tuple[Publishes, ...]] = (
        Publishes("candidate_proposed", CandidateProposed,
                  "a golden-set candidate entered the review queue"),
        Publishes("golden_set_published", GoldenSetPublished,
                  "a reviewer's action made a new golden-set version"),
    )

    def __init__(self, deps: Deps, embedder: Embedder | None = None) -> None:
        """Keep the deps; the embedder comes from the argument, ``deps.embedder``,
        or is built from ``settings.triage`` (loading the model: ~10 s)."""
        super().__init__(deps)
        self.cfg = deps.settings.triage
        self.embedder: Embedder = (
            embedder or deps.embedder or build_embedder(self.cfg)
        )
        self.stats = TriageStats()
        # bounded per-agent state (docs/security.md#cost-amplification): the newest reports,
        # and a lock only while someone holds or waits for it
        self.last_reports: LRUCache[str, ReclusterReport] = LRUCache(maxsize=1000)
        self._locks = KeyedLocks()
        self._golden = GoldenCache()

    # -- lifecycle
    async def start(self) -> None:
        """Announce candidates left unannounced by a previous process; start the periodic
        re-clustering loop."""
        try:
            await self.flush_outbox()
            await self.flush_golden_outbox()
        except (BusError, StorageError):
            log.exception("triage: re-publishing the outbox failed; retrying after next batch")
        self.start_background(self._recluster_loop, name="triage-recluster")

    async def _recluster_loop(self) -> None:
        while True:
            await asyncio.sleep(self.cfg.recluster_check_s)
            try:
                await self.flush_golden_outbox()
                await self.recluster_due()
            except (BusError, EmbeddingError, StorageError):
                log.exception("triage: periodic re-clustering failed; retrying next tick")

    # -- handlers
    async def on_negative_cases(self, records: list[Record]) -> None:
        """Handle a batch of ``feedback.negative.v1`` records (module docstring).

        Raises:
            EmbeddingError, StorageError, BusError: the batch is to be redelivered.
        """
        by_agent, invalid = decode_cases(records)
        self.stats.records += len(records)
        self.stats.invalid += invalid
        for agent_id, cases in by_agent.items():
            outcome = await self.ingest(agent_id, list(cases.values()))
            if outcome.recluster_due(self.cfg.recluster_every, self.cfg.recluster_growth):
                await self.recluster(agent_id)
        await self.flush_outbox()

    async def ingest(self, agent_id: str, cases: list[NegativeCase]) -> IngestOutcome:
        """Embed, assign and store one agent's cases (no re-clustering, no publishing)."""
        async with self._locks(agent_id):
            outcome = await ingest_cases(
                self.deps.pool, self.embedder, agent_id, cases,
                min_similarity=1.0 - self.cfg.cluster_threshold,
            )
        self.stats.embedded += outcome.embedded
        self.stats.unchanged += outcome.unchanged
        return outcome

    async def recluster(self, agent_id: str) -> ReclusterReport:
        """Re-cluster, relabel and re-rank ``agent_id`` now, then announce new candidates.

        Raises:
            EmbeddingError, StorageError, BusError.
        """
        async with self._locks(agent_id):
            try:
                report = await recluster_agent(
                    self.deps.pool, self.embedder, self.cfg, agent_id, self._golden
                )
            finally:
                # the run's arrays are freed; hand the pages back (RSS flat, not at the peak)
                await asyncio.to_thread(malloc.trim)
        self.stats.reclusters += 1
        self.last_reports[agent_id] = report
        await self.flush_outbox(agent_id)
        return report

    async def recluster_due(self) -> list[ReclusterReport]:
        """Re-cluster every agent that is due (count or age; ``settings.triage``)."""
        due = await agents_due(
            self.deps.pool, every=self.cfg.recluster_every,
            interval_s=self.cfg.recluster_interval_s, growth=self.cfg.recluster_growth,
        )
        return [await self.recluster(a) for a in due]

    async def flush_golden_outbox(self) -> int:
        """Announce golden-set versions reviewers made and nobody announced yet; returns how
        many (``evalloop.review.outbox.publish_pending``).

        Raises:
            BusError: the bus refused (the versions stay queued).
            StorageError: PostgreSQL failed.
        """
        sent = await publish_pending(self.deps.pool, self.deps.bus,
                                     self.deps.topics.golden_set_published)
        return len(sent)

    async def flush_outbox(self, agent_id: str | None = None) -> int:
        """Publish ``golden.candidate.proposed.v1`` for every queued candidate not yet
        announced (of one agent or all), then mark them; returns how many.

        Raises:
            BusError: the bus refused (the rows stay unannounced and are retried).
            StorageError: PostgreSQL failed.
        """
        with store_errors("reading the candidate outbox"):
            async with self.deps.pool.acquire() as conn:
                rows = await unpublished(conn, agent_id)
        if not rows:
            return 0
        items: list[tuple[str | None, bytes]] = [
            (r["agent_id"], dump_event(_proposed(r))) for r in rows
        ]
        await self.deps.bus.publish_batch(self.deps.topics.candidate_proposed, items)
        with store_errors("marking candidates announced"):
            async with self.deps.pool.acquire() as conn:
                await mark_published(conn, [r["candidate_id"] for r in rows])
        self.stats.proposed += len(rows)
        return len(rows)


def _proposed(row: Any) -> CandidateProposed:
    return CandidateProposed(
        candidate_id=row["candidate_id"], agent_id=row["agent_id"],
        cluster_id=row["cluster_id"], cluster_label=row["cluster_label"],
        question=row["question"], answer_given=row["answer_given"],
        expected_answer=row["expected_answer"],
        evidence_event_ids=list(row["evidence_event_ids"]),
        confidence=row["confidence"], proposed_at=row["proposed_at"],
    )
