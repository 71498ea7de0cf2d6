"""``kgmind kg``: import, inspect and reset knowledge graphs."""

from __future__ import annotations

import typer

app = typer.Typer(help="Import, inspect and manage knowledge graphs.", no_args_is_help=True)
