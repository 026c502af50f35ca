"""The monitor's request builders: deterministic job ids, reasons, seeds (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid5

from evalloop.core.window import BucketCounts, WindowReport
from evalloop.events import AgentChanged
from services.monitor.requests import (
    JOB_NAMESPACE,
    change_request,
    negative_rate_request,
    weekly_request,
    weekly_seed,
)

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
NOW = datetime(2026, 3, 3, tzinfo=UTC)


def test_negative_rate_request_carries_the_window() -> None:
    report = WindowReport.of(T0 - timedelta(days=1), T0, BucketCounts(1000, 31, 40, 1000))
    r = negative_rate_request("who", report, threshold=0.02, requested_at=NOW)
    assert r.job_id == uuid5(JOB_NAMESPACE, "negative_rate/who/2026-03-02T10:00:00+00:00")
    assert (r.trigger, r.negatives, r.turns, r.rate, r.denominator) == (
        "negative_rate", 31, 1000, 0.031, "agent_response"
    )
    assert (r.window_start, r.window_end, r.requested_at) == (T0 - timedelta(days=1), T0, NOW)
    assert r.reason == report.describe(0.02)
    # the same crossing, built again (a redelivery), is the same job
    assert negative_rate_request("who", report, threshold=0.02, requested_at=NOW).job_id == r.job_id


def test_knowledge_base_reason_abridges_long_document_lists() -> None:
    docs = [f"doc-{i}.md" for i in range(8)]
    e = AgentChanged(event_id=UUID(int=7), agent_id="hr", conversation_id="-", turn_id="-",
                     occurred_at=T0, change_kind="knowledge_base", new_version="kb-3",
                     changed_documents=docs)
    r = change_request(e, requested_at=NOW)
    assert r.job_id == uuid5(JOB_NAMESPACE, "agent_changed/hr/knowledge_base/kb-3")
    # another event (another id) announcing the same version is the same job
    again = e.model_copy(update={"event_id": UUID(int=8)})
    assert change_request(again, requested_at=NOW).job_id == r.job_id
    assert r.changed_documents == docs
    assert "8 changed document(s) (doc-0.md, doc-1.md, doc-2.md, doc-3.md, doc-4.md and 3 more)" \
        in r.reason


def test_weekly_seed_is_deterministic_and_varies_by_agent_and_week() -> None:
    a = weekly_seed(0, "hr", T0)
    assert a == weekly_seed(0, "hr", T0)
    assert 0 <= a < 2**31
    assert len({a, weekly_seed(0, "cdc", T0), weekly_seed(0, "hr", T0 + timedelta(days=7)),
                weekly_seed(1, "hr", T0)}) == 4
    r = weekly_request("hr", previous_at=T0, interval_s=86400, sample_size=10, base_seed=0,
                       requested_at=NOW)
    assert (r.sample_seed, r.sample_size, r.trigger) == (a, 10, "weekly_sample")
    assert r.reason.startswith("scheduled production monitoring (every day)")
    r2 = weekly_request("hr", previous_at=T0, interval_s=2 * 86400, sample_size=5, base_seed=0,
                        requested_at=NOW)
    assert r2.reason.startswith("scheduled production monitoring (every 2 days)")
