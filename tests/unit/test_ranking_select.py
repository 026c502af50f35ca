"""The service's incremental candidate selection equals selecting over the whole shortlist,
while embedding only the questions the walk reaches."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from evalloop.adapters.embedder import HashingEmbedder
from evalloop.core.ranking import (
    RankingParams,
    TriageCase,
    score_cases,
    select_candidates,
    shortlist,
)
from services.triage.pipeline import _select

NOW = datetime(2024, 5, 1, tzinfo=UTC)


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(64)
        self.seen: list[str] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.seen += texts
        return super().encode(texts)


def _cases() -> list[TriageCase]:
    out = []
    for i in range(40):
        # every 3rd question repeats the previous one's ten words plus "please": a
        # near-duplicate (hashing cosine > 0.92); the others share no words
        n = i - 1 if i % 3 == 2 else i
        q = " ".join(f"w{n}x{j}" for j in range(10)) + (" please" if i % 3 == 2 else "")
        out.append(TriageCase(f"k{i:02d}", f"c{i % 7}", 0.9 - i / 100, 1, NOW, q))
    return out


async def test_incremental_selection_matches_full_selection() -> None:
    p = RankingParams(per_cluster=3, max_candidates=8)
    ranked = score_cases(_cases(), {f"c{i}": 6 for i in range(7)}, NOW, p)
    short = shortlist(ranked, 3 * p.per_cluster)
    full = select_candidates(short, HashingEmbedder(64).encode(
        [r.case.question or "" for r in short]), params=p)

    emb = CountingEmbedder()
    sel, qv, need, fresh = await _select(emb, short, [None] * len(short), [],
                                         np.zeros((0, 64), np.float32), p)
    assert [r.case.case_id for r in sel.kept] == [r.case.case_id for r in full.kept]
    assert len(sel.kept) == 8
    assert [d.reason for d in full.dropped[:3]] == ["duplicate"] * 3
    # 8 + 25% = 10 questions keep 7 (3 duplicates), so the walk grows by 2: 12 embedded, not
    # the whole shortlist
    assert len(short) == 40
    assert len(emb.seen) == len(need) == len(fresh) == qv.shape[0] == 12

    # cached vectors are not embedded again
    emb2 = CountingEmbedder()
    cached = [HashingEmbedder(64).encode([r.case.question or ""])[0] for r in short]
    sel2, _, need2, _ = await _select(emb2, short, list(cached), [],
                                      np.zeros((0, 64), np.float32), p)
    assert [r.case.case_id for r in sel2.kept] == [r.case.case_id for r in full.kept]
    assert emb2.seen == [] and need2 == []
