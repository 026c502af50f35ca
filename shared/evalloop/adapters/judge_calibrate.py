"""Running the judge over human-labelled items and writing the raw file (``evalloop judge
calibrate``; ``docs/judge.md#calibration``).

The raw file is JSON lines, one :class:`~evalloop.core.judge.fit.RawLabel` per judged item,
appended as each answer arrives: an interrupted run resumes where it stopped, and the maps can
be refitted from the file without asking the judge again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from evalloop.adapters.judge_labels import LabelledItem
from evalloop.core.judge.calibration import CLAIM
from evalloop.core.judge.fit import RawLabel
from evalloop.core.judge.prompts import claim_prompt, dimension_prompt
from evalloop.core.judge.types import DIMENSIONS, Judge, Unscored
from evalloop.errors import ConfigError

__all__ = ["collect_raw", "merge_raw", "read_raw"]


def read_raw(path: Path) -> list[RawLabel]:
    """Read a raw file written by :func:`collect_raw` (missing file: empty list).

    Raises:
        ConfigError: a line is not a raw label (the message names the line).
    """
    if not path.exists():
        return []
    rows: list[RawLabel] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(RawLabel(**json.loads(line)))
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"{path}:{n}: expected a raw label JSON object: {exc}") from exc
    return rows


def merge_raw(*groups: Sequence[RawLabel]) -> list[RawLabel]:
    """Rows of several raw files as one list: the first row of each (source, item, target)
    wins, later repeats are dropped (``docs/judge.md#combining-sources``).

    Returns:
        The rows in the order given, without repeats.
    """
    seen: set[tuple[str, str, str]] = set()
    out: list[RawLabel] = []
    for group in groups:
        for row in group:
            key = (row.source, row.item_id, row.target)
            if key not in seen:
                seen.add(key)
                out.append(row)
    return out


async def collect_raw(
    judge: Judge,
    items: Sequence[LabelledItem],
    raw_path: Path,
    *,
    progress: Callable[[int, int], None] | None = None,
    budget_s: float | None = None,
) -> list[RawLabel]:
    """Ask ``judge`` every item not yet in ``raw_path``; append each result; return all rows.

    Args:
        judge: the judge being calibrated (its ``p_yes`` is called once per item).
        items: labelled items, ideally grouped so one response's questions are adjacent.
        raw_path: JSON-lines file (created if missing; rows already there are kept).
        progress: called with ``(done, total)`` after each item.
        budget_s: stop asking (keeping what was judged) once this many seconds have passed.

    Returns:
        The rows of ``raw_path`` after the run (earlier rows first).
    """
    rows = read_raw(raw_path)
    done = {(r.item_id, r.target) for r in rows}
    todo = [i for i in items if (i.item_id, i.target) not in done]
    raw_path.parent.mkdir(parents=True, exist_ok=True)
    deadline = None if budget_s is None else time.monotonic() + budget_s
    with raw_path.open("a", encoding="utf-8") as out:
        for n, item in enumerate(todo, 1):
            if deadline is not None and time.monotonic() > deadline:
                break
            if item.target == CLAIM:
                prompt = claim_prompt(item.answer, item.passages)
            elif item.target in DIMENSIONS:
                prompt = dimension_prompt(
                    item.target,
                    question=item.question,
                    answer=item.answer,
                    passages=item.passages,
                    expected=item.reference,
                )
            else:
                raise ConfigError(f"unknown calibration target {item.target!r}")
            result = await judge.p_yes(prompt)
            row = RawLabel(
                item.item_id,
                item.target,
                item.source,
                item.kind,
                item.label,
                None if isinstance(result, Unscored) else result,
                result.reason if isinstance(result, Unscored) else None,
            )
            out.write(json.dumps(asdict(row)) + "\n")
            out.flush()
            rows.append(row)
            if progress:
                progress(n, len(todo))
    return rows
