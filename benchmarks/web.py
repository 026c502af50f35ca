"""Web app benchmark: every page of an agent with 100,000 turns in its 24 h window, < 300 ms.

Run: ``python benchmarks/web.py`` (``--help`` for sizes). PostgreSQL: ``EVALLOOP_TEST_PG_DSN``
(an admin DSN) or the embedded server; the run makes a fresh, migrated database and drops it.

Seeded through the stores, as the services would leave it: 100,000 ``agent_response`` events
and monitor turns in the last 24 h (3 % negative), 7 days of 5-minute buckets at that volume,
3,000 triage cases (384-d embeddings) in 60 clusters, 200 pending candidates with their rating
events and negative cases, the bundled golden set and a re-evaluation run of it. Then the web
app runs on a real uvicorn on loopback and each page is fetched over HTTP, signed in with an
API token (``--repeat`` times after a warm-up); the baseline is the page's main store query
timed in the same run, so the ratio shows what rendering and the other reads add.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # services/ when run from a checkout

from evalloop.adapters import (  # noqa: E402
    golden_store,
    monitor_store,
    review_store,
    triage_store,
    user_store,
)
from evalloop.adapters.event_store import EventRow, insert_events  # noqa: E402
from evalloop.adapters.postgres import (  # noqa: E402
    connect_pool,
    create_database,
    migrate,
    start_embedded,
)
from evalloop.cli.eval_cmd import bundled_evals  # noqa: E402
from evalloop.core.access import Role  # noqa: E402
from evalloop.core.evaluation.cases import load_eval_file  # noqa: E402
from evalloop.core.trigger import TriggerState  # noqa: E402
from evalloop.core.window import BucketCounts  # noqa: E402
from evalloop.evaluation.runner import load_responses_file, run_eval  # noqa: E402
from evalloop.events import ReevalRequested  # noqa: E402
from evalloop.settings import PostgresSettings, Settings, WebSettings  # noqa: E402

AGENT = "bench-agent"
BUDGET_MS = 300.0


async def _seed(pool: asyncpg.Pool, turns: int, negatives: float, clusters: int,
                cases: int, candidates: int) -> dict[str, Any]:
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    start = end - timedelta(hours=24)
    rng = np.random.default_rng(7)
    step = 24 * 3600 / turns
    t0 = time.perf_counter()
    # events and monitor turns of the window
    rows, turn_rows = [], []
    negative_turns = set(rng.choice(turns, int(turns * negatives), replace=False).tolist())
    for i in range(turns):
        at = start + timedelta(seconds=i * step)
        rows.append(EventRow(uuid.uuid4(), "agent_response", AGENT, "v1", f"c{i}", "t1", at,
                             at, f'{{"event_type": "agent_response", "turn": {i}}}'))
        b = at.replace(minute=at.minute - at.minute % 5, second=0, microsecond=0)
        turn_rows.append((AGENT, f"c{i}", "t1", b, b if i in negative_turns else None,
                          i in negative_turns))
    async with pool.acquire() as conn:
        for k in range(0, turns, 20_000):
            await insert_events(conn, rows[k:k + 20_000])
        await conn.copy_records_to_table(
            "monitor_turns", records=turn_rows,
            columns=["agent_id", "conversation_id", "turn_id", "served_bucket",
                     "signal_bucket", "negative"])
    # 7 days of buckets at the same volume (the chart's span)
    per_bucket = turns // 288
    deltas = {}
    for j in range(7 * 288):
        b = end - timedelta(minutes=5 * (j + 1))
        neg = int(rng.binomial(per_bucket, negatives * (1.6 if 300 < j < 500 else 1.0)))
        deltas[(AGENT, b)] = BucketCounts(per_bucket, neg, neg, per_bucket)
    window = [d for (a, b), d in deltas.items() if b >= start]
    neg_total, turn_total = sum(d.negatives for d in window), sum(d.turns for d in window)
    async with monitor_store.transaction(pool, "bench monitor") as conn:
        await monitor_store.add_bucket_deltas(conn, deltas)
        states = await monitor_store.lock_states(conn, [AGENT])
        await monitor_store.save_states(conn, [monitor_store.AgentState(
            AGENT, TriggerState("fired", end - timedelta(hours=30)), end, states[AGENT].seq + 1,
            last_report=(neg_total, turn_total, neg_total / turn_total, "agent_response"))])
    # triage: clusters, cases with embeddings, candidates with rating events
    dim = 384
    centroids = rng.normal(size=(clusters, dim)).astype(np.float32)
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    async with pool.acquire() as conn, conn.transaction():
        await triage_store.replace_clusters(conn, AGENT, [
            triage_store.ClusterRow(f"c{k}", cases // clusters, centroids[k],
                                    label=f"topic {k}, words, here", terms=(f"topic {k}",),
                                    golden_cases=k % 3)
            for k in range(clusters)])
        case_rows = []
        for n in range(cases):
            v = centroids[n % clusters] + rng.normal(scale=0.1, size=dim).astype(np.float32)
            case_rows.append(triage_store.CaseRow(
                uuid.uuid4(), AGENT, end - timedelta(seconds=n * 20), float(rng.uniform(.5, 1)),
                ["user_rating"], [], f"question number {n} about topic {n % clusters}?",
                "an answer", "a comment", None, f"h{n}", "bench",
                (v / np.linalg.norm(v)).astype(np.float32), f"c{n % clusters}"))
        await triage_store.upsert_cases(conn, case_rows)
        ratings = [EventRow(uuid.uuid4(), "user_rating", AGENT, "v1", f"q{n}", "t1",
                            end - timedelta(minutes=n), None,
                            '{"event_type": "user_rating", "thumbs": "down", '
                            f'"comment": "wrong answer {n}"}}') for n in range(candidates)]
        await insert_events(conn, ratings)
        await triage_store.upsert_candidates(conn, [triage_store.QueueRow(
            uuid.uuid5(uuid.NAMESPACE_URL, f"cand{n}"), AGENT, f"key{n}", case_rows[n].case_id,
            f"c{n % clusters}", f"topic {n % clusters}", case_rows[n].question or "",
            "an answer", None, [ratings[n].event_id], float(0.99 - n / 1000),
            {"signal": 0.7}, None) for n in range(candidates)])
    # golden set, a re-evaluation job and its run
    golden = await golden_store.import_golden_set(
        pool, load_eval_file(bundled_evals()), agent_id=AGENT, created_by="bench")
    job = uuid.uuid4()
    async with monitor_store.transaction(pool, "bench job") as conn:
        await monitor_store.insert_jobs(conn, [ReevalRequested(
            job_id=job, agent_id=AGENT, requested_at=end - timedelta(hours=30),
            trigger="negative_rate", reason="bench", window_end=end - timedelta(hours=30),
            rate=0.05)])
    run = await run_eval(load_eval_file(bundled_evals()).cases,
                         load_responses_file([bundled_evals("reference-responses.json")]),
                         agent_id=AGENT, job_id=job,
                         golden_set_version_id=golden.version.version_id)
    await golden_store.save_eval_run(pool, run)
    await pool.execute("UPDATE reeval_jobs SET run_id = $2, status = 'succeeded' "
                       "WHERE job_id = $1", job, run.run_id)
    await pool.execute("ANALYZE")
    await user_store.create_user(pool, "bench", Role.ADMIN)
    token = await user_store.issue_token(pool, "bench")
    return {"token": token, "run_id": run.run_id, "golden_set": golden.version.golden_set_id,
            "seed_s": time.perf_counter() - t0, "window_turns": turn_total}


async def _time(fn: Callable[[], Awaitable[Any]], repeat: int) -> list[float]:
    for _ in range(2):
        await fn()
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def main(args: argparse.Namespace) -> int:
    import uvicorn

    from evalloop.web.app import build_app

    admin = os.environ.get("EVALLOOP_TEST_PG_DSN") or start_embedded(
        Path(f"/var/tmp/evalloop-test-{os.getuid()}/pg"))
    name = f"evalloop_bench_web_{uuid.uuid4().hex[:8]}"
    dsn = await create_database(admin, name)
    try:
        await migrate(dsn)
        pool = await connect_pool(dsn, min_size=2, max_size=6)
        try:
            seeded = await _seed(pool, args.turns, args.negatives, args.clusters, args.cases,
                                 args.candidates)
            print(f"seeded in {seeded['seed_s']:.1f} s: {seeded['window_turns']:,} turns in "
                  f"{AGENT}'s 24 h window, {args.cases:,} triage cases in {args.clusters} "
                  f"clusters, {args.candidates} candidates")
            port = _free_port()
            settings = Settings(postgres=PostgresSettings(dsn=dsn),
                                web=WebSettings(port=port, secret_key="k" * 40))
            server = uvicorn.Server(uvicorn.Config(build_app(settings, pool=pool),
                                                   host="127.0.0.1", port=port,
                                                   log_level="warning"))
            serving = asyncio.create_task(server.serve())
            while not server.started:  # noqa: ASYNC110 - uvicorn offers no start event
                await asyncio.sleep(0.02)
            run_id, gs = seeded["run_id"], seeded["golden_set"]
            first = (await review_store.list_queue_items(pool, agent_id=AGENT, limit=1))[0]
            pages: list[tuple[str, str, Callable[[], Awaitable[Any]]]] = [
                ("agents", "/", lambda: monitor_store.agent_snapshots(pool)),
                ("feedback loop", f"/agents/{AGENT}/feedback",
                 lambda: monitor_store.rate_timeline(pool, AGENT)),
                ("review queue", f"/agents/{AGENT}/queue",
                 lambda: review_store.list_queue_items(pool, agent_id=AGENT)),
                ("review queue, item 1", f"/agents/{AGENT}/queue?item={first['candidate_id']}",
                 lambda: review_store.candidate_detail(pool, uuid.UUID(first["candidate_id"]))),
                ("golden sets", f"/agents/{AGENT}/golden",
                 lambda: review_store.version_detail(pool, AGENT, gs)),
                ("eval runs", f"/agents/{AGENT}/runs",
                 lambda: golden_store.list_eval_runs(pool, AGENT)),
                ("eval run", f"/agents/{AGENT}/runs/{run_id}",
                 lambda: golden_store.load_eval_run(pool, run_id)),
            ]
            worst = 0.0
            headers = {"authorization": f"Bearer {seeded['token']}"}
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}",
                                         headers=headers) as http:
                print(f"{'page':<22} {'median ms':>9} {'p95 ms':>7} {'store ms':>8} "
                      f"{'ratio':>6}  bytes")
                for label, path, raw in pages:
                    r = await http.get(path)
                    if r.status_code != 200:
                        print(f"{label}: HTTP {r.status_code}: {r.text[:200]}")
                        return 1

                    async def fetch(path: str = path) -> None:
                        (await http.get(path)).raise_for_status()

                    page_ms = await _time(fetch, args.repeat)
                    raw_ms = await _time(raw, args.repeat)
                    med, p95 = statistics.median(page_ms), sorted(page_ms)[
                        int(0.95 * (len(page_ms) - 1))]
                    base = statistics.median(raw_ms)
                    worst = max(worst, p95)
                    print(f"{label:<22} {med:9.1f} {p95:7.1f} {base:8.1f} "
                          f"{med / base:6.1f}  {len(r.content):,}")
            server.should_exit = True
            await serving
            verdict = "within" if worst < BUDGET_MS else "OVER"
            print(f"worst p95 {worst:.0f} ms: {verdict} the {BUDGET_MS:.0f} ms budget")
            return 0 if worst < BUDGET_MS else 1
        finally:
            await pool.close()
    finally:
        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100_000, help="turns in the 24 h window")
    parser.add_argument("--negatives", type=float, default=0.03, help="negative share 0-1")
    parser.add_argument("--clusters", type=int, default=60)
    parser.add_argument("--cases", type=int, default=3000, help="triage cases")
    parser.add_argument("--candidates", type=int, default=200, help="pending candidates")
    parser.add_argument("--repeat", type=int, default=15, help="timed fetches per page")
    sys.exit(asyncio.run(main(parser.parse_args())))
