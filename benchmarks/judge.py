"""Judge benchmark: judgements/s on a golden set, against bare llama.cpp calls, and from cache.

Target (``docs/judge.md#performance``): the judge's throughput on a 50-case golden set on
2 cores is at least 0.9 of bare llama.cpp calls of the same prompts (the judge's own work —
prompt building, P(yes) reading, calibration, retries, the PostgreSQL cache — costs < 10 %),
and a re-run is served from the cache.

Run: ``python benchmarks/judge.py`` (``--cases N`` for a quick run, ``--model`` for the 0.5B).
PostgreSQL: ``EVALLOOP_TEST_PG_DSN`` (admin DSN) or the embedded server; the run gets a fresh,
migrated database. One embedded llama.cpp server serves all three phases:

1. *bare*: the same seven prompts per case sent with the ``openai`` client directly
   (``max_tokens=1``, ``logprobs``), nothing else;
2. *judge*: ``OpenAIJudge.judge`` per case (cache empty), which sends those same prompts;
3. *cached*: ``OpenAIJudge.judge`` again on the same cases: every judgement from PostgreSQL.

Phases 1 and 2 are interleaved case by case, alternating which goes first (even cases bare
first, odd cases judge first), so a change of machine load or the server's prompt cache
favours neither side; each side's time is the sum of its own calls.

Cases: the shipped sample golden set (28 cases); each case's expected answer is the answer and
its first two sentences the knowledge; beyond 28, the cases repeat with the answer cut to its
first sentence (a different answer, so a different cache key). On a shared machine the wall
times are noisy: compare the ratio, which is measured minutes apart in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "shared"))

from evalloop.adapters.judge_embedded import shipped_calibration  # noqa: E402
from evalloop.adapters.judge_openai import OpenAIJudge, openai_client  # noqa: E402
from evalloop.adapters.judge_store import PgJudgementCache  # noqa: E402
from evalloop.adapters.llama_server import DEFAULT_MODEL, MODELS, LlamaServer  # noqa: E402
from evalloop.adapters.postgres import (  # noqa: E402
    connect_pool,
    create_database,
    migrate,
    start_embedded,
)
from evalloop.core.judge import DIMENSIONS, Passage, dimension_prompt  # noqa: E402

GOLDEN = ROOT / "shared" / "evalloop" / "data" / "sample" / "golden" / "covid-qa-uk.json"
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def build_cases(n: int) -> list[dict[str, Any]]:
    """``n`` judge inputs from the sample golden set (see the module docstring)."""
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))["cases"]
    cases: list[dict[str, Any]] = []
    for i in range(n):
        case = golden[i % len(golden)]
        sentences = _SENTENCE.split(case["expected_answer"].strip())
        answer = case["expected_answer"] if i < len(golden) else sentences[0]
        cases.append(
            {
                "case_id": case["id"],
                "question": case["question"],
                "answer": answer[:600],
                "passages": [Passage(f"{case['id']}#0", " ".join(sentences[:2])[:600])],
            }
        )
    return cases


async def _bare(client: Any, model: str, cases: list[dict[str, Any]]) -> float:
    start = time.perf_counter()
    for c in cases:
        for dim in DIMENSIONS:
            p = dimension_prompt(
                dim, question=c["question"], answer=c["answer"], passages=c["passages"]
            )
            await client.chat.completions.create(
                model=model,
                messages=[
                    {"role": "system", "content": p.system},
                    {"role": "user", "content": p.user},
                ],
                max_tokens=1,
                temperature=0.0,
                logprobs=True,
                top_logprobs=10,
            )
    return time.perf_counter() - start


async def _judged(judge: OpenAIJudge, cases: list[dict[str, Any]]) -> tuple[float, int]:
    start = time.perf_counter()
    scored = 0
    for c in cases:
        j = await judge.judge(**c)
        scored += j.all_scored
    return time.perf_counter() - start, scored


async def main(args: argparse.Namespace) -> dict[str, Any]:
    cases = build_cases(args.cases)
    admin = os.environ.get("EVALLOOP_TEST_PG_DSN") or start_embedded(
        Path(f"/var/tmp/evalloop-bench-{os.getuid()}/pg")
    )
    dsn = await create_database(admin, f"evalloop_bench_judge_{uuid.uuid4().hex[:8]}")
    await migrate(dsn)
    pool = await connect_pool(dsn, max_size=2)
    try:
        async with LlamaServer(MODELS[args.model], n_threads=args.threads) as server:
            client = openai_client(server.base_url, timeout_s=600.0)
            judge = OpenAIJudge(
                client,
                server.model,
                calibration=shipped_calibration(args.model),
                cache=PgJudgementCache(pool),
                timeout_s=600.0,
            )
            await _bare(client, server.model, cases[:1])  # warm-up: load pages, not measured
            bare_s, judge_s, scored = 0.0, 0.0, 0
            for i, case in enumerate(cases):
                if i % 2 == 0:
                    bare_s += await _bare(client, server.model, [case])
                    took, ok = await _judged(judge, [case])
                else:
                    took, ok = await _judged(judge, [case])
                    bare_s += await _bare(client, server.model, [case])
                judge_s += took
                scored += ok
            calls = judge.usage().calls
            cached_s, _ = await _judged(judge, cases)
            usage = judge.usage()
            await client.close()
    finally:
        await pool.close()
    n = len(cases)
    return {
        "model": args.model,
        "cases": n,
        "threads": args.threads,
        "bare_s": round(bare_s, 2),
        "judge_s": round(judge_s, 2),
        "cached_s": round(cached_s, 3),
        "bare_cases_per_s": round(n / bare_s, 4),
        "judgements_per_s": round(n / judge_s, 4),
        "ratio_to_bare": round(bare_s / judge_s, 3),
        "target_ratio": 0.9,
        "cached_judgements_per_s": round(n / cached_s, 1),
        "all_seven_scored": scored,
        "judge_calls_first_run": calls,
        "judge_calls_cached_run": usage.calls - calls,
        "cache_hits": usage.cache_hits,
        "prompt_tokens": usage.prompt_tokens,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=50, help="golden cases (default 50)")
    parser.add_argument("--model", default=DEFAULT_MODEL, choices=sorted(MODELS))
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp CPU threads")
    result = asyncio.run(main(parser.parse_args()))
    print(json.dumps(result, indent=1))
