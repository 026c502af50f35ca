"""The judge server's launcher (docs/judge.md#the-embedded-judge): AMX is found by its CPU flag."""

from __future__ import annotations

from evalloop.adapters.llama_main import cpu_has_amx

SAPPHIRE_RAPIDS = ("processor\t: 0\nflags\t\t: fpu vme avx2 avx512f avx512_bf16 amx_bf16 "
                   "avx512_fp16 amx_tile amx_int8\nbugs\t\t: spectre_v1\n")
ICE_LAKE = "processor\t: 0\nflags\t\t: fpu vme avx2 avx512f avx512_vnni\n"


def test_a_cpu_with_amx_flags_has_amx_and_others_do_not() -> None:
    assert cpu_has_amx(SAPPHIRE_RAPIDS) is True
    assert cpu_has_amx(ICE_LAKE) is False
    assert cpu_has_amx("") is False
    # a word that merely contains "amx" elsewhere is no AMX flag
    assert cpu_has_amx("model name\t: AMX-free test CPU\nflags\t\t: fpu xamx_like\n") is False
