"""Every citation of a docs page's section resolves: the page exists and the anchor is one of
its headings.

The code, the tests, the README and the docs cite sections as ``docs/<name>.md#<anchor>``; the
docs also link to each other (``rules-catalogue.md#<anchor>``) and within a page (``#<anchor>``).
An anchor is the GitHub slug of a heading: lower case, every character other than a letter, a
digit, a space, a hyphen or an underscore dropped, spaces made hyphens, and a repeated heading
suffixed ``-1``, ``-2``, ... A citation wrapped across a source line break ("...#refusal-and-
escalation-" then "gates" on the next line) ends in a hyphen and is not read, nor is one cut
short on purpose and marked so with "..." or "…". Plain files only: no project imports.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: Where citations are looked for: these folders (every text file in them) and the README.
SCANNED_DIRS = ("shared", "services", "tests", "tools", "schemas", "docs")
SCANNED_FILES = ("README.md",)
#: What .gitignore keeps out of the repository (caches, build output, run results).
SKIPPED_DIRS = {"__pycache__", ".git", "node_modules", ".mypy_cache", ".ruff_cache",
                ".pytest_cache", ".venv", ".hypothesis", ".cache", "build", "var", "artifacts"}
SKIPPED_FILES = re.compile(r"evals-(?:results|summary)-.*")
MAX_BYTES = 4 * 1024 * 1024

#: The anchor ends in a letter, digit or underscore and is followed by no anchor character
#: (so a hyphen left by a line break is no citation) and by no "..." (a citation shown cut).
_ANCHOR = r"(?P<anchor>[A-Za-z0-9_-]*[A-Za-z0-9_])(?![A-Za-z0-9_-])(?!\.\.\.|\u2026)"
CITATION = re.compile(r"\bdocs/(?P<page>[A-Za-z0-9_.-]+\.md)#" + _ANCHOR)
#: A Markdown link from one docs page to another: "(rules-catalogue.md#tool-calls)".
RELATIVE = re.compile(r"\]\((?P<page>[A-Za-z0-9_.-]+\.md)#" + _ANCHOR + r"\)")
#: A Markdown link within the page: "(#tool-calls)".
SAME_PAGE = re.compile(r"\]\(#" + _ANCHOR + r"\)")
HEADING = re.compile(r"^(#{1,6})\s+(?P<text>.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def slug(heading: str) -> str:
    """The GitHub anchor of a heading's text."""
    kept = "".join(c for c in heading.strip().lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of every heading of a Markdown page (headings inside code fences are no
    headings)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if m is None:
            continue
        base = slug(m.group("text"))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def _text_files() -> Iterator[Path]:
    for name in SCANNED_FILES:
        yield ROOT / name
    for top in SCANNED_DIRS:
        for folder, dirs, files in os.walk(ROOT / top):
            dirs[:] = sorted(d for d in dirs
                             if d not in SKIPPED_DIRS and not d.endswith(".egg-info"))
            for f in sorted(files):
                if SKIPPED_FILES.fullmatch(f):
                    continue
                path = Path(folder) / f
                if path.stat().st_size <= MAX_BYTES:
                    yield path


def _read(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def citations() -> list[tuple[str, int, Path, str]]:
    """Every (file, line, page cited, anchor) found."""
    found = []
    for path in _text_files():
        text = _read(path)
        if text is None:
            continue
        where = path.relative_to(ROOT).as_posix()
        in_docs = path.parent == DOCS and path.suffix == ".md"
        for m in CITATION.finditer(text):
            found.append((where, text.count("\n", 0, m.start()) + 1, DOCS / m.group("page"),
                          m.group("anchor")))
        if not in_docs:
            continue
        for m in RELATIVE.finditer(text):
            found.append((where, text.count("\n", 0, m.start()) + 1,
                          path.parent / m.group("page"), m.group("anchor")))
        for m in SAME_PAGE.finditer(text):
            found.append((where, text.count("\n", 0, m.start()) + 1, path, m.group("anchor")))
    return found


def test_slug_follows_github() -> None:
    assert slug("A/B comparison") == "ab-comparison"
    assert slug("Refusal and escalation gates") == "refusal-and-escalation-gates"
    assert slug("GO needs a calibrated judge") == "go-needs-a-calibrated-judge"
    assert slug("Kafka from Maven Central") == "kafka-from-maven-central"


def test_a_wrapped_or_elided_citation_is_not_read() -> None:
    wrapped = "(docs/rules.md#refusal-and-escalation-\n#: gates)"
    elided = '("docs/rules.md#eva...")'
    whole = "(docs/rules.md#tool-calls)."
    assert [m.group("anchor") for m in CITATION.finditer(wrapped + elided + whole)] == [
        "tool-calls"]


def test_every_docs_citation_resolves() -> None:
    found = citations()
    assert len(found) > 100, "the scan found almost no citations: is the layout unchanged?"
    cache: dict[Path, set[str]] = {}
    broken = []
    for where, line, page, anchor in found:
        if not page.is_file():
            broken.append(f"{where}:{line}: {page.relative_to(ROOT).as_posix()}#{anchor} "
                          "(no such page)")
            continue
        if page not in cache:
            cache[page] = anchors(page)
        if anchor not in cache[page]:
            broken.append(f"{where}:{line}: {page.relative_to(ROOT).as_posix()}#{anchor} "
                          "(no heading has this anchor)")
    assert not broken, (f"{len(broken)} broken docs citation(s):\n" + "\n".join(broken))
