"""``evalloop judge``: calibrate the judge against human labels and show the calibration table.

``evalloop judge calibrate --data DIR`` samples human-labelled items per target (stratified by
label, seeded) from the chosen label sources (``--sources``: the judge data folder, FeedbackQA's
ratings, and — with ``--reviews-dsn`` — the human review verdicts), asks the embedded judge one
yes/no question per item (raw P(yes) appended to a JSON-lines file, so an interrupted run
resumes and ``--refit-only`` refits for free; ``--include-raw`` adds other raw files to the
fit), fits an isotonic map per target on all its sources together, measures agreement by
cross-validation with 95 % intervals, writes the calibration record as JSON (default: the file
shipped in the package, which the embedded judge loads) and stores it in PostgreSQL. See
``docs/judge.md#calibration``.

Exit codes (``docs/exit-codes.md``): 0 done; 2 bad input (no data folder, malformed raw file);
3 the judge or the database could not be started or reached.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from evalloop.core.judge.calibration import (
    AUC_BAR,
    MIN_ITEMS,
    SPEARMAN_BAR,
    CalibrationRecord,
    DimensionCalibration,
    advisory_reason,
)
from evalloop.core.judge.prompts import PROMPT_VERSION
from evalloop.errors import ConfigError, EvalloopError, StorageError

if TYPE_CHECKING:
    from evalloop.adapters.judge_labels import LabelledItem

__all__ = ["app", "calibrate", "calibration_rows", "explanation_lines", "markdown_table", "show"]

app = typer.Typer(no_args_is_help=True, help="The LLM judge: calibration and its table.")


def _fmt(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{value:.2f}"


def _sources(cal: DimensionCalibration) -> str:
    """``"dstc9-track1 13, feedbackqa 70"`` (scored items per source) or the bare names."""
    if cal.by_source:
        return ", ".join(f"{b.source} {b.n}" for b in cal.by_source if b.n)
    return ", ".join(cal.sources)


def calibration_rows(record: CalibrationRecord) -> list[dict[str, object]]:
    """One JSON-ready dict per target of ``record`` (report order), for ``--json`` output."""
    out: list[dict[str, object]] = []
    for target, cal in record.targets.items():
        row = {"calibration_id": record.calibration_id, **cal.as_dict()}
        row.pop("mapping")
        row["target"] = target
        out.append(row)
    return out


def _status(cal: DimensionCalibration) -> str:
    """``gating`` or ``advisory (AUC 0.40 < 0.75)`` (``docs/judge.md#advisory-dimensions``)."""
    return f"advisory ({advisory_reason(cal)})" if cal.advisory else "gating"


def explanation_lines(record: CalibrationRecord) -> list[str]:
    """The lines printed under the table: the agreement bar, then one line per target note.

    ``docs/judge.md#advisory-dimensions``: a target is advisory below AUC 0.75 (binary labels)
    or Spearman 0.40 (ratings), or with fewer than 20 labelled items.
    """
    lines = [f"advisory = below the agreement bar: ROC-AUC < {AUC_BAR:.2f} (binary labels), "
             f"Spearman < {SPEARMAN_BAR:.2f} (ratings), or fewer than {MIN_ITEMS} labelled "
             "items; an advisory dimension is shown but cannot certify a GO "
             "(docs/judge.md#advisory-dimensions)"]
    lines += [f"note: {target}: {cal.note}" for target, cal in record.targets.items()
              if cal.note]
    return lines


def _table(record: CalibrationRecord) -> Table:
    table = Table(title=f"judge calibration {record.calibration_id}")
    for col in ("target", "sources (n)", "labels", "n", "unscored", "ROC-AUC [95 %]",
                "bal. acc. [95 %]", "Spearman [95 %]", "raw rank", "status"):  # fmt: skip
        table.add_column(col, no_wrap=col in ("target", "status", "labels", "n"))
    cal: DimensionCalibration
    for target, cal in record.targets.items():
        table.add_row(
            target,
            _sources(cal),
            cal.kind,
            str(cal.n),
            str(cal.unscored),
            _fmt(cal.auc, cal.auc_ci),
            _fmt(cal.balanced_accuracy, cal.balanced_accuracy_ci),
            _fmt(cal.spearman, cal.spearman_ci),
            _fmt(cal.raw_rank, None),
            _status(cal),
        )
    return table


@dataclass(frozen=True, slots=True)
class _Sources:
    """Where the labels come from (the ``calibrate`` options, resolved)."""

    families: frozenset[str]
    data: Path | None
    feedbackqa: Path | None
    reviews_dsn: str | None
    include_raw: tuple[Path, ...] = ()


async def _review_labels(dsn: str) -> list[LabelledItem]:
    from evalloop.adapters.judge_reviews import load_review_labels
    from evalloop.core.judge.types import Passage
    from evalloop.readiness.knowledge import Knowledge

    knowledge = Knowledge.shipped()

    def passages(ids: Sequence[str]) -> list[Passage]:
        return [Passage(p.id, p.text) for p in knowledge.resolve(ids)[0]]

    found = await load_review_labels(dsn, passages=passages)
    counts = Counter(i.target for i in found.items)
    per = ", ".join(f"{t} {counts[t]}" for t in sorted(counts)) or "none"
    print(
        f"human review verdicts: {found.verdicts} found on {found.cases} case(s) "
        f"-> {len(found.items)} labelled item(s) ({per})",
        file=sys.stderr,
    )
    return found.items


async def _run(
    sources: _Sources,
    model: str,
    per_target: int,
    seed: int,
    raw: Path,
    refit_only: bool,
    out: Path | None,
    store: bool,
    threads: int,
    budget_min: float | None,
    only: frozenset[str] | None = None,
) -> CalibrationRecord:
    from evalloop.adapters.judge_calibrate import collect_raw, merge_raw, read_raw
    from evalloop.adapters.judge_embedded import embedded_judge, shipped_calibration_path
    from evalloop.adapters.judge_labels import calibration_sample, family_of
    from evalloop.core.judge.fit import fit_record

    reviews: list[LabelledItem] = []
    if "reviews" in sources.families:
        if sources.reviews_dsn is None:
            raise ConfigError("--sources reviews: expected --reviews-dsn DSN (the review database)")
        reviews = await _review_labels(sources.reviews_dsn)
    rows = read_raw(raw)
    if not refit_only:
        items = calibration_sample(
            sources.data,
            per_target,
            seed,
            families=sources.families,
            feedbackqa_dir=sources.feedbackqa,
            reviews=reviews,
        )
        if only is not None:
            items = [i for i in items if i.target in only]
        done = {(r.item_id, r.target) for r in rows}
        if any((i.item_id, i.target) not in done for i in items):
            err = Console(stderr=True)

            def progress(done: int, total: int) -> None:
                if done % 10 == 0 or done == total:
                    err.print(f"judged {done}/{total}")

            # the calibration asks for raw P(yes): no calibration is applied while collecting
            async with embedded_judge(model, timeout_s=300.0, n_threads=threads) as judge:
                rows = await collect_raw(
                    judge,
                    items,
                    raw,
                    progress=progress,
                    budget_s=None if budget_min is None else budget_min * 60,
                )
    rows = merge_raw(rows, *(read_raw(p) for p in sources.include_raw))
    # a verdict may have changed since its item was judged: the label is the current one
    current = {(i.item_id, i.target): i.label for i in reviews}
    rows = [
        replace(r, label=current[(r.item_id, r.target)]) if (r.item_id, r.target) in current else r
        for r in rows
    ]
    rows = [r for r in rows if family_of(r.source) in sources.families]
    if not rows:
        files = ", ".join(str(p) for p in (raw, *sources.include_raw))
        raise ConfigError(
            f"expected judged items from {sorted(sources.families)} in {files}, found none"
        )
    created = datetime.now(UTC).replace(microsecond=0).isoformat()
    record = fit_record(rows, judge_model=model, prompt_version=PROMPT_VERSION, created_at=created,
                        seed=seed)  # fmt: skip
    if not record.targets:
        raise ConfigError(
            f"no target has enough judged items to fit ({len(rows)} in all; a target needs at "
            "least 4 scored items, and 2 of each class for 0/1 labels): nothing written"
        )
    record = replace(
        record, method=f"{record.method}; label sources: {', '.join(sorted(sources.families))}"
    )
    target = out or shipped_calibration_path(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(record.as_dict(), indent=1) + "\n", encoding="utf-8")
    if store:
        from evalloop.adapters.judge_store import save_calibration
        from evalloop.adapters.postgres import connect_pool, migrate, resolve_dsn
        from evalloop.settings import Settings

        dsn = resolve_dsn(Settings().postgres)
        await migrate(dsn)
        pool = await connect_pool(dsn, max_size=2)
        try:
            await save_calibration(pool, record)
        finally:
            await pool.close()
    return record


def _families(value: str | None, reviews_dsn: str | None) -> frozenset[str]:
    from evalloop.adapters.judge_labels import FAMILIES

    if value is None:
        return frozenset({"judge-data", "feedbackqa", *(["reviews"] if reviews_dsn else [])})
    chosen = frozenset(f.strip() for f in value.split(",") if f.strip())
    unknown = chosen - set(FAMILIES)
    if unknown or not chosen:
        raise ConfigError(f"--sources: expected names from {list(FAMILIES)}, got {sorted(unknown)}")
    return chosen


def _targets(value: str | None) -> frozenset[str] | None:
    from evalloop.core.judge.calibration import targets_in_order

    if value is None:
        return None
    chosen = frozenset(t.strip() for t in value.split(",") if t.strip())
    unknown = chosen - set(targets_in_order())
    if unknown or not chosen:
        raise ConfigError(
            f"--targets: expected names from {list(targets_in_order())}, got {sorted(unknown)}"
        )
    return chosen


@app.command("calibrate")
def calibrate(
    data: Annotated[
        Path | None,
        typer.Option(
            help="judge data folder (env EVALLOOP_JUDGE_DATA; default ../shared/data/judge)",
            show_default=False,
        ),
    ] = None,
    model: Annotated[str, typer.Option(help="embedded judge model")] = (
        "qwen2.5-coder-1.5b-instruct-q4_k_m"
    ),
    per_target: Annotated[int, typer.Option(min=8, help="labelled items per target")] = 40,
    seed: Annotated[int, typer.Option(help="sampling, fold and bootstrap seed")] = 7,
    raw: Annotated[
        Path | None, typer.Option(help="raw P(yes) JSON-lines file (default: next to --out)")
    ] = None,
    refit_only: Annotated[bool, typer.Option(help="refit from --raw; ask no judge")] = False,
    out: Annotated[
        Path | None, typer.Option(help="record JSON (default: the file shipped in the package)")
    ] = None,
    store: Annotated[bool, typer.Option(help="also store the record in PostgreSQL")] = True,
    threads: Annotated[int, typer.Option(min=1, help="llama.cpp CPU threads")] = 2,
    budget_min: Annotated[
        float | None, typer.Option(help="stop asking after this many minutes, fit what was judged")
    ] = None,
    targets: Annotated[
        str | None,
        typer.Option(help="ask only these targets this run (comma-separated; the fit uses all)"),
    ] = None,
    sources: Annotated[
        str | None,
        typer.Option(
            help="label sources to ask and fit (comma-separated: judge-data, feedbackqa, "
            "reviews; default judge-data,feedbackqa, plus reviews with --reviews-dsn)",
            show_default=False,
        ),
    ] = None,
    feedbackqa_data: Annotated[
        Path | None,
        typer.Option(
            help="FeedbackQA folder (env EVALLOOP_FEEDBACKQA_DATA; default "
            "../shared/data/feedbackqa)",
            show_default=False,
        ),
    ] = None,
    reviews_dsn: Annotated[
        str | None,
        typer.Option(
            help="PostgreSQL DSN holding human review verdicts (read-only); adds the reviews "
            "source",
            show_default=False,
        ),
    ] = None,
    include_raw: Annotated[
        list[Path] | None,
        typer.Option(
            metavar="<path>",
            help="another raw file whose rows join the fit (read-only; repeatable)",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines, one per target")] = False,
) -> None:
    """Calibrate the embedded judge on human labels and print agreement per dimension."""
    from evalloop.adapters.judge_embedded import shipped_calibration_path
    from evalloop.agent.kb import shared_data_dir

    shared = shared_data_dir()
    data_dir = data
    if data_dir is None and os.environ.get("EVALLOOP_JUDGE_DATA"):
        data_dir = Path(os.environ["EVALLOOP_JUDGE_DATA"])
    if data_dir is None and shared is not None:
        data_dir = shared / "judge"
    fqa_dir = feedbackqa_data
    if fqa_dir is None and os.environ.get("EVALLOOP_FEEDBACKQA_DATA"):
        fqa_dir = Path(os.environ["EVALLOOP_FEEDBACKQA_DATA"])
    if fqa_dir is None and shared is not None:
        fqa_dir = shared / "feedbackqa"
    try:
        families = _families(sources, reviews_dsn)
        only = _targets(targets)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise typer.Exit(2) from exc
    if data_dir is None and not refit_only and "judge-data" in families:
        print(
            "error: expected --data DIR (or EVALLOOP_JUDGE_DATA, or ../shared/data/judge): "
            "the judge data folder",
            file=sys.stderr,
        )
        raise typer.Exit(2)
    if fqa_dir is None and not refit_only and "feedbackqa" in families:
        print(
            "error: expected --feedbackqa-data DIR (or EVALLOOP_FEEDBACKQA_DATA, or "
            "../shared/data/feedbackqa): the FeedbackQA folder",
            file=sys.stderr,
        )
        raise typer.Exit(2)
    for extra in include_raw or ():
        if not extra.is_file():
            print(f"error: --include-raw: expected a raw file, {extra} does not exist",
                  file=sys.stderr)  # fmt: skip
            raise typer.Exit(2)
    raw_path = raw or (out or shipped_calibration_path(model)).with_suffix(".raw.jsonl")
    where = _Sources(families, data_dir, fqa_dir, reviews_dsn, tuple(include_raw or ()))
    try:
        record = asyncio.run(
            _run(
                where,
                model,
                per_target,
                seed,
                raw_path,
                refit_only,
                out,
                store,
                threads,
                budget_min,
                only,
            )
        )
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise typer.Exit(2) from exc
    except (StorageError, EvalloopError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise typer.Exit(3) from exc
    if as_json:
        for row in calibration_rows(record):
            print(json.dumps(row))
    else:
        Console(width=180).print(_table(record))
        for line in explanation_lines(record):
            print(line)


def markdown_table(record: CalibrationRecord) -> str:
    """The calibration table of ``record`` as a Markdown table (``docs/judge.md`` uses it)."""
    lines = [
        "| target | sources (n) | labels | n | unscored | ROC-AUC [95 %] | bal. acc. [95 %] "
        "| Spearman [95 %] | raw rank | status |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for target, cal in record.targets.items():
        cells = [
            target, _sources(cal), cal.kind, str(cal.n), str(cal.unscored),
            _fmt(cal.auc, cal.auc_ci), _fmt(cal.balanced_accuracy, cal.balanced_accuracy_ci),
            _fmt(cal.spearman, cal.spearman_ci), _fmt(cal.raw_rank, None), _status(cal),
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


@app.command("show")
def show(
    model: Annotated[str, typer.Option(help="embedded judge model")] = (
        "qwen2.5-coder-1.5b-instruct-q4_k_m"
    ),
    file: Annotated[
        Path | None, typer.Option(help="a calibration record JSON (default: the shipped one)")
    ] = None,
    markdown: Annotated[bool, typer.Option(help="a Markdown table")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines, one per target")] = False,
) -> None:
    """Show a calibration record's agreement table (default: the one shipped for ``--model``)."""
    from evalloop.adapters.judge_embedded import shipped_calibration, shipped_calibration_path

    try:
        if file is not None:
            record: CalibrationRecord | None = CalibrationRecord.from_dict(
                json.loads(file.read_text(encoding="utf-8"))
            )
        else:
            record = shipped_calibration(model)
    except (OSError, ValueError, EvalloopError) as exc:
        print(f"error: cannot read the calibration record: {exc}", file=sys.stderr)
        raise typer.Exit(2) from exc
    if record is None:
        print(f"error: no calibration record at {shipped_calibration_path(model)}", file=sys.stderr)
        raise typer.Exit(2)
    if as_json:
        for row in calibration_rows(record):
            print(json.dumps(row))
    elif markdown:
        print(markdown_table(record))
        print()
        for line in explanation_lines(record):
            print(f"- {line}")
    else:
        Console(width=180).print(_table(record))
        for line in explanation_lines(record):
            print(line)
