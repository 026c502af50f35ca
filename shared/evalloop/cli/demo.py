"""`evalloop demo` (being built)."""


def demo() -> None:
    """Not built yet."""
    raise SystemExit("evalloop demo: not built yet")
