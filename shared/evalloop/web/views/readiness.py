"""The readiness tabs (``docs/web.md#readiness-tabs``): Scoring, Regression, Hallucinations,
Gate and A/B, per agent.

Every figure comes from :mod:`evalloop.adapters.readiness_store` (no SQL here) and the pure
readiness core (:mod:`evalloop.core.readiness`): the Scoring tab computes a run's dimension
means from its stored judge scores; Regression and Gate show the run's newest stored decision
(``readiness_decisions.report``, the numbers ``evalloop gate RUN --json`` prints), and compute
the regression live from the pinned / deployed baseline when the run was never decided; A/B
compares the two stored runs of an ``evalloop ab`` comparison. Reviewers approve or reject the
four manual checkpoints on the Gate tab (CSRF-protected like every form; each verdict is
stored with reviewer, time and note).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from uuid import UUID

from starlette.authentication import requires
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from evalloop.adapters import readiness_store as store
from evalloop.core.charts import IntervalRow, diff_axis, interval_chart_svg
from evalloop.core.readiness.ab import compare_ab, headline
from evalloop.core.readiness.checkpoints import CHECKPOINTS, CheckpointRecord, sample_conversations
from evalloop.core.readiness.hallucination import CATEGORIES
from evalloop.core.readiness.regression import compare
from evalloop.core.readiness.scores import DIMENSIONS, MINIMUMS, composite, dimension_stats
from evalloop.events import utc_now
from evalloop.readiness.ab import hard_failures
from evalloop.readiness.report import paired_json, regression_json
from evalloop.readiness.verdict import case_scores
from evalloop.web.render import page
from evalloop.web.tabs import Tab

__all__ = ["AB_TAB", "GATE_TAB", "HALLUCINATIONS_TAB", "REGRESSION_TAB", "SCORING_TAB",
           "SINCE_CHOICES"]

#: The Hallucinations tab's "since" filter: label -> window (``None``: everything stored).
SINCE_CHOICES: dict[str, timedelta | None] = {
    "24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30), "all": None}
#: Claims listed at most on one page (the counts above the list cover them all).
CLAIMS_SHOWN = 300
#: Per-case rows shown on the Scoring tab at most.
CASES_SHOWN = 500


def _uuid(text: str | None, what: str) -> UUID | None:
    if not text:
        return None
    try:
        return UUID(text)
    except ValueError:
        raise HTTPException(404, f"expected a {what} id (UUID), got {text!r}") from None


@dataclass(frozen=True, slots=True)
class _Picked:
    runs: list[store.DecidedRun]
    run: store.DecidedRun | None


async def _pick_run(request: Request, agent: str, run_text: str | None = None) -> _Picked:
    """The agent's runs and the selected one (``?run=``; default: the newest decided run,
    else the newest run). A run of another agent is a 404."""
    runs = await store.decided_runs(request.app.state.pool, agent)
    wanted = _uuid(run_text if run_text is not None else request.query_params.get("run"), "run")
    if wanted is not None:
        run = next((r for r in runs if r.run_id == wanted), None)
        if run is None:  # older than the listed runs?
            older = await store.decided_runs(request.app.state.pool, agent, run_id=wanted)
            if not older:
                raise HTTPException(404, f"agent {agent!r} has no run {wanted}")
            run = older[0]
            runs = [*runs, run]
        return _Picked(runs, run)
    decided = next((r for r in runs if r.decision is not None), None)
    return _Picked(runs, decided or (runs[0] if runs else None))


def _advisory(cases: list[store.RunCase]) -> dict[str, str]:
    out: dict[str, str] = {}
    for c in cases:
        judge = c.judge or {}
        for dim in judge.get("advisory") or ():
            out[dim] = (f"judge calibration {judge.get('calibration_id')} is below the "
                        "agreement bar: advisory, never blocking "
                        "(docs/judge.md#advisory-dimensions)")
    return out


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "—" if x is None else format(x, spec)


@requires("authenticated", redirect="login")
async def scoring_tab(request: Request) -> Response:
    """``/agents/{agent_id}/scoring?run=``: the run's seven dimension means with their 95 %
    intervals against the minimums, the composite, unscored counts with reasons, advisory
    dimensions, and every case's scores."""
    agent = request.path_params["agent_id"]
    picked = await _pick_run(request, agent)
    ctx: dict[str, Any] = {"agent": agent, "active": "scoring", "runs": picked.runs,
                           "run": picked.run}
    if picked.run is not None:
        cases = await store.load_cases(request.app.state.pool, picked.run.run_id)
        scores = case_scores(cases)
        stats = dimension_stats(scores)
        advisory = _advisory(cases)
        bar = request.app.state.settings.readiness.composite_bar
        rows = []
        for d in (*DIMENSIONS, "composite"):
            s = stats[d]
            minimum = MINIMUMS.get(d, bar)
            status = ("muted" if s.mean is None else "warn" if d in advisory
                      else "bad" if s.mean < minimum else "ok")
            note = ("unscored" if s.mean is None else
                    f"{s.mean:.3f} {'≥' if s.mean >= minimum else '<'} {minimum:.2f}"
                    + (" (advisory)" if d in advisory else ""))
            rows.append(IntervalRow(d.replace("_", " "), s.mean, s.ci_low, s.ci_high, minimum,
                                    status, note))
        reasons: dict[str, dict[str, int]] = {}
        for d in (*DIMENSIONS, "composite"):
            counted: dict[str, int] = {}
            for why in stats[d].unscored.values():
                counted[why] = counted.get(why, 0) + 1
            reasons[d] = dict(sorted(counted.items(), key=lambda kv: (-kv[1], kv[0])))
        by_id = {c.case_id: c for c in cases}
        scored_dims = [d for d in DIMENSIONS if stats[d].mean is not None]
        ctx.update(
            below=[d for d in scored_dims if stats[d].mean < MINIMUMS[d]],  # type: ignore[operator]
            met=sum(stats[d].mean >= MINIMUMS[d] for d in scored_dims),  # type: ignore[operator]
            unscored_dims=[d for d in DIMENSIONS if stats[d].mean is None])
        ctx.update(
            stats=stats, minimums=MINIMUMS, composite_bar=bar, advisory=advisory,
            reasons=reasons, dimensions=DIMENSIONS, total=len(cases), scored=len(scores),
            chart=interval_chart_svg(rows, lo=0.0, hi=1.0,
                                     title="dimension means with 95 % intervals; ticks: "
                                     "minimums"),
            case_rows=[(s, by_id[s.case_id], composite(s.scores)) for s in scores[:CASES_SHOWN]],
            more_cases=max(0, len(scores) - CASES_SHOWN))
    return page(request, "scoring.html", **ctx)


