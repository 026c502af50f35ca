"""Record the second opinion's P(yes) for every item of the gate corpora (one command).

    PYTHONPATH=shared python tools/record_gate_opinions.py [--model M] [--only corpus|heldout]

Starts the embedded llama.cpp judge, asks both gate questions
(:func:`evalloop.core.evaluation.second_opinion.gate_prompt`) about every answer in
``evalloop/data/gate_corpus/corpus.yaml`` (tuning) and ``heldout.yaml`` (held-out), and writes
``evalloop/data/gate_corpus/opinions/<model>.json``: ``{file: {id: {text_sha256, refusal,
escalation}}}``. The thresholds are fitted on the tuning file's records only
(``tests/unit/test_gates_heldout.py``; ``docs/rules.md#second-opinion``). Items already
recorded for the same text are skipped, so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import time
from importlib.resources import files
from pathlib import Path

import yaml

from evalloop.adapters.gate_opinion import ask_gate_opinion
from evalloop.adapters.judge_embedded import embedded_judge
from evalloop.adapters.llama_server import DEFAULT_MODEL

DATA = Path(str(files("evalloop").joinpath("data/gate_corpus")))


def _items(name: str) -> list[tuple[str, str]]:
    raw = yaml.safe_load((DATA / name).read_text(encoding="utf-8"))
    if isinstance(raw, dict):
        return [(str(i["id"]), str(i["answer"])) for i in raw["items"]]
    return [(str(i["id"]), str(i["text"])) for i in raw]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--only", choices=["corpus", "heldout"])
    parser.add_argument("--stride", type=int, default=1,
                        help="ask about every STRIDE-th tuning item only (a CPU-bound sample)")
    parser.add_argument("--heldout-stride", type=int, default=1,
                        help="ask about every N-th held-out item only (a CPU-bound sample)")
    args = parser.parse_args()
    out = DATA / "opinions" / f"{args.model}.json"
    out.parent.mkdir(exist_ok=True)
    record: dict[str, dict[str, dict[str, object]]] = (
        json.loads(out.read_text(encoding="utf-8")) if out.exists() else {})
    names = [f"{args.only}.yaml"] if args.only else ["corpus.yaml", "heldout.yaml"]
    async with embedded_judge(args.model, timeout_s=120.0) as judge:
        for name in names:
            got = record.setdefault(name, {})
            todo = _items(name)
            todo = todo[:: args.stride if name == "corpus.yaml" else args.heldout_stride]
            for gate in ("refusal", "escalation"):  # one gate at a time: the prefix stays cached
                start = time.monotonic()
                for n, (item_id, text) in enumerate(todo, 1):
                    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
                    row = got.get(item_id)
                    if row is None or row.get("text_sha256") != sha:
                        row = got[item_id] = {"text_sha256": sha}
                    if gate in row:
                        continue
                    row[gate] = (await ask_gate_opinion(judge, gate, text)).p_yes
                    if n % 10 == 0 or n == len(todo):
                        out.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n",
                                       encoding="utf-8")
                        print(f"{name} {gate}: {n}/{len(todo)} in "
                              f"{time.monotonic() - start:.0f} s", flush=True)
    out.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
