"""Converters: FeedbackQA and tau-bench -> turns, with exact counts from the published data.

The counts below were read off the data sets in ``../shared/data`` (data README) and pin the
converters' mapping: a changed mapping changes a count.
"""

from __future__ import annotations

import collections
import gzip
import hashlib
import json
import random
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID, uuid5

import pytest

from evalloop.agent.kb import shared_data_dir
from evalloop.events import UserRating
from evalloop.replay.corpus import SAMPLE_DIR, SAMPLE_FILE, load_sample, read_turns, write_turns
from evalloop.replay.feedbackqa import load_feedbackqa
from evalloop.replay.schedule import turn_events
from evalloop.replay.taubench import load_taubench, who_asked
from evalloop.replay.turns import Rating, Turn, event_id_for, thumbs_for

DATA = shared_data_dir()
needs_data = pytest.mark.skipif(DATA is None, reason="../shared/data (public data) not present")


@pytest.fixture(scope="module")
def fqa() -> list[Turn]:
    assert DATA is not None
    return load_feedbackqa(DATA / "feedbackqa")


@pytest.fixture(scope="module")
def tau() -> list[Turn]:
    assert DATA is not None
    return load_taubench(DATA / "tau-bench-airline" / "gpt-4o-airline.json")


def test_thumbs_mapping() -> None:
    assert [thumbs_for(x) for x in ("Excellent", "Acceptable", "Could be Improved", "Bad")] == [
        "up", "up", "down", "down",
    ]
    with pytest.raises(ValueError, match="expected a FeedbackQA rating label"):
        thumbs_for("Good")


def test_event_ids_are_uuid5_of_the_record_identity() -> None:
    a = event_id_for("feedbackqa/WHO_feedback_valid.json#0", "rating/1")
    assert a == event_id_for("feedbackqa/WHO_feedback_valid.json#0", "rating/1")
    assert a.version == 5
    assert a != event_id_for("feedbackqa/WHO_feedback_valid.json#0", "rating/0")
    # Pinned: a re-replay must reproduce the ids stored by earlier replays.
    namespace = UUID("0b5f7d0e-6a34-5c1e-9a0f-3c2d8e71b4a6")
    assert a == uuid5(namespace, "feedbackqa/WHO_feedback_valid.json#0|rating/1")
    assert a == UUID("6ffdcade-70ec-5c70-86ed-3562d385de76")


@needs_data
def test_feedbackqa_counts_per_source(fqa: list[Turn]) -> None:
    by = collections.Counter((t.agent_id, t.pool) for t in fqa)
    assert dict(by) == {
        ("covid-qa-australia", "negative"): 318, ("covid-qa-australia", "mixed"): 288,
        ("covid-qa-australia", "positive"): 204, ("covid-qa-australia", "served"): 1783,
        ("covid-qa-cdc", "negative"): 312, ("covid-qa-cdc", "mixed"): 365,
        ("covid-qa-cdc", "positive"): 301, ("covid-qa-cdc", "served"): 2153,
        ("covid-qa-uk", "negative"): 395, ("covid-qa-uk", "mixed"): 505,
        ("covid-qa-uk", "positive"): 405, ("covid-qa-uk", "served"): 2875,
        ("covid-qa-who", "negative"): 93, ("covid-qa-who", "mixed"): 115,
        ("covid-qa-who", "positive"): 104, ("covid-qa-who", "served"): 688,
    }
    ratings = collections.Counter()
    for t in fqa:
        ratings[t.agent_id] += len(t.ratings)
    # valid files: 2 raters per answer, test files: 3.
    assert dict(ratings) == {
        "covid-qa-australia": 2094, "covid-qa-cdc": 2529, "covid-qa-uk": 3375,
        "covid-qa-who": 807,
    }
    thumbs = collections.Counter(r.thumbs for t in fqa for r in t.ratings)
    assert thumbs == {"up": 4226, "down": 4579}
    assert len({t.key for t in fqa}) == len(fqa) == 3405 + 7499


@needs_data
def test_feedbackqa_record_mapping(fqa: list[Turn]) -> None:
    t = next(t for t in fqa if t.key == "feedbackqa/WHO_feedback_valid.json#0")
    assert t.agent_id == "covid-qa-who"
    assert t.question == "What symptoms do Covid-19 and the flu have in common?"
    assert [c.id for c in t.chunks] == ["feedbackqa-who/146"]
    assert t.answer == t.chunks[0].text
    assert t.answer.startswith("COVID-19 is a disease caused by a new coronavirus, which has not")
    assert "\n" not in t.answer
    assert [(r.label, r.thumbs) for r in t.ratings] == [("Acceptable", "up"), ("Bad", "down")]
    assert t.ratings[1].comment is not None
    assert t.ratings[1].comment.startswith("This response describes symptoms specific to")
    assert t.pool == "mixed"
    served = next(t for t in fqa if t.key == "feedbackqa/faq_base/WHO_train.json#0")
    assert served.ratings == () and served.pool == "served"
    assert served.chunks[0].id == "feedbackqa-who/52"


@needs_data
def test_taubench_episodes(tau: list[Turn]) -> None:
    assert len(tau) == 200
    assert {t.agent_id for t in tau} == {"airline-support"}
    esc = collections.Counter(t.escalation.requested_by for t in tau if t.escalation)
    assert esc == {"agent": 40, "user": 8}
    assert sum(t.outcome.resolved for t in tau if t.outcome) == 84
    assert sum(t.outcome.abandoned for t in tau if t.outcome) == 5
    ep = next(t for t in tau if t.key == "tau-bench/gpt-4o-airline.json#task4/trial0")
    assert ep.question == (
        "I want to modify a flight booking I made for a trip from New York to Chicago."
    )
    assert ep.answer.startswith("I'm unable to change the passenger's identity")
    assert ep.escalation is not None and ep.escalation.requested_by == "agent"
    assert ep.escalation.reason is not None and "Omar Rossi" in ep.escalation.reason
    assert ep.outcome is not None and not ep.outcome.resolved
    assert all("###STOP###" not in t.question for t in tau)


