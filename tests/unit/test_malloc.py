"""Releasing freed heap memory to the OS (glibc malloc_trim)."""

from __future__ import annotations

import ctypes.util
from pathlib import Path

import pytest

from evalloop.adapters import malloc


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not Path("/proc/self/status").exists() or not ctypes.util.find_library("c"),
                    reason="needs Linux with a C library")
def test_freed_heap_pages_go_back_to_the_os() -> None:
    # 600 blocks of 100 kB (below glibc's mmap threshold: on the heap), then one block kept
    # above them, so free() alone cannot shrink the heap; the freed 60 MB stay resident
    blocks = [bytearray(b"x") * 100_000 for _ in range(600)]
    pinned = bytearray(b"y") * 100_000
    del blocks
    before = _rss_kb()
    assert malloc.trim() is True
    assert before - _rss_kb() >= 40_000  # at least 40 of the 60 MB released
    assert pinned[:1] == b"y"
