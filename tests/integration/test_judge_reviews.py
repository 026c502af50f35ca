"""Human review verdicts as judge calibration labels, on real PostgreSQL: verdicts stored
through the review store, read back read-only as labelled items with exact labels, passages
and reference; ``evalloop judge calibrate --reviews-dsn`` says how many it found (0 included)
and fits them with the other sources (``docs/judge.md#human-review-verdicts``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import asyncpg
import pytest
from click.testing import Result
from typer.testing import CliRunner

from evalloop.adapters.golden_store import save_eval_run
from evalloop.adapters.judge_labels import LabelledItem
from evalloop.adapters.judge_reviews import load_review_labels, open_read_only
from evalloop.adapters.review_store import record_verdict
from evalloop.cli.eval_cmd import bundled_evals
from evalloop.cli.main import app
from evalloop.core.evaluation.cases import load_eval_file
from evalloop.core.evaluation.results import EvalRun
from evalloop.core.judge.types import Passage
from evalloop.core.review import Reviewer
from evalloop.errors import StorageError
from evalloop.evaluation.runner import load_responses_file, run_eval
from evalloop.readiness.knowledge import Knowledge

ANN = Reviewer("ann", "reviewer")
BOB = Reviewer("bob", "reviewer")
CHUNK = "hr-policy/working-conditions/working-hours"


async def _run() -> EvalRun:
    """The bundled HR eval run on canned answers; case e001 said it retrieved one known and one
    unknown passage."""
    cases = load_eval_file(bundled_evals()).cases
    canned = load_responses_file([bundled_evals("reference-responses.json")])
    run = await run_eval(cases, canned, agent_id="hr-qa-agent")
    results = [
        r.model_copy(update={"retrieved_context": [CHUNK, "hr-policy/nowhere"]})
        if r.case_id == "e001" else r
        for r in run.results
    ]  # fmt: skip
    return run.model_copy(update={"results": results})


def _passages(ids: object) -> list[Passage]:
    found, _ = Knowledge.shipped().resolve(ids)  # type: ignore[arg-type]
    return [Passage(p.id, p.text) for p in found]


async def _cli(args: list[str]) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, app, args)


async def test_verdicts_become_labelled_items(pool: asyncpg.Pool, db_dsn: str,
                                              tmp_path: Path) -> None:
    run = await _run()
    await save_eval_run(pool, run)
    empty = await load_review_labels(db_dsn, passages=_passages)
    assert (empty.verdicts, empty.cases, empty.items) == (0, 0, [])

    await record_verdict(pool, run.run_id, "e001", reviewer=ANN, score=4, note=None,
                         criteria={"correctness": True, "groundedness": False,
                                   "escalation": True})  # fmt: skip
    await record_verdict(pool, run.run_id, "e001", reviewer=BOB, score=3, note="fine",
                         criteria={"correctness": True, "groundedness": True,
                                   "context_utilization": True})  # fmt: skip
    await record_verdict(pool, run.run_id, "e002", reviewer=ANN, score=2, note=None,
                         criteria={"relevance": False, "tone": True, "groundedness": False})
    await record_verdict(pool, run.run_id, "s001", reviewer=BOB, score=5, note=None,
                         criteria={"refusal": False})
    found = await load_review_labels(db_dsn, passages=_passages)
    by_id = {r.case_id: r for r in run.results}
    e001, e002 = by_id["e001"], by_id["e002"]
    [chunk] = _passages([CHUNK])
    rid = f"review:{run.run_id}"
    assert (found.verdicts, found.cases) == (4, 3)
    assert found.items == [
        LabelledItem(f"{rid}/e001", "correctness", "human-review", "binary", 1.0, "pass",
                     e001.input, e001.response or "", (chunk,)),
        # groundedness of e001: ann fail, bob pass -> no label
        LabelledItem(f"{rid}/e001", "context_utilization", "human-review", "binary", 1.0,
                     "pass", e001.input, e001.response or "", (chunk,)),
        LabelledItem(f"{rid}/e002", "relevance", "human-review", "binary", 0.0, "fail",
                     e002.input, e002.response or "", ()),
        LabelledItem(f"{rid}/e002", "tone", "human-review", "binary", 1.0, "pass",
                     e002.input, e002.response or "", ()),
        # groundedness of e002: no passage; s001: a gate verdict only
    ]  # fmt: skip
    assert (await load_review_labels(db_dsn, agent_id="other-agent")).verdicts == 0

    # the CLI reads them and says how many; already-judged items ask no judge; the label is
    # the verdict's current one (the raw file's stale 1.0 for e002 relevance is replaced)
    raw = tmp_path / "raw.jsonl"
    rows = [{"item_id": f"{rid}/e002", "target": "relevance", "source": "human-review",
             "kind": "binary", "label": 1.0, "raw": 0.9, "unscored_reason": None},
            {"item_id": f"{rid}/e001", "target": "correctness", "source": "human-review",
             "kind": "binary", "label": 1.0, "raw": 0.8, "unscored_reason": None},
            {"item_id": f"{rid}/e001", "target": "context_utilization",
             "source": "human-review", "kind": "binary", "label": 1.0, "raw": 0.7,
             "unscored_reason": None},
            {"item_id": f"{rid}/e002", "target": "tone", "source": "human-review",
             "kind": "binary", "label": 1.0, "raw": 0.6, "unscored_reason": None}]
    rows += [{"item_id": f"d{i}", "target": "relevance", "source": "dstc9-track1",
              "kind": "rating", "label": i / 7, "raw": 0.5 + i / 20, "unscored_reason": None}
             for i in range(8)]  # fmt: skip
    raw.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "rec.json"
    result = await _cli(["judge", "calibrate", "--sources", "judge-data,reviews", "--reviews-dsn",
                         db_dsn, "--raw", str(raw), "--data", str(tmp_path / "none"),
                         "--targets", "correctness,relevance,tone,context_utilization",
                         "--out", str(out), "--no-store", "--json"])  # fmt: skip
    assert result.exit_code == 2, result.output  # --data names no judge data folder
    result = await _cli(["judge", "calibrate", "--sources", "reviews", "--reviews-dsn", db_dsn,
                         "--raw", str(raw), "--out", str(out), "--no-store", "--json"])
    assert result.exit_code == 2, result.output  # reviews alone: too few items to fit any
    assert "no target has enough judged items to fit (4 in all" in result.output
    assert ("human review verdicts: 4 found on 3 case(s) -> 4 labelled item(s) "
            "(context_utilization 1, correctness 1, relevance 1, tone 1)") in result.output
    result = await _cli(["judge", "calibrate", "--sources", "reviews,judge-data", "--refit-only",
                         "--reviews-dsn", db_dsn, "--raw", str(raw), "--out", str(out),
                         "--no-store", "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    rel = json.loads(out.read_text())["targets"]["relevance"]
    assert (rel["kind"], rel["n"]) == ("rating", 9)
    assert [(b["source"], b["kind"], b["n"]) for b in rel["by_source"]] == [
        ("dstc9-track1", "rating", 8), ("human-review", "binary", 1)]
    # the review's P(yes) 0.9 is the highest raw value; its current label 0 makes the top of
    # the map lower than the stale label 1.0 would: the fit used the current label
    # (pool-adjacent violators: labels 5/7, 6/7, 1 and 0 pool to 9/14; the stale 1.0 gives 1)
    assert rel["mapping"]["y"][-1] == pytest.approx(9 / 14)


async def test_no_verdicts_is_said_not_an_error(db_dsn: str, tmp_path: Path) -> None:
    raw = tmp_path / "raw.jsonl"
    raw.write_text("".join(
        json.dumps({"item_id": f"c{i}", "target": "claim", "source": "factcheck-gpt",
                    "kind": "binary", "label": float(i % 2), "raw": 0.2 + 0.6 * (i % 2),
                    "unscored_reason": None}) + "\n" for i in range(20)))  # fmt: skip
    out = tmp_path / "rec.json"
    result = await _cli(["judge", "calibrate", "--refit-only", "--reviews-dsn", db_dsn,
                         "--raw", str(raw), "--out", str(out), "--no-store", "--json"])
    assert result.exit_code == 0, result.output
    assert "human review verdicts: 0 found on 0 case(s) -> 0 labelled item(s) (none)" in (
        result.output)
    assert json.loads(out.read_text())["targets"]["claim"]["n"] == 20


async def test_the_review_database_is_opened_read_only(db_dsn: str) -> None:
    pool = await open_read_only(db_dsn)  # what load_review_labels reads through
    try:
        with pytest.raises(asyncpg.ReadOnlySQLTransactionError):
            await pool.execute("DELETE FROM eval_human_reviews")
        assert await pool.fetchval("SELECT count(*) FROM eval_human_reviews") == 0
    finally:
        await pool.close()
    with pytest.raises(StorageError, match="reading review verdicts"):
        await load_review_labels("postgresql://nobody@127.0.0.1:1/none")
