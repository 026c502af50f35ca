"""Give freed heap memory back to the operating system (glibc ``malloc_trim``).

After a large, short-lived computation (a triage re-clustering of 20,000 cases allocates about
200 MB in a worker thread and frees it), glibc keeps much of the freed memory in its arenas, so
the process's RSS stays near the peak although nothing uses it. ``malloc_trim(0)`` releases
the free pages of every arena. It changes no allocator setting and frees nothing in use, so it
is safe when several services share the process (``evalloop up``). Measured:
``docs/operations.md#soak``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
from collections.abc import Callable

__all__ = ["trim"]

log = logging.getLogger(__name__)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        fn = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to release this way
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


def trim() -> bool:
    """Release the free heap pages of every glibc arena to the OS.

    Returns:
        ``True`` when glibc released memory, ``False`` when it had none to release or the C
        library has no ``malloc_trim`` (then this does nothing).
    """
    fn = _malloc_trim()
    return bool(fn(0)) if fn is not None else False
