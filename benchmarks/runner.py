#!/usr/bin/env python3
"""Eval-runner overhead: cases/s against the reference agent, as a ratio to bare httpx calls.

Usage::

    python benchmarks/runner.py [--cases 180] [--rounds 9] [--format json] [--delay-ms 0]

What is measured, in one run :

* the reference agent (``evalloop agent serve``, the standard HR configuration) runs as its own
  process on a free loopback port -- real HTTP, and its CPU is not the client's;
* the workload is the shipped HR eval set repeated to ``--cases`` requests (ids made unique);
* **bare httpx** (the baseline): one ``httpx.AsyncClient`` with the same connection limits
  POSTs the same ``{"messages": [...]}`` bodies with the same bounded concurrency and reads
  each body -- no retries, no text extraction, no gates, no flags, no result records;
* **runner**: :func:`evalloop.evaluation.run_eval` with an
  :class:`~evalloop.adapters.agent_client.AgentClient` -- the full path (extraction, both gates,
  quality flags, records, summary);
* at concurrency 1, 8 and 32; for each, after one untimed warm-up of each, ``--rounds`` rounds
  run both back to back in alternating order; the printed ratio is the median of the per-round
  ratios (the machine is shared with other work: pairing cancels its drift), the rates are
  medians, and the client's CPU time per case (``time.process_time``) is printed beside them:
  on a machine shared with other work it is the steadier measure of the runner's own cost.
  The agent runs single-threaded (``OMP_NUM_THREADS=1``...), so on 2 cores the client has a
  core of its own when nothing else runs.

Target: runner >= 0.9 of bare httpx at every concurrency. Exit status 0 unless ``--strict``
and a ratio is below the target.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from evalloop.adapters.agent_client import AgentClient
from evalloop.cli.eval_cmd import bundled_evals
from evalloop.core.evaluation.cases import EvalCase, load_eval_file
from evalloop.evaluation.runner import run_eval

TARGET = 0.9
CONCURRENCY = (1, 8, 32)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _workload(n: int) -> list[EvalCase]:
    base = load_eval_file(bundled_evals()).cases
    return [base[i % len(base)].model_copy(update={"id": f"{base[i % len(base)].id}-{i}"})
            for i in range(n)]


async def _bare(url: str, cases: Sequence[EvalCase], concurrency: int) -> tuple[float, float]:
    """(wall s, client CPU s) for bare httpx to POST every case and read every body."""
    queue = iter(cases)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30.0) as client:
        async def worker() -> None:
            for case in queue:
                r = await client.post(url, json={"messages": [{"role": "user",
                                                               "content": case.input}]})
                r.raise_for_status()
                _ = r.content

        start, cpu = time.perf_counter(), time.process_time()
        async with asyncio.TaskGroup() as group:
            for _ in range(concurrency):
                group.create_task(worker())
        return time.perf_counter() - start, time.process_time() - cpu


async def _runner(url: str, cases: Sequence[EvalCase], concurrency: int) -> tuple[float, float]:
    """(wall s, client CPU s) for run_eval (full scoring path) over the same cases."""
    async with AgentClient(url, max_connections=concurrency, retries=0) as client:
        start, cpu = time.perf_counter(), time.process_time()
        run = await run_eval(cases, client, concurrency=concurrency)
        elapsed = time.perf_counter() - start, time.process_time() - cpu
    if run.summary.agent_errors:
        raise RuntimeError(f"agent errors during the benchmark: {run.summary.agent_error_cases}")
    return elapsed


def _start_agent(port: int, fmt: str, delay_ms: float) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "evalloop.cli.main", "agent", "serve", "--port", str(port),
           "--format", fmt, "--delay-ms", str(delay_ms)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1",
                                 "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise RuntimeError(f"reference agent exited ({proc.returncode}): {err[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.terminate()
    raise RuntimeError("reference agent did not become healthy within 60 s")


@dataclass
class Level:
    """Medians at one concurrency: cases/s, the paired ratio, client CPU ms per case."""

    concurrency: int
    bare_rate: float
    runner_rate: float
    ratio: float
    bare_cpu_ms: float
    runner_cpu_ms: float


async def measure(url: str, cases: list[EvalCase], rounds: int) -> list[Level]:
    """Measure every concurrency level.

    Rates and CPU are medians over ``rounds``; the ratio is the median of the per-round ratios
    (each round runs both back to back, in alternating order), which cancels the drift of a
    shared machine better than a ratio of medians.
    """
    out = []
    n = len(cases)
    for c in CONCURRENCY:
        await _bare(url, cases[:64], c)  # warm-up: connections, agent caches
        await _runner(url, cases[:64], c)
        bare, runner = [], []
        for r in range(rounds):
            if r % 2:
                runner.append(await _runner(url, cases, c))
                bare.append(await _bare(url, cases, c))
            else:
                bare.append(await _bare(url, cases, c))
                runner.append(await _runner(url, cases, c))
        med = statistics.median
        out.append(Level(
            c, med(n / w for w, _ in bare), med(n / w for w, _ in runner),
            med(b[0] / r_[0] for b, r_ in zip(bare, runner, strict=True)),
            med(cpu for _, cpu in bare) / n * 1000, med(cpu for _, cpu in runner) / n * 1000))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=180, help="requests per measurement")
    parser.add_argument("--rounds", type=int, default=9, help="alternating rounds per level")
    parser.add_argument("--format", default="json",
                        help="agent reply format: openai | openai-sse | anthropic | json | text")
    parser.add_argument("--delay-ms", type=float, default=0.0,
                        help="simulated model latency per reply (0: pure overhead)")
    parser.add_argument("--strict", action="store_true", help="exit 1 below the target")
    args = parser.parse_args(argv)

    load_before = os.getloadavg()[0]
    port = _free_port()
    agent = _start_agent(port, args.format, args.delay_ms)
    try:
        cases = _workload(args.cases)
        results = asyncio.run(measure(f"http://127.0.0.1:{port}/", cases, args.rounds))
    finally:
        agent.terminate()
        try:
            agent.wait(timeout=10)
        except subprocess.TimeoutExpired:
            agent.kill()
    print(f"runner benchmark: reference agent (hr, format {args.format}, delay "
          f"{args.delay_ms:g} ms) in its own process; {args.cases} cases x {args.rounds} "
          "rounds; rates are medians, ratio = median of paired per-round ratios")
    print(f"load average while running: {load_before:.1f} -> {os.getloadavg()[0]:.1f} "
          f"({os.cpu_count()} cores)")
    print(f"{'concurrency':>11}  {'bare httpx cases/s':>18}  {'runner cases/s':>14}  "
          f"{'ratio':>5}  {'client CPU ms/case bare -> runner':>33}  target >= {TARGET}")
    below = False
    for lv in results:
        below |= lv.ratio < TARGET
        print(f"{lv.concurrency:>11}  {lv.bare_rate:>18.1f}  {lv.runner_rate:>14.1f}  "
              f"{lv.ratio:>5.2f}  {lv.bare_cpu_ms:>20.2f} -> {lv.runner_cpu_ms:<9.2f}  "
              f"{'ok' if lv.ratio >= TARGET else 'BELOW TARGET'}")
    return 1 if (below and args.strict) else 0


if __name__ == "__main__":
    sys.exit(main())
