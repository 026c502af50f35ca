"""``evalloop ab``: run two agent configurations on the same cases at the same time, judge both,
compare them (:func:`evalloop.core.readiness.ab.compare_ab`; ``docs/readiness.md#ab-comparison``).

The cases are stored as a golden-set version of the label agent (an identical re-import is a
no-op) so both runs pin the same version and the judge sees each case's expected answer and
passages; both runs are stored (``eval_source`` ``ab:A`` / ``ab:B``) and judged like any run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from evalloop.adapters import readiness_store as store
from evalloop.adapters.agent_client import AgentClient
from evalloop.adapters.golden_store import import_golden_set, save_eval_run
from evalloop.core.evaluation.cases import EvalSet
from evalloop.core.judge.types import Judge
from evalloop.core.readiness.ab import ABReport, compare_ab
from evalloop.evaluation import run_eval
from evalloop.readiness.knowledge import Knowledge
from evalloop.readiness.report import ci_text, paired_json
from evalloop.readiness.verdict import case_scores, judge_run

__all__ = ["ABResult", "ab_json", "hard_failures", "render_ab", "run_ab"]


@dataclass(frozen=True, slots=True)
class ABResult:
    """Both runs and their comparison.

    Attributes:
        run_a, run_b: the stored run ids.
        endpoints: ``(url_a, url_b)``.
        report: the comparison.
        answers: ``case_id -> (answer_a, answer_b)``.
        gate_failures: ``{"A": [...], "B": [...]}`` refusal / escalation gate failures.
        judged: what the judge did per side.
    """

    run_a: UUID
    run_b: UUID
    endpoints: tuple[str, str]
    report: ABReport
    answers: dict[str, tuple[str | None, str | None]]
    gate_failures: dict[str, list[str]]
    judged: dict[str, dict[str, Any]]


async def run_ab(pool: asyncpg.Pool, judge: Judge, eval_set: EvalSet, url_a: str, url_b: str,
                 *, agent_id: str = "ab", concurrency: int = 4, sample: int | None = None,
                 knowledge: Knowledge | None = None, max_claims: int = 0,
                 timeout_s: float = 30.0, passage_chars: int | None = 1500) -> ABResult:
    """Run ``eval_set`` against both endpoints concurrently, judge both runs, compare.

    Args:
        pool: the database.
        judge: the judge.
        eval_set: the cases.
        url_a, url_b: the two agent endpoints.
        agent_id: the label the cases and runs are stored under.
        concurrency: requests in flight per side.
        sample: judge at most this many cases per side (the same cases on both: the sample is
            drawn from A's run id and applied to both).
        knowledge: passage texts (default: the shipped knowledge bases).
        max_claims: claims checked per answer (0: no hallucination report, the comparison does
            not need one).
        timeout_s: per-request timeout of the agents, seconds.
        passage_chars: characters of each passage the judge sees (``None``: all).

    Raises:
        StorageError: PostgreSQL failed.
    """
    outcome = await import_golden_set(pool, eval_set, agent_id=agent_id, created_by="evalloop ab")
    version_id = outcome.version.version_id
    cases = list(eval_set.cases)
    async with AgentClient(url_a, timeout_s=timeout_s, max_connections=concurrency) as ca, \
            AgentClient(url_b, timeout_s=timeout_s, max_connections=concurrency) as cb:
        run_a, run_b = await asyncio.gather(
            run_eval(cases, ca, concurrency=concurrency, agent_id=agent_id,
                     golden_set_version_id=version_id, eval_source="ab:A"),
            run_eval(cases, cb, concurrency=concurrency, agent_id=agent_id,
                     golden_set_version_id=version_id, eval_source="ab:B"),
        )
    await save_eval_run(pool, run_a)
    await save_eval_run(pool, run_b)
    kb = knowledge or Knowledge.shipped()
    judged: dict[str, dict[str, Any]] = {}
    sample_ids: set[str] | None = None
    if sample is not None:
        from evalloop.core.readiness.checkpoints import sample_conversations

        answered = [r.case_id for r in run_a.results if r.response and any(
            x.case_id == r.case_id and x.response for x in run_b.results)]
        sample_ids = set(sample_conversations(str(run_a.run_id), answered, sample))
    for side, run in (("A", run_a), ("B", run_b)):
        # the same sampled cases on both sides
        res = await judge_run(pool, judge, run.run_id, knowledge=kb, max_claims=max_claims,
                              case_ids=sample_ids, passage_chars=passage_chars)
        judged[side] = {"judged": res.judged, "calls": res.usage.calls,
                        "cache_hits": res.usage.cache_hits, "seconds": round(res.seconds, 1)}
    scores_a = case_scores(await store.load_cases(pool, run_a.run_id))
    scores_b = case_scores(await store.load_cases(pool, run_b.run_id))
    if sample_ids is not None:
        scores_a = [s for s in scores_a if s.case_id in sample_ids]
        scores_b = [s for s in scores_b if s.case_id in sample_ids]
    gates = {side: [*run.summary.refusal_gate_failures, *run.summary.escalation_gate_failures]
             for side, run in (("A", run_a), ("B", run_b))}
    errors = {side: list(run.summary.agent_error_cases)
              for side, run in (("A", run_a), ("B", run_b))}
    report = compare_ab(scores_a, scores_b, gate_failures=gates, agent_errors=errors)
    b_by_id = {r.case_id: r for r in run_b.results}
    answers = {r.case_id: (r.response, b_by_id[r.case_id].response) for r in run_a.results}
    return ABResult(run_a.run_id, run_b.run_id, (url_a, url_b), report, answers, gates, judged)


def hard_failures(cases: Sequence[store.RunCase]) -> tuple[list[str], list[str]]:
    """``(gate_failures, agent_errors)`` of a stored run's cases: the ids failing a refusal or
    escalation gate, and the ids the agent answered with an error
    (``docs/readiness.md#ab-comparison``)."""
    return ([c.case_id for c in cases if c.gates_failed],
            [c.case_id for c in cases if c.status == "agent_error"])


def ab_json(res: ABResult) -> dict[str, Any]:
    """Every number of an A/B comparison as one JSON object."""
    r = res.report
    return {
        "run_a": str(res.run_a), "run_b": str(res.run_b), "agent_a": res.endpoints[0],
        "agent_b": res.endpoints[1], "shared_cases": len(r.shared), "winner": r.winner,
        "summary": r.summary, "verdict_basis": r.basis, "judged": res.judged,
        "gate_failures": res.gate_failures,
        "agent_errors": {k: list(v) for k, v in r.agent_errors.items()},
        "excluded": [{"case_id": x.case_id, "reason": x.reason} for x in r.excluded],
        "dimensions": {d: {**paired_json(x.test), "mean_a": paired_json(x.test)["mean_baseline"],
                           "mean_b": paired_json(x.test)["mean_current"], "better": x.better}
                       for d, x in r.dimensions.items()},
        "divergent": [{"case_id": c.case_id, "composite_a": round(c.composite_a, 6),
                       "composite_b": round(c.composite_b, 6), "diff": round(c.diff, 6),
                       "answer_a": res.answers[c.case_id][0],
                       "answer_b": res.answers[c.case_id][1]} for c in r.divergent],
    }


def render_ab(data: dict[str, Any]) -> str:
    """The comparison for a person: the verdict, hard failures per side with their cases, the
    per-dimension table (with the smallest difference detectable at 80 % power), the cases left
    out of the composite comparison, the most divergent cases with both answers."""
    gates, errors = data["gate_failures"], data.get("agent_errors") or {"A": [], "B": []}
    lines = [f"A/B: A = {data['agent_a']} (run {data['run_a']})",
             f"     B = {data['agent_b']} (run {data['run_b']})",
             f"verdict: {data['summary']}"]
    for label, by_side in (("gate failures", gates), ("agent errors", errors)):
        lines.append(f"{label}: A {len(by_side['A'])}, B {len(by_side['B'])}")
        for side in ("A", "B"):
            if by_side[side]:
                lines.append(f"  {side}: {', '.join(by_side[side])}")
    lines.append(f"  {'dimension':<20} {'n':>3} {'A':>6} {'B':>6} {'B-A':>7} {'95% CI':>27} "
                 f"{'p':>7}  {'detectable@80%':<14}  better")
    clipped = False
    for d, x in data["dimensions"].items():
        if x["n"] == 0:
            lines.append(f"  {d:<20} {0:>3} unscored on the shared cases")
            continue
        clipped = clipped or bool(x.get("ci95_clipped"))
        p = "-" if x["p"] is None else f"{x['p']:.4f}"
        note = str(x.get("detectable_drop_80_note") or "")
        detect = (f"{x['detectable_drop_80']:.3f}" if x.get("detectable_drop_80") is not None
                  else "not computable" if note.startswith("not computable")
                  else "none" if note else "-")
        lines.append(f"  {d:<20} {x['n']:>3} {x['mean_a']:>6.3f} {x['mean_b']:>6.3f} "
                     f"{x['mean_diff']:>+7.3f} {ci_text(x):>27} {p:>7}  {detect:<14}  "
                     f"{x['better']}")
    notes = sorted({x["detectable_drop_80_note"] for x in data["dimensions"].values()
                    if x.get("detectable_drop_80_note")})
    for note in notes:
        lines.append(f"  detectable {note}" if note.startswith("not computable")
                     else f"  detectable none: {note.replace('drop', 'difference')}")
    if clipped:
        lines.append("  (clipped): the Student-t interval reached past [-1, 1], the range of a "
                     "difference of two 0-1 scores")
    if data.get("excluded"):
        lines.append(f"left out of the composite comparison: {len(data['excluded'])}")
        for x in data["excluded"]:
            lines.append(f"  {x['case_id']}: {x['reason']}")
    if data["divergent"]:
        lines.append("most divergent cases:")
        for c in data["divergent"]:
            lines.append(f"  {c['case_id']}: A {c['composite_a']:.3f}  B {c['composite_b']:.3f}"
                         f"  (B-A {c['diff']:+.3f})")
            lines.append(f"    A: {(c['answer_a'] or '(no answer)')[:300]}")
            lines.append(f"    B: {(c['answer_b'] or '(no answer)')[:300]}")
    return "\n".join(lines)
