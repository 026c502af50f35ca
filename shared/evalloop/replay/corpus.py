"""Where the replay's turns come from: the shipped sample or the full public data sets.

* :func:`load_sample` reads ``evalloop/data/sample/turns.jsonl.gz`` (shipped in the package so
  that ``evalloop demo`` runs on a fresh machine without ``../shared``; built by
  ``python -m evalloop.replay.build_sample``).
* :func:`load_source` converts the published files under a data folder (``../shared/data``:
  ``feedbackqa/`` and ``tau-bench-airline/``) with the converters.
* :func:`load_corpus` picks one of the two.

Sample file format (JSON Lines, gzip): first ``{"passage": {"id", "text", "source"}}`` lines
(each knowledge-base passage once), then ``{"turn": {"key", "agent_id", "question",
"answer"|null, "chunks": [passage ids], "ratings": [[label, comment]], "escalation",
"outcome"}}`` lines; ``answer`` null means "the text of the first chunk" (FeedbackQA answers
with the passage), which keeps each passage's text in the file once.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from evalloop.replay.feedbackqa import load_feedbackqa
from evalloop.replay.taubench import load_taubench
from evalloop.replay.turns import Chunk, EpisodeEscalation, EpisodeOutcome, Rating, Turn

__all__ = [
    "SAMPLE_DIR",
    "SAMPLE_FILE",
    "load_corpus",
    "load_sample",
    "load_source",
    "read_turns",
    "write_turns",
]

SAMPLE_DIR = Path(__file__).resolve().parent.parent / "data" / "sample"
SAMPLE_FILE = "turns.jsonl.gz"


def load_source(data_dir: Path) -> list[Turn]:
    """Convert the public data sets under ``data_dir`` (``../shared/data``) into turns.

    Raises:
        FileNotFoundError: ``data_dir`` lacks ``feedbackqa/`` or
            ``tau-bench-airline/gpt-4o-airline.json``.
        ValueError: a record lacks the published structure.
    """
    data_dir = Path(data_dir)
    if not (data_dir / "feedbackqa").is_dir():
        raise FileNotFoundError(
            f"{data_dir} has no feedbackqa/ folder; expected the shared data folder "
            "(../shared/data) holding feedbackqa/ and tau-bench-airline/"
        )
    return load_feedbackqa(data_dir / "feedbackqa") + load_taubench(
        data_dir / "tau-bench-airline" / "gpt-4o-airline.json"
    )


def _turn_record(turn: Turn) -> dict[str, Any]:
    answer_is_chunk = bool(turn.chunks) and turn.answer == turn.chunks[0].text
    return {
        "key": turn.key,
        "agent_id": turn.agent_id,
        "question": turn.question,
        "answer": None if answer_is_chunk else turn.answer,
        "chunks": [c.id for c in turn.chunks],
        "ratings": [[r.label, r.comment] for r in turn.ratings],
        "escalation": (
            {"requested_by": turn.escalation.requested_by, "reason": turn.escalation.reason}
            if turn.escalation else None
        ),
        "outcome": (
            {
                "resolved": turn.outcome.resolved,
                "follow_up_count": turn.outcome.follow_up_count,
                "abandoned": turn.outcome.abandoned,
            }
            if turn.outcome else None
        ),
    }


def write_turns(path: Path, turns: Sequence[Turn]) -> None:
    """Write ``turns`` (and each distinct passage once) to ``path`` as gzip JSON Lines.

    The output is byte-for-byte deterministic for the same turns in the same order (gzip
    header without file name or time stamp).
    """
    passages: dict[str, Chunk] = {}
    for t in turns:
        for c in t.chunks:
            passages.setdefault(c.id, c)
    buf = io.StringIO()
    for c in sorted(passages.values(), key=lambda c: c.id):
        buf.write(json.dumps({"passage": {"id": c.id, "text": c.text, "source": c.source}},
                             ensure_ascii=False, sort_keys=True) + "\n")
    for t in turns:
        buf.write(json.dumps({"turn": _turn_record(t)}, ensure_ascii=False, sort_keys=True) + "\n")
    with path.open("wb") as raw, gzip.GzipFile(
        filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9
    ) as gz:
        gz.write(buf.getvalue().encode("utf-8"))


def read_turns(lines: Iterable[str], *, origin: str) -> list[Turn]:
    """Parse sample lines (see the module docstring) into turns.

    Raises:
        ValueError: a line is not JSON, not a passage/turn record, or names an unknown chunk;
            the message gives ``origin`` and the line number.
    """
    passages: dict[str, Chunk] = {}
    turns: list[Turn] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            if "passage" in rec:
                p = rec["passage"]
                passages[p["id"]] = Chunk(id=p["id"], text=p["text"], source=p.get("source"))
                continue
            t = rec["turn"]
            chunks = tuple(passages[cid] for cid in t["chunks"])
            esc, out = t.get("escalation"), t.get("outcome")
            turns.append(
                Turn(
                    key=t["key"],
                    agent_id=t["agent_id"],
                    question=t["question"],
                    answer=t["answer"] if t["answer"] is not None else chunks[0].text,
                    chunks=chunks,
                    ratings=tuple(Rating(label=lb, comment=c) for lb, c in t["ratings"]),
                    escalation=EpisodeEscalation(**esc) if esc else None,
                    outcome=EpisodeOutcome(**out) if out else None,
                )
            )
        except (json.JSONDecodeError, KeyError, TypeError, IndexError, ValueError) as exc:
            raise ValueError(
                f"{origin} line {n}: expected a passage or turn record of the replay sample "
                f"format, got {line[:80]!r} ({type(exc).__name__}: {exc})"
            ) from exc
    return turns


def load_sample(sample_dir: Path = SAMPLE_DIR) -> list[Turn]:
    """Read the shipped sample (``turns.jsonl.gz`` in ``sample_dir``).

    Raises:
        FileNotFoundError: the sample file is missing (regenerate it with
            ``python -m evalloop.replay.build_sample``).
        ValueError: the file is corrupt (see :func:`read_turns`).
    """
    path = Path(sample_dir) / SAMPLE_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"replay sample {path} is missing; regenerate it with "
            "`python -m evalloop.replay.build_sample --data ../shared/data`"
        )
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return read_turns(fh, origin=str(path))


def load_corpus(source: Path | None = None) -> tuple[list[Turn], str]:
    """Load the turns of the shipped sample (``source`` None) or of a data folder.

    Returns:
        ``(turns, description)``; the description names where they came from.
    """
    if source is None:
        return load_sample(), f"shipped sample ({SAMPLE_DIR / SAMPLE_FILE})"
    return load_source(Path(source)), f"public data sets under {Path(source).resolve()}"
