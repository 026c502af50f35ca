#!/usr/bin/env python3
"""Triage memory: peak memory of re-clustering n cases, in n (``docs/operations.md#soak``).

Usage::

    python benchmarks/triage_memory.py                          # 5,000 / 10,000 / 20,000 cases
    python benchmarks/triage_memory.py --cases 20000 --json
    python benchmarks/triage_memory.py --service                # also the service's whole run

Each measurement runs in a fresh child process (so its high-water mark is its own): ``n``
synthetic 384-d unit vectors (``--shape alike``: every case near one direction, as the soak's
one templated complaint; ``topics``: 40 topics), then

- ``recluster``: :func:`evalloop.core.clustering.recluster` with the default parameters;
- ``labels``: :func:`evalloop.core.labels.question_labels` over its clusters (the medoid of
  each cluster and its c-TF-IDF terms);
- ``service`` (``--service``): the cases stored in PostgreSQL (``EVALLOOP_TEST_PG_DSN``, a
  fresh database), then ``services.triage.pipeline.recluster_agent`` (load, cluster, label,
  rank, write).

Figures per step: the Python heap peak (``tracemalloc``, numpy arrays included) and the growth
of the process's resident high-water mark (``VmHWM``, reset before the step) over its RSS
before the step, in MB.
The raw baseline, in the same run, is the input itself: the ``(n, 384)`` float32 vectors
(``n * 1536`` bytes); ``ratio`` = peak / input. Memory bounded independent of n shows as a
peak that stops growing once n passes the linkage sample (``triage.cluster_sample_size``),
apart from the O(n) input and labels.

Exit codes: 0 measured, 3 a child failed (PostgreSQL unreachable with ``--service``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tracemalloc
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DIM = 384


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} missing from /proc/self/status")


def vectors(n: int, shape: str, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """``(n, 384)`` float32 unit vectors and each row's topic (``alike``: 1, ``topics``: 40)."""
    rng = np.random.default_rng(seed)
    k = 1 if shape == "alike" else 40
    centres = rng.normal(size=(k, DIM))
    topic = rng.integers(0, k, n)
    noise = 0.6 if shape == "alike" else 0.35
    x = centres[topic] / np.linalg.norm(centres[topic], axis=1, keepdims=True) \
        + rng.normal(scale=noise / np.sqrt(DIM), size=(n, DIM))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32), topic


def _reset_peak() -> int:
    """Reset this process's ``VmHWM`` to its current RSS (``/proc/self/clear_refs`` 5);
    returns the RSS in kB."""
    import gc

    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")
    return _status_kb("VmRSS")


def _measure(step: Any) -> dict[str, float]:
    rss0 = _reset_peak()
    tracemalloc.start()
    out = step()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    hwm = _status_kb("VmHWM")
    return {"heap_peak_mb": round(peak / 2**20, 1),
            "rss_peak_growth_mb": round(max(0, hwm - rss0) / 1024, 1),
            **(out or {})}


def child_core(n: int, shape: str) -> dict[str, Any]:
    """recluster + question_labels of ``n`` vectors in this process."""
    from evalloop.core.clustering import recluster
    from evalloop.core.labels import question_labels

    x, topic = vectors(n, shape)
    res: dict[str, Any] = {}

    def clustered() -> dict[str, float]:
        res["c"] = recluster(x)
        return {"clusters": res["c"].k}

    r1 = _measure(clustered)
    labels = res["c"].labels
    members = {k: np.flatnonzero(labels == k) for k in range(res["c"].k)}
    questions = {k: [f"question {int(topic[i])} about item {i % 97}" for i in rs]
                 for k, rs in members.items()}
    ids = {k: [str(i) for i in rs] for k, rs in members.items()}

    def labelled() -> dict[str, float]:
        question_labels(questions, {k: x[rs] for k, rs in members.items()}, ids)
        return {}

    r2 = _measure(labelled)
    return {"recluster": r1, "labels": r2}