@needs_data
def test_every_record_as_events_per_source(fqa: list[Turn], tau: list[Turn]) -> None:
    """Each turn emitted once: agent_response per record, user_rating per rater, escalation
    per hand-off, conversation_outcome per episode (exact counts per source)."""
    at = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
    rng = random.Random(1)
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    thumbs: collections.Counter[tuple[str, str]] = collections.Counter()
    ids = set()
    for t in fqa + tau:
        for e in turn_events(t, t.key, at, rng, "v1"):
            counts[(e.agent_id, e.event_type)] += 1
            ids.add(e.event_id)
            if isinstance(e, UserRating):
                thumbs[(e.agent_id, e.thumbs or "")] += 1
    assert dict(counts) == {
        ("covid-qa-australia", "agent_response"): 810 + 1783,
        ("covid-qa-australia", "user_rating"): 2094,
        ("covid-qa-cdc", "agent_response"): 978 + 2153,
        ("covid-qa-cdc", "user_rating"): 2529,
        ("covid-qa-uk", "agent_response"): 1305 + 2875,
        ("covid-qa-uk", "user_rating"): 3375,
        ("covid-qa-who", "agent_response"): 312 + 688,
        ("covid-qa-who", "user_rating"): 807,
        ("airline-support", "agent_response"): 200,
        ("airline-support", "escalation"): 48,
        ("airline-support", "conversation_outcome"): 200,
    }
    assert len(ids) == sum(counts.values())  # deterministic ids never collide
    assert thumbs[("covid-qa-who", "up")] == 53 + 93 + 95 + 171  # Acceptable + Excellent
    assert thumbs[("covid-qa-who", "down")] == 44 + 68 + 75 + 208  # Could be Improved + Bad
    again = turn_events(fqa[0], fqa[0].key, at, random.Random(2), "v1")
    assert [e.event_id for e in again] == [
        e.event_id for e in turn_events(fqa[0], fqa[0].key, at, random.Random(3), "v1")
    ]
    first = again[1]
    assert isinstance(first, UserRating) and first.comment == fqa[0].ratings[0].comment
    assert again[0].context_chunks is not None
    assert again[0].context_chunks[0].id == fqa[0].chunks[0].id


def test_who_asked_for_the_handoff() -> None:
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"function": {"name": "transfer_to_human_agents", "arguments": "{}"}}]}
    user_first = [
        {"role": "user", "content": "Cancel it."},
        {"role": "assistant", "content": "Policy does not allow that."},
        {"role": "user", "content": "Then let me speak to a supervisor."},
        call,
    ]
    assert who_asked(user_first, 3) == "user"
    agent_first = [
        {"role": "user", "content": "Release my seat for someone else."},
        {"role": "assistant", "content": "I can transfer you to a human agent."},
        {"role": "user", "content": "Yes please, a human."},
        call,
    ]
    assert who_asked(agent_first, 3) == "agent"
    assert who_asked([{"role": "user", "content": "Change my flight."}, call], 1) == "agent"


def test_sample_round_trip(tmp_path: Path) -> None:
    turns = load_sample()
    write_turns(tmp_path / "t.jsonl.gz", turns)
    with gzip.open(tmp_path / "t.jsonl.gz", "rt", encoding="utf-8") as fh:
        again = read_turns(fh, origin="t")
    assert again == turns
    with pytest.raises(ValueError, match="line 1: expected a passage or turn record"):
        read_turns(['{"turn": {"key": "x"}}'], origin="bad")


def test_sample_matches_its_manifest() -> None:
    manifest = json.loads((SAMPLE_DIR / "manifest.json").read_text())
    turns = load_sample()
    counts: dict[str, dict[str, int]] = collections.defaultdict(dict)
    for (agent, pool), n in collections.Counter((t.agent_id, t.pool) for t in turns).items():
        counts[agent][pool] = n
    assert counts == manifest["turns"]
    assert sum(len(t.ratings) for t in turns) == manifest["ratings"]
    total = sum(f["bytes"] for f in manifest["files"].values())
    assert total < 3_000_000
    for name, meta in manifest["files"].items():
        assert hashlib.sha256((SAMPLE_DIR / name).read_bytes()).hexdigest() == meta["sha256"]
    attribution = (SAMPLE_DIR / "ATTRIBUTION.md").read_text()
    assert "McGill-NLP/feedbackqa @ 0e37bee" in attribution
    assert "sierra-research/tau-bench @ 59a200c" in attribution
    assert "Copyright (c) 2024 Sierra" in (SAMPLE_DIR / "LICENSE-MIT-tau-bench.txt").read_text()
    assert "Apache License" in (SAMPLE_DIR / "LICENSE-Apache-2.0.txt").read_text()


@needs_data
def test_build_sample_is_deterministic(tmp_path: Path) -> None:
    from evalloop.replay.build_sample import build

    assert DATA is not None
    manifest = build(DATA, tmp_path)
    assert (tmp_path / SAMPLE_FILE).read_bytes() == (SAMPLE_DIR / SAMPLE_FILE).read_bytes()
    golden = "golden/covid-qa-uk.json"
    assert (tmp_path / golden).read_bytes() == (SAMPLE_DIR / golden).read_bytes()
    assert manifest["turns"]["airline-support"] == {"episode": 200}


def test_rating_dataclass_thumbs() -> None:
    assert Rating("Bad", None).thumbs == "down"