async def _decision(request: Request, run_id: UUID) -> dict[str, Any] | None:
    return await store.latest_decision(request.app.state.pool, run_id)


async def _live_regression(request: Request, agent: str, run_id: UUID) -> dict[str, Any]:
    """The regression of a run never decided: against today's baseline choice."""
    pool = request.app.state.pool
    baseline = await store.find_baseline(pool, agent, exclude=run_id)
    if baseline.run_id is None:
        return regression_json(None, baseline.how)
    reg = compare(case_scores(await store.load_cases(pool, baseline.run_id)),
                  case_scores(await store.load_cases(pool, run_id)),
                  baseline_run_id=str(baseline.run_id), current_run_id=str(run_id))
    return regression_json(reg, baseline.how)


@requires("authenticated", redirect="login")
async def regression_tab(request: Request) -> Response:
    """``/agents/{agent_id}/regression?run=``: the run against its baseline: shared cases,
    per-dimension mean difference with its 95 % interval, p-value, effect size, the smallest
    drop detectable at 80 % power, and the regressed cases with both answers."""
    agent = request.path_params["agent_id"]
    picked = await _pick_run(request, agent)
    ctx: dict[str, Any] = {"agent": agent, "active": "regression", "runs": picked.runs,
                           "run": picked.run, "dimension_order": DIMENSIONS}
    if picked.run is not None:
        pool = request.app.state.pool
        decision = await _decision(request, picked.run.run_id)
        reg = (decision["report"]["regression"] if decision is not None
               else await _live_regression(request, agent, picked.run.run_id))
        if reg.get("dimensions"):  # JSONB does not keep key order: the rules' order again
            order = {d: i for i, d in enumerate((*DIMENSIONS, "composite"))}
            reg = {**reg, "dimensions": dict(sorted(reg["dimensions"].items(),
                                                    key=lambda kv: order.get(kv[0], 99)))}
        ctx.update(reg=reg, from_decision=decision)
        if reg.get("baseline_run_id"):
            base_id = UUID(str(reg["baseline_run_id"]))
            base = {c.case_id: c for c in await store.load_cases(pool, base_id)}
            now = {c.case_id: c for c in await store.load_cases(pool, picked.run.run_id)}
            rows = []
            for d, c in reg["dimensions"].items():
                lo, hi = c["ci95"]
                bad = c.get("significant_regression")
                rows.append(IntervalRow(
                    d.replace("_", " "), c["mean_diff"], lo, hi, None,
                    "muted" if c["n"] == 0 else "bad" if bad
                    else "warn" if c.get("warning") else "ok",
                    "no shared scores" if c["n"] == 0 else
                    f"{c['mean_diff']:+.3f}, p {_fmt(c['p'], '.4f')}"
                    if c["mean_diff"] is not None else "—"))
            ctx.update(
                chart=interval_chart_svg(rows, lo=-diff_axis(rows), hi=diff_axis(rows),
                                         zero_line=0.0, ticks=4,
                                         title="mean difference (current − baseline) with "
                                         "95 % intervals"),
                regressed=[(r, base.get(r["case_id"]), now.get(r["case_id"]))
                           for r in reg["case_regressions"]])
    return page(request, "regression.html", **ctx)