async def _service(n: int, shape: str) -> dict[str, Any]:
    import asyncpg

    from evalloop.adapters.embedder import HashingEmbedder
    from evalloop.adapters.postgres import connect_pool, create_database, migrate
    from evalloop.adapters.triage_store import CaseRow, upsert_cases
    from evalloop.settings import TriageSettings
    from services.triage.pipeline import GoldenCache, recluster_agent

    admin = os.environ["EVALLOOP_TEST_PG_DSN"]
    name = f"triage_mem_{uuid.uuid4().hex[:8]}"
    dsn = await create_database(admin, name)
    try:
        await migrate(dsn)
        pool = await connect_pool(dsn, min_size=1, max_size=2)
        try:
            embedder = HashingEmbedder(DIM)
            x, topic = vectors(n, shape)
            base = datetime.now(UTC) - timedelta(days=1)
            rows = [CaseRow(
                case_id=uuid.UUID(int=i + 1), agent_id="mem-agent",
                occurred_at=base + timedelta(seconds=i), confidence=0.8,
                signals=["thumbs_down"], evidence_event_ids=[uuid.UUID(int=10**9 + i)],
                question=f"question {int(topic[i])} about item {i % 97}?",
                answer="an answer " * 20, comment="wrong", expected_answer=None,
                text_hash=f"h{i}", embedding_model=embedder.name, embedding=x[i],
                cluster_id=None) for i in range(n)]
            async with pool.acquire() as conn:
                for a in range(0, n, 2000):
                    async with conn.transaction():
                        await upsert_cases(conn, rows[a:a + 2000])
            del rows, x
            cfg = TriageSettings(embedder="hashing")
            rss0 = _reset_peak()
            tracemalloc.start()
            report = await recluster_agent(pool, embedder, cfg, "mem-agent", GoldenCache())
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            hwm = _status_kb("VmHWM")
            return {"service": {
                "heap_peak_mb": round(peak / 2**20, 1),
                "rss_peak_growth_mb": round(max(0, hwm - rss0) / 1024, 1),
                "cases": report.cases, "clusters": report.clusters,
                "seconds": {k: round(v, 2) for k, v in report.seconds.items()}}}
        finally:
            await pool.close()
    finally:
        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


def run_child(n: int, shape: str, what: str) -> dict[str, Any]:
    """One measurement in a fresh interpreter (its own high-water mark)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "shared"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, __file__, "--child", what, "--cases", str(n), "--shape", shape],
        env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"child {what} n={n} failed:\n{proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, nargs="+", default=[5000, 10_000, 20_000])
    p.add_argument("--shape", choices=["alike", "topics"], default="alike")
    p.add_argument("--service", action="store_true",
                   help="also the service's whole re-clustering (EVALLOOP_TEST_PG_DSN)")
    p.add_argument("--json", action="store_true", help="one JSON line per size")
    p.add_argument("--child", choices=["core", "service"], help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        n = args.cases[0]
        out = (child_core(n, args.shape) if args.child == "core"
               else asyncio.run(_service(n, args.shape)))
        print(json.dumps(out))
        return 0
    for n in args.cases:
        try:
            result: dict[str, Any] = {"cases": n, "shape": args.shape,
                                      "input_mb": round(n * DIM * 4 / 2**20, 1)}
            result |= run_child(n, args.shape, "core")
            if args.service:
                result |= run_child(n, args.shape, "service")
        except (RuntimeError, KeyError) as exc:
            print(f"triage_memory: {exc}", file=sys.stderr)
            return 3
        for step in ("recluster", "labels", "service"):
            if step in result:
                result[step]["ratio"] = round(
                    result[step]["rss_peak_growth_mb"] / result["input_mb"], 2)
        if args.json:
            print(json.dumps(result), flush=True)
        else:
            parts = [f"{s}: heap peak {result[s]['heap_peak_mb']} MB, RSS peak "
                     f"+{result[s]['rss_peak_growth_mb']} MB ({result[s]['ratio']}x input)"
                     for s in ("recluster", "labels", "service") if s in result]
            print(f"n={n} ({args.shape}, input {result['input_mb']} MB): " + "; ".join(parts),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
