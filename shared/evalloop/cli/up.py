"""`evalloop up` (being built)."""


def up() -> None:
    """Not built yet."""
    raise SystemExit("evalloop up: not built yet")
