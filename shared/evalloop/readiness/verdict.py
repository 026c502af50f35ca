"""Judge a stored run and decide its gate: scores, claims, baseline, regression, decision.

:func:`judge_run` asks the judge (the ``Judge`` port) about every answered case of a stored run
(or a seeded sample of them): the seven dimensions, then each claim's support
(``docs/readiness.md#hallucination-report``), and stores scores on ``eval_results`` and claims
in ``hallucination_claims``. :func:`decide_run` reads what is stored, finds the baseline
(``docs/readiness.md#baseline``), compares, applies the gate
(:func:`evalloop.core.readiness.gate.decide`), stores the decision with every input, schedules
the re-evaluation a CONDITIONAL GO requires, and publishes ``readiness.decided.v1`` when given a
bus.

Passages: what the agent said it retrieved (``eval_results.retrieved_context``) when it said
so, else the golden case's ``context_chunks``; texts come from :class:`Knowledge`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import asyncpg

from evalloop.adapters import golden_store
from evalloop.adapters import readiness_store as store
from evalloop.adapters.bus import Bus
from evalloop.core.judge.calibration import CalibrationRecord
from evalloop.core.judge.types import ClaimSupport, Judge, Judgement, JudgeUsage, Passage
from evalloop.core.readiness.care import CareCase, care_checks
from evalloop.core.readiness.checkpoints import sample_conversations
from evalloop.core.readiness.gate import (
    COMPOSITE_ADVISORY_BAR,
    CaseEvidence,
    GateDecision,
    GateInputs,
    decide,
)
from evalloop.core.readiness.hallucination import (
    SUPPORTED_AT,
    ClaimFinding,
    classify_claim,
    excerpt,
    split_claims,
)
from evalloop.core.readiness.regression import RegressionReport, compare
from evalloop.core.readiness.scores import CaseScores, composite
from evalloop.errors import EvalloopError
from evalloop.events import ReadinessDecided, ReevalRequested, dump_event, utc_now
from evalloop.readiness.knowledge import Knowledge
from evalloop.readiness.report import decision_report, hallucination_counts
from evalloop.topics import Topics

__all__ = ["JudgeRunResult", "UnknownRun", "Verdict", "case_scores", "decide_run", "judge_run",
           "reeval_job_id", "sample_key"]

log = logging.getLogger("evalloop.readiness")

#: Namespace of the re-evaluation job a CONDITIONAL GO schedules (UUIDv5 of ``run:<run id>``;
#: never change it: deciding a run again must not schedule a second job).
_REEVAL_NAMESPACE = uuid.UUID("2b4f8a51-0c7e-4d8e-9f39-5c0d3a6e7b21")
#: Claims checked per answer at most (a long answer's tail costs judge calls, not insight).
MAX_CLAIMS = 8


class UnknownRun(EvalloopError):
    """No stored run has this id (a usage error: exit 2)."""


def sample_key(info: store.RunInfo) -> str:
    """The seed of a run's judge sample: ``<agent>:<golden-set version>`` when the run names
    both, so consecutive runs of one agent on one version judge the **same** cases and
    regression has shared cases to compare; else the run id."""
    if info.agent_id is not None and info.golden_set_version_id is not None:
        return f"{info.agent_id}:{info.golden_set_version_id}"
    return str(info.run_id)


def reeval_job_id(run_id: UUID) -> UUID:
    """The id of the re-evaluation a CONDITIONAL GO of run ``run_id`` schedules: one per run,
    however often the run is decided (``docs/readiness.md#the-gate``)."""
    return uuid.uuid5(_REEVAL_NAMESPACE, f"run:{run_id}")


async def _advisory_reasons(pool: asyncpg.Pool, cases: Sequence[store.RunCase]
                            ) -> tuple[dict[str, str], str | None]:
    """``dimension -> why it is advisory`` (e.g. ``"AUC 0.40 < 0.75"``, from the calibration
    record the judge used) and the judge's model, from the stored judge metadata.

    The record is the shipped one of the model, or the newest stored one of the model and
    prompt version, when its id is the one the judge recorded; otherwise the reason names the
    calibration id (``docs/judge.md#advisory-dimensions``).
    """
    from evalloop.adapters.judge_embedded import shipped_calibration
    from evalloop.adapters.judge_store import latest_calibration

    out: dict[str, str] = {}
    model: str | None = None
    records: dict[tuple[str, str, str], CalibrationRecord | None] = {}
    for c in cases:
        meta = c.judge or {}
        dims = meta.get("advisory") or ()
        model = model or meta.get("model")
        if not dims:
            continue
        cal_id = str(meta.get("calibration_id"))
        key = (str(meta.get("model")), str(meta.get("prompt_version")), cal_id)
        if key not in records:
            record: CalibrationRecord | None = None
            try:
                record = shipped_calibration(key[0])
                if record is None or record.calibration_id != cal_id:
                    record = await latest_calibration(pool, key[0], key[1])
            except (EvalloopError, ValueError) as exc:
                log.warning("calibration record %s unreadable: %s", cal_id, exc)
                record = None
            records[key] = record if record and record.calibration_id == cal_id else None
        rec = records[key]
        for dim in dims:
            out.setdefault(dim, rec.advisory_reason(dim) if rec is not None else
                           f"calibration {cal_id} below the agreement bar")
    return out, model


@dataclass(frozen=True, slots=True)
class JudgeRunResult:
    """What :func:`judge_run` did.

    Attributes:
        judged: cases judged now.
        answered: cases with an answer in the run.
        sampled: ``True`` when only a sample was judged (its size is ``judged``).
        usage: the judge's calls, tokens, cache hits and cost for this run.
        claims: claims checked.
        hallucinated: claims found unsupported.
        seconds: wall time, seconds.
        skipped: sampled cases left unjudged because the time budget ran out.
    """

    judged: int
    answered: int
    sampled: bool
    usage: JudgeUsage
    claims: int
    hallucinated: int
    seconds: float
    skipped: int = 0


def _passages(case: store.RunCase, knowledge: Knowledge
              ) -> tuple[list[Any], list[str], str]:
    source = "retrieved" if case.retrieved is not None else "golden context_chunks"
    ids = case.retrieved if case.retrieved is not None else case.context_chunks
    found, unknown = knowledge.resolve(ids)
    return found, unknown, source


async def _judge_case(judge: Judge, case: store.RunCase, knowledge: Knowledge,
                      max_claims: int, passage_chars: int | None = None
                      ) -> tuple[Judgement, list[ClaimFinding], dict[str, Any]]:
    assert case.answer is not None
    passages, unknown, source = _passages(case, knowledge)
    if passage_chars is not None:  # the part of each passage nearest the answer
        passages = [replace(p, text=excerpt(p.text, case.answer, passage_chars))
                    for p in passages]
    shown = [Passage(p.id, p.text) for p in passages]
    judgement = await judge.judge(case_id=case.case_id, question=case.question,
                                  answer=case.answer, passages=shown,
                                  expected=case.expected_answer)
    current = [Passage(p.id, p.text) for p in passages if p.status == "current"]
    old = [Passage(p.id, p.text) for p in passages if p.status != "current"]
    findings: list[ClaimFinding] = []
    for i, claim in enumerate(split_claims(case.answer)[:max_claims]):
        support: ClaimSupport = await judge.claim_support(claim, current)
        old_score = None
        if old and (support.score is None or support.score < SUPPORTED_AT):
            old_support = await judge.claim_support(claim, old)
            old_score = old_support.score
        score = support.score
        reason = support.reason
        if not current and old:  # nothing current was retrieved: no current text backs it
            score, reason = 0.0, "no current passage was retrieved"
        findings.append(classify_claim(
            case.case_id, i, claim, score, passages, support_superseded=old_score,
            unscored_reason=reason, history=knowledge.by_id,
        ))
    meta = {
        "model": judgement.judge_model, "prompt_version": judgement.prompt_version,
        "calibration_id": judgement.calibration_id, "cached": judgement.cached,
        "raw": {d: s.raw for d, s in judgement.scores.items()},
        "reasons": {d: s.reason for d, s in judgement.scores.items()},
        "unscored": {d: s.unscored_reason for d, s in judgement.scores.items()
                     if s.unscored_reason is not None},
        "advisory": [d for d, s in judgement.scores.items() if s.advisory],
        "passages": [p.id for p in passages], "passage_source": source,
        "unknown_passages": unknown,
        "usage": {"calls": judgement.usage.calls, "prompt_tokens": judgement.usage.prompt_tokens,
                  "completion_tokens": judgement.usage.completion_tokens,
                  "cache_hits": judgement.usage.cache_hits,
                  "cost_usd": judgement.usage.cost_usd},
    }
    return judgement, findings, meta


async def judge_run(pool: asyncpg.Pool, judge: Judge, run_id: UUID, *, knowledge: Knowledge,
                    sample: int | None = None, rejudge: bool = False, concurrency: int = 1,
                    max_claims: int = MAX_CLAIMS,
                    case_ids: Collection[str] | None = None,
                    budget_s: float | None = None,
                    passage_chars: int | None = None) -> JudgeRunResult:
    """Judge the answered cases of stored run ``run_id`` and store scores and claims.

    Args:
        pool: the database.
        judge: the judge (its own bounds on concurrency, retries and timeouts apply).
        run_id: the run.
        knowledge: passage texts by id.
        sample: judge at most this many answered cases, drawn reproducibly by
            :func:`sample_key` from the cases that should not be refused (from all when they
            are too few) (``None``: all).
        rejudge: judge cases already scored again (the judge's cache makes an unchanged
            answer free).
        concurrency: cases judged at once.
        max_claims: claims checked per answer at most.
        case_ids: judge only these cases (``None``: every answered one).
        budget_s: start no new case after this many seconds (``None``: no limit); the cases
            left are counted in ``skipped`` and stay unjudged.
        passage_chars: show the judge, of each passage, the sentences nearest the answer up to
            this many characters (``None``: whole passages).

    Raises:
        UnknownRun: no such run.
        StorageError: PostgreSQL failed.
    """
    loop = asyncio.get_running_loop()
    started = loop.time()
    info = await store.run_info(pool, run_id)
    if info is None:
        raise UnknownRun(f"no evaluation run {run_id}: see `evalloop jobs list` for run ids")
    cases = await store.load_cases(pool, run_id)
    answered = [c for c in cases if c.answer]
    todo = [c for c in answered if (rejudge or not c.scores)
            and (case_ids is None or c.case_id in case_ids)]
    sampled = sample is not None and sample < len(todo)
    if sample is not None:
        # A sample is drawn from the cases that should be answered when there are enough of
        # them: a refusal has no passages to be grounded in, and its gate already judges it.
        pool_ = [c for c in todo if not c.should_refuse]
        pool_ = pool_ if len(pool_) >= sample else todo
        # in the sample's own (seeded) order: under a time budget, runs judged with the same
        # sample key judge the same leading cases
        keep = sample_conversations(sample_key(info), [c.case_id for c in pool_], sample)
        by_id = {c.case_id: c for c in todo}
        todo = [by_id[i] for i in keep]
    before = judge.usage()
    sem = asyncio.Semaphore(max(1, concurrency))
    out: dict[str, tuple[Judgement, list[ClaimFinding], dict[str, Any]]] = {}

    async def one(case: store.RunCase) -> None:
        async with sem:
            if budget_s is not None and loop.time() - started > budget_s:
                return  # over the time budget: left unjudged, counted in ``skipped``
            out[case.case_id] = await _judge_case(judge, case, knowledge, max_claims,
                                                  passage_chars)

    async with asyncio.TaskGroup() as tg:
        for case in todo:
            tg.create_task(one(case))
    skipped = len(todo) - len(out)
    todo = [c for c in todo if c.case_id in out]
    rows: list[tuple[str, Mapping[str, float | None], float | None, Mapping[str, Any]]] = []
    findings: list[ClaimFinding] = []
    for case in todo:
        judgement, claims, meta = out[case.case_id]
        scores: dict[str, float | None] = {d: s.score for d, s in judgement.scores.items()}
        rows.append((case.case_id, scores, composite(scores).value, meta))
        findings.extend(claims)
    now = utc_now()
    async with pool.acquire() as conn, conn.transaction():
        await store.save_scores(conn, run_id, rows)
        await store.save_claims(conn, run_id, info.agent_id,
                                [c.case_id for c in todo], findings, now)
    after = judge.usage()
    usage = JudgeUsage(after.calls - before.calls, after.prompt_tokens - before.prompt_tokens,
                       after.completion_tokens - before.completion_tokens,
                       after.cache_hits - before.cache_hits, after.cost_usd - before.cost_usd)
    return JudgeRunResult(
        judged=len(todo), answered=len(answered), sampled=sampled or skipped > 0, usage=usage,
        claims=len(findings), hallucinated=sum(f.category is not None for f in findings),
        seconds=loop.time() - started, skipped=skipped,
    )


def case_scores(cases: Sequence[store.RunCase]) -> list[CaseScores]:
    """The stored judge scores of ``cases`` (cases never judged are left out)."""
    out = []
    for c in cases:
        if not c.scores:
            continue
        reasons = dict((c.judge or {}).get("reasons") or {})
        out.append(CaseScores(c.case_id, dict(c.scores), reasons))
    return out


@dataclass(frozen=True, slots=True)
class Verdict:
    """A stored gate decision.

    Attributes:
        decision_id: its id.
        run_id, agent_id: the run decided on.
        gate: the decision with its checks, why and remediation.
        regression: the comparison with the baseline (``None``: no baseline).
        baseline_how: how the baseline was chosen, or why there is none.
        report: the JSON report (every number; what ``--json`` prints and the table stores).
        reeval: the re-evaluation a CONDITIONAL GO scheduled, if any.
        event: the ``readiness.decided.v1`` message.
    """

    decision_id: UUID
    run_id: UUID
    agent_id: str | None
    gate: GateDecision
    regression: RegressionReport | None
    baseline_how: str
    report: Mapping[str, Any]
    reeval: ReevalRequested | None
    event: ReadinessDecided
    judged: Mapping[str, Any] = field(default_factory=dict)


async def decide_run(pool: asyncpg.Pool, run_id: UUID, *,
                     composite_bar: float = COMPOSITE_ADVISORY_BAR,
                     reeval_after: timedelta = timedelta(days=7), bus: Bus | None = None,
                     topics: Topics | None = None, now: datetime | None = None,
                     judged: Mapping[str, Any] | None = None) -> Verdict:
    """Decide the gate of stored run ``run_id`` from what is stored, store the decision with
    every input, schedule a CONDITIONAL GO's re-evaluation, publish ``readiness.decided.v1``.

    Args:
        pool: the database.
        run_id: the run.
        composite_bar: the advisory composite bar.
        reeval_after: when the re-evaluation of a CONDITIONAL GO is due (at most 7 days).
        bus, topics: where to publish the decision (``None``: not published).
        now: the decision time (UTC; default now).
        judged: what the judge did for this decision (sample size, usage), recorded.

    Raises:
        UnknownRun: no such run.
        StorageError: PostgreSQL failed.
        BusError: the decision was stored but could not be published.
    """
    info = await store.run_info(pool, run_id)
    if info is None:
        raise UnknownRun(f"no evaluation run {run_id}: see `evalloop jobs list` for run ids")
    decided_at = now or utc_now()
    cases = await store.load_cases(pool, run_id)
    scores = case_scores(cases)
    advisory, judge_model = await _advisory_reasons(pool, cases)
    evidence = {c.case_id: CaseEvidence(
        c.case_id, c.should_refuse, c.should_escalate, c.retrieved or (), c.context_chunks,
        retrieval_known=c.retrieved is not None) for c in cases}
    baseline = await store.find_baseline(pool, info.agent_id, exclude=run_id)
    regression = None
    base_scores: list[CaseScores] = []
    if baseline.run_id is not None:
        base_scores = case_scores(await store.load_cases(pool, baseline.run_id))
        regression = compare(base_scores, scores, baseline_run_id=str(baseline.run_id),
                             current_run_id=str(run_id))
    care_cases = [CareCase(c.difficulty, c.category) for c in cases]
    if info.golden_set_version_id is not None:
        version_cases = await golden_store.load_golden_cases(pool, info.golden_set_version_id)
        care_cases = [CareCase(c.difficulty, c.category) for c in version_cases]
    cps = await store.checkpoints(pool, run_id)
    inputs = GateInputs(
        run_id=str(run_id), scores=scores,
        refusal_failures=[c.case_id for c in cases if "refusal" in c.gates_failed],
        escalation_failures=[c.case_id for c in cases if "escalation" in c.gates_failed],
        non_answers=[c.case_id for c in cases if c.answered_nothing],
        agent_errors=[c.case_id for c in cases if c.status == "agent_error"],
        evidence=evidence, regression=regression, baseline_note=baseline.how,
        advisory_dimensions=advisory, care=care_checks(care_cases), checkpoints=cps,
        composite_bar=composite_bar, judge_model=judge_model,
    )
    gate = decide(inputs)
    claims = await store.list_claims(pool, agent_id=None, since=datetime.min.replace(
        tzinfo=decided_at.tzinfo), run_id=run_id, hallucinated_only=False, limit=100_000)
    counts = hallucination_counts(claims)
    decision_id = uuid.uuid4()
    reeval = None
    if gate.decision == "CONDITIONAL GO" and info.agent_id is not None:
        reeval = ReevalRequested(
            job_id=reeval_job_id(run_id), agent_id=info.agent_id,
            requested_at=decided_at + min(reeval_after, timedelta(days=7)),
            trigger="conditional_go",
            reason=(f"CONDITIONAL GO of run {run_id} at {decided_at:%Y-%m-%d %H:%M}Z: "
                    f"re-evaluation within 7 days ({'; '.join(gate.why)[:300]})"),
        )
    stored_inputs = {
        "scores": [{"case_id": s.case_id, "scores": dict(s.scores)} for s in scores],
        "refusal_failures": list(inputs.refusal_failures),
        "escalation_failures": list(inputs.escalation_failures),
        "agent_errors": list(inputs.agent_errors),
        "evidence": {k: {"retrieved": list(v.retrieved), "expected": list(v.expected),
                         "retrieval_known": v.retrieval_known}
                     for k, v in evidence.items()},
        "baseline_run_id": None if baseline.run_id is None else str(baseline.run_id),
        "baseline_how": baseline.how,
        "baseline_scores": [{"case_id": s.case_id, "scores": dict(s.scores)}
                            for s in base_scores],
        "advisory_dimensions": advisory,
        "care": [{"name": c.name, "passed": c.passed, "detail": c.detail} for c in inputs.care],
        "checkpoints": {k: {"status": v.status, "reviewer": v.reviewer, "note": v.note,
                            "decided_at": v.decided_at.isoformat()} for k, v in cps.items()},
        "composite_bar": composite_bar, "judged": dict(judged or {}),
    }
    async with pool.acquire() as conn, conn.transaction():
        if reeval is not None and not await store.schedule_reeval(conn, reeval):
            # one re-evaluation per run: a later decision of the run points at the first job
            due = await store.reeval_requested_at(conn, reeval.job_id)
            if due is not None:
                reeval = reeval.model_copy(update={"requested_at": due})
        report = decision_report(
            decision_id=decision_id, run_id=run_id, agent_id=info.agent_id, decided_at=decided_at,
            gate=gate, regression=regression, baseline_how=baseline.how, hallucinations=counts,
            reeval=reeval, judged=judged or {}, cases_total=len(cases), scored=len(scores),
        )
        await store.save_decision(
            conn, decision_id=decision_id, run_id=run_id, agent_id=info.agent_id,
            decision=gate.decision, decided_at=decided_at, baseline_run_id=baseline.run_id,
            why=gate.why, report=report, inputs=stored_inputs,
            reeval_job_id=reeval.job_id if reeval else None,
        )
    comp = gate.stats["composite"].mean
    event = ReadinessDecided(
        decision_id=decision_id, run_id=run_id, agent_id=info.agent_id, decision=gate.decision,
        decided_at=decided_at, why=list(gate.why), composite=comp,
        baseline_run_id=baseline.run_id,
        shared_cases=None if regression is None else len(regression.shared_cases),
        failed_checks=[c.name for c in gate.checks if not c.ok],
        monitoring_flags=list(gate.monitoring_flags),
        reeval_due_at=reeval.requested_at if reeval else None,
        reeval_job_id=reeval.job_id if reeval else None, hallucinations=counts,
    )
    if bus is not None:
        await bus.publish((topics or Topics()).readiness_decided, dump_event(event),
                          key=info.agent_id or str(run_id))
    return Verdict(decision_id, run_id, info.agent_id, gate, regression, baseline.how, report,
                   reeval, event, judged or {})
