"""``kgmind eval``: evaluation harness (placeholder until its issue lands)."""

from __future__ import annotations

import typer

app = typer.Typer(help="Evaluate retrieval and answers against the papers' baselines.", no_args_is_help=True)
