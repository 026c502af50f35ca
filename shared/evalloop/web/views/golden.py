"""The Golden sets tab: versions, the diff between any two, care checks, export, retirement.

Versions, diffs and care checks come from :mod:`evalloop.adapters.review_store` and
:func:`evalloop.core.golden_care.care_checks` (``docs/review.md#care-checks``); exports use
the golden-set JSON and eval set YAML writers of :mod:`evalloop.core.evaluation.cases`
(``docs/rules.md#golden-set-format``), plus JSONL (one golden-set case per line).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import asyncpg
from starlette.authentication import requires
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from evalloop.adapters import golden_store, review_store
from evalloop.core.evaluation.cases import EvalCase, dump_eval_yaml, dump_golden_json
from evalloop.core.golden_care import CareCheck, ClusterGap, care_checks
from evalloop.errors import GoldenSetError, ReviewConflict, ReviewInputError, ReviewNotFound
from evalloop.web.render import page
from evalloop.web.tabs import Tab
from evalloop.web.views.queue import reviewer_of

__all__ = ["TAB", "care_of", "export", "golden_tab", "to_jsonl"]


def to_jsonl(cases: tuple[EvalCase, ...] | list[EvalCase], *, set_id: str, agent: str,
             version: int) -> str:
    """One golden-set JSON case per line (the fields of ``docs/rules.md#golden-set-format``)."""
    doc = json.loads(dump_golden_json(cases, set_id=set_id, agent=agent, version=version))
    return "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in doc["cases"])


async def care_of(pool: asyncpg.Pool, agent_id: str, cases: list[EvalCase]) -> list[CareCheck]:
    """The care checks of one version's cases, with the agent's review profile (domains,
    escalation triggers, production stage) and its uncovered clusters."""
    profile = await review_store.get_profile(pool, agent_id)
    gaps = await review_store.uncovered_clusters(pool, agent_id, [c.id for c in cases])
    return care_checks(
        cases, in_production=profile["in_production"] if profile else None,
        domains=profile["knowledge_domains"] if profile else None,
        triggers=profile["escalation_triggers"] if profile else None,
        gaps=None if gaps is None else
        [ClusterGap(g["cluster_id"], g["label"], g["size"]) for g in gaps])


def _int(request: Request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return None
    try:
        return int(raw)
    except ValueError:
        raise HTTPException(400, f"expected a version number for {name}, got {raw!r}") from None


@requires("authenticated", redirect="login")
async def golden_tab(request: Request) -> Response:
    """``/agents/{agent_id}/golden?set=&a=&b=``: the set's versions, the diff from version
    ``a`` to ``b`` (default: the latest against its parent), the care checks and cases of
    ``b``, and the set's monthly review reminder."""
    agent = request.path_params["agent_id"]
    pool = request.app.state.pool
    sets = await review_store.list_golden_sets(pool, agent)
    names = [s["golden_set_id"] for s in sets]
    set_id = request.query_params.get("set") or (names[0] if names else None)
    ctx: dict[str, Any] = {"agent": agent, "active": "golden", "sets": names, "set_id": set_id,
                           "versions": [], "diff": None, "a": None, "b": None, "cases": (),
                           "care": [], "reminder": None,
                           "flash": request.session.pop("flash", None)}
    if set_id is not None:
        if set_id not in names:
            raise HTTPException(404, f"agent {agent!r} has no golden set {set_id!r}")
        versions = await review_store.list_versions(pool, agent, set_id)
        latest = versions[0]["version"]
        b = _int(request, "b") or latest
        a = _int(request, "a") if "a" in request.query_params else (b - 1 if b > 1 else None)
        try:
            version, cases = await review_store.version_detail(pool, agent, set_id, b)
            diff = (await review_store.diff_versions(pool, agent, set_id, a, b)
                    if a else None)
        except ReviewNotFound as exc:
            raise HTTPException(404, str(exc)) from None
        reminders = await review_store.set_reminders(pool, now=datetime.now(UTC),
                                                     agent_id=agent)
        ctx.update(versions=versions, latest=latest, a=a, b=b, version=version, cases=cases,
                   diff=diff, care=await care_of(pool, agent, cases),
                   reminder=next((r for r in reminders if r["golden_set_id"] == set_id),
                                 None))
    return page(request, "golden.html", **ctx)


_FORMATS = {"json": ("application/json", "json"), "yaml": ("application/yaml", "yaml"),
            "jsonl": ("application/x-ndjson", "jsonl")}


@requires("authenticated", redirect="login")
async def export(request: Request) -> Response:
    """``/agents/{agent_id}/golden/export?set=S&version=N&format=json|yaml|jsonl``: download a
    version as golden-set JSON, eval set YAML or JSONL (one case per line)."""
    agent = request.path_params["agent_id"]
    fmt = request.query_params.get("format", "json")
    if fmt not in _FORMATS:
        raise HTTPException(400, f"expected format json, yaml or jsonl, got {fmt!r}")
    pool = request.app.state.pool
    try:
        v = await golden_store.get_golden_version(
            pool, agent, version=_int(request, "version"),
            golden_set_id=request.query_params.get("set") or None)
    except GoldenSetError as exc:
        raise HTTPException(404, str(exc)) from None
    cases = await golden_store.load_golden_cases(pool, v.version_id)
    dump = {"json": dump_golden_json, "yaml": dump_eval_yaml, "jsonl": to_jsonl}[fmt]
    media, ext = _FORMATS[fmt]
    body = dump(cases, set_id=v.golden_set_id, agent=v.agent_id, version=v.version)
    name = f"{v.golden_set_id}-v{v.version}.{ext}"
    return Response(body, media_type=media,
                    headers={"content-disposition": f'attachment; filename="{name}"'})


@requires("review")
async def retire(request: Request) -> Response:
    """``POST /agents/{agent_id}/golden/retire`` (``set``, ``case``, ``expected_version``,
    ``reason``): a new version without the case; back to the set with its diff."""
    agent = request.path_params["agent_id"]
    form = await request.form()
    set_id, case_id = str(form.get("set") or ""), str(form.get("case") or "")
    expected = str(form.get("expected_version") or "")
    if not expected.isdigit():
        raise HTTPException(400, f"expected the version you loaded, got {expected!r}")
    target = request.url_for("tab:golden", agent_id=agent).include_query_params(set=set_id)
    try:
        out = await review_store.retire_case(
            request.app.state.pool, agent, set_id, case_id, expected_version=int(expected),
            reviewer=reviewer_of(request), reason=str(form.get("reason") or ""))
        request.session["flash"] = {"kind": "ok", "text": f"Retired {case_id}: version "
                                    f"{out['version']['version']}."}
    except (ReviewConflict, ReviewInputError) as exc:
        request.session["flash"] = {"kind": "conflict", "text": f"Not retired: {exc}"}
    except ReviewNotFound as exc:
        raise HTTPException(404, str(exc)) from None
    return RedirectResponse(str(target), status_code=303)


TAB = Tab(key="golden", title="Golden sets", order=30, endpoint=golden_tab, hotkey="3",
          routes=(Route("/export", export, name="golden_export"),
                  Route("/retire", retire, methods=["POST"], name="golden_retire")))
