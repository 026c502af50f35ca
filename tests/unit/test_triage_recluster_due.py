"""When an agent's re-clustering is due by count (docs/review.md#re-clustering)."""

from __future__ import annotations

from services.triage.online import IngestOutcome


def _due(new: int, clustered: int, every: int = 200, growth: float = 0.1) -> bool:
    return IngestOutcome(embedded=0, assigned=0, provisional=0, unchanged=0, new_cases=new,
                         clustered=clustered).recluster_due(every, growth)


def test_every_n_cases_up_to_ten_times_that() -> None:
    assert not _due(199, 0)
    assert _due(200, 0)
    assert _due(200, 2000)  # 0.1 x 2,000 = 200: the count rule alone
    assert not _due(200, 2001)


def test_a_share_of_the_clustered_cases_above() -> None:
    assert not _due(1999, 20_000)
    assert _due(2000, 20_000)
    assert _due(200, 20_000, growth=0.0)  # growth 0: every 200 new cases, whatever the size
