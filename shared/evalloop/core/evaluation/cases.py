"""Eval cases: the eval set YAML and the golden-set JSON formats, loaded into one model
(``docs/rules.md#eval-case-format``, ``docs/rules.md#golden-set-format``).

Two file formats carry eval cases:

* **Eval set YAML** -- a list of cases, or a mapping with a ``cases`` (or ``evals``) list and
  optional metadata (``id``, ``agent``, ``version``, ``description``). Each case has the format's
  fields ``id, input, expected_behavior, should_escalate, should_refuse, category, notes``.
  evalloop also accepts the golden-set fields ``expected_answer, context_chunks, tags,
  difficulty, created_by, created_at`` on a YAML case, so that an export and re-import loses
  nothing.
* **Golden-set JSON** -- ``{"id", "agent", "version", "cases": [{"id", "question",
  "expected_answer", "context_chunks", "tags", "difficulty", "created_by", "created_at"}]}``.
  The golden-set format has no refusal/escalation fields, so they are **derived from tags**: a
  case tagged ``refusal`` (or ``should-refuse``, ``refuse``) must be refused, one tagged
  ``escalation`` (or ``should-escalate``, ``escalate``) must be handed to a human; the category
  is the first tag that names one of the eval-case categories (``routine``, ``edge-case``,
  ``adversarial``, ``sensitive``), else ``routine``. evalloop's own exports also write the
  explicit optional fields ``should_refuse, should_escalate, category, expected_behavior,
  notes``; when present they win over the tags (a superset of the golden-set format, still
  readable by a plain golden-set reader).

Both load into :class:`EvalCase`; a file loads into :class:`EvalSet`. On load the tags are made
to carry the expectations: ``refusal``, ``escalation`` and the category are added when they
apply (and a refusal/escalation tag an explicit field contradicts is dropped), so every case's
tags say what the golden-set structure cannot. Validation is strict
(no coercion of ``"yes"`` to ``True`` or ``3`` to ``"3"``, no unknown fields); every problem
raises :class:`EvalCaseError` naming the file, the case (id and index) and the field.
"""

from __future__ import annotations

import json
import re
from datetime import UTC
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from evalloop.errors import FieldProblem, GoldenSetError, json_syntax_problem

__all__ = [
    "CATEGORIES",
    "ESCALATION_TAGS",
    "REFUSAL_TAGS",
    "EvalCase",
    "EvalCaseError",
    "EvalSet",
    "dump_eval_yaml",
    "dump_golden_json",
    "dump_golden_jsonl",
    "load_eval_file",
    "parse_eval_document",
]

#: ``docs/rules.md#eval-case-format``: the category of a case.
CATEGORIES: tuple[str, ...] = ("routine", "edge-case", "adversarial", "sensitive")
#: Golden-set tags that mean "the agent must decline this" (the format has no such field).
REFUSAL_TAGS: frozenset[str] = frozenset({"refusal", "should-refuse", "refuse"})
#: Golden-set tags that mean "the agent must hand this to a human".
ESCALATION_TAGS: frozenset[str] = frozenset({"escalation", "should-escalate", "escalate"})


class EvalCaseError(GoldenSetError):
    """An eval-case file is malformed.

    Attributes:
        source: the file (or label) that was being read.
        problems: one :class:`~evalloop.errors.FieldProblem` per bad field; ``field`` reads
            ``cases[3] (id 'a003').should_refuse`` so the case and field are both named.
    """

    def __init__(self, source: str, problems: list[FieldProblem]) -> None:
        self.source = source
        self.problems = problems
        detail = "; ".join(
            f"{p.field}: expected {p.expected}, received {p.received}" for p in problems
        )
        super().__init__(f"{source}: {detail}")


