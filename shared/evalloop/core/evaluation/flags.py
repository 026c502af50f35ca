"""Quality flags and the human-review decision.

The HR agent eval framework (docs/rules.md#human-review): "Quality flags like
response_very_short don't fail the build; they mark the case for
human review", and "Cases marked requires_human_review: true need manual inspection, automated
scoring cannot reliably evaluate tone, emotional appropriateness, or nuanced escalation
decisions." A flag never changes a case's status; it only adds a review reason.

Every flag is listed in :data:`FLAG_DOCS` with what it means and its threshold.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Literal

from evalloop.core.evaluation.cases import EvalCase
from evalloop.core.evaluation.gates import Analysis, GateResult, split_sentences
from evalloop.core.evaluation.speech_patterns import ASKS_WHO, ENGLISH_STOPWORDS

__all__ = [
    "FLAG_DOCS",
    "VERY_LONG_WORDS",
    "VERY_SHORT_WORDS",
    "Flag",
    "quality_flags",
    "review_reasons",
]

#: Fewer words than this is "very short" (``docs/rules.md#refusal-and-escalation-gates``
#: names the flag; 10 words is evalloop's threshold: below it an HR answer rarely states a rule
#: and its condition).
VERY_SHORT_WORDS = 10
#: More words than this is "very long" (a chat answer a user will not read to the end).
VERY_LONG_WORDS = 400

FLAG_DOCS: dict[str, str] = {
    "response_empty": "the agent answered with no text at all",
    "response_very_short": f"fewer than {VERY_SHORT_WORDS} words; not raised when "
                           "the short answer is exactly the expected refusal or hand-off "
                           "the rules found (raised when only a second opinion found it)",
    "response_very_long": f"more than {VERY_LONG_WORDS} words",
    "possibly_truncated": "20+ words ending without closing punctuation or a link (a cut "
                          "stream or a token limit); a list item, a quotation's source, a "
                          "whole Markdown table row (closing pipe, the header's cell count) "
                          "or a JSON document that parses ends an answer whole",
    "repeated_text": "a sentence of 4+ words appears twice, or an 8-word run three times "
                     "(generation loop)",
    "contains_placeholder": "template text left in: [insert ...], (insert ...), {{...}}, "
                            "TODO/TBD, lorem ipsum, ____ blanks",
    "possible_pii": "an e-mail address (not a team mailbox such as payroll@...), phone "
                    "number (not a service's: a short number such as 999, 111 or 105; a "
                    "freephone 0800/0808, 03, 0845/0870 or 09 number; a toll-free 1-800 "
                    "number; or a landline the words around it call a helpline, emergency "
                    "line, team or organisation, naming no person; a UK mobile, 07 or +44 7, "
                    "always counts), national id (NRIC/FIN, SIN) or card number; the detail "
                    "says whether it echoes the user's input",
    "no_citation_when_context_expected": "the case names context chunks but the answer cites "
                                         "none of them nor any policy/section/source",
    "language_mismatch": "the answer is in another script or language than the question; "
                         "headings, telemetry, links and structured data (a JSON document, "
                         "'key: value' lines) are no prose: of data only a value that is a "
                         "sentence of its own (8+ words) is read",
    "states_no_answer": "the agent says it could not find or does not know the answer (check "
                        "the knowledge base really lacks it)",
    "partial_refusal": "declined part of a request it should answer, but still answered",
    "unneeded_escalation": "offered or made a hand-off on a case that needs none, but answered",
    "boilerplate_ai_disclaimer": "'As an AI (language model)...' boilerplate",
}


@dataclass(frozen=True, slots=True)
class Flag:
    """One quality flag: ``name`` (a key of :data:`FLAG_DOCS`) and a one-line ``detail``."""

    name: str
    detail: str


#: Closing punctuation; an answer (stripped) ending in one of these, or in an emoji
#: (U+1F300-U+1FAFF), is not cut off.
_TERMINAL_CHARS = frozenset(".!?)]\"'`:*\u2026\u3002")
_PLACEHOLDER = re.compile(
    r"\[(?:insert|name|todo|tbd|placeholder|your [a-z ]+|x+)\b[^\]]*\]|\(insert [^)]*\)|"
    r"<insert[^>]*>|\{\{[^}]*\}\}|\bTODO\b|\bTBD\b|lorem ipsum|_{4,}|\bXXX+\b", re.IGNORECASE)
#: Every placeholder pattern contains one of these (a cheap pre-check).
_PLACEHOLDER_MARKERS = ("[", "(insert", "<insert", "{{", "todo", "tbd", "lorem", "____", "xxx")
_PII: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("email", re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")),
    ("national_id", re.compile(r"\b[STFGM]\d{7}[A-Z]\b|\b\d{3}-\d{3}-\d{3}\b")),
    ("card_number", re.compile(r"\b(?:\d{4}[ -]){3}\d{1,4}\b")),
)
#: A phone number (a hit with 8+ digits; fewer is a figure or a short service number such as
#: 999, 111, 105 or 116 123, and never flagged). Three forms: "+country" with a first group of
#: 1-4 digits and an optional UK "(0)" ("+44 20 7946 0958", "+44 (0)161 496 0000"); a UK
#: number with a 5-digit prefix ("07700 900123", "01632 960123"), which 3-4-digit groups
#: miss; and groups of 3-4 digits with an optional "+country" or "(area)" ("0161 496 0000",
#: "(415) 555-0132", "9123 4567").
_PHONE = re.compile(
    r"(?<![\w$.,/-])(?:\+\d{1,3}[ -]?(?:\(0\)[ -]?)?\d{1,4}[ -]?\d{3,4}[ -]?\d{3,4}"
    r"|0\d{4}[ -]?\d{3}[ -]?\d{3}"
    r"|(?:\+\d{1,3}[ -]?)?(?:\(\d{2,4}\)[ -]?)?\d{3,4}[ -]?\d{3,4}(?:[ -]?\d{3,4})?)"
    r"(?![\w%/-])")
#: Leading digits (national form, "+44" read as "0") of the UK ranges Ofcom gives only to
#: organisations' services: 080 freephone (0800, 0808), 03 (0300 public bodies and charities,
#: 0330/0333, 0343-0345, 0370-0372), 084 and 087 business rate (0845, 0870), 09 premium
#: rate. Nobody's private line is in them, whatever the sentence calls it.
_UK_SERVICE_PREFIXES = ("080", "03", "084", "087", "09")
#: North American toll-free area codes (800, 833 ... 888) and Australia's 1800/1300: the same
#: kind, numbers a business or public body takes for its callers.
_NANP_TOLL_FREE = frozenset({"800", "833", "844", "855", "866", "877", "888"})
_AU_SERVICE_PREFIXES = ("1800", "1300")
#: Words that say the number reaches a service or an organisation, not a person: a helpline,
#: an emergency or out-of-hours line, a team, desk or office, a public body or a company
#: ("call the National Gas Emergency Service on ...", "the council's out-of-hours line",
#: "Thames Water on ..."). "line" counts unless it is a "line manager" or someone's "direct
#: line". Matched against the lower-cased words near the number.
_SERVICE_WORDS = re.compile(
    r"\b(?:help ?lines?|hotlines?|help ?desk|switchboard|freephone|free ?fone|emergenc(?:y|ies)"
    r"|out[ -]of[ -]hours|24/7|24 hours|(?<!direct )lines?(?! manager)|services?|desk|team"
    r"|department|dept|office|reception|enquir(?:y|ies)|support|advice|centre|center|unit"
    r"|council|police|nhs|ombudsman|agency|authority|trust|bureau|association|society"
    r"|charity|foundation|commission|samaritans|government|embassy|consulate|court|tribunal"
    r"|union|hospital|surgery|clinic|pharmacy|practice|university|college|school|company"
    r"|ltd|limited|plc|inc|llc|group|bank|energy|gas|electric(?:ity)?|power(?:[ -]cut)?"
    r"|water|network|railways?|airlines?|insurance|hmrc|acas|dvla|dwp)\b")
#: Words that say the number is a person's: "mobile"/"cell", a home, personal or private
#: number, a pronoun's ("my/your/his/her/their [own] number", "her mobile"), or "he's/she is
#: on ...". Matched against the lower-cased words near the number.
_PERSONAL_WORDS = re.compile(
    r"\b(?:mobile|cell(?:phone)?|(?:home|personal|private) (?:phone |tele)?(?:number|no|phone"
    r"|line)|(?:my|your|his|her|their) (?:own |personal |private |home |work )?(?:number|phone"
    r"|mobile|cell|landline|direct line|extension|ext|contact)|(?:he|she)(?:['\u2019]s| is)"
    r" (?:on|at))\b")
#: A person named near the number: "Dan's number/line/mobile", "call/ring/text Dan (Smith)",
#: "Dan is on ...", "Dan at/in/from the service desk". The one group that matched is the name
#: (checked against ``_SERVICE_WORDS``: "the council's number", "call British Gas" or
#: "Citizens Advice in Leeds" names an organisation). Matched against the original case.
_NAMED_PERSON = re.compile(
    r"\b([A-Z][a-z]+(?: [A-Z][a-z]+)?)['\u2019]s (?:\w+ )?(?:number|phone|mobile|cell|landline"
    r"|line|extension|ext|contact)\b"
    r"|\b(?:[Cc]all|[Rr]ing|[Pp]hone|[Tt]ext|[Cc]ontact|[Rr]each|[Mm]essage|[Tt]ry)"
    r" ([A-Z][a-z]+(?: [A-Z][a-z]+)?)\b"
    r"|\b([A-Z][a-z]+(?: [A-Z][a-z]+)?)(?: is|['\u2019]s) (?:on|at)\b"
    r"|\b([A-Z][a-z]+(?: [A-Z][a-z]+)?) (?:at|in|from) \w")
#: Capitalised words that are no one's name (a sentence's first word, a pronoun).
_NOT_NAMES = frozenset(
    "the this that these those it its there here which what who whom whose you your he she "
    "they we if when then please our my his her their a an and or but for so also once "
    "otherwise alternatively outside even only anyone someone everyone somebody staff".split())
#: Where a number's context ends: a sentence end, a line break, a semicolon, or "or"
#: ("the helpline on 0161 496 0500 or Dan on 0161 496 0000" reaches two different people).
_CONTEXT_BREAK = re.compile(r"[.!?](?:\s|$)|[\n;]|\bor\b")
#: How far (characters) before and after a number its context words are read.
_CONTEXT_BEFORE = 80
_CONTEXT_AFTER = 40
#: The local part of a team or role mailbox (payroll@, hr-help@, no-reply@): no one's
#: personal data, so no ``possible_pii`` (a word of it, split at . _ + -, is one of these).
_ROLE_MAILBOX_WORDS = frozenset(
    "hr payroll pay benefits support help helpdesk servicedesk service info admin team people "
    "noreply no reply expenses travel pensions pension recruitment careers jobs facilities "
    "security it office contact enquiries queries wellbeing accounts finance legal ethics "
    "compliance privacy dpo reception desk mailbox ops operations learning training "
    "onboarding leave absence rewards".split())
#: A last word that is a link or an address: an answer may end with one, no full stop
#: ("Apply on the Benefits page: https://intranet.example.com/benefits").
_ENDS_WITH_LINK = re.compile(r"(?:https?://|www\.)\S+$|\S+@\S+\.\w+$|\S+\.\w{2,}/\S*$")
#: A list item or an attribution as the last line: a list ends without a full stop, and so
#: does a quotation's source ('"…" - Chinese proverb').
_LIST_ITEM = re.compile(r"^(?:[-*\u2022]|\d+[.)])\s+\S")
_ATTRIBUTION = re.compile(r"[\"\u201d]\s*[-\u2013\u2014]+\s*[A-Z][\w.' -]{0,40}$")
#: A Markdown table's delimiter row, under its header: "|---|:---:|" (outer pipes optional).
_TABLE_DELIMITER = re.compile(r"^\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?$")
#: A cell boundary: a pipe not escaped as "\|".
_CELL_PIPE = re.compile(r"(?<!\\)\|")
_DIGITS = re.compile(r"\d{3}")
_DATE_TIME = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?\S*)?\b")
#: Matched against the lower-cased answer.
_CITATION = re.compile(
    r"\[\d+\]|\(source|\bsources?:|\baccording to\b|\bsection \d|\bparagraph \d|\bclause \d|"
    r"\bpolicy\b|\bhandbook\b|\bguide\b|\bper the\b|\bunder the\b")
_NO_ANSWER = re.compile(
    r"\b(?:i|we) (?:could not|couldn't|cannot|can't|did not|didn't|was unable to|am unable to|"
    r"was not able to|wasn't able to) (?:find|locate)\b|\bi (?:do not|don't) know\b|"
    r"\bi(?: am|'m) not sure\b|\bno information (?:about|on)\b|\bnot (?:covered|mentioned|"
    r"addressed) (?:in|by) the (?:policy|policies|handbook|documents?)\b")
#: Every ``_NO_ANSWER`` alternative contains one of these (a cheap pre-check).
_NO_ANSWER_MARKERS = ("find", "locate", "know", "not sure", "no information", "not covered",
                      "not mentioned", "not addressed")
#: Every ``_CITATION`` alternative contains one of these.
_CITATION_MARKERS = ("[", "(source", "source", "according to", "section ", "paragraph ",
                     "clause ", "policy", "handbook", "guide", "per the", "under the")
_AI = re.compile(r"\bas an ai\b(?: language model)?")
#: Bytes that are not ASCII letters (deleted to count letters with ``bytes.translate``).
_NOT_ASCII_LETTER = bytes(b for b in range(256) if not (65 <= b <= 90 or 97 <= b <= 122))
#: Latin letters beyond ASCII (the rest of the ``latin`` script range).
_LATIN_EXTENDED = re.compile(r"[\u00c0-\u024f]")


_SCRIPT_RANGES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("latin", re.compile(r"[A-Za-z\u00c0-\u024f]")),
    ("cyrillic", re.compile(r"[\u0400-\u052f]")),
    ("hebrew_arabic", re.compile(r"[\u0590-\u06ff]")),
    ("indic_thai", re.compile(r"[\u0900-\u0e7f]")),
    ("cjk", re.compile(r"[\u3040-\u9fff\uac00-\ud7af]")),
)


def _cell_count(row: str) -> int:
    """Cells of a table row with its outer pipes: "| Spain | €55 | €140 |" -> 3."""
    return len(_CELL_PIPE.split(row[1:-1]))


def _ends_with_table_row(lines: list[str]) -> bool:
    """Whether the last of ``lines`` (an answer's, non-empty) is a whole Markdown table row.

    Whole: it starts and ends with an unescaped "|" and has as many cells as the header of its
    table (the run of lines starting with "|" it ends, a delimiter row under the header). A
    cut row lacks its closing pipe ("| Spain | €5") or cells ("| Spain | €55 |" under three
    columns); a row of a table without outer pipes could be cut mid-cell ("Spain | €14" of
    "€140"), so it is not called whole, nor is a header with no row under it.
    """
    last = lines[-1].strip()
    if len(last) < 3 or last[0] != "|" or last[-1] != "|" or last[-2] == "\\":
        return False
    start = len(lines) - 1
    while start > 0 and lines[start - 1].lstrip().startswith("|"):
        start -= 1
    table = [line.strip() for line in lines[start:]]
    if len(table) < 3 or not _TABLE_DELIMITER.match(table[1]) or not table[0].endswith("|"):
        return False
    return _cell_count(table[0]) == _cell_count(last)


#: A code fence around the whole answer ("```json\n{...}\n```"): its body is the data.
_FENCED = re.compile(r"^```[\w+-]*[ \t]*\n(.*)\n[ \t]*```$", re.DOTALL)
#: A "key: value" or "key = value" line: a key of 1-4 words (no sentence punctuation),
#: optionally quoted or bulleted; group 1 is the value ("status: resolved", "Daily rate = €60").
_KEY_VALUE = re.compile(
    r"^\s*(?:[-*]\s+)?[\"']?[^\W_][\w.()/-]*(?: [\w.()/-]+){0,3}[\"']?\s*[:=](?!//)\s*(.*)$")


def _json_document(text: str) -> dict[str, object] | list[object] | None:
    """``text`` (stripped) parsed, when it is a JSON object or array (a whole document, not
    prose around one); None otherwise."""
    if (text[:1], text[-1:]) not in (("{", "}"), ("[", "]")):
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict | list) else None


def _string_values(data: object, out: list[str]) -> list[str]:
    """Append the string values in ``data`` (a parsed JSON value, depth-first; keys are
    names, not text) to ``out`` and return it."""
    if isinstance(data, str):
        out.append(data)
    elif isinstance(data, dict):
        for value in data.values():
            _string_values(value, out)
    elif isinstance(data, list):
        for item in data:
            _string_values(item, out)
    return out


def _structured_values(text: str) -> list[str] | None:
    """The values of an answer that is structured data, or None when it is not.

    Structured data: a JSON object or array (alone, or alone in a code fence), or 2+
    non-empty lines that are each a "key: value" / "key = value" pair. Its keys and
    punctuation are no prose; its values are returned (strings only, in order) for
    :func:`_is_sentence_value` to pick the prose from.
    """
    fenced = _FENCED.match(text) if text.startswith("```") else None
    body = fenced.group(1).strip() if fenced else text
    data = _json_document(body)
    if data is not None:
        return _string_values(data, [])
    lines = [line for line in body.splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    values = []
    for line in lines:
        pair = _KEY_VALUE.match(line)
        if pair is None:
            return None
        values.append(pair.group(1))
    return values


def _scripts(text: str) -> Counter[str]:
    # ASCII letters counted in C (non-ASCII characters dropped by the encode); identical to
    # findall over the "latin" range, which made a list of every letter
    ascii_letters = len(text.encode("ascii", "ignore").translate(None, _NOT_ASCII_LETTER))
    if text.isascii():
        return Counter({"latin": ascii_letters})
    counts: Counter[str] = Counter()
    for name, pattern in _SCRIPT_RANGES:
        n = ascii_letters + len(_LATIN_EXTENDED.findall(text)) if name == "latin" \
            else len(pattern.findall(text))
        if n:
            counts[name] = n
    return counts


#: Every byte but ``a-z`` and ``'`` -> space: the words of ``[a-z']+`` are then the
#: ``split()`` of the translated UTF-8 bytes (those characters are ASCII, so no multi-byte
#: sequence holds one), ~3x faster than ``re.findall``.
_NOT_WORD_BYTES = bytes.maketrans(
    bytes(b for b in range(256) if not (97 <= b <= 122 or b == 39)),
    b" " * (256 - 27))
#: English function words and common short words (contractions too): an English answer of
#: 8+ words with none of these is rare; the gates' shorter list alone called "Booking time off?
#: Sounds like you've got something fun planned. Enjoy!" another language.
_ENGLISH_COMMON = ENGLISH_STOPWORDS | frozenset(
    "me us him her them its his hers ours yours theirs am been being were would could should "
    "shall may might must get got gets like just so all any some something anything nothing "
    "about up out off over into there here then than too very more most much many no yes "
    "one two who whom why where while because but also only even still again now well "
    "i'm i've i'll i'd you're you've you'll you'd it's that's there's what's let's don't "
    "doesn't didn't can't won't isn't aren't wasn't haven't hasn't sounds looks".split())
_STOPWORD_BYTES = frozenset(w.encode() for w in _ENGLISH_COMMON)


def _english_ratio(text: str) -> tuple[float, int]:
    words = text.lower().encode("utf-8", "surrogatepass").translate(_NOT_WORD_BYTES).split()
    if not words:
        return 0.0, 0
    return sum(map(_STOPWORD_BYTES.__contains__, words)) / len(words), len(words)


#: What is no prose: links, e-mail addresses, JSON punctuation, table pipes, numbers.
_NOT_PROSE = re.compile(r"(?:https?://|www\.)\S+|\S+@\S+|[{}\[\]|\":_]|\b\d[\d.,%]*\w*\b")


def _is_prose(answer: str) -> bool:
    """Whether a Latin-script answer has prose enough to tell its language: at least 8
    lower-case words besides links, data, table pipes and numbers (headings, a JSON object or
    a telemetry line have too few: "Bereavement Leave Policy 1. Purpose …" has none)."""
    return sum(1 for w in _NOT_PROSE.sub(" ", answer).split()
               if w.isalpha() and w.islower()) >= 8


#: Scripts written without upper and lower case (``_is_prose`` cannot count their words).
_CASELESS_SCRIPTS = ("hebrew_arabic", "indic_thai", "cjk")


def _is_sentence_value(value: str) -> bool:
    """Whether one value of structured data is prose of its own: 8+ lower-case words as
    :func:`_is_prose` counts them, or 8+ letters of a script without case (a CJK clause).
    Labels ("flight disruption", "hotel_claim", "resolved") are not."""
    if _is_prose(value):
        return True
    if value.isascii():
        return False
    scripts = _scripts(value)
    return sum(scripts[name] for name in _CASELESS_SCRIPTS) >= 8


def _language_mismatch(question: str, answer: str) -> str | None:
    """Why ``answer`` is in another script or language than ``question``, or None.

    An answer that is structured data (:func:`_structured_values`) is judged by its values
    that are sentences of their own only: a JSON reply object of labels
    ({"topic": "flight disruption", "intent": "hotel_claim", ...}) has no function words
    and is no French, but a French sentence in its "answer" field still is.
    """
    values = _structured_values(answer) if answer[:1] in "{[`" or ":" in answer \
        or "=" in answer else None
    if values is not None:
        answer = "\n".join(v for v in values if _is_sentence_value(v))
        if not answer:
            return None
    if question.isascii() and answer.isascii():
        q_ratio, q_words = _english_ratio(question)
        if q_words < 4 or q_ratio < 0.15 or not _is_prose(answer):
            return None
        a_ratio, a_words = _english_ratio(answer)
        return "question in English, answer not" if a_words >= 8 and a_ratio < 0.05 else None
    qs, as_ = _scripts(question), _scripts(answer)
    if not qs or not as_:
        return None
    q_script, a_script = qs.most_common(1)[0][0], as_.most_common(1)[0][0]
    if q_script != a_script:
        return f"question in {q_script} script, answer in {a_script}"
    if q_script == "latin":
        q_ratio, q_words = _english_ratio(question)
        a_ratio, a_words = _english_ratio(answer)
        if q_words >= 4 and a_words >= 8 and q_ratio >= 0.15 and a_ratio < 0.05 \
                and _is_prose(answer):
            return "question in English, answer not"
    return None


_ASCII_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
#: ASCII punctuation -> space, as a bytes table: applied to the UTF-8 bytes (no ASCII byte
#: occurs inside a multi-byte sequence), it is many times faster than ``str.translate``.
_PUNCT_BYTES = bytes.maketrans(_ASCII_PUNCT.encode(), b" " * len(_ASCII_PUNCT))


def _strip_punct(text: str) -> str:
    """Replace ASCII punctuation and typographic quotes (U+2019, U+201C, U+201D) by spaces."""
    if not text.isascii():
        text = text.replace("\u2019", " ").replace("\u201c", " ").replace("\u201d", " ")
    return text.encode("utf-8", "surrogatepass").translate(_PUNCT_BYTES) \
        .decode("utf-8", "surrogatepass")


def _repeated(text: str, sentences: list[str]) -> str | None:
    seen: set[str] = set()
    for sentence in sentences:
        norm = " ".join(_strip_punct(sentence.lower()).split())
        if norm in seen and len(norm.split()) >= 4:
            return f"sentence repeated: {norm[:60]!r}"
        seen.add(norm)
    words = text.lower().split()
    # three copies of an 8-word run repeat at least 16 words: skip when fewer repeat
    if len(words) - len(set(words)) < 16:
        return None
    # the 8-word windows words[i:i + 8], in order, built in C
    grams = Counter(zip(*(words[i:] for i in range(8)), strict=False))
    run = next((g for g, n in grams.items() if n >= 3), None)
    return f"8-word run repeated 3+ times: {' '.join(run)!r}" if run else None


def _phone_range(hit: str) -> Literal["mobile", "service", "other"]:
    """The kind of number ``hit`` is by its range alone.

    Args:
        hit: a match of :data:`_PHONE` (8+ digits), e.g. "+44 7700 900123", "0800 111 999".

    Returns:
        ``"mobile"`` for a UK 07 number (mobiles, 070 personal numbers, 076 pagers: issued to
        a handset or a person, so personal whatever the words say), ``"service"`` for a range
        only organisations get (:data:`_UK_SERVICE_PREFIXES`, :data:`_NANP_TOLL_FREE`,
        :data:`_AU_SERVICE_PREFIXES`), else ``"other"`` (a landline or a foreign number: the
        words around it decide).
    """
    digits = "".join(c for c in hit if c.isdigit())
    if hit.startswith("+"):
        if digits.startswith("44"):
            national = "0" + digits[2:].removeprefix("0")  # "+44 (0)161" and "+44 161"
        elif digits.startswith("1"):
            return "service" if digits[1:4] in _NANP_TOLL_FREE else "other"
        elif digits.startswith("61"):
            return "service" if digits[2:].startswith(_AU_SERVICE_PREFIXES) else "other"
        else:
            return "other"
    else:
        national = digits
    if national.startswith("07"):
        return "mobile"
    if national.startswith(_UK_SERVICE_PREFIXES):
        return "service"
    if len(national) == 10 and national.startswith(_AU_SERVICE_PREFIXES):
        return "service"
    nanp = national[1:] if len(national) == 11 and national.startswith("1") else national
    if len(nanp) == 10 and nanp[:3] in _NANP_TOLL_FREE:
        return "service"
    return "other"


def _context(text: str, start: int, end: int) -> str:
    """The words of the same clause around ``text[start:end]`` (a number).

    Args:
        text: the answer (dates already blanked).
        start: the number's first character index.
        end: one past its last character index.

    Returns:
        Up to :data:`_CONTEXT_BEFORE` characters before and :data:`_CONTEXT_AFTER` after the
        number, each cut at the nearest :data:`_CONTEXT_BREAK` and at any other number, joined
        by " # " (the number itself left out, so its digits are no words).
    """
    before = text[max(0, start - _CONTEXT_BEFORE):start]
    after = text[end:end + _CONTEXT_AFTER]
    cuts = [m.end() for m in _CONTEXT_BREAK.finditer(before)]
    cuts += [m.end() for m in _PHONE.finditer(before)]
    before = before[max(cuts, default=0):]
    stops = [m.start() for m in _CONTEXT_BREAK.finditer(after)]
    stops += [m.start() for m in _PHONE.finditer(after)]
    after = after[:min(stops, default=len(after))]
    return f"{before} # {after}"


def _names_a_person(context: str) -> bool:
    """Whether ``context`` (from :func:`_context`) says the number is a person's: personal
    words (:data:`_PERSONAL_WORDS`) or a name that is no organisation's (:data:`_NAMED_PERSON`:
    "Dan's number", "call Priya", but not "the Council's number" or "call British Gas")."""
    if _PERSONAL_WORDS.search(context.lower()):
        return True
    for match in _NAMED_PERSON.finditer(context):
        words = next(g for g in match.groups() if g).lower().split()
        while words and words[0] in _NOT_NAMES:  # "Then Dan is on ...": the name is "Dan"
            words.pop(0)
        if words and not _SERVICE_WORDS.search(" ".join(words)):
            return True
    return False


def _service_number(hit: str, context: str) -> bool:
    """Whether the phone number ``hit`` is a service's line, not personal data.

    The rule: a UK mobile (07) is always personal; a number in a range only organisations get
    (0800/0808, 03, 084, 087, 09; North American toll-free; Australian 1800/1300) never is;
    any other number (a landline, a foreign number) is a service's only when the words around
    it say so (:data:`_SERVICE_WORDS`: "the council's emergency line on 0161 ...") and name no
    person (:func:`_names_a_person`: "Dan's number is 0161 ..." , "if the helpline is closed,
    call Dan on 0161 ..."). With neither kind of word a number stays flagged: a person's number
    is worse to miss than a helpline is to look at.

    Args:
        hit: a match of :data:`_PHONE` with 8+ digits.
        context: the words around it (:func:`_context`).

    Returns:
        True when the number is no one's personal data.
    """
    kind = _phone_range(hit)
    if kind != "other":
        return kind == "service"
    return bool(_SERVICE_WORDS.search(context.lower())) and not _names_a_person(context)


def _pii(question: str, answer: str) -> str | None:
    if "@" not in answer and not (
            (not answer.isascii() or any(d in answer for d in "0123456789"))
            and _DIGITS.search(answer)):
        return None  # every PII pattern needs an "@" or a run of digits
    answer_clean = _DATE_TIME.sub(" ", answer)
    found = []
    for kind, pattern in _PII:
        for hit in pattern.findall(answer_clean):
            if kind == "email" and _ROLE_MAILBOX_WORDS.intersection(
                    re.split(r"[._+-]", hit.split("@")[0].lower())):
                answer_clean = answer_clean.replace(hit, " ")
                continue  # a team mailbox: payroll@example.com
            echoed = hit in question
            found.append(f"{kind}{' (echoed from input)' if echoed else ''}")
            answer_clean = answer_clean.replace(hit, " ")
    for match in _PHONE.finditer(answer_clean):
        hit = match.group(0)
        if sum(c.isdigit() for c in hit) < 8:
            continue  # a figure or a short service number (999, 105, 116 123)
        if _service_number(hit, _context(answer_clean, match.start(), match.end())):
            continue  # a helpline, an emergency line, an organisation's number
        found.append(f"phone{' (echoed from input)' if hit in question else ''}")
    return ", ".join(sorted(set(found))) if found else None


def quality_flags(case: EvalCase, response: str, analysis: Analysis,
                  gates: tuple[GateResult, GateResult]) -> list[Flag]:
    """Compute the quality flags of one response (definitions in :data:`FLAG_DOCS`).

    Args:
        case: the eval case (input, context chunks, expectations).
        response: the agent's answer text.
        analysis: :func:`~evalloop.core.evaluation.gates.analyse` of ``response``.
        gates: the (refusal, escalation) gate results for this response.

    Returns:
        Flags in :data:`FLAG_DOCS` order; empty when nothing needs a second look.
    """
    text = response.strip()
    words = text.split()
    refusal, escalation = gates
    lowered = text.lower()
    out: list[Flag] = []
    if not text:
        return [Flag("response_empty", "no text in the response")]
    # a short answer that is exactly the expected act the rules found needs no second look; one
    # only a model called the act still does ("OK." is no hand-off a person checked)
    exact_act = (case.should_refuse and refusal.observed and refusal.kind != "refusal") or (
        case.should_escalate and escalation.observed and escalation.kind != "escalation")
    if len(words) < VERY_SHORT_WORDS and not exact_act:
        out.append(Flag("response_very_short", f"{len(words)} words"))
    if len(words) > VERY_LONG_WORDS:
        out.append(Flag("response_very_long", f"{len(words)} words"))
    lines = text.splitlines()
    last_line = lines[-1].strip()
    if len(words) >= 20 and text[-1] not in _TERMINAL_CHARS \
            and not "\U0001F300" <= text[-1] <= "\U0001FAFF" and not _ENDS_WITH_LINK.search(text) \
            and not _LIST_ITEM.match(last_line) and not _ATTRIBUTION.search(last_line) \
            and not _ends_with_table_row(lines) \
            and not (text[-1] == "}" and _json_document(text) is not None):
        out.append(Flag("possibly_truncated", f"ends with {text[-30:]!r}"))
    rep = _repeated(text, list(analysis.sentences) or split_sentences(text))
    if rep:
        out.append(Flag("repeated_text", rep))
    placeholder = _PLACEHOLDER.search(text) if any(
        marker in lowered for marker in _PLACEHOLDER_MARKERS) else None
    if placeholder:
        out.append(Flag("contains_placeholder", f"found {placeholder.group(0)[:40]!r}"))
    pii = _pii(case.input, text)
    if pii:
        out.append(Flag("possible_pii", pii))
    if case.context_chunks and not case.should_refuse and analysis.substantive > 0 \
            and not any(chunk in text for chunk in case.context_chunks) \
            and not (any(marker in lowered for marker in _CITATION_MARKERS)
                     and _CITATION.search(lowered)):
        out.append(Flag("no_citation_when_context_expected",
                        f"expected a reference to {', '.join(case.context_chunks[:3])}"))
    mismatch = _language_mismatch(case.input, text)
    if mismatch:
        out.append(Flag("language_mismatch", mismatch))
    if any(marker in lowered for marker in _NO_ANSWER_MARKERS) \
            and _NO_ANSWER.search(lowered.replace("\u2019", "'")):
        out.append(Flag("states_no_answer", "the agent says it could not find the answer"))
    if not case.should_refuse and refusal.observed and refusal.passed:
        # a decline only the second opinion reads has no clause of its own: its evidence is
        # the first sentence with a word a decline needs, which may be sympathy ("I'm so
        # sorry about your dress."), so the flag says who read it
        detail = f"declined: {refusal.evidence}"
        if refusal.kind == "refusal" and refusal.score is not None:
            detail = (f"a second opinion reads a decline (P(yes)={refusal.score:.3f}); the rules "
                      f"found none (nearest sentence: {refusal.evidence})")
        out.append(Flag("partial_refusal", detail))
    if not case.should_escalate and not case.should_refuse and escalation.observed \
            and escalation.passed \
            and not ASKS_WHO.search(case.input.lower()):  # "Who do I speak to…?" asks for one
        # (beside a required refusal a pointer to a human is part of the answer:
        # docs/rules.md#refusal-and-escalation-gates)
        out.append(Flag("unneeded_escalation", f"hand-off: {escalation.evidence}"))
    ai = _AI.search(lowered) if "as an ai" in lowered else None
    if ai:
        found = text[ai.start():ai.end()]
        out.append(Flag("boilerplate_ai_disclaimer", f"found {found!r}"))
    return out


def review_reasons(case: EvalCase, flags: list[Flag], *, unscored: bool = False) -> list[str]:
    """Say why a human must look at this case (empty list: automated scoring suffices).

    Reasons (``docs/rules.md#human-review``: "automated scoring cannot reliably evaluate
    tone, emotional appropriateness, or nuanced escalation decisions"):

    * ``unscored``: no response could be scored (e.g. missing from a responses file);
    * ``sensitive case: tone and emotional appropriateness``: category ``sensitive``;
    * ``edge case: nuanced escalation decision``: category ``edge-case``;
    * ``flag:<name>``: each quality flag.

    Args:
        case: the eval case.
        flags: its quality flags.
        unscored: the case had no response to score.

    Returns:
        Reasons in the order above.
    """
    reasons = []
    if unscored:
        reasons.append("unscored")
    if case.category == "sensitive":
        reasons.append("sensitive case: tone and emotional appropriateness")
    if case.category == "edge-case":
        reasons.append("edge case: nuanced escalation decision")
    reasons.extend(f"flag:{f.name}" for f in flags)
    return reasons
