"""``kgmind show RUN_ID``: print or render a stored run from its checkpoint, without running it again."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kgmind.cli._common import (
    CheckpointOption,
    KgOption,
    StoreOption,
    check_run_store,
    handle_errors,
    load_stored_run,
    pick_store,
)

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
    store: StoreOption = None,
    kg: KgOption = None,
) -> None:
    """Show the stored run RUN_ID (answer, mind map, evidence) from its checkpoint."""
    from kgmind.cli.ask import emit_result, result_dict

    uri = pick_store(store, kg)  # a missing store is an error before the run is read
    values, _next = load_stored_run(run_id, checkpoint)
    check_run_store(run_id, values, uri)
    emit_result(result_dict(values), as_json=as_json, html=html, mermaid=mermaid)


def register(app: typer.Typer) -> None:
    """Add the ``show`` command to ``app``."""
    app.command("show")(show)
