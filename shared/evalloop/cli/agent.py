"""`evalloop agent` (being built: owned by one helper; see its module when filled)."""

import typer

app = typer.Typer(no_args_is_help=True)
