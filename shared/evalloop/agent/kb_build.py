"""Build the shipped knowledge bases from the public source data (run once; output is shipped).

``python -m evalloop.agent.kb_build [--data ../shared/data]`` rewrites
``shared/evalloop/data/kb/*/chunks.jsonl``. The HR documents are PDFs (hr-policy-qa,
h2oai/h2o-evals, MPL-2.0): text is extracted with pypdf, split at the documents' own headings
(numbered clauses in ``HR_Policy.pdf``; the table-of-contents titles in
``HR_Policy_Procedures.pdf``) and long sections are cut at paragraph/clause boundaries into parts
of at most :data:`MAX_WORDS` words. FeedbackQA passages (``faq_base``, Apache-2.0) are already
passages: one chunk each.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import unicodedata
from collections import Counter
from pathlib import Path

from evalloop.agent.kb import FEEDBACKQA_SOURCES, Chunk, shared_data_dir, write_chunks

__all__ = [
    "MAX_WORDS",
    "feedbackqa_chunks",
    "feedbackqa_subset",
    "hr_chunks",
    "hr_policy_chunks",
    "hr_procedures_chunks",
    "slug",
]

#: Longest chunk, words: long enough for a whole clause group, short enough that TF-IDF scores
#: stay specific (measured: hit rate of the HR Q&A pairs drops with 400-word chunks).
MAX_WORDS = 180
#: Passages per FeedbackQA source shipped in the package (the most-asked ones).
FEEDBACKQA_SUBSET = 60


def slug(text: str) -> str:
    """Lower-case ASCII slug of ``text``, at most 60 characters
    (``"Annual Leave / Half Day"`` -> ``annual-leave-half-day``)."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60].rstrip("-")


def _norm(text: str) -> str:
    # NFKC folds the PDF's ligatures (U+FB01 "fi" and friends) into plain letters.
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip()


def _pages(pdf: Path) -> list[str]:
    import pypdf

    return [p.extract_text() or "" for p in pypdf.PdfReader(str(pdf)).pages]


def _split(paragraphs: list[str], max_words: int = MAX_WORDS) -> list[str]:
    """Greedily pack ``paragraphs`` into parts of at most ``max_words`` words (a single longer
    paragraph is cut at sentence ends)."""
    pieces: list[str] = []
    for para in paragraphs:
        words = para.split()
        if len(words) <= max_words:
            pieces.append(para)
            continue
        sentences = re.split(r"(?<=[.;:])\s+", para)
        for sentence in sentences:
            # Tables have no sentence ends: cut them by words.
            w = sentence.split()
            pieces.extend(" ".join(w[i : i + max_words]) for i in range(0, len(w), max_words))
    return _split_flat(pieces, max_words)


def _split_flat(items: list[str], max_words: int) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    n = 0
    for item in items:
        k = len(item.split())
        if cur and n + k > max_words:
            parts.append(" ".join(cur))
            cur, n = [], 0
        cur.append(item)
        n += k
    if cur:
        parts.append(" ".join(cur))
    return parts


def _emit(doc: str, document: str, section: str, heading: str, paragraphs: list[str],
          out: list[Chunk]) -> None:
    paragraphs = [_norm(p) for p in paragraphs if _norm(p)]
    if not paragraphs:
        return
    base = f"{doc}/{slug(section)}/{slug(heading)}"
    title = f"{section} › {heading}"
    parts = _split(paragraphs)
    for i, part in enumerate(parts, 1):
        cid = base if len(parts) == 1 else f"{base}/{i}"
        out.append(Chunk(id=cid, document=document, title=title, text=part))


_SECTION_A = re.compile(r"^SECTION\s*(\d+)\s*:\s*(.+?)\s*$")
_HEADING_A = re.compile(r"^(\d+)\.\s+([A-Z][A-Z0-9 /&(),'.:+-]*[A-Z):])\s*$")
_TOC_A = re.compile(r"^(\d+)\.\s+(.+?)\s*$")
_CLAUSE_A = re.compile(r"^(\d+)\.(\d+)\s")
_APPENDIX_A = re.compile(r"^Appendix (I{1,3})\s*$")


