"""Passage texts (and their history) for the ids an answer was judged against.

Golden cases and agents name passages by id (``context_chunks``, ``X-Context-Chunks``); the judge
needs their text. :class:`Knowledge` maps ids to :class:`KnowledgePassage` s, built from the
reference agent's knowledge bases (``evalloop/data/kb/<name>/chunks.jsonl``) and their history
(``history.jsonl``: superseded or retired passages, ``docs/readiness.md#knowledge-history``).
An id it does not know is reported, not guessed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from importlib import resources

from evalloop.agent.kb import KB_NAMES, load_kb
from evalloop.core.readiness.hallucination import KnowledgePassage
from evalloop.errors import ConfigError

__all__ = ["Knowledge", "load_history"]


def load_history(name: str) -> list[KnowledgePassage]:
    """The superseded / retired passages of knowledge base ``name`` (``[]`` when it ships none).

    Each line of ``history.jsonl`` is ``{"id", "text", "status": "superseded" | "retired",
    "superseded_by"?, "title"?, "document"?}``.

    Raises:
        ConfigError: a malformed line (file and line named).
    """
    ref = resources.files("evalloop") / "data" / "kb" / name / "history.jsonl"
    if not ref.is_file():
        return []
    out = []
    for n, line in enumerate(ref.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            passage = KnowledgePassage(str(obj["id"]), str(obj["text"]), obj["status"],
                                       obj.get("superseded_by"))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ConfigError(f"evalloop/data/kb/{name}/history.jsonl:{n}: expected a JSON "
                              f"object with id, text, status; got {line[:80]!r} ({exc})") from exc
        if passage.status not in ("superseded", "retired"):
            raise ConfigError(f"evalloop/data/kb/{name}/history.jsonl:{n}: status must be "
                              f"superseded or retired, got {passage.status!r}")
        out.append(passage)
    return out


class Knowledge:
    """Passages by id, current and historical."""

    def __init__(self, passages: Iterable[KnowledgePassage]) -> None:
        """Index ``passages`` (a later duplicate id replaces an earlier one)."""
        self.by_id = {p.id: p for p in passages}

    @classmethod
    def shipped(cls, names: Sequence[str] = KB_NAMES, *, full: bool = False) -> Knowledge:
        """The reference agent's knowledge bases ``names`` with their history.

        Raises:
            ConfigError: an unknown name or a malformed file.
        """
        passages: list[KnowledgePassage] = []
        for name in names:
            passages.extend(KnowledgePassage(c.id, c.text) for c in load_kb(name, full=full))
            passages.extend(load_history(name))
        return cls(passages)

    def resolve(self, ids: Iterable[str]) -> tuple[list[KnowledgePassage], list[str]]:
        """``(passages, unknown ids)`` of ``ids``, in the given order, each id once."""
        found: list[KnowledgePassage] = []
        unknown: list[str] = []
        seen: set[str] = set()
        for i in ids:
            if i in seen:
                continue
            seen.add(i)
            p = self.by_id.get(i)
            if p is None:
                unknown.append(i)
            else:
                found.append(p)
        return found, unknown