@requires("authenticated", redirect="login")
async def hallucinations_tab(request: Request) -> Response:
    """``/agents/{agent_id}/hallucinations?since=7d&run=``: hallucinated claims by category,
    each with its trace (claim, nearest passage, support score, reason, suggested
    correction)."""
    agent = request.path_params["agent_id"]
    since_key = request.query_params.get("since") or "7d"
    if since_key not in SINCE_CHOICES:
        raise HTTPException(400, f"expected since among {', '.join(SINCE_CHOICES)}, "
                                 f"got {since_key!r}")
    window = SINCE_CHOICES[since_key]
    now = utc_now()
    since = now - window if window is not None else now - timedelta(days=365 * 100)
    picked = await _pick_run(request, agent) if request.query_params.get("run") else None
    runs = picked.runs if picked else await store.decided_runs(request.app.state.pool, agent)
    run_id = picked.run.run_id if picked and picked.run else None
    pool = request.app.state.pool
    counted = await store.claim_counts(pool, agent_id=agent, since=since, run_id=run_id)
    counts: dict[str, int] = {**{c: 0 for c in CATEGORIES}, **counted}
    claims = await store.list_claims(pool, agent_id=agent, since=since, run_id=run_id,
                                     hallucinated_only=True, limit=CLAIMS_SHOWN)
    traces = await store.case_texts(pool, sorted({(c["run_id"], c["case_id"]) for c in claims}))
    by_category = {cat: [c for c in claims if c["category"] == cat] for cat in CATEGORIES}
    return page(request, "hallucinations.html", agent=agent, active="hallucinations",
                runs=runs, run_id=run_id, since=since_key, since_choices=list(SINCE_CHOICES),
                counts=counts, categories=CATEGORIES, by_category=by_category, traces=traces,
                shown=len(claims), hallucinated=sum(counts[c] for c in CATEGORIES))


@requires("authenticated", redirect="login")
async def gate_tab(request: Request) -> Response:
    """``/agents/{agent_id}/gate?run=``: the decision with every check and why, the
    remediation report, the four manual checkpoints (forms for reviewers, the audit) and the
    reproducible sample of 10 conversations."""
    agent = request.path_params["agent_id"]
    picked = await _pick_run(request, agent)
    ctx: dict[str, Any] = {"agent": agent, "active": "gate", "runs": picked.runs,
                           "run": picked.run, "checkpoint_names": CHECKPOINTS,
                           "flash": request.session.pop("flash", None)}
    if picked.run is not None:
        pool = request.app.state.pool
        run_id = picked.run.run_id
        decision = await _decision(request, run_id)
        current = await store.checkpoints(pool, run_id)
        history = await store.checkpoint_history(pool, run_id)
        cases = await store.load_cases(pool, run_id)
        by_id = {c.case_id: c for c in cases}
        sample = sample_conversations(str(run_id), by_id)
        ctx.update(decision=decision, report=decision["report"] if decision else None,
                   current=current, history=history,
                   sample=[by_id[cid] for cid in sample])
    return page(request, "gate.html", **ctx)


