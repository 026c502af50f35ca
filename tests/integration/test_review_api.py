"""The review flows through the HTTP API against real PostgreSQL: confirm, edit + confirm,
reject, a conflict between two reviewers, retire, batch confirm, the eval human-review queue;
each asserting the golden-set version, diff, audit and outbox rows it leaves."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import asyncpg
import httpx
import numpy as np
import pytest
import pytest_asyncio

from evalloop.adapters.bus import InProcessBus
from evalloop.adapters.event_store import insert_events, upsert_negative_cases
from evalloop.adapters.golden_store import load_golden_cases, save_eval_run
from evalloop.adapters.triage_store import ClusterRow, QueueRow, replace_clusters, upsert_candidates
from evalloop.cli.eval_cmd import bundled_evals
from evalloop.core.evaluation.cases import load_eval_file
from evalloop.core.fusion import FusionWeights, fuse
from evalloop.core.ranking import question_key
from evalloop.core.review import Reviewer
from evalloop.evaluation.runner import load_responses_file, run_eval
from evalloop.events import OperatorCorrection, UserRating
from evalloop.review.api import bearer_tokens, build_app
from evalloop.review.outbox import publish_pending
from services.evaluator.golden import current_version_id
from services.triage.pipeline import candidate_id

AGENT = "hr-agent"
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
TOKENS = {"t-alice": Reviewer("alice", "reviewer"), "t-bob": Reviewer("bob", "reviewer"),
          "t-vera": Reviewer("vera", "viewer")}
TOPIC = "golden.set.published.v1"
QUESTIONS = {
    "vacation": ("How many vacation days do I get?", "You get some days off.",
                 "Full-time staff get 25 days of paid vacation a year."),
    "carry": ("Can I carry over unused leave?", "Leave is important.", None),
    "parental": ("How long is parental leave?", "Ask your manager.", None),
}


def _eid(name: str) -> UUID:
    return UUID(int=abs(hash(("review-test", name))) % (1 << 122))


async def _seed(pool: asyncpg.Pool) -> dict[str, UUID]:
    """Three candidates of one cluster with their events, negative cases and queue rows."""
    w = FusionWeights()
    ids: dict[str, UUID] = {}
    rows: list[QueueRow] = []
    async with pool.acquire() as conn, conn.transaction():
        await replace_clusters(conn, AGENT, [ClusterRow(
            "c1", 3, np.ones(4, dtype=np.float32) / 2, label="leave, vacation, days",
            terms=("leave", "vacation", "days"))])
        for i, (name, (q, a, corrected)) in enumerate(QUESTIONS.items()):
            at = T0 + timedelta(minutes=i)
            common = {"agent_id": AGENT, "conversation_id": f"conv-{name}",
                      "turn_id": "t1", "question": q, "answer": a}
            events: list[Any] = [UserRating(event_id=uuid4(), occurred_at=at, thumbs="down",
                                            comment=f"{name}: not what I asked", **common)]
            if corrected:
                events.append(OperatorCorrection(
                    event_id=uuid4(), occurred_at=at + timedelta(seconds=30),
                    corrected_answer=corrected, reason="policy says 25", **common))
            await insert_events(conn, events)
            case = fuse(events, w)
            assert case is not None
            await upsert_negative_cases(conn, [case])
            key = question_key(q)
            cid = candidate_id(AGENT, key)
            ids[name] = cid
            rows.append(QueueRow(
                candidate_id=cid, agent_id=AGENT, question_key=key, case_id=case.case_id,
                cluster_id="c1", cluster_label="leave, vacation, days", question=q,
                answer_given=a, expected_answer=corrected,
                evidence_event_ids=[e.event_id for e in events],
                confidence=round(0.9 - i / 10, 6),
                confidence_parts={"signal": 0.7}, question_embedding=None))
        await upsert_candidates(conn, rows)
    return ids


@pytest_asyncio.fixture
async def client(pool: asyncpg.Pool) -> AsyncIterator[tuple[httpx.AsyncClient, InProcessBus]]:
    bus = InProcessBus()
    app = build_app(pool, authenticate=bearer_tokens(TOKENS),
                    flush=functools.partial(publish_pending, pool, bus, TOPIC))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://review.test") as c:
        yield c, bus


def _as(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def _audit(pool: asyncpg.Pool) -> list[dict[str, Any]]:
    return [dict(r) for r in await pool.fetch(
        "SELECT item_kind, item_id, action, reviewer, reviewer_role, before, after, evidence, "
        "reason, golden_version_id FROM review_actions ORDER BY action_id")]


async def test_confirm_makes_a_version_audit_and_one_publication(
        pool: asyncpg.Pool, client: tuple[httpx.AsyncClient, InProcessBus]) -> None:
    http, bus = client
    ids = await _seed(pool)
    cid = ids["vacation"]
    queue = (await http.get("/api/v1/review/queue", params={"agent": AGENT},
                            headers=_as("t-vera"))).json()["items"]
    assert [i["candidate_id"] for i in queue] == [str(ids[n]) for n in QUESTIONS]
    item = (await http.get(f"/api/v1/review/items/{cid}", headers=_as("t-alice"))).json()
    assert item["row_version"] == 1
    assert item["evidence"]["correction"] == QUESTIONS["vacation"][2]
    assert [s["event_type"] for s in item["evidence"]["signals"]] == [
        "user_rating", "operator_correction"]

    r = await http.post(f"/api/v1/review/items/{cid}/confirm", json={"row_version": 1},
                        headers=_as("t-alice"))
    assert r.status_code == 200, r.text
    out = r.json()
    case_id = "fb-" + str(cid).replace("-", "")[:12]
    assert out["items"] == [{"candidate_id": str(cid), "status": "confirmed",
                             "golden_case_id": case_id, "row_version": 2}]
    v = out["version"]
    assert (v["golden_set_id"], v["version"], v["parent_version_id"], v["case_count"],
            v["created_by"], v["source"]) == (
        "hr-agent-golden", 1, None, 1, "alice", "review: alice confirmed 1 candidate")
    assert v["diff"] == {"added": [case_id], "removed": [], "changed": []}

    [case] = await load_golden_cases(pool, UUID(v["version_id"]))
    assert (case.id, case.input, case.expected_answer, case.category, case.should_refuse,
            case.should_escalate, case.tags, case.difficulty, case.created_by) == (
        case_id, "How many vacation days do I get?", QUESTIONS["vacation"][2], "routine",
        False, False, ("routine",), None, "alice")

    [audit] = await _audit(pool)
    assert (audit["item_kind"], audit["item_id"], audit["action"], audit["reviewer"],
            audit["reviewer_role"], audit["reason"], str(audit["golden_version_id"])) == (
        "candidate", str(cid), "confirm", "alice", "reviewer", None, v["version_id"])
    assert audit["before"] == {
        "status": "pending", "row_version": 1, "question": "How many vacation days do I get?",
        "expected_answer": QUESTIONS["vacation"][2], "expected_answer_source": None,
        "edits": {}, "skip_count": 0, "cluster_id": "c1", "confidence": 0.9}
    assert audit["after"]["status"] == "confirmed"
    assert audit["after"]["case"]["id"] == case_id
    assert [s.get("comment") for s in audit["evidence"]["signals"]] == [
        "vacation: not what I asked", None]
    assert audit["evidence"]["correction"] == QUESTIONS["vacation"][2]

    # the outbox: one row, published once, in the same call
    outbox = await pool.fetch("SELECT version_id, version, published_at FROM golden_outbox")
    assert [(str(o["version_id"]), o["version"]) for o in outbox] == [(v["version_id"], 1)]
    assert outbox[0]["published_at"] is not None
    [msg] = bus.messages(TOPIC)
    assert msg.key == AGENT
    assert await publish_pending(pool, bus, TOPIC) == []
    assert len(bus.messages(TOPIC)) == 1
    # the evaluator's next run uses the new version
    assert str(await current_version_id(pool, AGENT)) == v["version_id"]


async def test_edit_then_confirm_keeps_the_edits(
        pool: asyncpg.Pool, client: tuple[httpx.AsyncClient, InProcessBus]) -> None:
    http, _ = client
    ids = await _seed(pool)
    cid = ids["carry"]
    saved = await http.post(f"/api/v1/review/items/{cid}/edit", headers=_as("t-alice"), json={
        "row_version": 1, "confirm": False,
        "edits": {"expected_answer": "Up to 5 days carry over to the next year.",
                  "difficulty": "medium", "domain": "Leave"}})
    assert saved.status_code == 200, saved.text
    assert saved.json() == {"candidate_id": str(cid), "status": "pending", "row_version": 2,
                            "edits": {"expected_answer": "Up to 5 days carry over to the next "
                                      "year.", "difficulty": "medium", "domain": "Leave"}}
    # a plain confirm later (by another reviewer) keeps the saved edits
    r = await http.post(f"/api/v1/review/items/{cid}/edit", headers=_as("t-bob"), json={
        "row_version": 2, "edits": {"tags": ["policy"], "should_escalate": True,
                                    "category": "sensitive"}})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["items"][0]["status"] == "edited"
    [case] = await load_golden_cases(pool, UUID(out["version"]["version_id"]))
    assert (case.input, case.expected_answer, case.difficulty, case.tags, case.category,
            case.should_escalate, case.created_by) == (
        "Can I carry over unused leave?", "Up to 5 days carry over to the next year.",
        "medium", ("policy", "domain:Leave", "escalation", "sensitive"), "sensitive", True,
        "bob")
    row = await pool.fetchrow("SELECT status, edits, decided_by, row_version FROM review_queue "
                              "WHERE candidate_id = $1", cid)
    assert dict(row) == {"status": "edited", "decided_by": "bob", "row_version": 3, "edits": {
        "expected_answer": "Up to 5 days carry over to the next year.", "difficulty": "medium",
        "domain": "Leave", "tags": ["policy"], "should_escalate": True,
        "category": "sensitive"}}
    audit = await _audit(pool)
    assert [(a["action"], a["reviewer"], a["before"]["row_version"], a["after"]["status"])
            for a in audit] == [("edit", "alice", 1, "pending"), ("edit", "bob", 2, "edited")]
    # bad edits: every problem named, nothing written
    bad = await http.post(f"/api/v1/review/items/{ids['parental']}/edit", headers=_as("t-bob"),
                          json={"row_version": 1, "edits": {"difficulty": "trivial",
                                                            "colour": "red"}})
    assert bad.status_code == 400
    assert [p["field"] for p in bad.json()["error"]["problems"]] == [
        "edits.difficulty", "edits.colour"]


async def test_reject_is_final_and_not_requeued(
        pool: asyncpg.Pool, client: tuple[httpx.AsyncClient, InProcessBus]) -> None:
    http, _ = client
    ids = await _seed(pool)
    cid = ids["parental"]
    no_reason = await http.post(f"/api/v1/review/items/{cid}/reject", headers=_as("t-alice"),
                                json={"row_version": 1, "reason": "  "})
    assert no_reason.status_code == 400
    r = await http.post(f"/api/v1/review/items/{cid}/reject", headers=_as("t-alice"),
                        json={"row_version": 1, "reason": "the agent answered correctly"})
    assert r.json() == {"candidate_id": str(cid), "status": "rejected", "row_version": 2}
    [audit] = await _audit(pool)
    assert (audit["action"], audit["reason"], audit["golden_version_id"]) == (
        "reject", "the agent answered correctly", None)
    assert await pool.fetchval("SELECT count(*) FROM golden_outbox") == 0
    # re-proposing the same question leaves the rejected row alone
    q, a, _ = QUESTIONS["parental"]
    row = await pool.fetchrow("SELECT * FROM review_queue WHERE candidate_id = $1", cid)
    async with pool.acquire() as conn:
        new = await upsert_candidates(conn, [QueueRow(
            candidate_id=cid, agent_id=AGENT, question_key=question_key(q),
            case_id=row["case_id"], cluster_id="c9", cluster_label="x", question=q,
            answer_given=a, expected_answer=None, evidence_event_ids=[], confidence=1.0,
            confidence_parts={}, question_embedding=None)])
    assert new == []
    pending = (await http.get("/api/v1/review/queue", headers=_as("t-alice"))).json()["items"]
    assert str(cid) not in [i["candidate_id"] for i in pending]
    assert (await pool.fetchval("SELECT status FROM review_queue WHERE candidate_id = $1",
                                cid)) == "rejected"


async def test_two_reviewers_conflict_never_double_append(
        pool: asyncpg.Pool, client: tuple[httpx.AsyncClient, InProcessBus]) -> None:
    http, _ = client
    ids = await _seed(pool)
    cid = ids["vacation"]
    first = await http.post(f"/api/v1/review/items/{cid}/confirm", json={"row_version": 1},
                            headers=_as("t-alice"))
    assert first.status_code == 200
    second = await http.post(f"/api/v1/review/items/{cid}/confirm", json={"row_version": 1},
                             headers=_as("t-bob"))
    assert second.status_code == 409
    err = second.json()["error"]
    assert err["code"] == "conflict"
    assert err["message"].startswith(f"candidate {cid} is already confirmed by alice at ")
    assert (err["current"]["status"], err["current"]["decided_by"]) == ("confirmed", "alice")
    # a stale version on a pending item is a conflict too
    skip = await http.post(f"/api/v1/review/items/{ids['carry']}/skip", json={"row_version": 1},
                           headers=_as("t-alice"))
    assert skip.json() == {"candidate_id": str(ids["carry"]), "status": "pending",
                           "row_version": 2, "skip_count": 1}
    stale = await http.post(f"/api/v1/review/items/{ids['carry']}/reject",
                            json={"row_version": 1, "reason": "dup"}, headers=_as("t-bob"))
    assert stale.status_code == 409
    assert "you saw version 1, it is now version 2" in stale.json()["error"]["message"]
    # truly concurrent: exactly one wins
    pid = ids["parental"]
    answers = await asyncio.gather(*(
        http.post(f"/api/v1/review/items/{pid}/confirm", json={"row_version": 1},
                  headers=_as(t)) for t in ("t-alice", "t-bob")))
    assert sorted(a.status_code for a in answers) == [200, 409]
    versions = await pool.fetch("SELECT version, case_count, diff FROM golden_set_versions "
                                "ORDER BY version")
    assert [(v["version"], v["case_count"]) for v in versions] == [(1, 1), (2, 2)]
    assert versions[1]["diff"] == {"added": ["fb-" + str(pid).replace("-", "")[:12]],
                                   "removed": [], "changed": []}
    assert await pool.fetchval("SELECT count(*) FROM golden_outbox") == 2
    assert [a["action"] for a in await _audit(pool)] == ["confirm", "skip", "confirm"]
    # the queue moved the skipped item behind the others
    pending = (await http.get("/api/v1/review/queue", headers=_as("t-vera"))).json()["items"]
    assert [p["candidate_id"] for p in pending] == [str(ids["carry"])]


async def test_batch_confirm_retire_and_diff(
        pool: asyncpg.Pool, client: tuple[httpx.AsyncClient, InProcessBus]) -> None:
    http, bus = client
    ids = await _seed(pool)
    r = await http.post("/api/v1/review/confirm", headers=_as("t-alice"), json={"items": [
        {"id": str(ids["vacation"]), "row_version": 1},
        {"id": str(ids["carry"]), "row_version": 1, "edits": {"difficulty": "hard"}}]})
    assert r.status_code == 200, r.text
    v1 = r.json()["version"]
    case_v, case_c = ("fb-" + str(ids[n]).replace("-", "")[:12] for n in ("vacation", "carry"))
    assert (v1["version"], v1["case_count"], v1["diff"]["added"]) == (
        1, 2, sorted([case_v, case_c]))
    assert [i["status"] for i in r.json()["items"]] == ["confirmed", "edited"]

    base = f"/api/v1/golden-sets/{AGENT}/hr-agent-golden"
    stale = await http.post(f"{base}/cases/{case_v}/retire", headers=_as("t-bob"),
                            json={"expected_version": 7, "reason": "superseded"})
    assert stale.status_code == 409
    viewer = await http.post(f"{base}/cases/{case_v}/retire", headers=_as("t-vera"),
                             json={"expected_version": 1, "reason": "superseded"})
    assert viewer.status_code == 403
    anon = await http.post(f"{base}/cases/{case_v}/retire",
                           json={"expected_version": 1, "reason": "superseded"})
    assert anon.status_code == 401
    r2 = await http.post(f"{base}/cases/{case_v}/retire", headers=_as("t-bob"),
                         json={"expected_version": 1, "reason": "vacation policy changed"})
    assert r2.status_code == 200, r2.text
    v2 = r2.json()["version"]
    assert (v2["version"], v2["parent_version_id"], v2["case_count"], v2["diff"], v2["source"]) \
        == (2, v1["version_id"], 1, {"added": [], "removed": [case_v], "changed": []},
            f"review: bob retired {case_v}: vacation policy changed")
    audit = (await _audit(pool))[-1]
    assert (audit["item_kind"], audit["item_id"], audit["action"], audit["reason"],
            audit["before"]["id"]) == ("golden_case", f"{AGENT}/hr-agent-golden/{case_v}",
                                       "retire", "vacation policy changed", case_v)
    assert [m.key for m in bus.messages(TOPIC)] == [AGENT, AGENT]

    diff = (await http.get(f"{base}/diff", params={"from": 1, "to": 2},
                           headers=_as("t-vera"))).json()
    assert (diff["added"], [c["id"] for c in diff["removed"]], diff["changed"]) == (
        [], [case_v], [])
    versions = (await http.get(f"{base}/versions", headers=_as("t-vera"))).json()["versions"]
    assert [v["version"] for v in versions] == [2, 1]
    detail = (await http.get(f"{base}/versions/2", headers=_as("t-vera"))).json()
    assert [c["id"] for c in detail["cases"]] == [case_c]
    care = {c["name"]: (c["status"], c["value"]) for c in detail["care"]}
    assert care["size"] == ("fail", 1)
    assert care["difficulty_mix"] == ("fail", {"easy": 0.0, "medium": 0.0, "hard": 1.0})
    assert care["coverage_gaps"] == ("pass", 0)  # c1 holds a confirmed candidate
    assert care["domain_coverage"][0] == "unknown"


async def test_eval_human_review_queue_and_verdicts(
        pool: asyncpg.Pool, client: tuple[httpx.AsyncClient, InProcessBus]) -> None:
    http, _ = client
    cases = load_eval_file(bundled_evals()).cases
    canned = load_responses_file([bundled_evals("reference-responses.json")])
    run = await run_eval(cases, canned, agent_id="hr-qa-agent")
    await save_eval_run(pool, run)
    flagged = [r.case_id for r in run.results if r.requires_human_review]
    assert flagged
    queue = (await http.get("/api/v1/eval-review/queue", params={"agent": "hr-qa-agent"},
                            headers=_as("t-vera"))).json()["items"]
    assert [q["case_id"] for q in queue] == flagged
    first = flagged[0]
    url = f"/api/v1/eval-review/runs/{run.run_id}/cases/{first}/verdict"
    bad = await http.post(url, headers=_as("t-alice"),
                          json={"criteria": {"tone": "yes", "vibes": True}, "score": 6})
    assert [p["field"] for p in bad.json()["error"]["problems"]] == [
        "criteria.tone", "criteria.vibes", "score"]
    ok = await http.post(url, headers=_as("t-alice"), json={
        "criteria": {"tone": True, "escalation": False}, "score": 2, "note": "cold reply"})
    assert ok.status_code == 200, ok.text
    assert {k: ok.json()[k] for k in ("case_id", "reviewer", "criteria", "score", "note")} == {
        "case_id": first, "reviewer": "alice", "criteria": {"tone": True, "escalation": False},
        "score": 2, "note": "cold reply"}
    again = await http.post(url, headers=_as("t-alice"),
                            json={"criteria": {"tone": True}, "score": 3})
    assert again.status_code == 409
    # the case left the queue (it has a verdict); the label is readable for calibration
    queue = (await http.get("/api/v1/eval-review/queue", headers=_as("t-vera"))).json()["items"]
    assert [q["case_id"] for q in queue] == flagged[1:]
    labels = await pool.fetch("SELECT case_id, criteria, score FROM eval_human_reviews")
    assert [(r["case_id"], r["criteria"], r["score"]) for r in labels] == [
        (first, {"tone": True, "escalation": False}, 2)]
    detail = (await http.get(f"/api/v1/eval-review/runs/{run.run_id}/cases/{first}",
                             headers=_as("t-vera"))).json()
    assert [v["reviewer"] for v in detail["verdicts"]] == ["alice"]
    # re-saving the run (the evaluator may) keeps people's verdicts
    await save_eval_run(pool, run)
    assert await pool.fetchval("SELECT count(*) FROM eval_human_reviews") == 1


async def test_reminders_and_profile(
        pool: asyncpg.Pool, client: tuple[httpx.AsyncClient, InProcessBus]) -> None:
    http, _ = client
    ids = await _seed(pool)
    await http.post(f"/api/v1/review/items/{ids['vacation']}/confirm", json={"row_version": 1},
                    headers=_as("t-alice"))
    created = await pool.fetchval("SELECT created_at FROM golden_set_versions")
    [rem] = (await http.get("/api/v1/golden-sets/reminders",
                            headers=_as("t-vera"))).json()["reminders"]
    assert rem["due_at"] == (created + timedelta(days=30)).astimezone(UTC).isoformat()
    assert rem["overdue"] is False
    put = await http.put(f"/api/v1/agents/{AGENT}/review-profile", headers=_as("t-alice"),
                         json={"knowledge_domains": ["leave"], "escalation_triggers":
                               ["harassment"], "in_production": False})
    assert put.status_code == 200
    sets = (await http.get("/api/v1/golden-sets", headers=_as("t-vera"))).json()["sets"]
    care = {c["name"]: (c["status"], c["value"], c["bar"]) for c in sets[0]["care"]}
    assert care["size"] == ("fail", 1, ">= 25")
    assert care["domain_coverage"] == ("fail", {"leave": 0}, ">= 5 each")
    assert care["escalation_triggers"] == ("fail", {"harassment": 0}, ">= 2 each")
    done = await http.post(f"/api/v1/golden-sets/{AGENT}/hr-agent-golden/reviewed",
                           headers=_as("t-bob"), json={"note": "nothing stale"})
    assert done.status_code == 200


@pytest.mark.parametrize("path", ["/api/v1/review/items/not-a-uuid"])
async def test_bad_ids_are_400(client: tuple[httpx.AsyncClient, InProcessBus],
                               path: str) -> None:
    http, _ = client
    r = await http.get(path, headers=_as("t-vera"))
    assert r.status_code == 400
    assert r.json()["error"]["problems"] == [
        {"field": "id", "expected": "a UUID", "received": "'not-a-uuid'"}]


# --------------------------------------------------------------------------- CLI


def _cli(*args: str) -> tuple[int, str, str]:
    from typer.testing import CliRunner

    from evalloop.cli.main import app

    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


async def test_queue_cli_show_edit_reject_skip_and_exit_codes(
        pool: asyncpg.Pool, db_dsn: str) -> None:
    ids = await _seed(pool)
    short = str(ids["vacation"])[:8]
    code, out, _ = await asyncio.to_thread(_cli, "queue", "show", short, "--db", db_dsn)
    assert code == 0, out
    assert "question: How many vacation days do I get?" in out
    assert f"proposed expected answer (operator_correction): {QUESTIONS['vacation'][2]}" in out
    code, out, _ = await asyncio.to_thread(
        _cli, "queue", "edit", short, "--difficulty", "easy", "--domain", "leave",
        "--reviewer", "carol", "--json", "--db", db_dsn)
    assert code == 0, out
    doc = json.loads(out)
    case_id = "fb-" + str(ids["vacation"]).replace("-", "")[:12]
    assert doc["items"] == [{"candidate_id": str(ids["vacation"]), "status": "edited",
                             "golden_case_id": case_id, "row_version": 2}]
    assert (doc["version"]["version"], doc["version"]["created_by"]) == (1, "carol")
    # decided already: a conflict, exit 2, nothing appended
    code, _, err = await asyncio.to_thread(_cli, "queue", "confirm", short, "--reviewer",
                                           "dave", "--db", db_dsn)
    assert code == 2
    assert "conflict: candidate" in err and "already edited by carol" in err
    code, _, err = await asyncio.to_thread(_cli, "queue", "edit", str(ids["carry"]),
                                           "--difficulty", "trivial", "--db", db_dsn)
    assert code == 2
    assert "edits.difficulty: expected one of easy, medium, hard or null" in err
    code, out, _ = await asyncio.to_thread(_cli, "queue", "skip", str(ids["carry"]), "--json",
                                           "--db", db_dsn)
    assert json.loads(out)["skip_count"] == 1
    code, out, _ = await asyncio.to_thread(
        _cli, "queue", "reject", str(ids["parental"]), "--reason", "answered fine",
        "--row-version", "1", "--db", db_dsn)
    assert (code, out.strip()) == (0, f"{ids['parental']}: rejected")
    code, _, err = await asyncio.to_thread(_cli, "queue", "show", "00000000", "--db", db_dsn)
    assert code == 2
    assert "which matches no candidate" in err
    assert await pool.fetchval("SELECT count(*) FROM golden_set_versions") == 1
    assert [r["action"] for r in await _audit(pool)] == ["edit", "skip", "reject"]
    # the command line has no bus: the version waits in the outbox for the next flush
    bus = InProcessBus()
    [event] = await publish_pending(pool, bus, TOPIC)
    assert (event.agent_id, event.golden_set_id, event.version, event.parent_version_id,
            event.case_count, event.diff, event.created_by, event.reason) == (
        AGENT, "hr-agent-golden", 1, None, 1,
        {"added": [case_id], "removed": [], "changed": []}, "carol",
        "review: carol confirmed 1 candidate")
    assert str(event.version_id) == doc["version"]["version_id"]
    assert await publish_pending(pool, bus, TOPIC) == []
    assert len(bus.messages(TOPIC)) == 1
    # the version's care checks and its monthly review, from the command line
    code, out, _ = await asyncio.to_thread(_cli, "golden", "care", "--agent", AGENT, "--json",
                                           "--db", db_dsn)
    assert code == 0, out
    care = [json.loads(line) for line in out.splitlines()]
    assert [(c["name"], c["status"], c["value"]) for c in care] == [
        ("size", "fail", 1), ("difficulty_mix", "fail", {"easy": 1.0, "medium": 0.0,
                                                          "hard": 0.0}),
        ("domain_coverage", "unknown", {"leave": 1}), ("adversarial", "fail", 0),
        ("escalation_triggers", "unknown", {}), ("universal", "fail", 0),
        ("coverage_gaps", "pass", 0)]
    assert {(c["golden_set_id"], c["version"]) for c in care} == {("hr-agent-golden", 1)}
    code, out, _ = await asyncio.to_thread(_cli, "golden", "reminders", "--json", "--db", db_dsn)
    [rem] = [json.loads(line) for line in out.splitlines()]
    assert (rem["agent_id"], rem["golden_set_id"], rem["overdue"], rem["days_left"]) == (
        AGENT, "hr-agent-golden", False, 29)


async def test_triage_service_announces_versions_reviewers_made(
        pool: asyncpg.Pool, pg_settings: Any) -> None:
    from evalloop.adapters.embedder import HashingEmbedder
    from evalloop.adapters.review_store import confirm_candidates
    from evalloop.runtime import Deps
    from evalloop.topics import Topics
    from services.triage.service import TriageService

    ids = await _seed(pool)
    out = await confirm_candidates(pool, [(ids["carry"], 1, None)], reviewer=Reviewer("ann"))
    bus = InProcessBus()
    svc = TriageService(Deps(settings=pg_settings, pool=pool, bus=bus, topics=Topics()),
                        embedder=HashingEmbedder(16))
    assert await svc.flush_golden_outbox() == 1
    assert await svc.flush_golden_outbox() == 0
    [msg] = bus.messages(Topics().golden_set_published)
    assert json.loads(msg.value)["version_id"] == out["version"]["version_id"]


async def test_malformed_action_bodies_are_400_and_change_nothing(
        pool: asyncpg.Pool, client: tuple[httpx.AsyncClient, InProcessBus]) -> None:
    http, _ = client
    ids = await _seed(pool)
    url = f"/api/v1/review/items/{ids['vacation']}/confirm"
    answers = [await http.post(url, headers=_as("t-alice"), content=body)
               for body in (b"not json", b"[1]", b'{"row_version": "1"}',
                            b'{"row_version": 1, "golden_set_id": 5}')]
    assert [a.status_code for a in answers] == [400, 400, 400, 400]
    assert [a.json()["error"]["problems"][0]["field"] for a in answers] == [
        "body", "body", "row_version", "golden_set_id"]
    batch = await http.post("/api/v1/review/confirm", headers=_as("t-alice"), json={"items": []})
    assert batch.json()["error"]["problems"][0]["field"] == "items"
    assert await pool.fetchval("SELECT count(*) FROM golden_set_versions") == 0
    assert await pool.fetchval("SELECT count(*) FROM review_actions") == 0


async def test_concurrent_confirmations_of_different_candidates_lose_nothing(
        pool: asyncpg.Pool, client: tuple[httpx.AsyncClient, InProcessBus]) -> None:
    http, bus = client
    ids = await _seed(pool)
    answers = await asyncio.gather(*(
        http.post(f"/api/v1/review/items/{ids[n]}/confirm", json={"row_version": 1},
                  headers=_as(t)) for n, t in (("vacation", "t-alice"), ("carry", "t-bob"),
                                               ("parental", "t-alice"))))
    assert [a.status_code for a in answers] == [200, 200, 200]
    versions = await pool.fetch("SELECT version, case_count, parent_version_id IS NULL AS root "
                                "FROM golden_set_versions ORDER BY version")
    assert [tuple(v) for v in versions] == [(1, 1, True), (2, 2, False), (3, 3, False)]
    latest = (await http.get(f"/api/v1/golden-sets/{AGENT}/hr-agent-golden/versions/3",
                             headers=_as("t-vera"))).json()
    assert sorted(c["id"] for c in latest["cases"]) == sorted(
        "fb-" + str(ids[n]).replace("-", "")[:12] for n in QUESTIONS)
    assert sorted(m.key for m in bus.messages(TOPIC)) == [AGENT] * 3
    assert await pool.fetchval("SELECT count(*) FROM golden_outbox WHERE published_at IS NULL"
                               ) == 0
