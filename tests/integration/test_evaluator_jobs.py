"""reeval_jobs claims on real PostgreSQL: atomic claim, lease takeover, owner-checked finish."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import asyncpg
import pytest

from evalloop.adapters import job_store
from evalloop.events import ReevalRequested

LEASE = 30.0


def _request(**kw: object) -> ReevalRequested:
    base: dict[str, object] = {
        "job_id": uuid.uuid4(), "agent_id": "hr-agent", "requested_at": datetime.now(UTC),
        "trigger": "manual", "reason": "test",
    }
    return ReevalRequested.model_validate(base | kw)


async def _age_heartbeat(pool: asyncpg.Pool, job_id: uuid.UUID, seconds: float) -> None:
    # What a dead worker leaves behind: its last heartbeat, now `seconds` old.
    await pool.execute(
        "UPDATE reeval_jobs SET heartbeat_at = now() - make_interval(secs => $2)"
        " WHERE job_id = $1", job_id, seconds,
    )


async def test_record_request_is_idempotent(pool: asyncpg.Pool) -> None:
    req = _request(trigger="weekly_sample", sample_seed=9, sample_size=10)
    assert await job_store.record_request(pool, req) is True
    assert await job_store.record_request(pool, req) is False
    row = await pool.fetchrow("SELECT * FROM reeval_jobs WHERE job_id = $1", req.job_id)
    assert row["status"] == "requested"
    assert row["published_at"] is not None
    assert ReevalRequested.model_validate(row["request"]) == req


async def test_concurrent_claims_have_one_winner(pool: asyncpg.Pool) -> None:
    req = _request()
    await job_store.record_request(pool, req)
    results = await asyncio.gather(*(
        job_store.claim(pool, req.job_id, f"w{i}", lease_s=LEASE, max_attempts=3)
        for i in range(5)
    ))
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    assert winners[0].request == req
    assert winners[0].attempts == 1
    # a redelivered request while the job runs: no second claim
    assert await job_store.claim(pool, req.job_id, "w9", lease_s=LEASE, max_attempts=3) is None
    # unknown job: nothing to claim
    assert await job_store.claim(pool, uuid.uuid4(), "w9", lease_s=LEASE, max_attempts=3) is None


async def test_stale_claim_is_taken_over_and_the_old_owner_cannot_finish(
    pool: asyncpg.Pool,
) -> None:
    req = _request()
    await job_store.record_request(pool, req)
    assert await job_store.claim(pool, req.job_id, "dead", lease_s=LEASE, max_attempts=3)
    version = uuid.uuid4()
    assert await job_store.pin_version(pool, req.job_id, "dead", version) is True
    await _age_heartbeat(pool, req.job_id, LEASE + 5)

    assert await job_store.due_jobs(pool, lease_s=LEASE, grace_s=60, max_attempts=3) == [
        req.job_id
    ]
    taken = await job_store.claim(pool, req.job_id, "alive", lease_s=LEASE, max_attempts=3)
    assert taken is not None
    assert taken.attempts == 2
    assert taken.golden_set_version_id == version  # the retry runs the pinned version
    assert await job_store.pin_version(pool, req.job_id, "alive", uuid.uuid4()) is True
    assert await pool.fetchval(
        "SELECT golden_set_version_id FROM reeval_jobs WHERE job_id = $1", req.job_id
    ) == version  # first pin wins

    # the old owner wakes up: it lost the claim, so it can neither heartbeat nor finish
    assert await job_store.heartbeat(pool, req.job_id, "dead") is False
    async with pool.acquire() as conn, conn.transaction():
        assert await job_store.lock_claim(conn, req.job_id, "dead") is False
        assert await job_store.finish(conn, req.job_id, "dead", status="succeeded",
                                      run_id=uuid.uuid4(), result={}) is False

    run_id = uuid.uuid4()
    assert await job_store.heartbeat(pool, req.job_id, "alive") is True
    async with pool.acquire() as conn, conn.transaction():
        assert await job_store.lock_claim(conn, req.job_id, "alive") is True
        assert await job_store.finish(conn, req.job_id, "alive", status="succeeded",
                                      run_id=run_id, result={"passed": 3}) is True
    row = await pool.fetchrow("SELECT * FROM reeval_jobs WHERE job_id = $1", req.job_id)
    assert (row["status"], row["run_id"], row["result"], row["claimed_by"]) == (
        "succeeded", run_id, {"passed": 3}, "alive"
    )
    assert row["finished_at"] is not None
    # finished: never claimed again, never due
    assert await job_store.claim(pool, req.job_id, "x", lease_s=0.001, max_attempts=9) is None
    assert await job_store.due_jobs(pool, lease_s=0.001, grace_s=0, max_attempts=9) == []


async def test_fresh_requests_wait_for_the_bus_then_the_sweep_takes_them(
    pool: asyncpg.Pool,
) -> None:
    req = _request()
    await job_store.record_request(pool, req)
    assert await job_store.due_jobs(pool, lease_s=LEASE, grace_s=60, max_attempts=3) == []
    await pool.execute(
        "UPDATE reeval_jobs SET requested_at = now() - interval '2 minutes' WHERE job_id = $1",
        req.job_id,
    )
    assert await job_store.due_jobs(pool, lease_s=LEASE, grace_s=60, max_attempts=3) == [
        req.job_id
    ]


async def test_a_job_whose_worker_always_dies_is_given_up(pool: asyncpg.Pool) -> None:
    req = _request()
    await job_store.record_request(pool, req)
    for attempt in (1, 2):
        claimed = await job_store.claim(pool, req.job_id, f"w{attempt}", lease_s=LEASE,
                                        max_attempts=2)
        assert claimed is not None and claimed.attempts == attempt
        await _age_heartbeat(pool, req.job_id, LEASE + 1)
    assert await job_store.claim(pool, req.job_id, "w3", lease_s=LEASE, max_attempts=2) is None
    assert await job_store.due_jobs(pool, lease_s=LEASE, grace_s=0, max_attempts=2) == []
    failed = await job_store.give_up_exhausted(pool, lease_s=LEASE, max_attempts=2)
    assert failed == [(req.job_id, "hr-agent", None)]
    row = await pool.fetchrow("SELECT status, error, result FROM reeval_jobs WHERE job_id = $1",
                              req.job_id)
    assert row["status"] == "failed"
    assert row["error"] == "gave up after 2 attempts: the worker stopped heartbeating each time"
    assert row["result"] == {"status": "failed", "attempts": 2}
    assert await job_store.give_up_exhausted(pool, lease_s=LEASE, max_attempts=2) == []


async def test_finish_rejects_an_unknown_status(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        with pytest.raises(ValueError, match="got 'done'"):
            await job_store.finish(conn, uuid.uuid4(), "w", status="done", run_id=None, result={})
