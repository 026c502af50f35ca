"""Hallucination analysis: claims, their support, the nearest passage, a category and a fix.

``docs/rules.md#hallucination-categories`` names five categories; how each is told apart is
evalloop's (``docs/readiness.md#hallucination-categories``). For every claim of an answer the
judge says how well the retrieved passages support it (``Judge.claim_support``: calibrated
P(supported) 0-1). A claim scoring below :data:`SUPPORTED_AT` is a hallucination, and the first
matching rule names its category:

===================  =====================================================================
category             rule
===================  =====================================================================
outdated             the claim is supported by a *superseded or retired* passage
                     (``support_superseded`` >= 0.5) but not by the current ones
fabricated           nothing in the passages resembles it: best TF-IDF cosine < 0.10 and
                     under half its content words appear in any passage
exaggerated          the nearest passage covers the topic but the claim states a different
                     number, or an absolute/intensifier ("guaranteed", "always", "all",
                     "100%") the passage does not
conflated            no single passage covers its content words (< 60 %), two passages
                     together do (>= 80 %): details of different sources merged
implicit assumption  anything else: on topic, not stated (a logical leap)
===================  =====================================================================

The **nearest passage** is the passage with the highest TF-IDF cosine to the claim (fitted on
the claim and the case's passages); the **suggested correction** is the sentence of the
nearest *current* passage most similar to the claim (for an outdated claim: of the passage
that superseded it, when known; for a fabricated one: remove it).

Pure: values in, values out (scikit-learn's TF-IDF, no model files).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

# numpy and scikit-learn are imported where they compute: importing them takes about 1 s, and
# ``evalloop gate --help`` / ``evalloop ab --help`` import this module

__all__ = [
    "CATEGORIES",
    "SUPPORTED_AT",
    "Category",
    "ClaimFinding",
    "HallucinationSummary",
    "KnowledgePassage",
    "classify_claim",
    "excerpt",
    "nearest_passages",
    "split_claims",
    "summarise",
]

Category = Literal["fabricated", "exaggerated", "conflated", "outdated", "implicit_assumption"]
#: The five categories of ``docs/rules.md#hallucination-categories``, in report order.
CATEGORIES: tuple[Category, ...] = ("fabricated", "exaggerated", "conflated", "outdated",
                                    "implicit_assumption")
#: A claim whose calibrated support is below this is a hallucination.
SUPPORTED_AT = 0.5
_FABRICATED_SIM = 0.10
_FABRICATED_COVER = 0.5
_SINGLE_COVER = 0.6
_PAIR_COVER = 0.8
_MIN_CLAIM_WORDS = 3
_ABSOLUTES = frozenset({
    "always", "never", "guaranteed", "guarantee", "guarantees", "all", "every", "everyone",
    "any", "unlimited", "completely", "fully", "entirely", "certainly", "definitely",
    "impossible", "must", "only", "100%", "forever", "permanently", "immediately", "instantly",
    "no", "none", "nobody", "totally", "absolutely", "automatically", "maximum", "minimum",
})
_WORD = re.compile(r"[A-Za-z0-9$%][A-Za-z0-9$%.,'-]*[A-Za-z0-9%]|[A-Za-z0-9$%]")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*%?")
# A sentence ends at . ! ? followed by white space and a capital, digit or quote (so "99.9%"
# and "e.g. the" do not end one); line breaks end a claim too.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n+")
_CLAUSE_END = re.compile(r"\s*;\s+")
_COURTESY = re.compile(
    r"^(?:let me know|feel free|i hope|hope this|is there anything|if you have (?:any )?"
    r"(?:other|more|further)|thank you|thanks)", re.I)


@dataclass(frozen=True, slots=True)
class KnowledgePassage:
    """A passage the answer could rest on, with its history.

    Attributes:
        id: stable id (chunk id).
        text: the passage text.
        status: ``current``; ``superseded`` (a newer version replaced it but it was not retired
            from the index); ``retired`` (withdrawn, no successor).
        superseded_by: the id of the passage that replaced it, if known.
    """

    id: str
    text: str
    status: Literal["current", "superseded", "retired"] = "current"
    superseded_by: str | None = None


@dataclass(frozen=True, slots=True)
class ClaimFinding:
    """One claim of one answer, checked.

    Attributes:
        case_id: the case.
        index: the claim's position in the answer (0-based).
        claim: the claim text.
        score: calibrated support 0-1 (``None``: the judge could not score it).
        supported: ``score >= 0.5`` (``None`` when unscored).
        category: the hallucination category (``None`` when supported or unscored).
        reason: why (the figures), or why unscored.
        nearest_passage_id, nearest_passage: the passage most similar to the claim.
        correction: a suggested correction drawn from the nearest current passage.
        passages: ids of the passages the claim was checked against.
    """

    case_id: str
    index: int
    claim: str
    score: float | None
    supported: bool | None
    category: Category | None
    reason: str
    nearest_passage_id: str | None
    nearest_passage: str | None
    correction: str | None
    passages: tuple[str, ...] = ()


def split_claims(answer: str) -> list[str]:
    """Split an answer into claims: sentences, then clauses separated by semicolons.

    Fragments of fewer than three words, questions and courtesy closers ("Let me know if ...")
    assert nothing and are left out; a trailing bullet marker or list number is dropped.
    """
    out: list[str] = []
    for sentence in _SENTENCE_END.split(answer.strip()):
        for clause in _CLAUSE_END.split(sentence):
            text = re.sub(r"^\s*(?:[-*•]|\d+[.)])\s+", "", clause).strip()
            if (not text or text.endswith("?") or _COURTESY.match(text)
                    or len(_WORD.findall(text)) < _MIN_CLAIM_WORDS):
                continue
            out.append(text)
    return out


def _content(text: str) -> list[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return [w for w in (t.lower().strip(".,'") for t in _WORD.findall(text))
            if w and w not in ENGLISH_STOP_WORDS]


def _coverage(claim_words: set[str], passage_words: set[str]) -> float:
    return len(claim_words & passage_words) / len(claim_words) if claim_words else 0.0


def nearest_passages(claim: str, passages: Sequence[KnowledgePassage]
                     ) -> list[tuple[KnowledgePassage, float]]:
    """Passages by TF-IDF cosine similarity (0-1) to ``claim``, most similar first (ties keep
    the given order); ``[]`` for no passages."""
    if not passages:
        return []
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, stop_words="english",
                          token_pattern=r"(?u)\b\w[\w$%.-]*\w\b|\b\w\b")
    try:
        matrix = vec.fit_transform([claim, *(p.text for p in passages)])
    except ValueError:  # nothing but stop words anywhere
        return [(p, 0.0) for p in passages]
    sims = np.asarray((matrix[1:] @ matrix[0].T).toarray()).ravel()
    order = np.argsort(-sims, kind="stable")
    return [(passages[i], float(sims[i])) for i in order]


def excerpt(text: str, query: str, max_chars: int) -> str:
    """The sentences of ``text`` most similar to ``query`` (TF-IDF), in their original order, up
    to ``max_chars`` characters (at least one sentence); ``text`` itself when it fits.

    Used to show a judge the part of a long passage an answer draws on: a shorter prompt is
    faster, and the sentences nearest the answer are the ones that can support it.
    """
    if len(text) <= max_chars:
        return text
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]
    ranked = nearest_passages(query, [KnowledgePassage(str(i), s)
                                      for i, s in enumerate(sentences)])
    keep: list[int] = []
    used = 0
    for p, _ in ranked:
        i = int(p.id)
        if keep and used + len(sentences[i]) + 1 > max_chars:
            continue
        keep.append(i)
        used += len(sentences[i]) + 1
    return " ".join(sentences[i] for i in sorted(keep))[: max(max_chars, len(sentences[keep[0]]))]


def _best_sentence(claim: str, passage: KnowledgePassage) -> str:
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", passage.text.strip()) if s.strip()]
    if len(sentences) <= 1:
        return passage.text.strip()
    ranked = nearest_passages(claim, [KnowledgePassage(str(i), s)
                                      for i, s in enumerate(sentences)])
    return ranked[0][0].text.strip()


def _numbers(text: str) -> set[str]:
    return {n.rstrip(".,").replace(",", "") for n in _NUMBER.findall(text)}


def _exaggeration(claim: str, passage: KnowledgePassage) -> str | None:
    claim_nums, passage_nums = _numbers(claim), _numbers(passage.text)
    differ = sorted(claim_nums - passage_nums)
    if differ and passage_nums:
        return (f"states {', '.join(differ)} where {passage.id} says "
                f"{', '.join(sorted(passage_nums))}")
    words = {w.lower().strip(".,") for w in _WORD.findall(claim)}
    passage_words = {w.lower().strip(".,") for w in _WORD.findall(passage.text)}
    extra = sorted((words & _ABSOLUTES) - passage_words)
    if extra:
        return f"says {', '.join(repr(w) for w in extra)}, which {passage.id} does not"
    return None


def classify_claim(
    case_id: str,
    index: int,
    claim: str,
    score: float | None,
    passages: Sequence[KnowledgePassage],
    *,
    support_superseded: float | None = None,
    unscored_reason: str = "not scored",
    history: Mapping[str, KnowledgePassage] | None = None,
) -> ClaimFinding:
    """Check one claim: supported, or a hallucination of which category, and how to fix it.

    Args:
        case_id, index, claim: where the claim comes from and its text.
        score: the judge's calibrated support of ``claim`` by the *current* passages of
            ``passages`` (``None``: unscored).
        passages: every passage the answer had (current, superseded and retired).
        support_superseded: the judge's support of ``claim`` by the superseded / retired
            passages only (``None``: none were among ``passages`` or not asked).
        unscored_reason: why ``score`` is ``None``.
        history: passages by id to look successors up in (``superseded_by``).

    Returns:
        The finding (see the module's table for the category rules).
    """
    ids = tuple(p.id for p in passages)
    ranked = nearest_passages(claim, passages)
    current = [(p, s) for p, s in ranked if p.status == "current"]
    nearest, sim = ranked[0] if ranked else (None, 0.0)
    near_current = current[0][0] if current else None
    correction = (f"{_best_sentence(claim, near_current)} (from {near_current.id})"
                  if near_current is not None else None)

    def finding(category: Category | None, reason: str, *, supported: bool | None,
                fix: str | None = correction) -> ClaimFinding:
        return ClaimFinding(
            case_id, index, claim, score, supported, category, reason,
            nearest.id if nearest else None, nearest.text if nearest else None,
            fix if category is not None else None, ids,
        )

    if score is None:
        return finding(None, f"unscored: {unscored_reason}", supported=None)
    if score >= SUPPORTED_AT:
        return finding(None, f"supported (score {score:.2f})", supported=True)
    old = [(p, s) for p, s in ranked if p.status != "current"]
    if support_superseded is not None and support_superseded >= SUPPORTED_AT and old:
        stale = old[0][0]
        successor = (history or {}).get(stale.superseded_by or "")
        fix = (f"{_best_sentence(claim, successor)} (from {successor.id}, which superseded "
               f"{stale.id})" if successor is not None else
               f"retire {stale.id} from the knowledge base" + (f"; {correction}" if correction
                                                                 else ""))
        return finding("outdated",
                       f"backed only by {stale.status} {stale.id} (support "
                       f"{support_superseded:.2f}); the current passages give {score:.2f}",
                       supported=False, fix=fix)
    words = set(_content(claim))
    covers = [(p, _coverage(words, set(_content(p.text)))) for p, _ in current or ranked]
    best_cover = max((c for _, c in covers), default=0.0)
    if sim < _FABRICATED_SIM and best_cover < _FABRICATED_COVER:
        return finding("fabricated",
                       f"nothing in the passages resembles it (best similarity {sim:.2f}, "
                       f"{best_cover:.0%} of its content words in any passage; support "
                       f"{score:.2f})", supported=False,
                       fix="remove the claim: no passage states anything like it")
    if near_current is not None:
        why = _exaggeration(claim, near_current)
        if why is not None:
            return finding("exaggerated", f"{why} (support {score:.2f})", supported=False)
    if len(covers) >= 2 and best_cover < _SINGLE_COVER:
        by_cover = sorted(covers, key=lambda pc: -pc[1])
        (a, _), (b, _) = by_cover[0], by_cover[1]
        union = _coverage(words, set(_content(a.text)) | set(_content(b.text)))
        if union >= _PAIR_COVER:
            return finding("conflated",
                           f"mixes {a.id} and {b.id}: each covers at most {best_cover:.0%} of "
                           f"its content words, together {union:.0%} (support {score:.2f})",
                           supported=False)
    target = near_current.id if near_current else (nearest.id if nearest else "no passage")
    return finding("implicit_assumption",
                   f"on the topic of {target} (similarity {sim:.2f}) but not stated there "
                   f"(support {score:.2f})", supported=False)


@dataclass(frozen=True, slots=True)
class HallucinationSummary:
    """Run-level counts.

    Attributes:
        claims: claims checked.
        supported: claims supported.
        unscored: claims the judge could not score.
        by_category: category -> hallucinated claims (every category present, 0 when none).
        findings: the hallucinated claims (each a trace), in case then claim order.
    """

    claims: int
    supported: int
    unscored: int
    by_category: Mapping[str, int]
    findings: tuple[ClaimFinding, ...] = field(default_factory=tuple)

    @property
    def hallucinated(self) -> int:
        """Claims found unsupported."""
        return sum(self.by_category.values())


def summarise(findings: Sequence[ClaimFinding]) -> HallucinationSummary:
    """Count ``findings`` by outcome and category."""
    counts = Counter(f.category for f in findings if f.category is not None)
    return HallucinationSummary(
        claims=len(findings), supported=sum(f.supported is True for f in findings),
        unscored=sum(f.supported is None for f in findings),
        by_category={c: counts.get(c, 0) for c in CATEGORIES},
        findings=tuple(f for f in findings if f.category is not None),
    )
