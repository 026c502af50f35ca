"""The triage service on real PostgreSQL with the in-process bus: negative cases in -> cases,
clusters, review-queue rows and ``golden.candidate.proposed.v1`` out; redelivery changes
nothing. Uses the hashing embedder (our own port) for speed; test_triage_minilm.py runs the
real model."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
import pytest_asyncio

from evalloop.adapters.bus import InProcessBus
from evalloop.adapters.embedder import HashingEmbedder
from evalloop.events import CandidateProposed, NegativeCase, dump_event
from evalloop.runtime import Deps, mount_in_process
from evalloop.settings import Settings, TriageSettings
from evalloop.topics import Topics
from services.triage.pipeline import candidate_id
from services.triage.service import TriageService

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
AGENT = "airline"

#: three topics with disjoint vocabularies; each case a different question of its topic
TOPICS = {
    "refund": (
        [f"How can I get a refund for cancelled flight number {n}?" for n in range(6)],
        "did not explain the refund process for a cancelled flight",
        "Refunds for cancelled flights are paid back to the original card.",
    ),
    "baggage": (
        [f"What is the checked baggage allowance on route {n}?" for n in range(5)],
        "baggage allowance weight limit missing",
        "Each passenger may check one bag of 23 kg.",
    ),
    "pets": (
        [f"Can my dog travel in the cabin on trip {n}?" for n in range(4)],
        "pets in cabin rules not covered",
        "Small pets may travel in the cabin in an approved carrier.",
    ),
}


def make_case(topic: str, i: int, *, question: str | None = None, comment: str | None = None,
              expected: str | None = None, confidence: float = 0.7, evidence: int = 1,
              conv: str | None = None) -> NegativeCase:
    qs, default_comment, answer = TOPICS[topic]
    conv = conv or f"{topic}-{i}"
    return NegativeCase(
        case_id=uuid.uuid5(uuid.NAMESPACE_URL, f"{AGENT}/{conv}/1"), agent_id=AGENT,
        conversation_id=conv, turn_id="1", occurred_at=T0 + timedelta(hours=i),
        confidence=confidence,
        signals=["user_rating"] + (["operator_correction"] if expected else []),
        evidence_event_ids=[uuid.uuid5(uuid.NAMESPACE_URL, f"{conv}/e{j}")
                            for j in range(evidence)],
        question=question or qs[i], answer=answer, comment=comment or default_comment,
        expected_answer=expected,
    )


def all_cases() -> list[NegativeCase]:
    cases = [make_case(t, i) for t, (qs, _, _) in TOPICS.items() for i in range(len(qs))]
    # an operator correction (strong, 2 pieces of evidence) on refund 5
    cases[5] = make_case("refund", 5, expected="Cancelled flights are refunded in full.",
                         confidence=0.95, evidence=2)
    return cases


@pytest.fixture
def bus() -> InProcessBus:
    return InProcessBus(retry_delay_s=0.01)


@pytest.fixture
def triage_settings(pg_settings: Settings) -> Settings:
    return pg_settings.model_copy(update={"triage": TriageSettings(
        embedder="hashing", recluster_every=15, candidates_per_cluster=2,
        recluster_check_s=3600)})


@pytest.fixture
def service(triage_settings: Settings, pool: asyncpg.Pool, bus: InProcessBus) -> TriageService:
    deps = Deps(settings=triage_settings, pool=pool, bus=bus, topics=Topics())
    svc = TriageService(deps, embedder=HashingEmbedder(256))
    mount_in_process(bus, svc)
    return svc


@pytest_asyncio.fixture
async def running(bus: InProcessBus) -> AsyncIterator[InProcessBus]:
    async with asyncio.TaskGroup() as tg:
        tg.create_task(bus.run())
        try:
            yield bus
        finally:
            bus.stop()


async def send(bus: InProcessBus, cases: list[NegativeCase]) -> None:
    await bus.publish_batch(Topics().feedback_negative,
                            [(c.agent_id, dump_event(c)) for c in cases])
    await bus.drain(timeout_s=60)


def proposed(bus: InProcessBus) -> list[CandidateProposed]:
    return [CandidateProposed.model_validate_json(r.value)
            for r in bus.messages(Topics().candidate_proposed)]


async def test_cases_in_clusters_queue_and_proposals_out(
    service: TriageService, running: InProcessBus, pool: asyncpg.Pool
) -> None:
    cases = all_cases()
    await send(running, cases)

    assert await pool.fetchval("SELECT count(*) FROM triage_cases WHERE cluster_id IS NOT NULL"
                               ) == 15
    clusters = await pool.fetch(
        "SELECT cluster_id, size, label, terms, provisional, covered_by_golden FROM clusters "
        "ORDER BY size DESC")
    assert [c["size"] for c in clusters] == [6, 5, 4]
    assert not any(c["provisional"] or c["covered_by_golden"] for c in clusters)
    # the topic of each cluster shows in its label; members are exactly the topic's cases
    by_case = {r["case_id"]: r["cluster_id"] for r in await pool.fetch(
        "SELECT case_id, cluster_id FROM triage_cases")}
    for topic, cl in zip(TOPICS, clusters, strict=True):
        members = {c.case_id for c in cases if c.conversation_id.startswith(topic)}
        assert {k for k, v in by_case.items() if v == cl["cluster_id"]} == members
    # terms come from the questions only (the rater comments are left out); the label is the
    # medoid question, and no term is shown after it: each is already in the question
    assert [c["terms"] for c in clusters] == [
        ["cancelled", "flight", "number", "refund"],
        ["allowance", "baggage", "checked", "route"],
        ["cabin", "dog", "travel", "trip"],
    ]
    assert [c["label"] for c in clusters] == [
        "How can I get a refund for cancelled flight number 2?",
        "What is the checked baggage allowance on route 2?",
        "Can my dog travel in the cabin on trip 2?",
    ]

    queue = await pool.fetch(
        "SELECT candidate_id, cluster_id, cluster_label, question, answer_given, "
        "expected_answer, evidence_event_ids, confidence, status, published_at "
        "FROM review_queue ORDER BY confidence DESC, candidate_id")
    assert len(queue) == 6  # 2 per cluster
    assert {r["status"] for r in queue} == {"pending"}
    assert all(r["published_at"] is not None for r in queue)
    # the operator-corrected case ranks first and carries its expected answer and evidence
    top = queue[0]
    assert top["question"] == cases[5].question
    assert top["expected_answer"] == "Cancelled flights are refunded in full."
    assert top["answer_given"] == TOPICS["refund"][2]
    assert top["evidence_event_ids"] == cases[5].evidence_event_ids
    assert top["cluster_id"] == clusters[0]["cluster_id"]
    assert top["cluster_label"] == clusters[0]["label"]
    assert top["candidate_id"] == candidate_id(AGENT, _key(cases[5].question))

    msgs = proposed(running)
    assert sorted(m.candidate_id for m in msgs) == sorted(r["candidate_id"] for r in queue)
    first = next(m for m in msgs if m.candidate_id == top["candidate_id"])
    assert (first.expected_answer, first.cluster_id, first.confidence) == (
        top["expected_answer"], top["cluster_id"], top["confidence"])
    assert service.stats.embedded == 15 and service.stats.proposed == 6

    # redelivery of the whole batch: nothing re-embedded, nothing new, no announcement
    before = await _snapshot(pool)
    await send(running, cases)
    assert service.stats.unchanged == 15 and service.stats.embedded == 15
    assert len(proposed(running)) == 6
    assert await _snapshot(pool) == before
    assert await pool.fetchval("SELECT new_cases FROM triage_agents") == 0

    # re-clustering on demand keeps cluster ids (carried over by overlap) and proposes nothing
    report = await service.recluster(AGENT)
    assert (report.cases, report.clusters, report.kept, report.new_candidates) == (15, 3, 6, [])
    assert report.uncovered == [c["cluster_id"] for c in clusters]
    assert await _snapshot(pool) == before
    assert len(proposed(running)) == 6


async def test_online_assignment_between_reclusterings(
    service: TriageService, running: InProcessBus, pool: asyncpg.Pool
) -> None:
    await send(running, all_cases())
    refund_cluster = await pool.fetchval(
        "SELECT cluster_id FROM clusters ORDER BY size DESC LIMIT 1")
    new_refund = make_case("refund", 0, conv="refund-new",
                           question="How can I get a refund for cancelled flight number 99?")
    other = NegativeCase(**{**make_case("pets", 0, conv="wifi-1").model_dump(),
                            "question": "Why is the onboard wifi so slow?",
                            "comment": "nothing about wifi speed", "answer": "We have wifi."})
    await send(running, [new_refund, other])
    rows = {r["case_id"]: r["cluster_id"] for r in await pool.fetch(
        "SELECT case_id, cluster_id FROM triage_cases WHERE case_id = ANY($1::uuid[])",
        [new_refund.case_id, other.case_id])}
    assert rows[new_refund.case_id] == refund_cluster
    sizes = {r["cluster_id"]: (r["size"], r["provisional"]) for r in await pool.fetch(
        "SELECT cluster_id, size, provisional FROM clusters")}
    assert sizes[refund_cluster] == (7, False)
    assert sizes[rows[other.case_id]] == (1, True)
    assert rows[other.case_id] == "c4"  # c1..c3 named by the first re-clustering
    assert await pool.fetchval("SELECT new_cases FROM triage_agents") == 2
    assert len(proposed(running)) == 6  # no re-clustering yet: nothing new proposed


async def test_changed_case_is_reembedded_and_ranked_again(
    service: TriageService, running: InProcessBus, pool: asyncpg.Pool
) -> None:
    cases = all_cases()
    await send(running, cases)
    # the pets 3 turn gets an operator correction: same case id, new comment and evidence
    changed = make_case("pets", 3, comment="operator: pets rules were wrong",
                        expected="Dogs under 8 kg may fly in the cabin.", confidence=0.95,
                        evidence=3)
    await send(running, [changed])
    assert service.stats.embedded == 16
    row = await pool.fetchrow(
        "SELECT confidence, expected_answer, cardinality(evidence_event_ids) n, comment "
        "FROM triage_cases WHERE case_id = $1", changed.case_id)
    assert (row["confidence"], row["expected_answer"], row["n"], row["comment"]) == (
        0.95, "Dogs under 8 kg may fly in the cabin.", 3, "operator: pets rules were wrong")
    await service.recluster(AGENT)
    q = await pool.fetchrow("SELECT expected_answer, cardinality(evidence_event_ids) n "
                            "FROM review_queue WHERE question = $1", changed.question)
    assert q is not None and q["expected_answer"] == "Dogs under 8 kg may fly in the cabin."
    assert q["n"] == 3


async def test_near_duplicate_questions_are_proposed_once(
    service: TriageService, running: InProcessBus, pool: asyncpg.Pool
) -> None:
    cases = all_cases()
    # three more refund cases: the very same question (another conversation), a copy that
    # differs only in case and spacing (same question key), and one without the question mark
    # (another key, but the same words: question cosine 1.0 >= 0.92)
    same = make_case("refund", 5, conv="refund-dup", confidence=0.95, evidence=2)
    spaced = make_case("refund", 5, conv="refund-dup2", confidence=0.95, evidence=2,
                       question="  how CAN i get a refund for cancelled flight number 5? ")
    bare = make_case("refund", 5, conv="refund-dup3", confidence=0.95, evidence=2,
                     question="How can I get a refund for cancelled flight number 5")
    await send(running, [*cases, same, spaced, bare])
    report = service.last_reports[AGENT]
    assert report.dropped["duplicate"] >= 1
    rows = await pool.fetch("SELECT question FROM review_queue WHERE lower(question) LIKE "
                            "'%flight number 5%'")
    assert len(rows) == 1
    assert await pool.fetchval("SELECT count(*) FROM review_queue") == 6


async def test_invalid_record_is_skipped_and_the_rest_processed(
    service: TriageService, running: InProcessBus, pool: asyncpg.Pool
) -> None:
    await running.publish(Topics().feedback_negative, b'{"case_id": "nope"}', key=AGENT)
    await send(running, all_cases()[:3])
    assert service.stats.invalid == 1
    assert await pool.fetchval("SELECT count(*) FROM triage_cases") == 3


async def test_outbox_is_republished_after_a_failed_publish(
    triage_settings: Settings, pool: asyncpg.Pool
) -> None:
    class FailingBus(InProcessBus):
        fail = True

        async def publish_batch(self, topic: str, items: list[tuple[str | None, bytes]]
                                ) -> None:
            if self.fail and topic == Topics().candidate_proposed:
                from evalloop.errors import BusError
                raise BusError("broker down")
            await super().publish_batch(topic, items)

    bus = FailingBus(retry_delay_s=0.01, max_attempts=1)
    svc = TriageService(Deps(settings=triage_settings, pool=pool, bus=bus, topics=Topics()),
                        embedder=HashingEmbedder(256))
    for c in all_cases():
        await bus.publish(Topics().feedback_negative, dump_event(c), key=AGENT)
    from evalloop.errors import BusError
    with pytest.raises(BusError):
        await svc.on_negative_cases(bus.messages(Topics().feedback_negative))
    assert await pool.fetchval("SELECT count(*) FROM review_queue WHERE published_at IS NULL"
                               ) == 6
    bus.fail = False
    # a restarted service announces them at start (and redelivery changes nothing else)
    svc2 = TriageService(svc.deps, embedder=HashingEmbedder(256))
    await svc2.start()
    await svc2.stop()
    assert len(bus.messages(Topics().candidate_proposed)) == 6
    await svc2.on_negative_cases(bus.messages(Topics().feedback_negative))
    assert len(bus.messages(Topics().candidate_proposed)) == 6
    assert await pool.fetchval("SELECT count(*) FROM review_queue WHERE published_at IS NULL"
                               ) == 0


def _key(q: str) -> str:
    from evalloop.core.ranking import question_key
    return question_key(q)


async def _snapshot(pool: asyncpg.Pool) -> tuple[object, ...]:
    cases = await pool.fetch("SELECT case_id, cluster_id, text_hash, embedding FROM triage_cases "
                             "ORDER BY case_id")
    clusters = await pool.fetch("SELECT cluster_id, size, label, terms FROM clusters "
                                "ORDER BY cluster_id")
    queue = await pool.fetch("SELECT candidate_id, cluster_id, confidence, status FROM "
                             "review_queue ORDER BY candidate_id")
    return tuple(map(tuple, cases)), tuple(map(tuple, clusters)), tuple(map(tuple, queue))



async def test_golden_set_covers_its_cluster_and_blocks_its_question(
    service: TriageService, running: InProcessBus, pool: asyncpg.Pool
) -> None:
    from evalloop.adapters.golden_store import import_golden_set
    from evalloop.core.evaluation.cases import EvalCase, EvalSet

    cases = all_cases()
    golden_q = cases[5].question  # the operator-corrected refund question: ranked first
    assert golden_q is not None
    await import_golden_set(pool, EvalSet(
        set_id="airline-core", source="test", format="golden_json",
        cases=(EvalCase(id="g1", input=golden_q, expected_answer=TOPICS["refund"][2]),),
    ), agent_id=AGENT)
    await send(running, cases)

    clusters = await pool.fetch(
        "SELECT cluster_id, size, golden_cases, covered_by_golden FROM clusters "
        "ORDER BY size DESC")
    assert [(c["size"], c["golden_cases"], c["covered_by_golden"]) for c in clusters] == [
        (6, 1, True), (5, 0, False), (4, 0, False)]
    report = service.last_reports[AGENT]
    assert report.uncovered == [c["cluster_id"] for c in clusters[1:]]
    # the golden question and its five paraphrases (only the flight number differs): none is a
    # new case (golden_similarity, docs/review.md#ranking)
    assert report.dropped.get("in_golden_set") == 6
    questions = {r["question"] for r in await pool.fetch("SELECT question FROM review_queue")}
    assert not questions & set(TOPICS["refund"][0])
    assert await pool.fetchval("SELECT count(*) FROM review_queue") == 4  # baggage + pets


async def test_reviewed_question_is_not_proposed_again(
    service: TriageService, running: InProcessBus, pool: asyncpg.Pool
) -> None:
    cases = all_cases()
    await send(running, cases)
    top = await pool.fetchrow("SELECT candidate_id, cluster_id FROM review_queue "
                              "ORDER BY confidence DESC LIMIT 1")
    await pool.execute("UPDATE review_queue SET status = 'rejected' WHERE candidate_id = $1",
                       top["candidate_id"])
    report = await service.recluster(AGENT)
    assert report.dropped.get("in_queue") == 1
    # the rejected row stays as it was; its cluster gets another pending candidate instead
    assert await pool.fetchval("SELECT status FROM review_queue WHERE candidate_id = $1",
                               top["candidate_id"]) == "rejected"
    pending = await pool.fetchval("SELECT count(*) FROM review_queue WHERE status = 'pending' "
                                  "AND cluster_id = $1", top["cluster_id"])
    assert pending == 2
    assert len(report.new_candidates) == 1
    assert len(proposed(running)) == 7
