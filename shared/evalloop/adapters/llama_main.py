"""``python -m evalloop.adapters.llama_main ARGS``: llama.cpp's OpenAI-compatible server
(``python -m llama_cpp.server ARGS``, the same arguments), safe on CPUs with AMX.

On a CPU with Intel AMX (Sapphire Rapids and later), llama.cpp packs the weights of a Q4_K_M
model into AMX buffers ("extra buffer types") and its AMX matrix multiply crashes the server
with a segmentation fault on the first prompt of more than a few tokens -- a known upstream
defect, measured here with llama-cpp-python 0.3.36 (a 1-token prompt works, an 8-token batch
crashes). On such a CPU this launcher turns the extra buffer types off
(``llama_model_params.use_extra_bufts = False``) before the server loads the model; elsewhere it
changes nothing. ``docs/judge.md#the-embedded-judge``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

__all__ = ["cpu_has_amx", "main"]


def cpu_has_amx(cpuinfo: str | None = None) -> bool:
    """Whether the CPU advertises AMX (an ``amx_tile``/``amx_int8``/``amx_bf16`` flag).

    Args:
        cpuinfo: the text of ``/proc/cpuinfo``; ``None`` reads it (``False`` where it cannot be
            read, e.g. not Linux).
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
    return any(line.startswith("flags") and " amx_" in f"{line} "
               for line in cpuinfo.splitlines())


def _without_extra_buffer_types() -> None:
    # llama_cpp.llama builds its model parameters with llama_cpp.llama_cpp's
    # llama_model_default_params(): wrap that one function (ctypes bindings, untyped)
    raw: Any = importlib.import_module("llama_cpp.llama_cpp")
    default = raw.llama_model_default_params

    def params() -> Any:
        p = default()
        p.use_extra_bufts = False
        return p

    raw.llama_model_default_params = params


def main(argv: list[str] | None = None) -> None:
    """Run the server with ``argv`` (default: this process's arguments)."""
    if cpu_has_amx():
        _without_extra_buffer_types()
    server: Any = importlib.import_module("llama_cpp.server.__main__")
    if argv is not None:
        sys.argv = [sys.argv[0], *argv]
    server.main()


if __name__ == "__main__":
    main()
