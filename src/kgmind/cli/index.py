"""``kgmind index``: build the FAISS entity index (placeholder until its issue lands)."""

from __future__ import annotations

import typer

app = typer.Typer(help="Build and inspect the entity index.", no_args_is_help=True)
