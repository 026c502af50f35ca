"""The shipped knowledge bases: well-formed, hierarchical ids, and reproducible from the sources."""

from __future__ import annotations

import importlib.util
from importlib import resources

import pytest

from evalloop.agent.kb import KB_NAMES, load_kb, read_chunks, shared_data_dir
from evalloop.errors import ConfigError


@pytest.mark.parametrize("name", KB_NAMES)
def test_shipped_kb_loads_with_attribution(name: str) -> None:
    chunks = load_kb(name)
    assert len(chunks) == (222 if name == "hr" else 60)
    assert len({c.id for c in chunks}) == len(chunks)
    assert all(c.text and c.id.startswith(("hr-policy/", "hr-procedures/", f"{name}/"))
               for c in chunks)
    folder = resources.files("evalloop") / "data" / "kb" / name
    attribution = (folder / "ATTRIBUTION.md").read_text(encoding="utf-8")
    assert ("Mozilla Public License 2.0" if name == "hr" else "Apache License 2.0") in attribution


def test_hr_ids_follow_the_documents_headings() -> None:
    ids = [c.id for c in load_kb("hr")]
    assert "hr-policy/leave/marriage-leave" in ids
    assert "hr-policy/working-conditions/probation-and-confirmation" in ids
    # Long sections are split into numbered parts under the section's id.
    assert [i for i in ids if i.startswith("hr-policy/leave/maternity-leave")] == [
        "hr-policy/leave/maternity-leave/1", "hr-policy/leave/maternity-leave/2",
    ]
    # A heading missing from the PDF's text layer is recovered from the section's contents.
    assert "hr-policy/leave/family-care-leave-childcare-eldercare/1" in ids
    assert "hr-procedures/problem-resolution/complaint-or-anti-harassment-policy/1" in ids


def test_unknown_kb_and_bad_lines_are_named() -> None:
    with pytest.raises(ConfigError, match="unknown knowledge base 'payroll'"):
        load_kb("payroll")
    with pytest.raises(ConfigError, match=r"x.jsonl:2: expected a JSON object"):
        read_chunks(['{"id": "a", "document": "d", "title": "t", "text": "x"}', "[1]"],
                    origin="x.jsonl")
    with pytest.raises(ConfigError, match="duplicate chunk id 'a'"):
        read_chunks(['{"id": "a", "document": "d", "title": "t", "text": "x"}'] * 2,
                    origin="x.jsonl")


@pytest.mark.skipif(
    shared_data_dir() is None or importlib.util.find_spec("pypdf") is None,
    reason="needs ../shared/data and pypdf (dev extra)",
)
@pytest.mark.slow  # pypdf reads 100 pages: about 10 s
def test_shipped_kb_is_what_the_builder_produces() -> None:
    from evalloop.agent.kb_build import feedbackqa_subset, hr_chunks

    data = shared_data_dir()
    assert data is not None
    assert hr_chunks(data) == load_kb("hr")
    assert feedbackqa_subset(data / "feedbackqa" / "faq_base", "who") == load_kb("feedbackqa-who")


def test_everyday_phrasings_are_expanded_with_the_policy_words() -> None:
    from evalloop.agent.retrieval import expand_query

    assert expand_query("My father passed away this morning. What leave can I take?") == (
        "My father passed away this morning. What leave can I take? "
        "death compassionate leave bereavement")
    assert expand_query("How many days of annual leave do I get?") == \
        "How many days of annual leave do I get?"


def test_the_reference_agent_answers_a_bereavement_in_everyday_words() -> None:
    from evalloop.agent import AgentConfig
    from evalloop.agent.agent import ReferenceAgent

    reply = ReferenceAgent(AgentConfig(kb="hr")).respond(
        "My father passed away this morning. What leave can I take?")
    assert reply.text.startswith("According to the policy (")
    assert "compassionate leave" in reply.text.lower()
