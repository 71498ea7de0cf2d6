"""``kgmind index``: build the FAISS entity index of a store (names and aliases → entity ids)."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from kgmind.cli._app import KgmindTyper
from kgmind.cli._common import CliError, console, handle_errors, pick_store
from kgmind.stores.protocol import GraphStore

app = KgmindTyper(help="Build and inspect the entity index.", no_args_is_help=True)

_MODELS = ("auto", "minilm", "e5", "hash")


@app.callback()
def _group() -> None:
    """Build and inspect the entity index."""


@app.command("build")
@handle_errors
def build(
    store: str | None = typer.Option(
        None, "--store", help="Store URI (ladybug:PATH, neo4j://…); default: the demo store."
    ),
    kg_name: str | None = typer.Option(
        None, "--kg", help="The KG imported with `kgmind kg import FILE --name NAME`; not with --store."
    ),
    model: str = typer.Option(
        "auto", "--model", help="Embedding model: minilm, e5, or auto (by the KG's dominant language)."
    ),
    force: bool = typer.Option(
        False, "--force", help="Rebuild even if a fresh index exists, embedding every name again."
    ),
) -> None:
    """Embed every entity name and alias of the store and save the index beside it.

    Names whose vectors the replaced index (or an interrupted build) already holds are not
    embedded again, unless ``--force``.
    """
    from kgmind.retrievers.entity_index import EntityIndex, build_and_save
    from kgmind.retrievers.entity_index_cache import (
        clear_entity_index_cache,
        entity_index_dir,
        get_entity_index,
        resolve_model,
    )

    if model not in _MODELS:
        raise CliError(f"unknown model {model!r}: use one of {', '.join(_MODELS)}", 2)
    kg = _open(pick_store(store, kg_name))
    name = resolve_model(kg, model)
    directory = entity_index_dir(kg.uri, name)
    fingerprint = kg.fingerprint()
    t0 = time.perf_counter()
    if force:
        index = build_and_save(kg, name, directory, fingerprint=fingerprint, progress=True, reuse=False)
        clear_entity_index_cache()
        action = "built"
    else:
        fresh = EntityIndex.load(directory, model=name, fingerprint=fingerprint) is not None
        index = get_entity_index(kg, name, progress=True)
        graphs = _graph_files(directory)
        index.ann()  # an index saved without its search graph (or with an older kind) gets it here
        action = "up to date" if fresh else "built"
        if fresh and _graph_files(directory) - graphs:
            action = "up to date, its search graph built"
    reused = f", {index.reused} names reused" if action == "built" and index.reused else ""
    console.print(
        f"entity index {action}: model={name}, entities={len(index.entities)}, vectors={len(index)}{reused}, "
        f"{time.perf_counter() - t0:.1f}s\n  {directory}",
        highlight=False,
        soft_wrap=True,
    )


def _graph_files(directory: Path) -> set[str]:
    """The search graph files saved in an index folder now."""
    from kgmind.retrievers.entity_search import CODED_GRAPH_FILE, FLOAT_GRAPH_FILE

    return {name for name in (FLOAT_GRAPH_FILE, CODED_GRAPH_FILE) if (directory / name).is_file()}


def _open(uri: str | None) -> GraphStore:
    """Open the store at ``uri`` (the demo store, imported on first use, when ``None``)."""
    if uri is None:
        from kgmind.importers.demo_store import ensure_demo_store

        return ensure_demo_store()
    from kgmind.stores.factory import open_store

    return open_store(uri)
