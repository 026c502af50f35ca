"""evalloop's errors: one root, mapped from driver errors at the adapters (``raise ... from exc``).

Tree::

    EvalloopError
    ├── ConfigError            settings missing, inconsistent or placeholder
    ├── InvalidEvent           one record failed decoding/validation (reason + FieldProblems)
    ├── InvalidBatch           a batch held invalid records (one InvalidEvent each)
    ├── StorageError           PostgreSQL unreachable or a statement failed
    ├── BusError               Kafka (or the in-process bus) refused a publish/consume
    ├── EmbeddingError         the embedder could not load or encode
    ├── GoldenSetError         a golden set or eval-case file is malformed or missing
    ├── AgentError             the agent under evaluation was unreachable / timed out / 5xx
    ├── ReviewError            a review action could not be taken (docs/review.md)
    │   ├── ReviewNotFound     no such candidate / case / version / eval case
    │   ├── ReviewConflict     the item changed since the reviewer saw it, or is decided
    │   └── ReviewInputError   the action's input is malformed (FieldProblems)
    └── JudgeError             the judge could not start (weights missing or corrupt, server died)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "AgentError",
    "BusError",
    "ConfigError",
    "EmbeddingError",
    "EvalloopError",
    "FieldProblem",
    "GoldenSetError",
    "InvalidBatch",
    "InvalidEvent",
    "JudgeError",
    "ReviewConflict",
    "ReviewError",
    "ReviewInputError",
    "ReviewNotFound",
    "StorageError",
    "json_syntax_problem",
]


class EvalloopError(Exception):
    """Root of every error evalloop raises on purpose."""


class ConfigError(EvalloopError):
    """Settings are missing, inconsistent, or still a placeholder."""


@dataclass(frozen=True, slots=True)
class FieldProblem:
    """One invalid field: its dotted path, what was expected, and (abridged) what arrived."""

    field: str
    expected: str
    received: str

    def as_dict(self) -> dict[str, str]:
        """Return ``{"field", "expected", "received"}`` for JSON error bodies and DLQ headers."""
        return {"field": self.field, "expected": self.expected, "received": self.received}


def json_syntax_problem(text: str, lineno: int, colno: int, msg: str) -> FieldProblem:
    """Word a JSON syntax error for a person: where it is, what JSON wanted there, and the text
    that stands there instead.

    Args:
        text: the whole document; lineno, colno: 1-based position (as ``json.JSONDecodeError``
            gives them); msg: the parser's message (``"Expecting ',' delimiter"``).

    Returns:
        ``FieldProblem("(line L, column C)", "valid JSON: <what was wanted>", "<the text
        there>")`` -- e.g. expected ``valid JSON: a ',' between two entries`` received ``'"b":
        2'`` (at most 40 characters of the line, from the column; ``end of file`` past the end).
    """
    closing = _closing_of_open_container(text, lineno, colno)
    wanted = {
        "Expecting ',' delimiter": f"a ',' between two entries (or the closing {closing})",
        "Expecting ':' delimiter": "a ':' after the key",
        "Expecting value": "a value (string, number, object, array, true, false or null)",
        "Expecting property name enclosed in double quotes":
            "a key in double quotes (no trailing comma, no single quotes)",
        "Unterminated string starting at": "a string closed by '\"' on the same line",
        "Extra data": "nothing after the document's end",
        "Invalid control character at": "no raw line break or tab inside a string (write \\n)",
        "Invalid \\escape": "a valid escape (\\n, \\\", \\\\, \\uXXXX)",
        "nested too deep to decode": "arrays and objects nested less deeply (this is too deep "
                                     "to read)",
    }.get(msg, msg[0].lower() + msg[1:] if msg else "valid JSON")
    lines = text.splitlines()
    line = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
    there = line[max(colno - 1, 0):].strip()
    rest = "\n".join([line[max(colno - 1, 0):], *lines[lineno:]])
    received = (repr(there[:40] + ("..." if len(there) > 40 else "")) if there
                else "end of file" if not rest.strip() else "end of line")
    return FieldProblem(f"(line {lineno}, column {colno})", f"valid JSON: {wanted}", received)


def _closing_of_open_container(text: str, lineno: int, colno: int) -> str:
    """Name what closes the innermost object or array still open at (lineno, colno): ``"'}'"``
    for an object, ``"']'"`` for an array (``"bracket"`` when neither is open). Strings are
    skipped, so a brace inside one does not count."""
    lines = text.splitlines(keepends=True)
    end = sum(len(line) for line in lines[:max(lineno - 1, 0)]) + max(colno - 1, 0)
    stack: list[str] = []
    in_string = escaped = False
    for char in text[:end]:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            stack.append(char)
        elif char in "]}" and stack:
            stack.pop()
    if not stack:
        return "bracket"
    return "brace '}'" if stack[-1] == "{" else "bracket ']'"


class InvalidEvent(EvalloopError):
    """A record could not be decoded or validated.

    Attributes:
        reason: machine-readable cause: ``malformed_json``, ``oversized``, ``not_an_object``,
            ``unknown_event_type``, ``invalid_fields``, ``conflicting_duplicate``,
            ``too_many_records``, ``undecodable`` (the decoder itself failed, e.g. on deep
            nesting).
        problems: one ``FieldProblem`` per bad field.
        event_id: the record's ``event_id`` when it could be read, else ``None``.
        index: position within a batch, when the record came in one.
    """

    def __init__(
        self,
        reason: str,
        problems: list[FieldProblem],
        *,
        event_id: str | None = None,
        index: int | None = None,
    ) -> None:
        self.reason = reason
        self.problems = problems
        self.event_id = event_id
        self.index = index
        detail = "; ".join(
            f"{p.field}: expected {p.expected}, received {p.received}" for p in problems
        )
        where = f"record {index}: " if index is not None else ""
        super().__init__(f"{where}{reason}: {detail}")

    def as_dict(self) -> dict[str, object]:
        """Return a JSON-ready description (used by ingest's 422 body and the DLQ)."""
        return {
            "index": self.index,
            "event_id": self.event_id,
            "reason": self.reason,
            "problems": [p.as_dict() for p in self.problems],
        }


class InvalidBatch(EvalloopError):
    """A batch held one or more invalid records; ``errors`` has one ``InvalidEvent`` each (at
    most the batch limit's ``max_errors``), ``omitted`` counts the invalid records left out."""

    def __init__(self, errors: list[InvalidEvent], *, omitted: int = 0) -> None:
        self.errors = errors
        self.omitted = omitted
        more = f" (and {omitted} more)" if omitted else ""
        super().__init__(
            f"{len(errors) + omitted} invalid record(s){more}: " + " | ".join(map(str, errors))
        )


class StorageError(EvalloopError):
    """PostgreSQL was unreachable or a statement failed."""


class BusError(EvalloopError):
    """The message bus (Kafka or the in-process bus) refused a publish or consume."""


class EmbeddingError(EvalloopError):
    """The embedding model could not be loaded or failed to encode."""


class GoldenSetError(EvalloopError):
    """A golden set / eval-case file is malformed, or a version does not exist."""


class AgentError(EvalloopError):
    """The agent endpoint was unreachable, timed out, or answered 5xx after retries."""


class ReviewError(EvalloopError):
    """A human review action could not be taken (``docs/review.md``)."""


class ReviewNotFound(ReviewError):
    """The candidate, golden case, golden-set version or eval case does not exist."""


class ReviewConflict(ReviewError):
    """The item changed since the reviewer loaded it (stale ``row_version`` / version), or
    another reviewer already decided it.

    Attributes:
        current: a JSON-ready description of the item as it is now (status, version, who
            decided and when), so the second reviewer sees what happened.
    """

    def __init__(self, message: str, current: dict[str, object] | None = None) -> None:
        self.current = current or {}
        super().__init__(message)


class ReviewInputError(ReviewError):
    """The action's input is malformed; ``problems`` has one ``FieldProblem`` per bad field."""

    def __init__(self, problems: list[FieldProblem]) -> None:
        self.problems = problems
        super().__init__("; ".join(
            f"{p.field}: expected {p.expected}, received {p.received}" for p in problems))


class JudgeError(EvalloopError):
    """The judge could not be set up: weights missing or failing their SHA-256, the server died.

    A failure of one judge *question* is never raised: that dimension is unscored instead.
    """
