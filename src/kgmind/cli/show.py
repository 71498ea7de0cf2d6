"""``kgmind show RUN_ID``: print or render a stored run from its checkpoint, without running it again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from kgmind.cli._common import CheckpointOption, handle_errors, load_stored_run

__all__ = ["register", "show"]


@handle_errors
def show(
    run_id: Annotated[str, typer.Argument(help="Run id printed by `kgmind ask`.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the run as JSON (as `ask --json`).")] = False,
    html: Annotated[Path | None, typer.Option(help="Write a self-contained HTML page of the run.")] = None,
    mermaid: Annotated[
        Path | None, typer.Option(help="Write the mind map + evidence graph as Mermaid.")
    ] = None,
    checkpoint: CheckpointOption = None,
) -> None:
    """Show the stored run RUN_ID (answer, mind map, evidence) from its checkpoint."""
    from kgmind.cli.ask import print_result, result_dict, write_renderings

    values, _next = load_stored_run(run_id, checkpoint)
    result = result_dict(values)
    write_renderings(result, html=html, mermaid=mermaid)
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        print_result(result)


def register(app: typer.Typer) -> None:
    """Add the ``show`` command to ``app``."""
    app.command("show")(show)