def hr_policy_chunks(pdf: Path) -> list[Chunk]:
    """Chunks of ``HR_Policy.pdf`` (NTUC-ARU staff handbook): one per numbered heading of each
    section, split at clause boundaries (``5.1``, ``5.2``) when longer than :data:`MAX_WORDS`.

    A heading the PDF's text layer lost (e.g. "13. Family Care Leave") is recovered from the
    section's table of contents when the clause numbering moves on to that number.
    """
    out: list[Chunk] = []
    section = ""
    toc: dict[int, str] = {}
    number = 0
    heading = ""
    paragraphs: list[str] = []
    in_toc = False
    for page in _pages(pdf)[2:]:  # pages 1-2: cover and the whole-book contents
        lines = [ln.rstrip() for ln in page.splitlines()]
        if lines and lines[0].strip().isdigit():
            lines = lines[1:]  # the page number
        for raw in lines:
            line = raw.strip()
            if m := _SECTION_A.match(line):
                _emit("hr-policy", "HR_Policy.pdf", section, heading, paragraphs, out)
                section, toc, heading, paragraphs, number = m.group(2).title(), {}, "", [], 0
                in_toc = True
                continue
            if m := _APPENDIX_A.match(line):
                _emit("hr-policy", "HR_Policy.pdf", section, heading, paragraphs, out)
                section, heading, paragraphs, number = "Appendices", line, [], 0
                toc, in_toc = {}, False
                continue
            if m := _HEADING_A.match(line):
                _emit("hr-policy", "HR_Policy.pdf", section, heading, paragraphs, out)
                number = int(m.group(1))
                heading = toc.get(number, m.group(2).title())
                paragraphs, in_toc = [], False
                continue
            if in_toc:
                if m := _TOC_A.match(line):
                    toc[int(m.group(1))] = _norm(m.group(2))
                continue
            if m := _CLAUSE_A.match(line):
                if int(m.group(1)) != number and int(m.group(1)) in toc:
                    _emit("hr-policy", "HR_Policy.pdf", section, heading, paragraphs, out)
                    number = int(m.group(1))
                    heading, paragraphs = toc[number], []
                paragraphs.append(line)
            elif not line:
                if paragraphs and paragraphs[-1]:
                    paragraphs.append("")
            elif paragraphs:
                paragraphs[-1] = f"{paragraphs[-1]} {line}" if paragraphs[-1] else line
            else:
                paragraphs.append(line)
    _emit("hr-policy", "HR_Policy.pdf", section, heading, paragraphs, out)
    return out


_FOOTER_B = re.compile(r"^Policies and Procedures Template - Page$")


def _toc_b(pages: list[str]) -> list[tuple[str, str]]:
    """(section title, policy title) pairs from the contents pages 2-3 of the procedures PDF."""
    entries: list[tuple[str, str]] = []
    section = ""
    lines = [ln.strip() for p in pages[1:3] for ln in p.splitlines() if ln.strip()]
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("SECTION") or line == "APPENDIX A":
            # "SECTION 3" is followed by its name, sometimes over two lines ("Employment" /
            # "Information") before the first policy title and its page number.
            name = []
            i += 1
            while i + 1 < len(lines) and not lines[i + 1].isdigit():
                name.append(lines[i])
                i += 1
            section = "Appendix A" if line == "APPENDIX A" else " ".join(name)
            if line == "APPENDIX A":
                entries.append((section, "Legislation affecting relationship between employers"))
                break
            continue
        if line.isdigit() or _FOOTER_B.match(line) or line == "TABLE OF CONTENTS":
            i += 1
            continue
        if section:
            entries.append((section, _norm(line)))
        i += 1
    return entries


#: Contents titles whose heading in the text reads differently (checked by eye against the PDF).
_HEADING_ALIASES_B = {
    "File Management and Amendments": "File Management and Amendments to the Manual",
    "Technology Use": "Technology – Computer Use, Business Phones, Internet and Email",
    "Insurance for Employee Use of own Auto": "Insurance for Employee or Volunteer Use of Own Auto",
}


def _same_title(line: str, title: str) -> bool:
    a, b = _norm(line).lower(), _HEADING_ALIASES_B.get(title, title).lower()
    if a == b:
        return True
    return len(a) < len(b) + 12 and difflib.SequenceMatcher(None, a, b).ratio() >= 0.8