class EvalCase(BaseModel):
    """One eval case, whichever file it came from.

    Attributes:
        id: the case id, unique within its set.
        input: what the user sends (eval set ``input`` = golden-set ``question``).
        expected_behavior: criteria a correct response meets (eval set YAML), if given.
        expected_answer: the reference answer (golden-set JSON), if given.
        should_refuse: the agent must decline (refusal gate).
        should_escalate: the agent must hand off to a human (escalation gate).
        category: one of :data:`CATEGORIES` in either file format (a file with another is
            refused; a case built in code may carry free text).
        notes: why the case exists / what failure looks like.
        context_chunks: ids of the knowledge-base chunks the answer should draw on.
        tags: free tags (golden-set JSON).
        difficulty: ``easy`` / ``medium`` / ``hard`` (golden-set JSON), if given.
        created_by: author, if given.
        created_at: creation time (timezone-aware, UTC), if given.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(strict=True, min_length=1)
    input: str = Field(strict=True, min_length=1)
    expected_behavior: str | None = Field(None, strict=True)
    expected_answer: str | None = Field(None, strict=True)
    should_refuse: bool = Field(False, strict=True)
    should_escalate: bool = Field(False, strict=True)
    category: str = Field("routine", strict=True, min_length=1)
    notes: str | None = Field(None, strict=True)
    context_chunks: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    difficulty: str | None = Field(None, strict=True)
    created_by: str | None = Field(None, strict=True)
    created_at: AwareDatetime | None = None


class EvalSet(BaseModel):
    """A loaded eval-case file.

    Attributes:
        set_id: the set's id (golden-set ``id``; YAML ``id``, else the file stem).
        agent: the agent it evaluates, if the file says.
        version: the version number written in the file, if any (stored versions are numbered
            by the golden store, not by this field).
        source: file name (or label) it was read from.
        format: ``"yaml"`` (eval set YAML) or ``"golden_json"`` (golden-set JSON).
        cases: the cases, in file order; ids are unique.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    set_id: str
    agent: str | None = None
    version: int | None = None
    source: str
    format: Literal["yaml", "golden_json"]
    cases: tuple[EvalCase, ...]

    def by_category(self, category: str | None) -> tuple[EvalCase, ...]:
        """Return the cases of ``category`` (all cases when ``None``)."""
        if category is None:
            return self.cases
        return tuple(c for c in self.cases if c.category == category)


# --------------------------------------------------------------------------- parsing

_YAML_FIELDS = frozenset(EvalCase.model_fields)
_GOLDEN_FIELDS = frozenset(
    {"id", "question", "expected_answer", "context_chunks", "tags", "difficulty",
     "created_by", "created_at", "should_refuse", "should_escalate", "category",
     "expected_behavior", "notes"}
)


