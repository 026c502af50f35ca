"""Knowledge bases of the reference agent: passages ("chunks") with stable, hierarchical ids.

A chunk id is ``<document>/<section>[/<part>]`` (e.g. ``hr-policy/leave/medical-leave``), so a
knowledge-base update that names a document or a section (``hr-policy``, ``hr-policy/leave``)
touches every chunk under it (see :func:`evalloop.core.cadence.touches`).

Shipped knowledge bases (``evalloop/data/kb/<name>/chunks.jsonl``, with their licence and
attribution in ``ATTRIBUTION.md``):

- ``hr``: every passage of the two HR policy documents of ``hr-policy-qa`` (h2oai/h2o-evals,
  MPL-2.0), extracted by :mod:`evalloop.agent.kb_build`.
- ``feedbackqa-<source>`` (``australia``, ``cdc``, ``uk``, ``who``): a subset of FeedbackQA's
  ``faq_base`` passages (McGill-NLP/feedbackqa, Apache-2.0); with ``full=True`` and the shared
  data folder present, every passage of the source is loaded from it instead.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from evalloop.errors import ConfigError

__all__ = [
    "FEEDBACKQA_SOURCES",
    "KB_NAMES",
    "Chunk",
    "load_kb",
    "load_stale_chunks",
    "read_chunks",
    "shared_data_dir",
    "write_chunks",
]

#: FeedbackQA sources (the four public-health FAQ sites) -> file prefix in ``faq_base``.
FEEDBACKQA_SOURCES = {"australia": "Australia", "cdc": "CDC", "uk": "UK", "who": "WHO"}
#: Names accepted by :func:`load_kb` (``evalloop agent serve --kb``).
KB_NAMES = ("hr", *(f"feedbackqa-{s}" for s in FEEDBACKQA_SOURCES))


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrievable passage.

    Attributes:
        id: hierarchical id ``<document>/<section>[/<part>]``.
        document: the source document (file name or URL).
        title: human-readable heading path of the passage.
        text: the passage text (whitespace-normalised).
    """

    id: str
    document: str
    title: str
    text: str


def write_chunks(path: Path, chunks: list[Chunk]) -> None:
    """Write ``chunks`` as JSON lines (one object per chunk, in order) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for c in chunks:
            fh.write(json.dumps(asdict(c), ensure_ascii=False) + "\n")


def read_chunks(lines: list[str], *, origin: str) -> list[Chunk]:
    """Parse JSON-lines chunk records.

    Raises:
        ConfigError: a line is not a JSON object with ``id, document, title, text`` strings
            (names ``origin`` and the line number), or an id repeats.
    """
    out: list[Chunk] = []
    seen: set[str] = set()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            chunk = Chunk(**{k: str(obj[k]) for k in ("id", "document", "title", "text")})
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"{origin}:{n}: expected a JSON object with id, document, title, text; "
                f"got {line[:80]!r} ({exc})"
            ) from exc
        if chunk.id in seen:
            raise ConfigError(f"{origin}:{n}: duplicate chunk id {chunk.id!r}")
        seen.add(chunk.id)
        out.append(chunk)
    return out


def shared_data_dir() -> Path | None:
    """The shared public-data folder (``../shared/data``) if present, else ``None``.

    Looked up in order: env ``EVALLOOP_SHARED_DATA``, ``../shared/data`` relative to the
    working directory, and relative to the repository root of this checkout.
    """
    candidates = []
    if env := os.environ.get("EVALLOOP_SHARED_DATA"):
        candidates.append(Path(env))
    candidates.append(Path.cwd().parent / "shared" / "data")
    candidates.append(Path(__file__).resolve().parents[3].parent / "shared" / "data")
    for c in candidates:
        if c.is_dir():
            return c
    return None


def load_kb(name: str, *, full: bool = False) -> list[Chunk]:
    """Load knowledge base ``name`` (one of :data:`KB_NAMES`).

    Args:
        name: ``hr`` or ``feedbackqa-<source>``.
        full: for FeedbackQA, load every ``faq_base`` passage from the shared data folder when
            it is present (falls back to the shipped subset otherwise).

    Returns:
        The chunks in knowledge-base order.

    Raises:
        ConfigError: unknown ``name`` or a malformed shipped file.
    """
    if name not in KB_NAMES:
        raise ConfigError(f"unknown knowledge base {name!r}; expected one of {list(KB_NAMES)}")
    if full and name.startswith("feedbackqa-"):
        data = shared_data_dir()
        if data is not None and (data / "feedbackqa" / "faq_base").is_dir():
            from evalloop.agent.kb_build import feedbackqa_chunks

            return feedbackqa_chunks(data / "feedbackqa" / "faq_base", name.split("-", 1)[1])
    ref = resources.files("evalloop") / "data" / "kb" / name / "chunks.jsonl"
    text = ref.read_text(encoding="utf-8")
    return read_chunks(text.splitlines(), origin=f"evalloop/data/kb/{name}/chunks.jsonl")


def load_stale_chunks(name: str) -> list[Chunk]:
    """The superseded and retired passages of knowledge base ``name`` (its ``history.jsonl``,
    written for evalloop: see that folder's ``ATTRIBUTION.md``), as chunks; ``[]`` when it ships
    none. Only an agent that never cleaned its index serves them (the weak reference agent).

    Raises:
        ConfigError: a malformed line.
    """
    ref = resources.files("evalloop") / "data" / "kb" / name / "history.jsonl"
    if not ref.is_file():
        return []
    return read_chunks(ref.read_text(encoding="utf-8").splitlines(),
                       origin=f"evalloop/data/kb/{name}/history.jsonl")
