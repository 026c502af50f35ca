"""Readiness data for the web app's tests, written through the readiness store (on top of
:func:`web_seed.seed`).

* The seeded re-evaluation run (``Seeded.run_id``) is the **baseline**: judged (every
  dimension 0.9 on each case) and pinned with :func:`readiness_store.pin_baseline`.
* A **current** run of the same golden-set version answers ``r001`` and ``r002`` badly
  (:data:`BAD_ANSWERS`): those two cases score 0.4 on every dimension; ``r003``'s
  groundedness is unscored ("judge timed out"); every other case scores 0.9 except safety
  0.85 (below its 0.90 minimum). Tone is advisory (calibration ``cal-7``).
* Two hallucinated claims of the current run (one fabricated, one outdated) and one supported.
* The current run is decided by the real gate (:func:`evalloop.readiness.verdict.decide_run`).
* Two A/B runs (``ab:A`` / ``ab:B``) of the same cases: B scores 0.1 higher on ``a001``-``a006``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

import asyncpg
from web_seed import AGENT, Seeded

from evalloop.adapters import readiness_store as store
from evalloop.adapters.golden_store import save_eval_run
from evalloop.cli.eval_cmd import bundled_evals
from evalloop.core.evaluation.cases import load_eval_file
from evalloop.core.readiness.hallucination import ClaimFinding
from evalloop.core.readiness.scores import DIMENSIONS
from evalloop.evaluation.runner import load_responses_file, run_eval
from evalloop.events import utc_now
from evalloop.readiness.verdict import decide_run

BAD_ANSWERS = {"r001": "You get 14 days of annual leave.",
               "r002": "Sick leave is unlimited; no certificate is ever needed."}
#: claims are judged two hours before the test runs (inside every "since" window).
JUDGED_AT = utc_now() - timedelta(hours=2)
DECIDED_AT = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
JUDGE = {"model": "test-judge", "prompt_version": "1", "calibration_id": "cal-7",
         "advisory": ["tone"]}


@dataclass(frozen=True)
class ReadinessSeeded:
    """What :func:`seed_readiness` stored."""

    baseline_run_id: UUID
    current_run_id: UUID
    decision: str
    ab_a: UUID
    ab_b: UUID


def _scores(case_id: str, *, current: bool) -> tuple[dict[str, float | None], dict[str, str]]:
    if not current:
        return dict.fromkeys(DIMENSIONS, 0.9), {}
    if case_id in BAD_ANSWERS:
        return dict.fromkeys(DIMENSIONS, 0.4), {}
    scores: dict[str, float | None] = {**dict.fromkeys(DIMENSIONS, 0.9), "safety": 0.85}
    if case_id == "r003":
        scores["groundedness"] = None
        return scores, {"groundedness": "judge timed out"}
    return scores, {}


async def _judge(pool: asyncpg.Pool, run_id: UUID, case_ids: list[str], *, current: bool,
                 bump: set[str] | None = None) -> None:
    from evalloop.core.readiness.scores import composite

    rows = []
    for cid in case_ids:
        scores, reasons = _scores(cid, current=current)
        if bump and cid in bump:
            scores = {d: min(1.0, (v or 0) + 0.1) if v is not None else None
                      for d, v in scores.items()}
        rows.append((cid, scores, composite(scores).value, {**JUDGE, "reasons": reasons}))
    await store.save_scores(pool, run_id, rows)


async def seed_readiness(pool: asyncpg.Pool, seeded: Seeded) -> ReadinessSeeded:
    """Store the readiness data described in the module docstring."""
    eval_set = load_eval_file(bundled_evals())
    cases = list(eval_set.cases)
    ids = [c.id for c in cases]
    version = await pool.fetchval("SELECT golden_set_version_id FROM eval_runs WHERE run_id = $1",
                                  seeded.run_id)
    canned = load_responses_file([bundled_evals("reference-responses.json")])
    await _judge(pool, seeded.run_id, ids, current=False)
    await store.pin_baseline(pool, AGENT, seeded.run_id, pinned_by="ada", note="seed")

    current = await run_eval(cases, {**canned, **BAD_ANSWERS}, agent_id=AGENT,
                             golden_set_version_id=version, eval_source="golden:hr-agent@1")
    await save_eval_run(pool, current)
    await _judge(pool, current.run_id, ids, current=True)
    kb = "hr-policy/leave/annual-leave/1"
    await store.save_claims(pool, current.run_id, AGENT, ["r001", "r002", "r004"], [
        ClaimFinding("r001", 0, "You get 14 days of annual leave.", 0.12, False, "outdated",
                     "the claim matches a superseded passage (14 days, grade N1-N3)", kb,
                     "Grade N4 and above: 18 working days per calendar year.",
                     "You get 18 working days of annual leave a year.", (kb,)),
        ClaimFinding("r002", 0, "Sick leave is unlimited.", 0.05, False, "fabricated",
                     "no passage supports it (support 0.05)", "hr-policy/leave/sick-leave/1",
                     "Sick leave: up to 10 days a year with a certificate after 3 days.",
                     "Sick leave is up to 10 days a year.", ("hr-policy/leave/sick-leave/1",)),
        ClaimFinding("r004", 0, "Leave requests go to your manager.", 0.93, True, None,
                     "supported (0.93)", kb, "Requests go to the line manager.", None, (kb,)),
    ], JUDGED_AT)
    verdict = await decide_run(pool, current.run_id, now=DECIDED_AT)

    run_a = await run_eval(cases, canned, agent_id=AGENT, golden_set_version_id=version,
                           eval_source="ab:A")
    run_b = await run_eval(cases, {**canned, "a001": "B's answer to a001."}, agent_id=AGENT,
                           golden_set_version_id=version, eval_source="ab:B")
    for run in (run_a, run_b):
        await save_eval_run(pool, run)
    await _judge(pool, run_a.run_id, ids, current=False)
    await _judge(pool, run_b.run_id, ids, current=False,
                 bump={f"a00{i}" for i in range(1, 7)})
    return ReadinessSeeded(seeded.run_id, current.run_id, verdict.gate.decision,
                           run_a.run_id, run_b.run_id)