def _abridge(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _case_label(index: int, raw: object) -> str:
    cid = raw.get("id") if isinstance(raw, dict) else None
    return f"cases[{index}] (id {cid!r})" if isinstance(cid, str) else f"cases[{index}]"


def _expected_for(error_type: str, msg: str) -> str:
    return {
        "missing": "a value (required field)",
        "extra_forbidden": "no such field (unknown field)",
        "string_type": "a string",
        "bool_type": "a boolean (true/false)",
        "string_too_short": "a non-empty string",
        "tuple_type": "a list of strings",
        "timezone_aware": "a timezone-aware ISO-8601 time (e.g. 2026-03-15T10:00:00Z)",
    }.get(error_type, msg)


def _marker_tags(case: EvalCase) -> EvalCase:
    """Make the tags carry the expectations (so a plain golden-set reader of an export sees them):
    add ``refusal`` / ``escalation`` / the category when they apply, drop a refusal or
    escalation tag that an explicit field contradicts."""
    tags = [t for t in case.tags
            if not (t.lower() in REFUSAL_TAGS and not case.should_refuse)
            and not (t.lower() in ESCALATION_TAGS and not case.should_escalate)]
    lowered = {t.lower() for t in tags}
    if case.should_refuse and not lowered & REFUSAL_TAGS:
        tags.append("refusal")
    if case.should_escalate and not lowered & ESCALATION_TAGS:
        tags.append("escalation")
    if case.category in CATEGORIES and case.category not in lowered:
        tags.append(case.category)
    return case if tuple(tags) == case.tags else case.model_copy(update={"tags": tuple(tags)})


def _validate_case(data: dict[str, Any], label: str, source: str) -> EvalCase:
    try:
        return _marker_tags(EvalCase.model_validate(data))
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"])
            received = "nothing" if err["type"] == "missing" else _abridge(err.get("input"))
            problems.append(
                FieldProblem(f"{label}.{loc}", _expected_for(err["type"], err["msg"]), received)
            )
        raise EvalCaseError(source, problems) from exc


def _check_list_of_str(value: object, where: str, source: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise EvalCaseError(source, [FieldProblem(where, "a list of strings", _abridge(value))])
    return tuple(value)


def _yaml_case(raw: object, index: int, source: str) -> EvalCase:
    label = _case_label(index, raw)
    if not isinstance(raw, dict):
        raise EvalCaseError(source, [FieldProblem(label, "a mapping of case fields",
                                                  _abridge(raw))])
    data = dict(raw)
    for key in ("context_chunks", "tags"):
        if key in data:
            data[key] = _check_list_of_str(data[key], f"{label}.{key}", source)
    if isinstance(data.get("category"), str):
        data["category"] = _category(data["category"], f"{label}.category", source)
    return _validate_case(data, label, source)


def _category(value: str, label: str, source: str) -> str:
    """An eval set's category, one of :data:`CATEGORIES` (case, spaces and underscores
    forgiven: "Edge case" is ``edge-case``); a typo would silently drop what the category
    does -- a ``sensitive`` case is always marked for human review (docs/rules.md#human-review).

    Raises:
        EvalCaseError: any other value, with the category it probably means.
    """
    import difflib

    key = re.sub(r"[\s_]+", "-", value.strip().lower())
    if key in CATEGORIES:
        return key
    near = difflib.get_close_matches(key, CATEGORIES, n=1, cutoff=0.6)
    raise EvalCaseError(source, [FieldProblem(
        label, "one of " + ", ".join(CATEGORIES),
        repr(value) + (f" (did you mean {near[0]}?)" if near else ""))])


def _golden_case(raw: object, index: int, source: str) -> EvalCase:
    label = _case_label(index, raw)
    if not isinstance(raw, dict):
        raise EvalCaseError(source, [FieldProblem(label, "an object of case fields",
                                                  _abridge(raw))])
    unknown = sorted(set(raw) - _GOLDEN_FIELDS)
    if unknown:
        raise EvalCaseError(source, [
            FieldProblem(f"{label}.{k}", "no such field (unknown field)", _abridge(raw[k]))
            for k in unknown
        ])
    # evalloop's exports write "" where the golden-set format requires a value we do not have
    data: dict[str, Any] = {k: v for k, v in raw.items()
                            if not (k in ("expected_answer", "created_by") and v == "")}
    if "question" in data:
        data["input"] = data.pop("question")
    tags = _check_list_of_str(data.get("tags", []), f"{label}.tags", source)
    data["tags"] = tags
    if "context_chunks" in data:
        data["context_chunks"] = _check_list_of_str(
            data["context_chunks"], f"{label}.context_chunks", source
        )
    if isinstance(data.get("category"), str):
        # evalloop's own field: held to the same four as eval set YAML, so an export of either
        # format reads back
        data["category"] = _category(data["category"], f"{label}.category", source)
    lowered = {t.lower() for t in tags}
    data.setdefault("should_refuse", bool(lowered & REFUSAL_TAGS))
    data.setdefault("should_escalate", bool(lowered & ESCALATION_TAGS))
    data.setdefault("category", next((t for t in tags if t.lower() in CATEGORIES), "routine"))
    try:
        return _validate_case(data, label, source)
    except EvalCaseError as exc:
        # report the golden-set field name, not the internal one
        exc.problems = [
            FieldProblem(p.field.replace(".input", ".question"), p.expected, p.received)
            for p in exc.problems
        ]
        raise EvalCaseError(source, exc.problems) from exc


def _unique(cases: list[EvalCase], source: str) -> tuple[EvalCase, ...]:
    seen: dict[str, int] = {}
    for i, case in enumerate(cases):
        if case.id in seen:
            raise EvalCaseError(source, [FieldProblem(
                f"cases[{i}].id", f"a case id unique in the file (also at cases[{seen[case.id]}])",
                repr(case.id))])
        seen[case.id] = i
    return tuple(cases)


def _opt_int(doc: dict[str, Any], key: str, source: str) -> int | None:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise EvalCaseError(source, [FieldProblem(key, "an integer", _abridge(value))])
    return value


def _opt_str(doc: dict[str, Any], key: str, source: str) -> str | None:
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise EvalCaseError(source, [FieldProblem(key, "a non-empty string", _abridge(value))])
    return value


def _refuse_a_responses_file(doc: dict[Any, Any], source: str) -> None:
    """Raise when ``doc`` is a responses file (``{case id: answer}``) given as an eval file:
    no ``cases``, and every value an answer string or an agent reply object."""
    if "cases" in doc or "evals" in doc or not doc or not set(doc) - {
            "id", "agent", "version", "description"}:
        return
    if all(isinstance(v, str | dict) for v in doc.values()):
        raise EvalCaseError(source, [FieldProblem(
            "(document)", "an eval file (eval set YAML or golden-set JSON, whose cases have an "
                          "id and an input or question)",
            f"a responses file ({len(doc)} case id(s) mapped to answers); pass it with "
            "--responses-file, and the eval set with --evals")])


def _parse_golden(doc: object, source: str, stem: str) -> EvalSet:
    if not isinstance(doc, dict):
        raise EvalCaseError(source, [FieldProblem(
            "(document)", 'a golden-set object {"id", "agent", "version", "cases"}',
            type(doc).__name__)])
    _refuse_a_responses_file(doc, source)
    unknown = sorted(set(doc) - {"id", "agent", "version", "cases", "description"})
    if unknown:
        raise EvalCaseError(source, [FieldProblem(k, "no such field (unknown field)",
                                                  _abridge(doc[k])) for k in unknown])
    raw_cases = doc.get("cases")
    if not isinstance(raw_cases, list) or not raw_cases:
        raise EvalCaseError(source, [FieldProblem("cases", "a non-empty list of cases",
                                                  _abridge(raw_cases))])
    cases = [_golden_case(raw, i, source) for i, raw in enumerate(raw_cases)]
    return EvalSet(
        set_id=_opt_str(doc, "id", source) or stem, agent=_opt_str(doc, "agent", source),
        version=_opt_int(doc, "version", source), source=source, format="golden_json",
        cases=_unique(cases, source),
    )


def _parse_yaml(doc: object, source: str, stem: str) -> EvalSet:
    meta: dict[str, Any] = {}
    if isinstance(doc, dict):
        _refuse_a_responses_file(doc, source)
        key = "cases" if "cases" in doc else "evals"
        unknown = sorted(set(doc) - {key, "id", "agent", "version", "description"})
        if unknown:
            raise EvalCaseError(source, [FieldProblem(k, "no such field (unknown field)",
                                                      _abridge(doc[k])) for k in unknown])
        meta, doc = doc, doc.get(key)
    if not isinstance(doc, list) or not doc:
        raise EvalCaseError(source, [FieldProblem(
            "cases", "a non-empty list of eval cases (or a mapping with a 'cases' list)",
            _abridge(doc))])
    cases = [_yaml_case(raw, i, source) for i, raw in enumerate(doc)]
    return EvalSet(
        set_id=_opt_str(meta, "id", source) or stem, agent=_opt_str(meta, "agent", source),
        version=_opt_int(meta, "version", source), source=source, format="yaml",
        cases=_unique(cases, source),
    )


def parse_eval_document(text: str, source: str, *, fmt: Literal["yaml", "json"] | None = None
                        ) -> EvalSet:
    """Parse an eval-case document (eval set YAML or golden-set JSON).

    Args:
        text: the file's contents.
        source: file name used in errors and stored as the set's source.
        fmt: ``"json"`` or ``"yaml"``; ``None`` guesses from ``source``'s suffix, then from the
            content (a document starting with ``{`` is JSON).

    Returns:
        The set, cases in file order.

    Raises:
        EvalCaseError: malformed syntax, a document nested too deep to read, unknown or
            mistyped fields, empty set, duplicate ids.
    """
    try:
        return _parse_eval_document(text, source, fmt)
    except RecursionError as exc:
        # Python's JSON and YAML readers recurse once per nesting level
        raise EvalCaseError(source, [FieldProblem(
            "(document)", "an eval set or golden set", "a document nested too deep to read "
                                                        "(hundreds of levels of [ or {)")]) from exc


def _parse_eval_document(text: str, source: str, fmt: Literal["yaml", "json"] | None
                         ) -> EvalSet:
    text = text.removeprefix("\ufeff")  # a UTF-8 byte-order mark is not content
    stem = Path(source).stem
    if fmt is None:
        suffix = Path(source).suffix.lower()
        fmt = "json" if suffix == ".json" or (
            suffix not in (".yaml", ".yml") and text.lstrip().startswith("{")) else "yaml"
    if fmt == "json":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise EvalCaseError(source, [json_syntax_problem(
                text, exc.lineno, exc.colno, exc.msg)]) from exc
        return _parse_golden(doc, source, stem)
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"(line {mark.line + 1}, column {mark.column + 1})" if mark else "(document)"
        raise EvalCaseError(source, [FieldProblem(where, "valid YAML",
                                                  str(getattr(exc, "problem", exc)))]) from exc
    if isinstance(doc, dict) and "cases" in doc and isinstance(doc.get("cases"), list) and any(
        isinstance(c, dict) and "question" in c for c in doc["cases"]
    ):
        return _parse_golden(doc, source, stem)  # a golden set written as YAML
    return _parse_yaml(doc, source, stem)


def load_eval_file(path: Path) -> EvalSet:
    """Read and parse an eval-case file (``.yaml``/``.yml`` or ``.json``).

    Raises:
        EvalCaseError: the file is missing, unreadable, or malformed (see
            :func:`parse_eval_document`).
    """
    try:
        text = path.read_text(encoding="utf-8-sig")  # a leading byte-order mark is accepted
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalCaseError(str(path), [FieldProblem("(file)", "a readable UTF-8 file",
                                                     str(exc))]) from exc
    return parse_eval_document(text, path.name)


# --------------------------------------------------------------------------- writing


def _golden_case_dict(case: EvalCase) -> dict[str, Any]:
    case = _marker_tags(case)
    out: dict[str, Any] = {
        "id": case.id,
        "question": case.input,
        "expected_answer": case.expected_answer or "",
        "context_chunks": list(case.context_chunks),
        "tags": list(case.tags),
        "difficulty": case.difficulty,
        "created_by": case.created_by or "",
        "created_at": case.created_at.astimezone(UTC).isoformat().replace("+00:00", "Z")
        if case.created_at else None,
        "should_refuse": case.should_refuse,
        "should_escalate": case.should_escalate,
        "category": case.category,
    }
    if case.expected_behavior is not None:
        out["expected_behavior"] = case.expected_behavior
    if case.notes is not None:
        out["notes"] = case.notes
    return out


def dump_golden_json(cases: tuple[EvalCase, ...] | list[EvalCase], *, set_id: str, agent: str,
                     version: int) -> str:
    """Render cases as a golden-set JSON document (evalloop's export format).

    The golden-set fields come first; refusal/escalation/category are written both as tags (for a
    plain golden-set reader) and as explicit fields (for a lossless re-import). Values the case
    does not have are not invented: ``difficulty`` / ``created_at`` are ``null``,
    ``expected_answer`` / ``created_by`` empty strings (read back as absent). Exporting and
    re-importing gives equal cases (an identical golden-set version).

    Returns:
        Pretty-printed JSON text ending in a newline.
    """
    doc = {"id": set_id, "agent": agent, "version": version,
           "cases": [_golden_case_dict(c) for c in cases]}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def dump_golden_jsonl(cases: tuple[EvalCase, ...] | list[EvalCase], *, set_id: str, agent: str,
                      version: int) -> str:
    """One golden-set JSON case per line, each as :func:`dump_golden_json` writes it (the
    fields of ``docs/rules.md#golden-set-format``); ``set_id``/``agent``/``version`` are not
    repeated per line.

    Returns:
        JSON lines, each ending in a newline (empty text for no cases).
    """
    del set_id, agent, version  # the document fields; JSONL carries the cases only
    return "".join(json.dumps(_golden_case_dict(c), ensure_ascii=False) + "\n" for c in cases)


def dump_eval_yaml(cases: tuple[EvalCase, ...] | list[EvalCase], *, set_id: str, agent: str,
                   version: int) -> str:
    """Render cases in the eval set YAML format (plus the golden-set fields that are set).

    Returns:
        YAML text that :func:`parse_eval_document` reads back into equal cases.
    """
    out = []
    for case in cases:
        row = case.model_dump(mode="json", exclude_none=True)
        for key in ("context_chunks", "tags"):
            if not row.get(key):
                row.pop(key, None)
        out.append(row)
    doc = {"id": set_id, "agent": agent, "version": version, "cases": out}
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)
