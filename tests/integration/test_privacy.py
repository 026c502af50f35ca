"""Retention and erasure on real PostgreSQL, over data the real services stored (ingest with its
key -> recorder -> monitor -> triage, in process), and the optional redaction step at ingest."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid5

import asyncpg
import pytest
from typer.testing import CliRunner

from evalloop.adapters.bus import InProcessBus
from evalloop.adapters.embedder import HashingEmbedder
from evalloop.adapters.golden_store import (
    content_hash,
    import_golden_set,
    load_eval_run,
    load_golden_cases,
    save_eval_run,
)
from evalloop.adapters.postgres import connect_pool
from evalloop.adapters.privacy_store import erase_conversations, prune
from evalloop.adapters.review_store import confirm_candidates, retire_case, skip_candidate
from evalloop.cli.main import app
from evalloop.core.evaluation.cases import EvalCase, EvalSet
from evalloop.core.evaluation.results import (
    AgentFailure,
    CaseResult,
    EvalRun,
    FlagRecord,
    GateRecord,
    summarise,
)
from evalloop.core.review import Reviewer, golden_case_id
from evalloop.events import AgentResponse, FeedbackEvent, UserRating
from evalloop.replay.loop import in_process_loop
from evalloop.runtime import Deps
from evalloop.settings import (
    IngestSettings,
    PostgresSettings,
    RetentionSettings,
    Settings,
    TriageSettings,
)
from evalloop.topics import Topics
from services.monitor.service import MonitorService
from services.recorder.service import RecorderService
from services.retention.service import RetentionService
from services.triage.service import TriageService

NS = UUID("6f1c1f5e-2b9a-4c39-9a51-0d7e1f0c2a11")
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
QUESTIONS = [
    "How many vacation days do I get as a new employee this year?",
    "How many vacation days does a new employee get in the first year?",
    "As a new employee, how many vacation days do I get?",
]
TABLES = ("events", "negative_cases", "monitor_turns", "monitor_buckets", "triage_cases",
          "review_queue", "eval_runs", "eval_results", "reeval_jobs", "dead_letters")


def turn(conv: str, n: int, at: datetime, user: str | None = None,
         comment: str = "wrong number of days") -> list[FeedbackEvent]:
    common: dict[str, Any] = {"agent_id": "hr", "conversation_id": conv, "turn_id": f"t{n}",
                              "user_id": user}
    q = QUESTIONS[n % 3]
    return [
        AgentResponse(event_id=uuid5(NS, f"{conv}/{n}/r"), occurred_at=at, question=q,
                      answer="You get 10 vacation days.", **common),
        UserRating(event_id=uuid5(NS, f"{conv}/{n}/d"), occurred_at=at + timedelta(seconds=30),
                   thumbs="down", comment=comment, question=q,
                   answer="You get 10 vacation days.", **common),
    ]


def settings_for(dsn: str, **ingest: Any) -> Settings:
    return Settings(
        postgres=PostgresSettings(dsn=dsn), ingest=IngestSettings(**ingest),
        triage=TriageSettings(embedder="hashing", recluster_every=1000, min_cluster_size=3,
                              recluster_check_s=3600, duplicate_similarity=0.999),
    )


async def run_loop(settings: Settings, pool: asyncpg.Pool, events: list[FeedbackEvent]) -> None:
    async with in_process_loop(settings, pool, [RecorderService, MonitorService, TriageService],
                               extras={"embedder": HashingEmbedder()}) as loop:
        async with loop.ingest_sink() as sink:
            await sink.send(events)
        await loop.drain(timeout_s=120)
        triage = next(s for s in loop.services if isinstance(s, TriageService))
        await triage.recluster("hr")
        await loop.drain(timeout_s=120)


async def counts(pool: asyncpg.Pool) -> dict[str, int]:
    return {t: await pool.fetchval(f"SELECT count(*) FROM {t}") for t in TABLES}


def dataset() -> list[FeedbackEvent]:
    events: list[FeedbackEvent] = []
    for n in range(3):
        events += turn("c-other", n, T0 + timedelta(days=3, minutes=n), user="u-12",
                       comment="not what the policy says")
        events += turn("c-jo", n, T0 + timedelta(days=3, minutes=10 + n), user="u-77")
        events += turn("c-old", n, T0 + timedelta(minutes=n))
    return events


# ------------------------------------------------------------------ erasure


async def test_erase_by_user_removes_the_persons_text_everywhere(
    pool: asyncpg.Pool, db_dsn: str
) -> None:
    await run_loop(settings_for(db_dsn), pool, dataset())
    before = await counts(pool)
    assert {k: before[k] for k in ("events", "negative_cases", "monitor_turns", "triage_cases")
            } == {"events": 18, "negative_cases": 9, "monitor_turns": 9, "triage_cases": 9}
    erase_cases = {r["case_id"] for r in await pool.fetch(
        "SELECT case_id FROM negative_cases WHERE conversation_id = 'c-jo'")}
    # triage proposed Jo's turns as golden-set candidates
    assert {r["case_id"] for r in await pool.fetch("SELECT case_id FROM review_queue")} \
        == erase_cases

    result = await asyncio.to_thread(
        CliRunner().invoke, app, ["erase", "--user", "u-77", "--json"],
        env={"EVALLOOP_POSTGRES__DSN": db_dsn})
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    UUID(report.pop("erase_id"))
    assert report == {"conversations": ["c-jo"], "deleted": {
        "review_queue": 3, "triage_cases": 3, "monitor_turns": 3,
        "negative_cases": 3, "events": 6},
        "redacted": {"golden_cases": 0, "review_actions": 0, "eval_results": 0}}
    after = await counts(pool)
    assert after["events"] == 12 and after["negative_cases"] == 6
    assert after["triage_cases"] == 6 and after["review_queue"] == 0
    assert await pool.fetchval("SELECT count(*) FROM events WHERE payload->>'user_id' = 'u-77'"
                               " OR conversation_id = 'c-jo'") == 0
    for table in ("triage_cases", "review_queue"):
        left = await pool.fetchval(
            f"SELECT count(*) FROM {table} WHERE case_id = ANY($1::uuid[])",
            list(erase_cases))
        assert left == 0, table
    # erasing again finds nothing
    again = await erase_conversations(pool, ["c-jo"])
    assert again.deleted == dict.fromkeys(
        ("review_queue", "triage_cases", "monitor_turns", "negative_cases", "events"), 0)
    assert again.redacted == {"golden_cases": 0, "review_actions": 0, "eval_results": 0}


HR_1 = EvalCase(id="hr-1", input="How many vacation days after five years?",
                expected_answer="25 days.", context_chunks=("handbook-4.2",),
                category="routine", notes="from the handbook")


async def golden_versions(pool: asyncpg.Pool) -> list[asyncpg.Record]:
    return await pool.fetch("SELECT version_id, version, content_hash, diff FROM"
                            " golden_set_versions WHERE agent_id = 'hr' ORDER BY version")


async def test_erase_redacts_confirmed_golden_cases_in_every_version(
    pool: asyncpg.Pool, db_dsn: str
) -> None:
    await run_loop(settings_for(db_dsn), pool, dataset())
    await import_golden_set(pool, EvalSet(set_id="hr-golden", source="hr.json",
                                          format="golden_json", cases=(HR_1,)), agent_id="hr")
    jo = await pool.fetch("SELECT candidate_id, row_version FROM review_queue r JOIN"
                          " negative_cases n USING (case_id) WHERE n.conversation_id = 'c-jo'"
                          " ORDER BY candidate_id")
    assert len(jo) == 3
    ann = Reviewer("ann")
    # v2: Jo's first turn, edited; v3: her second turn (v3 holds both)
    a = (await confirm_candidates(pool, [(jo[0]["candidate_id"], jo[0]["row_version"], {
        "expected_answer": "New employees get 20 days.", "notes": "Jo asked twice",
        "expected_behavior": "answers with the number of days"})], reviewer=ann)
         )["items"][0]["golden_case_id"]
    # the answer of Jo's second turn was found in a handbook passage
    await pool.execute("UPDATE review_queue SET expected_answer_ref = 'passage:handbook-4.1'"
                       " WHERE candidate_id = $1", jo[1]["candidate_id"])
    b = (await confirm_candidates(pool, [(jo[1]["candidate_id"], jo[1]["row_version"], None)],
                                  reviewer=ann))["items"][0]["golden_case_id"]
    before = await golden_versions(pool)
    assert [v["version"] for v in before] == [1, 2, 3]
    v1, v2, v3 = (v["version_id"] for v in before)
    assert (await load_golden_cases(pool, v2))[1].expected_answer == "New employees get 20 days."
    assert (await load_golden_cases(pool, v3))[2].context_chunks == ("handbook-4.1",)

    result = await asyncio.to_thread(
        CliRunner().invoke, app, ["erase", "--conversation", "c-jo", "--json"],
        env={"EVALLOOP_POSTGRES__DSN": db_dsn})
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    erase_id = UUID(report.pop("erase_id"))
    assert report == {"conversations": ["c-jo"], "deleted": {
        "review_queue": 3, "triage_cases": 3, "monitor_turns": 3,
        "negative_cases": 3, "events": 6},
        "redacted": {"golden_cases": 3, "review_actions": 2, "eval_results": 0}}

    # the text is gone from every version; structure, flags and the other case stay
    cases = {v: await load_golden_cases(pool, v) for v in (v1, v2, v3)}
    assert cases[v1] == (HR_1,)
    assert [c.id for c in cases[v2]] == ["hr-1", a]
    assert [c.id for c in cases[v3]] == ["hr-1", a, b]
    for v in (v2, v3):
        assert cases[v][0] == HR_1
    erased_a = cases[v3][1]
    assert (erased_a.input, erased_a.expected_answer, erased_a.expected_behavior,
            erased_a.notes, erased_a.context_chunks) == (
        "[erased]", "[erased]", "[erased]", "[erased]", ())
    assert (erased_a.category, erased_a.should_refuse, erased_a.should_escalate,
            erased_a.created_by) == ("routine", False, False, "ann")
    assert cases[v2][1] == erased_a
    erased_b = cases[v3][2]
    assert (erased_b.input, erased_b.notes, erased_b.context_chunks) == (
        "[erased]", "[erased]", ("[erased]",))
    text = json.dumps([r["q"] for r in await pool.fetch(
        "SELECT row_to_json(c)::text AS q FROM golden_cases c")])
    assert "vacation" not in text.replace(HR_1.input, "") and "Jo asked" not in text

    # each version's hash is the hash of what it now holds; v1 and the diffs are unchanged
    after = await golden_versions(pool)
    assert after[0]["content_hash"] == before[0]["content_hash"]
    assert [v["diff"] for v in after] == [v["diff"] for v in before]
    for v in after:
        assert v["content_hash"] == content_hash(cases[v["version_id"]])
    assert after[1]["content_hash"] != before[1]["content_hash"]
    # the audit says which request redacted which case of which version, and the hashes
    audit = await pool.fetch(
        "SELECT erase_id, version_id, case_id, hash_before, hash_after, redacted_at"
        " FROM golden_redactions ORDER BY version_id = $1 DESC, case_id", v2)
    assert [tuple(r.values())[:5] for r in audit] == [
        (erase_id, v2, a, before[1]["content_hash"], after[1]["content_hash"]),
        (erase_id, v3, a, before[2]["content_hash"], after[2]["content_hash"]),
        (erase_id, v3, b, before[2]["content_hash"], after[2]["content_hash"]),
    ]
    assert len({r["redacted_at"] for r in audit}) == 1

    # verify explains the changed hashes instead of calling them tampering
    day = f"{audit[0]['redacted_at']:%Y-%m-%d}"
    verify = await asyncio.to_thread(
        CliRunner().invoke, app, ["golden", "verify", "--agent", "hr"],
        env={"EVALLOOP_POSTGRES__DSN": db_dsn})
    assert verify.exit_code == 0, verify.output
    assert verify.stdout.splitlines() == [
        "hr/hr-golden v1: intact: content matches its hash",
        f"hr/hr-golden v2: redacted: redacted by erasure on {day} (1 case: {a})",
        f"hr/hr-golden v3: redacted: redacted by erasure on {day} (2 cases: {a}, {b})",
    ]
    # a change that is not an erasure's is a mismatch (exit 1), and says what it knows
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL evalloop.erasure = 'on'")
        await conn.execute("UPDATE golden_cases SET notes = 'edited by hand'"
                           " WHERE case_id = 'hr-1' AND version_id = $1", v3)
    verify = await asyncio.to_thread(
        CliRunner().invoke, app, ["golden", "verify", "--agent", "hr", "--json"],
        env={"EVALLOOP_POSTGRES__DSN": db_dsn})
    assert verify.exit_code == 1, verify.output
    rows = [json.loads(line) for line in verify.stdout.splitlines()]
    assert [(r["version"], r["status"]) for r in rows] == [
        (1, "intact"), (2, "redacted"), (3, "mismatch")]
    assert rows[2]["message"] == (
        "content does not match its stored hash: changed outside evalloop (earlier: redacted"
        f" by erasure on {day} (2 cases: {a}, {b}))")
    assert rows[2]["redactions"] == [{
        "erase_id": str(erase_id), "redacted_at": audit[0]["redacted_at"].isoformat(),
        "case_ids": [a, b], "hash_before": before[2]["content_hash"]}]
    assert rows[2]["stored_hash"] == after[2]["content_hash"] != rows[2]["actual_hash"]

    # outside an erasure the versions stay immutable; inside one, flags cannot change
    with pytest.raises(asyncpg.RaiseError, match="golden set versions are immutable"):
        await pool.execute("UPDATE golden_cases SET question = 'x' WHERE case_id = 'hr-1'")
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL evalloop.erasure = 'on'")
        with pytest.raises(asyncpg.RaiseError, match="immutable: UPDATE on golden_cases"):
            await conn.execute("UPDATE golden_cases SET should_refuse = true"
                               " WHERE case_id = 'hr-1'")
    with pytest.raises(asyncpg.RaiseError, match="append-only"):
        await pool.execute("DELETE FROM golden_redactions")


async def test_erase_text_output_counts_golden_cases_redacted(
    pool: asyncpg.Pool, db_dsn: str
) -> None:
    await run_loop(settings_for(db_dsn), pool, dataset())
    jo = await pool.fetchrow("SELECT candidate_id, row_version FROM review_queue ORDER BY"
                             " candidate_id LIMIT 1")
    await confirm_candidates(pool, [(jo["candidate_id"], jo["row_version"], None)],
                             reviewer=Reviewer("ann"))
    result = await asyncio.to_thread(
        CliRunner().invoke, app, ["erase", "--user", "u-77"],
        env={"EVALLOOP_POSTGRES__DSN": db_dsn})
    assert result.exit_code == 0, result.output
    erase_id = await pool.fetchval("SELECT erase_id FROM golden_redactions")
    assert result.stdout.splitlines() == [
        f"erased 1 conversation(s) of user u-77 (erase request {erase_id})",
        "review_queue             3",
        "triage_cases             3",
        "monitor_turns            3",
        "negative_cases           3",
        "events                   6",
        "total                   18",
        "golden_cases             1 redacted in every golden-set version holding them",
        "review_actions           1 redacted in the review audit (who, what and when stay)",
        "eval_results             0 redacted in the results of runs over those cases",
    ]


async def test_erase_waits_for_a_confirm_in_flight_and_redacts_what_it_made(
    pool: asyncpg.Pool, db_dsn: str
) -> None:
    await run_loop(settings_for(db_dsn), pool, dataset())
    cand = await pool.fetchval("SELECT min(candidate_id::text)::uuid FROM review_queue")
    case_id = golden_case_id(str(cand))
    v1 = (await import_golden_set(pool, EvalSet(
        set_id="hr-golden", source="hr.json", format="golden_json",
        cases=(EvalCase(id=case_id, input="Jo's question", category="routine"),)),
        agent_id="hr")).version.version_id
    async with pool.acquire() as confirm:
        # a confirm holds the candidate's row (as review_store does) and links it to v1
        tx = confirm.transaction()
        await tx.start()
        await confirm.execute("SELECT 1 FROM review_queue WHERE candidate_id = $1 FOR UPDATE",
                              cand)
        await confirm.execute(
            "UPDATE review_queue SET status = 'confirmed', golden_version_id = $2,"
            " golden_case_id = $3 WHERE candidate_id = $1", cand, v1, case_id)
        erase = asyncio.create_task(erase_conversations(pool, ["c-jo"]))
        async with asyncio.timeout(30):
            while not await pool.fetchval(  # noqa: ASYNC110 (the erasure waits for the lock)
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    " AND datname = current_database()"):
                await asyncio.sleep(0.02)
        await tx.commit()
    done = await erase
    assert done.redacted == {"golden_cases": 1, "review_actions": 0, "eval_results": 0}
    assert done.deleted["review_queue"] == 3
    assert [c.input for c in await load_golden_cases(pool, v1)] == ["[erased]"]


AUDIT_TEXT_KEYS = {"question", "expected_answer", "context_chunks", "expected_behavior",
                   "notes", "edits", "input"}


def erased_doc(doc: Any) -> Any:
    """The audit document as erasure must leave it: text keys (at any depth) -> the marker."""
    if isinstance(doc, list):
        return [erased_doc(v) for v in doc]
    if not isinstance(doc, dict):
        return doc
    return {k: (None if v is None else "[erased]") if k in AUDIT_TEXT_KEYS else erased_doc(v)
            for k, v in doc.items()}


def result(case_id: str, question: str, **kw: Any) -> CaseResult:
    return CaseResult(case_id=case_id, category="routine", input=question,
                      should_refuse=False, should_escalate=False, **kw)


async def save_run(pool: asyncpg.Pool, n: int, version_id: UUID,
                   results: list[CaseResult]) -> UUID:
    run_id = uuid5(NS, f"run-{n}")
    await save_eval_run(pool, EvalRun(
        run_id=run_id, started_at=T0 + timedelta(days=5, hours=n),
        finished_at=T0 + timedelta(days=5, hours=n, minutes=1), source="responses_file",
        agent_id="hr", golden_set_version_id=version_id, results=results,
        summary=summarise(results)))
    return run_id


async def test_erase_redacts_the_review_audit_and_eval_results_of_erased_cases(
    pool: asyncpg.Pool, db_dsn: str
) -> None:
    await run_loop(settings_for(db_dsn), pool, dataset())
    v1 = (await import_golden_set(pool, EvalSet(
        set_id="hr-golden", source="hr.json", format="golden_json", cases=(HR_1,)),
        agent_id="hr")).version.version_id
    jo = await pool.fetch("SELECT candidate_id, row_version FROM review_queue ORDER BY"
                          " candidate_id")
    assert len(jo) == 3
    ann = Reviewer("ann")
    await skip_candidate(pool, jo[2]["candidate_id"], row_version=jo[2]["row_version"],
                         reviewer=ann, reason="unsure what Jo meant")
    a = (await confirm_candidates(pool, [(jo[0]["candidate_id"], jo[0]["row_version"], {
        "expected_answer": "New employees get 20 days.", "notes": "Jo asked twice",
        "expected_behavior": "answers with the number of days"})], reviewer=ann)
         )["items"][0]["golden_case_id"]  # v2: hr-1, a
    b = (await confirm_candidates(pool, [(jo[1]["candidate_id"], jo[1]["row_version"], None)],
                                  reviewer=ann))["items"][0]["golden_case_id"]  # v3: hr-1, a, b
    await retire_case(pool, "hr", "hr-golden", a, expected_version=3, reviewer=ann,
                      reason="duplicate of Jo's other question")  # v4: hr-1, b
    await retire_case(pool, "hr", "hr-golden", "hr-1", expected_version=4, reviewer=ann,
                      reason="policy changed")  # v5: b
    versions = {r["version"]: r["version_id"] for r in await pool.fetch(
        "SELECT version, version_id FROM golden_set_versions WHERE agent_id = 'hr'")}
    assert sorted(versions) == [1, 2, 3, 4, 5]
    v2, v3 = versions[2], versions[3]
    gate = GateRecord(gate="refusal", expected=False, observed=True, passed=False,
                      kind="explicit", evidence="I can't discuss Jo's contract",
                      reason="refused: 'I can't discuss Jo's contract'")
    judge = {"model": "judge-m", "prompt_version": "p1", "reasons": {
        "correctness": "says 10 days for Jo, the handbook says 20", "tone": None},
        "raw": {"correctness": "2", "tone": None}, "advisory": [], "passages": ["p-1"],
        "usage": {"calls": 1, "prompt_tokens": 120}}
    hr1_result = result("hr-1", HR_1.input, status="passed", response="25 days.",
                        response_format="canned")
    a_result = result(
        a, "How many vacation days do I get as a new employee this year?",
        expected_behavior="answers with the number of days", status="failed_gate",
        response="I can't discuss Jo's contract, you get 10 vacation days.",
        response_format="canned", gates={"refusal": gate},
        flags=[FlagRecord(name="hallucination", detail="claims 10 vacation days")],
        scores={"correctness": 0.25, "tone": None}, composite=0.25, judge=judge,
        retrieved_context=["p-1"])
    b_result = result(b, "How many vacation days does a new employee get in the first year?",
                      status="agent_error", error=AgentFailure(
                          kind="http_5xx", message="HTTP 500: Jo's vacation days", attempts=1))
    r1 = await save_run(pool, 1, v1, [hr1_result])
    r2 = await save_run(pool, 2, v2, [hr1_result, a_result])
    r3 = await save_run(pool, 3, v3, [b_result])
    claims = [(r1, "hr-1", "You get 25 days.", None),
              (r2, a, "Jo gets 10 vacation days.", "New employees get 20 days.")]
    await pool.executemany(
        "INSERT INTO hallucination_claims (run_id, case_id, claim_index, agent_id, claim, score,"
        " supported, category, reason, nearest_passage_id, nearest_passage, correction,"
        " judged_at) VALUES ($1, $2, 0, 'hr', $3, 0.5, false, 'fabricated',"
        " 'contradicts ' || $3, 'p-1', 'New employees get 20 days.', $4, now())", claims)
    audit_before = await pool.fetch("SELECT * FROM review_actions ORDER BY action_id")
    assert [(r["item_kind"], r["item_id"], r["action"]) for r in audit_before] == [
        ("candidate", str(jo[2]["candidate_id"]), "skip"),
        ("candidate", str(jo[0]["candidate_id"]), "confirm"),
        ("candidate", str(jo[1]["candidate_id"]), "confirm"),
        ("golden_case", f"hr/hr-golden/{a}", "retire"),
        ("golden_case", "hr/hr-golden/hr-1", "retire"),
    ]
    assert "Jo asked twice" in json.dumps(audit_before[3]["before"])

    done = await erase_conversations(pool, ["c-jo"])
    # a in v2, v3; b in v3, v4, v5; the 4 audit rows of Jo's candidates and of case a;
    # the results of a (run 2) and b (run 3)
    assert done.redacted == {"golden_cases": 5, "review_actions": 4, "eval_results": 2}

    audit = await pool.fetch("SELECT * FROM review_actions ORDER BY action_id")
    keep = ("action_id", "agent_id", "item_kind", "item_id", "action", "reviewer",
            "reviewer_role", "at", "golden_version_id")
    assert [[r[k] for k in keep] for r in audit] == [[r[k] for k in keep] for r in audit_before]
    for old, new in zip(audit_before[:4], audit[:4], strict=True):
        assert (new["before"], new["after"]) == (erased_doc(old["before"]),
                                                 erased_doc(old["after"]))
        assert new["reason"] == (None if old["reason"] is None else "[erased]")
    assert [r["evidence"] for r in audit] == [
        "[erased]", "[erased]", "[erased]", {"version": 3}, {"version": 4}]
    assert [r["reason"] for r in audit] == [
        "[erased]", None, None, "[erased]", "policy changed"]
    assert audit[0]["before"]["question"] == "[erased]"
    assert audit[0]["before"]["status"] == "pending" and audit[0]["after"] == {
        "status": "pending", "row_version": jo[2]["row_version"] + 1, "skip_count": 1}
    assert audit[1]["after"]["case"]["input"] == "[erased]"
    assert audit[1]["after"]["case"]["id"] == a
    assert audit[1]["after"]["edits"] == "[erased]"
    assert (audit[3]["before"]["id"], audit[3]["before"]["input"],
            audit[3]["before"]["notes"], audit[3]["before"]["category"]) == (
        a, "[erased]", "[erased]", "routine")
    assert dict(audit[4]) == dict(audit_before[4])  # hr-1 is no one's text
    erased_text = json.dumps([[r["before"], r["after"], r["evidence"], r["reason"]]
                              for r in audit[:4]])
    assert "vacation" not in erased_text and "Jo" not in erased_text

    # the results over the erased cases lose their text; everything else stays
    run2, run3 = await load_eval_run(pool, r2), await load_eval_run(pool, r3)
    assert run2 is not None and run3 is not None
    assert run2.results[0] == hr1_result
    assert run2.results[1] == a_result.model_copy(update={
        "input": "[erased]", "expected_behavior": "[erased]", "response": "[erased]",
        "gates": {"refusal": gate.model_copy(update={"evidence": "[erased]",
                                                     "reason": "[erased]"})},
        "flags": [FlagRecord(name="hallucination", detail="[erased]")],
        "judge": {**judge, "reasons": {"correctness": "[erased]", "tone": None},
                  "raw": {"correctness": "[erased]", "tone": None}}})
    assert run3.results == [b_result.model_copy(update={
        "input": "[erased]", "error": AgentFailure(kind="http_5xx", message="[erased]",
                                                   attempts=1)})]
    assert run2.summary == summarise([hr1_result, a_result])
    assert (await load_eval_run(pool, r1)) is not None
    assert (await load_eval_run(pool, r1)).results == [hr1_result]  # type: ignore[union-attr]
    assert [tuple(r) for r in await pool.fetch(
        "SELECT case_id, claim, reason, correction, nearest_passage, score, category"
        " FROM hallucination_claims ORDER BY run_id = $1 DESC", r1)] == [
        ("hr-1", "You get 25 days.", "contradicts You get 25 days.", None,
         "New employees get 20 days.", 0.5, "fabricated"),
        (a, "[erased]", "[erased]", "[erased]", "New employees get 20 days.", 0.5,
         "fabricated")]
    stored = json.dumps([r["t"] for r in await pool.fetch(
        "SELECT row_to_json(r)::text AS t FROM eval_results r WHERE case_id <> 'hr-1'"
        " UNION ALL SELECT row_to_json(c)::text FROM hallucination_claims c"
        " WHERE case_id <> 'hr-1'")])
    assert "vacation" not in stored and "Jo" not in stored

    # the audit stays append-only outside an erasure; inside one only its text may change
    with pytest.raises(asyncpg.RaiseError, match="review audit is append-only: UPDATE"):
        await pool.execute("UPDATE review_actions SET reason = 'x'")
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL evalloop.erasure = 'on'")
        with pytest.raises(asyncpg.RaiseError, match="append-only: UPDATE on review_actions"):
            await conn.execute("UPDATE review_actions SET reviewer = 'mallory'")
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL evalloop.erasure = 'on'")
        with pytest.raises(asyncpg.RaiseError, match="append-only: DELETE on review_actions"):
            await conn.execute("DELETE FROM review_actions")


async def test_erase_by_conversation_of_one_agent_only(pool: asyncpg.Pool, db_dsn: str) -> None:
    await run_loop(settings_for(db_dsn), pool, dataset())
    other = [e.model_copy(update={"agent_id": "cdc", "event_id": uuid5(NS, f"cdc/{e.event_id}")})
             for e in turn("c-jo", 0, T0 + timedelta(days=3))]
    await run_loop(settings_for(db_dsn), pool, other)
    deleted = (await erase_conversations(pool, ["c-jo"], agent_id="cdc")).deleted
    assert (deleted["events"], deleted["negative_cases"], deleted["monitor_turns"]) == (2, 1, 1)
    assert await pool.fetchval("SELECT count(*) FROM events WHERE conversation_id = 'c-jo'") \
        == 6  # hr's copy of the conversation id is another conversation


async def test_erase_needs_a_target() -> None:
    result = CliRunner().invoke(app, ["erase"])
    assert result.exit_code == 2
    assert "give --conversation ID (repeatable) or --user ID" in result.output


# ------------------------------------------------------------------ retention


async def test_prune_deletes_only_what_is_older_than_retention(
    pool: asyncpg.Pool, db_dsn: str
) -> None:
    await run_loop(settings_for(db_dsn), pool, dataset())
    await pool.execute("UPDATE events SET stored_at = $1 WHERE conversation_id = 'c-old'",
                       datetime.now(UTC) - timedelta(days=100))
    await pool.execute("UPDATE negative_cases SET updated_at = $1"
                       " WHERE conversation_id = 'c-old'", datetime.now(UTC) - timedelta(days=100))
    old_cases = [r["case_id"] for r in await pool.fetch(
        "SELECT case_id FROM negative_cases WHERE conversation_id = 'c-old'")]
    await pool.execute("UPDATE triage_cases SET updated_at = $1 WHERE case_id = ANY($2)",
                       datetime.now(UTC) - timedelta(days=100), old_cases)
    # the queue: three old candidates, one of them confirmed (kept: a reviewer's decision)
    await pool.execute("UPDATE review_queue SET updated_at = $1",
                       datetime.now(UTC) - timedelta(days=100))
    await pool.execute("UPDATE review_queue SET status = 'confirmed' WHERE candidate_id ="
                       " (SELECT min(candidate_id::text)::uuid FROM review_queue)")
    assert await pool.fetchval("SELECT count(*) FROM review_queue") == 3
    # results: a 400-day-old run with 2 results is the baseline of a recent one
    old_run, new_run = UUID(int=1), UUID(int=2)
    for run, age, baseline in ((old_run, 400, None), (new_run, 10, old_run)):
        await pool.execute(
            "INSERT INTO eval_runs (run_id, agent_id, source, started_at, finished_at, status,"
            " baseline_run_id) VALUES ($1, 'hr', 'endpoint', $2, $2, 'passed', $3)",
            run, datetime.now(UTC) - timedelta(days=age), baseline)
    for case in ("r1", "r2"):
        await pool.execute(
            "INSERT INTO eval_results (run_id, case_id, position, category, input, should_refuse,"
            " should_escalate, status) VALUES ($1, $2, 0, 'routine', 'q', false, false,"
            " 'passed')", old_run, case)
    await pool.execute(
        "INSERT INTO reeval_jobs (job_id, agent_id, trigger, reason, request, status,"
        " finished_at) VALUES ($1, 'hr', 'manual', 'old', '{}', 'succeeded', $2)",
        UUID(int=3), datetime.now(UTC) - timedelta(days=400))
    for n, (age, published) in enumerate([(400, True), (400, False), (1, True)]):
        # an old published letter goes; an unpublished one (the outbox) and a new one stay
        await pool.execute(
            "INSERT INTO dead_letters (letter_id, reason, detail, record_value, source_topic,"
            " source_partition, source_offset, created_at, published_at)"
            " VALUES ($1, 'malformed_json', '{}', $2, 't', 0, $3, $4, $5)",
            UUID(int=100 + n), b'{"comment": "my e-mail is x@y.z"', n,
            datetime.now(UTC) - timedelta(days=age), datetime.now(UTC) if published else None)
    before = await counts(pool)

    retention = RetentionSettings(events_days=90, monitor_turns_days=2, triage_days=90,
                                  results_days=365, batch_rows=2)
    deleted = await prune(pool, retention, now=datetime.now(UTC))
    assert deleted == {
        "events": 6, "negative_cases": 3, "dead_letters": 1,
        # c-old's turns are 3 days before the agent's newest event (event time); 2 buckets
        "monitor_turns": 3, "monitor_buckets": 1,
        "triage_cases": 3, "review_queue": 2,
        "eval_runs": 1, "eval_results": 2, "reeval_jobs": 1,
    }
    after = await counts(pool)
    assert {t: before[t] - after[t] for t in TABLES} == deleted
    assert await pool.fetchval("SELECT baseline_run_id FROM eval_runs WHERE run_id = $1",
                               new_run) is None
    # nothing kept for ever is touched, and a second run finds nothing
    assert set((await prune(pool, retention, now=datetime.now(UTC))).values()) == {0}
    keep_all = RetentionSettings(events_days=None, monitor_turns_days=None, triage_days=None,
                                 results_days=None)
    assert await prune(pool, keep_all, now=datetime.now(UTC) + timedelta(days=9999)) == {}


async def test_prune_command_prints_counts_per_table(pool: asyncpg.Pool, db_dsn: str) -> None:
    await run_loop(settings_for(db_dsn), pool, dataset()[:6])
    result = await asyncio.to_thread(
        CliRunner().invoke, app, ["prune", "--json"],
        env={"EVALLOOP_POSTGRES__DSN": db_dsn, "EVALLOOP_RETENTION__EVENTS_DAYS": "90"})
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"deleted": {
        "events": 0, "negative_cases": 0, "dead_letters": 0, "monitor_turns": 0,
        "monitor_buckets": 0, "triage_cases": 0, "review_queue": 0, "eval_runs": 0,
        "eval_results": 0, "reeval_jobs": 0}}


# ------------------------------------------------------------------ redaction at ingest


async def test_redaction_at_ingest_means_nothing_downstream_holds_the_identifiers(
    pool: asyncpg.Pool, db_dsn: str
) -> None:
    events = turn("c-pii", 0, T0, comment="wrong! mail me at jo@example.org or +44 20 7946 0958")
    await run_loop(settings_for(db_dsn, redact_pii=True), pool, events)
    payloads = [r["payload"] for r in await pool.fetch(
        "SELECT payload FROM events ORDER BY event_type")]
    assert [p.get("comment") for p in payloads] == [None, "wrong! mail me at [email] or [phone]"]
    assert await pool.fetchval("SELECT comment FROM negative_cases") == (
        "wrong! mail me at [email] or [phone]")
    assert await pool.fetchval("SELECT comment FROM triage_cases") == (
        "wrong! mail me at [email] or [phone]")


async def test_without_redaction_text_is_stored_as_sent(pool: asyncpg.Pool, db_dsn: str) -> None:
    events = turn("c-pii", 0, T0, comment="mail me at jo@example.org")
    await run_loop(settings_for(db_dsn), pool, events)
    assert await pool.fetchval("SELECT comment FROM negative_cases") == "mail me at jo@example.org"


# ------------------------------------------------------------------ the periodic job


def _retention_service(pool: asyncpg.Pool, interval_s: float) -> RetentionService:
    settings = Settings(postgres=PostgresSettings(dsn="postgresql://unused@localhost/x"),
                        retention=RetentionSettings(interval_s=interval_s))
    return RetentionService(Deps(settings=settings, pool=pool, bus=InProcessBus(),
                                 topics=Topics()))


async def test_the_retention_service_prunes_periodically(pool: asyncpg.Pool) -> None:
    await pool.execute(
        "INSERT INTO reeval_jobs (job_id, agent_id, trigger, reason, request, status,"
        " finished_at) VALUES ($1, 'hr', 'manual', 'old', '{}', 'failed', $2)",
        UUID(int=9), datetime.now(UTC) - timedelta(days=400))
    svc = _retention_service(pool, interval_s=0.05)
    await svc.start()
    try:
        async with asyncio.timeout(30):
            while svc.runs < 3:  # noqa: ASYNC110 (state owned by the service's task)
                await asyncio.sleep(0.02)
    finally:
        await svc.stop()
    assert svc.last_error is None
    assert await pool.fetchval("SELECT count(*) FROM reeval_jobs") == 0


async def test_a_failing_run_is_logged_and_retried_not_fatal(db_dsn: str) -> None:
    broken = await connect_pool(db_dsn, min_size=1, max_size=1)
    await broken.close()  # every query now fails
    svc = _retention_service(broken, interval_s=0.05)
    await svc.start()
    try:
        async with asyncio.timeout(30):
            while svc.last_error is None:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        await asyncio.sleep(0.1)
        assert svc._background is not None and not svc._background.done()  # still alive
    finally:
        await svc.stop()
    assert svc.runs == 0
    assert svc.last_error.startswith("StorageError: pruning events failed")
