"""`evalloop replay` (being built)."""


def replay() -> None:
    """Not built yet."""
    raise SystemExit("evalloop replay: not built yet")
