"""Claims, their category, nearest passage and suggested correction (exact values)."""

from __future__ import annotations

from evalloop.core.readiness.hallucination import (
    KnowledgePassage,
    classify_claim,
    nearest_passages,
    split_claims,
    summarise,
)

UPTIME = KnowledgePassage("kb/uptime", "We are targeting 99.9% uptime for the service. "
                                       "Maintenance windows are announced.")
LEAVE = KnowledgePassage("kb/leave", "Employees receive 14 days of annual leave per year.")
OLD_LEAVE = KnowledgePassage("kb/leave@2024", "Employees receive 12 days of annual leave per "
                             "year.", status="superseded", superseded_by="kb/leave")
PASSAGES = [UPTIME, LEAVE, OLD_LEAVE]
HISTORY = {p.id: p for p in PASSAGES}


def check(claim: str, score: float | None, superseded: float | None = None):  # type: ignore[no-untyped-def]
    return classify_claim("c1", 0, claim, score, PASSAGES, support_superseded=superseded,
                          history=HISTORY)


def test_split_claims_sentences_clauses_and_no_filler() -> None:
    answer = ("We target 99.9% uptime, e.g. on weekdays. Staff get 14 days of leave; managers "
              "get 18 days.\n- Apply in the portal.\nLet me know if you need more. Is that ok? "
              "Yes.")
    assert split_claims(answer) == ["We target 99.9% uptime, e.g. on weekdays.",
                                    "Staff get 14 days of leave", "managers get 18 days.",
                                    "Apply in the portal."]
    assert split_claims("") == []


def test_exaggerated_number_with_correction_from_the_nearest_passage() -> None:
    f = check("We guarantee 99.99% uptime for the service.", 0.1)
    assert f.category == "exaggerated" and f.supported is False
    assert f.reason == "states 99.99% where kb/uptime says 99.9% (support 0.10)"
    assert f.nearest_passage_id == "kb/uptime"
    assert f.correction == "We are targeting 99.9% uptime for the service. (from kb/uptime)"


def test_exaggerated_absolute_word() -> None:
    f = check("Employees always receive 14 days of annual leave per year.", 0.3)
    assert f.category == "exaggerated"
    assert f.reason == "says 'always', which kb/leave does not (support 0.30)"


def test_outdated_is_backed_only_by_superseded_text() -> None:
    f = check("Employees receive 12 days of annual leave per year.", 0.2, superseded=0.9)
    assert f.category == "outdated"
    assert f.reason == ("backed only by superseded kb/leave@2024 (support 0.90); the current "
                        "passages give 0.20")
    assert f.correction == ("Employees receive 14 days of annual leave per year. (from kb/leave, "
                            "which superseded kb/leave@2024)")
    assert f.nearest_passage_id == "kb/leave@2024"


def test_fabricated_when_nothing_resembles_it() -> None:
    f = check("The cafeteria serves free sushi on Fridays.", 0.05)
    assert f.category == "fabricated"
    assert f.reason == ("nothing in the passages resembles it (best similarity 0.00, 0% of its "
                        "content words in any passage; support 0.05)")
    assert f.correction == "remove the claim: no passage states anything like it"


def test_conflated_and_implicit_assumption() -> None:
    f = check("Maintenance windows give employees extra leave days.", 0.2)
    assert f.category == "conflated"
    assert f.reason == ("mixes kb/leave and kb/uptime: each covers at most 50% of its content "
                        "words, together 83% (support 0.20)")
    f = check("Annual leave of 14 days can be carried over to next year.", 0.2)
    assert f.category == "implicit_assumption"
    assert f.reason.startswith("on the topic of kb/leave (similarity ")


def test_supported_and_unscored_claims_have_no_category() -> None:
    f = check("Employees receive 14 days of annual leave per year.", 0.9)
    assert (f.category, f.supported, f.correction) == (None, True, None)
    assert f.reason == "supported (score 0.90)"
    f = classify_claim("c1", 2, "Employees receive leave.", None, PASSAGES,
                       unscored_reason="timeout: 30 s")
    assert (f.category, f.supported, f.reason) == (None, None, "unscored: timeout: 30 s")
    assert f.passages == ("kb/uptime", "kb/leave", "kb/leave@2024")


def test_nearest_passages_ranks_by_similarity() -> None:
    ranked = nearest_passages("annual leave days", PASSAGES)
    assert [p.id for p, _ in ranked][:2] in (["kb/leave", "kb/leave@2024"],
                                             ["kb/leave@2024", "kb/leave"])
    assert ranked[-1][0].id == "kb/uptime" and ranked[-1][1] == 0.0
    assert nearest_passages("anything", []) == []


def test_summary_counts_every_category() -> None:
    findings = [check("We guarantee 99.99% uptime for the service.", 0.1),
                check("The cafeteria serves free sushi on Fridays.", 0.05),
                check("Employees receive 14 days of annual leave per year.", 0.9),
                classify_claim("c2", 0, "Employees receive leave.", None, PASSAGES)]
    s = summarise(findings)
    assert (s.claims, s.supported, s.unscored, s.hallucinated) == (4, 1, 1, 2)
    assert dict(s.by_category) == {"fabricated": 1, "exaggerated": 1, "conflated": 0,
                                   "outdated": 0, "implicit_assumption": 0}
    assert [f.category for f in s.findings] == ["exaggerated", "fabricated"]


def test_shipped_knowledge_has_history_for_the_outdated_check() -> None:
    from evalloop.readiness.knowledge import Knowledge

    k = Knowledge.shipped(["hr"])
    (old, current), unknown = k.resolve(["hr-policy/leave/annual-leave/1@2019",
                                         "hr-policy/leave/annual-leave/1", "kb-auth-001"])
    assert unknown == ["kb-auth-001"]
    assert (old.status, old.superseded_by, current.status) == (
        "superseded", "hr-policy/leave/annual-leave/1", "current")
    assert "12 working days 16 working days" in old.text
    assert "14 working days 18 working days" in current.text
    assert k.by_id["hr-policy/benefits/fitness-subsidy"].status == "retired"
    claim = "Staff on Grade N4 and above get 16 working days of annual leave."
    f = classify_claim("r001", 0, claim, 0.2, [old, current], support_superseded=0.8,
                       history=k.by_id)
    assert f.category == "outdated"
    assert f.correction is not None and f.correction.endswith(
        "(from hr-policy/leave/annual-leave/1, which superseded "
        "hr-policy/leave/annual-leave/1@2019)")


def test_excerpt_keeps_the_sentences_nearest_the_answer_in_order() -> None:
    from evalloop.core.readiness.hallucination import excerpt

    text = ("One cat sat. Leave is 14 days per year for staff. The sky is blue today. Grades N4 "
            "and above get 18 days. Nothing else here matters at all.")
    assert excerpt(text, "How many days of annual leave for grade N4?", 80) == (
        "Leave is 14 days per year for staff. Grades N4 and above get 18 days.")
    assert excerpt(text, "anything", 1000) == text
    long_first = "A" * 50 + " sentence. Short one."
    assert excerpt(long_first, "A", 20) == "A" * 50 + " sentence."
