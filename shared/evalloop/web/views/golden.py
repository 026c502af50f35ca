"""The Golden sets tab: versions, the diff between any two, care checks, export."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from starlette.authentication import requires
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from evalloop.adapters import golden_store
from evalloop.core.evaluation.cases import EvalCase, dump_eval_yaml, dump_golden_json
from evalloop.web.render import page
from evalloop.web.tabs import Tab

__all__ = ["TAB", "CaseChange", "case_changes", "export", "golden_tab", "to_jsonl"]

#: fields compared in a diff, in display order
DIFF_FIELDS = ("input", "expected_answer", "expected_behavior", "category", "should_refuse",
               "should_escalate", "difficulty", "tags", "context_chunks", "notes")


@dataclass(frozen=True, slots=True)
class CaseChange:
    """A case that differs between two versions.

    Attributes:
        case_id: the case.
        kind: ``added``, ``removed`` or ``changed``.
        question: its question (the newer one when both exist).
        fields: ``(field, before, after)`` of every field that differs (all fields of an
            added or removed case, the missing side ``None``).
    """

    case_id: str
    kind: str
    question: str
    fields: tuple[tuple[str, Any, Any], ...]


def _value(case: EvalCase | None, name: str) -> Any:
    if case is None:
        return None
    value = getattr(case, name)
    return ", ".join(value) if isinstance(value, tuple) else value


def case_changes(old: tuple[EvalCase, ...], new: tuple[EvalCase, ...]) -> list[CaseChange]:
    """The field-level differences from ``old`` to ``new``: removed, then changed, then added
    cases, each by case id; unchanged cases are left out."""
    before = {c.id: c for c in old}
    after = {c.id: c for c in new}
    out: list[CaseChange] = []
    for kind, ids in (("removed", sorted(set(before) - set(after))),
                      ("changed", sorted(set(before) & set(after))),
                      ("added", sorted(set(after) - set(before)))):
        for cid in ids:
            b, a = before.get(cid), after.get(cid)
            fields = tuple((f, _value(b, f), _value(a, f)) for f in DIFF_FIELDS
                           if _value(b, f) != _value(a, f))
            if fields:
                out.append(CaseChange(cid, kind, (a or b).input if (a or b) else "", fields))
    return out


def to_jsonl(cases: tuple[EvalCase, ...], *, set_id: str, agent: str, version: int) -> str:
    """One golden-set JSON case per line (the fields of ``docs/rules.md#golden-set-format``)."""
    doc = json.loads(dump_golden_json(cases, set_id=set_id, agent=agent, version=version))
    return "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in doc["cases"])


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
    """``/agents/{agent_id}/golden``: the agent's golden-set versions, a diff between versions
    ``a`` and ``b`` (default: the latest against its parent) and the cases of ``b``."""
    agent = request.path_params["agent_id"]
    pool = request.app.state.pool
    versions = await golden_store.list_golden_versions(pool, agent)
    sets = sorted({v.golden_set_id for v in versions})
    set_id = request.query_params.get("set") or (sets[0] if sets else None)
    mine = [v for v in versions if v.golden_set_id == set_id]
    ctx: dict[str, Any] = {"agent": agent, "active": "golden", "sets": sets, "set_id": set_id,
                           "versions": list(reversed(mine)), "changes": None, "a": None,
                           "b": None, "cases": ()}
    if mine:
        by_number = {v.version: v for v in mine}
        b = _int(request, "b") or mine[-1].version
        a = _int(request, "a") or (b - 1 if b > 1 else None)
        for n in (a, b):
            if n is not None and n not in by_number:
                raise HTTPException(404, f"{agent}/{set_id} has no version {n} "
                                         f"(versions 1-{mine[-1].version})")
        new = await golden_store.load_golden_cases(pool, by_number[b].version_id)
        old = await golden_store.load_golden_cases(pool, by_number[a].version_id) if a else ()
        ctx.update(a=a, b=b, version=by_number[b], cases=new, changes=case_changes(old, new))
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
    from evalloop.errors import GoldenSetError

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


TAB = Tab(key="golden", title="Golden sets", order=30, endpoint=golden_tab, hotkey="3",
          routes=(Route("/export", export, name="golden_export"),))