def hr_procedures_chunks(pdf: Path) -> list[Chunk]:
    """Chunks of ``HR_Policy_Procedures.pdf`` (a community-foundation HR template): one per
    policy of the contents, found in the text in contents order (so a phrase repeating a title
    later in the text is not mistaken for a heading), split into parts of at most
    :data:`MAX_WORDS` words at paragraph/bullet boundaries."""
    pages = _pages(pdf)
    entries = _toc_b(pages)
    out: list[Chunk] = []
    nxt = 0
    section, heading = "", ""
    paragraphs: list[str] = []
    for page in pages[3:]:
        lines = [ln.strip() for ln in page.splitlines()]
        for j, line in enumerate(lines):
            if _FOOTER_B.match(line) or (line.isdigit() and j >= len(lines) - 2):
                continue
            if re.fullmatch(r"SECTION \d+", line):
                continue
            hit = next(
                (k for k in range(nxt, min(nxt + 2, len(entries)))
                 if _same_title(line, entries[k][1])),
                None,
            )
            if hit is not None:
                _emit("hr-procedures", "HR_Policy_Procedures.pdf", section, heading,
                      paragraphs, out)
                section, heading = entries[hit]
                nxt, paragraphs = hit + 1, []
                continue
            if not heading or not line:
                continue
            if line in ("●", "•") or re.fullmatch(r"[A-Z0-9]{1,2}\.", line):
                paragraphs.append(line.replace("●", "•"))
            elif paragraphs and (paragraphs[-1][-1:] not in ".:!?" or len(paragraphs[-1]) < 3):
                paragraphs[-1] = f"{paragraphs[-1]} {line}"
            else:
                paragraphs.append(line)
    _emit("hr-procedures", "HR_Policy_Procedures.pdf", section, heading, paragraphs, out)
    return out


def hr_chunks(data: Path) -> list[Chunk]:
    """Both HR documents of ``<data>/hr-policy-qa`` (the ``hr`` knowledge base)."""
    root = data / "hr-policy-qa"
    return hr_policy_chunks(root / "HR_HR_Policy" / "HR_Policy.pdf") + hr_procedures_chunks(
        root / "HR_HR_Policy_Procedures" / "HR_Policy_Procedures.pdf"
    )


def _fqa_chunk(source: str, p: dict[str, object]) -> Chunk:
    ref = p["reference"]
    assert isinstance(ref, dict)
    headers = " / ".join(ref.get("section_headers") or [])
    return Chunk(
        id=f"feedbackqa-{source}/{p['passage_id']}",
        document=str(p.get("uri") or ""),
        title=_norm(f"{ref.get('page_title') or ''} › {headers}"),
        text=_norm(str(ref.get("section_content") or "")),
    )


def feedbackqa_chunks(faq_base: Path, source: str) -> list[Chunk]:
    """Every ``faq_base`` passage of ``source`` (``who``, ``cdc``, ``uk``, ``australia``)."""
    prefix = FEEDBACKQA_SOURCES[source]
    data = json.loads((faq_base / f"{prefix}_train.json").read_text(encoding="utf-8"))
    return [_fqa_chunk(source, p) for p in data["passages"]]


def feedbackqa_subset(faq_base: Path, source: str, n: int = FEEDBACKQA_SUBSET) -> list[Chunk]:
    """The ``n`` passages of ``source`` that its train/valid/test questions point to most often
    (ties: lower passage id), in passage order: the part of the FAQ users actually ask about."""
    prefix = FEEDBACKQA_SOURCES[source]
    counts: Counter[int] = Counter()
    for split in ("train", "valid", "test"):
        data = json.loads((faq_base / f"{prefix}_{split}.json").read_text(encoding="utf-8"))
        counts.update(int(e["passage_id"]) for e in data["examples"])
    keep = {pid for pid, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]}
    return [c for c in feedbackqa_chunks(faq_base, source)
            if int(c.id.rsplit("/", 1)[1]) in keep and c.text]


def main() -> None:
    """Rewrite the shipped ``chunks.jsonl`` files from the shared data folder."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=shared_data_dir())
    parser.add_argument("--out", type=Path, default=Path(__file__).parents[1] / "data" / "kb")
    args = parser.parse_args()
    if args.data is None:
        raise SystemExit("shared data folder not found: pass --data ../shared/data")
    write_chunks(args.out / "hr" / "chunks.jsonl", hr_chunks(args.data))
    for source in FEEDBACKQA_SOURCES:
        chunks = feedbackqa_subset(args.data / "feedbackqa" / "faq_base", source)
        write_chunks(args.out / f"feedbackqa-{source}" / "chunks.jsonl", chunks)


if __name__ == "__main__":
    main()