@requires("review")
async def checkpoint_verdict(request: Request) -> Response:
    """``POST /agents/{agent_id}/gate/{run_id}/checkpoints/{name}``: the signed-in reviewer
    approves (``verdict=approve``) or rejects (``verdict=reject``) a manual checkpoint of the
    run, with a ``note``; stored with the reviewer and time (a sample review also stores the
    sample it read). Back to the Gate tab."""
    agent = request.path_params["agent_id"]
    picked = await _pick_run(request, agent, request.path_params["run_id"])
    assert picked.run is not None
    name = request.path_params["name"]
    if name not in CHECKPOINTS:
        raise HTTPException(404, f"expected a checkpoint among {', '.join(CHECKPOINTS)}, "
                                 f"got {name!r}")
    form = await request.form()
    verdict = str(form.get("verdict") or "")
    note = str(form.get("note") or "").strip()
    target = str(request.url_for("tab:gate", agent_id=agent).include_query_params(
        run=str(picked.run.run_id)))
    if verdict not in ("approve", "reject"):
        request.session["flash"] = {
            "kind": "error", "text": f"Not stored: expected verdict approve or reject, "
                                     f"received {verdict!r}."}
        return RedirectResponse(target, status_code=303)
    if verdict == "reject" and not note:
        request.session["flash"] = {"kind": "error", "text": "Not stored: a rejection needs a "
                                    "note saying what is wrong."}
        return RedirectResponse(target, status_code=303)
    pool = request.app.state.pool
    record = CheckpointRecord(name, "approved" if verdict == "approve" else "rejected",
                              request.user.username, utc_now(), note)
    sample = None
    if name == "sample_review":
        cases = await store.load_cases(pool, picked.run.run_id)
        sample = sample_conversations(str(picked.run.run_id), [c.case_id for c in cases])
    await store.add_checkpoint(pool, picked.run.run_id, record, sample)
    request.session["flash"] = {
        "kind": "ok", "text": f"Checkpoint {name} {record.status} by {record.reviewer}. The "
        f"decision shown is the stored one: decide again with `evalloop gate "
        f"{picked.run.run_id} --no-judge` to count it."}
    return RedirectResponse(target, status_code=303)


@requires("authenticated", redirect="login")
async def ab_tab(request: Request) -> Response:
    """``/agents/{agent_id}/ab?pair=<run A>``: a stored A/B comparison: per dimension both
    means, the paired difference (B − A) with its interval and p-value, and the most divergent
    cases with both answers."""
    agent = request.path_params["agent_id"]
    pool = request.app.state.pool
    pairs = await store.ab_pairs(pool, agent)
    wanted = _uuid(request.query_params.get("pair"), "run")
    pair = next((p for p in pairs if p.run_a == wanted), None) if wanted else (
        pairs[0] if pairs else None)
    if wanted is not None and pair is None:
        raise HTTPException(404, f"agent {agent!r} has no A/B comparison with run A {wanted}")
    ctx: dict[str, Any] = {"agent": agent, "active": "ab", "pairs": pairs, "pair": pair}
    if pair is not None:
        a = await store.load_cases(pool, pair.run_a)
        b = await store.load_cases(pool, pair.run_b)
        (gates_a, errors_a), (gates_b, errors_b) = hard_failures(a), hard_failures(b)
        report = compare_ab(case_scores(a), case_scores(b),
                            gate_failures={"A": gates_a, "B": gates_b},
                            agent_errors={"A": errors_a, "B": errors_b})
        dims = {d: {**paired_json(x.test), "better": x.better}
                for d, x in report.dimensions.items()}
        rows = [IntervalRow(d.replace("_", " "), x["mean_diff"], x["ci95"][0], x["ci95"][1],
                            None, "muted" if x["n"] == 0 else
                            "good" if x["better"] == "B" else "bad" if x["better"] == "A"
                            else "warn", "no shared scores" if x["n"] == 0 else
                            f"better: {x['better']}, p {_fmt(x['p'], '.4f')}")
                for d, x in dims.items()]
        answers_a = {c.case_id: c for c in a}
        answers_b = {c.case_id: c for c in b}
        ctx.update(report=report, dims=dims, headline=headline(report),
                   chart=interval_chart_svg(rows, lo=-diff_axis(rows), hi=diff_axis(rows),
                                            zero_line=0.0, ticks=4,
                                            title="B − A per dimension with 95 % intervals"),
                   divergent=[(c, answers_a.get(c.case_id), answers_b.get(c.case_id))
                              for c in report.divergent])
    return page(request, "ab.html", **ctx)


SCORING_TAB = Tab(key="scoring", title="Scoring", order=50, endpoint=scoring_tab, hotkey="5")
REGRESSION_TAB = Tab(key="regression", title="Regression", order=60, endpoint=regression_tab,
                     hotkey="6")
HALLUCINATIONS_TAB = Tab(key="hallucinations", title="Hallucinations", order=70,
                         endpoint=hallucinations_tab, hotkey="7")
GATE_TAB = Tab(key="gate", title="Gate", order=80, endpoint=gate_tab, hotkey="8",
               routes=(Route("/{run_id}/checkpoints/{name}", checkpoint_verdict,
                             methods=["POST"], name="gate_checkpoint"),))
AB_TAB = Tab(key="ab", title="A/B", order=90, endpoint=ab_tab, hotkey="9")
