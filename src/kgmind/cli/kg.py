"""``kgmind kg``: import, inspect and reset knowledge graphs.

Commands: ``import`` (parse a KG file, bulk-load it and report the roles and directions it
read, :mod:`kgmind.importers.report`), ``stats`` (counts per
entity and relation type, and the conditions a small KG covers), ``demo`` ((re)load the
shipped demo KG). Other modules add
commands to :data:`app` (``kg weights``, ``kg reset-weights``).

``list`` shows the named stores under ``$KGMIND_HOME`` (``import --name NAME``, read with ``--kg NAME``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from kgmind.cli._app import KgmindTyper
from kgmind.cli._common import console, handle_errors, pick_store
from kgmind.settings import default_store_uri

if TYPE_CHECKING:
    from kgmind.importers.report import ImportReport
    from kgmind.stores.protocol import GraphStore, StoreStats

__all__ = [
    "MAX_LISTED_CONDITIONS",
    "MAX_REPORT_WARNINGS",
    "app",
    "condition_names",
    "demo_notice",
    "resolve_store_uri",
]

#: ``kg stats`` names the conditions (disease-typed entities) of a KG that has at most this many:
#: the demo KG's 54 fit on a screen; a real KG's thousands are a count.
MAX_LISTED_CONDITIONS = 100

app = KgmindTyper(help="Import, inspect and manage knowledge graphs.", no_args_is_help=True)

StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store", "-s", help="Store URI (ladybug:PATH, neo4j://HOST, bolt://HOST …); not with --name."
    ),
]
NameOpt = Annotated[
    str | None,
    typer.Option("--name", "-n", "--kg", help="Use the embedded store ladybug:$KGMIND_HOME/<NAME>."),
]


def resolve_store_uri(store: str | None, name: str | None) -> str:
    """Pick the store URI for a command: ``--store``, else ``--name``, else the default demo store.

    Raises:
        CliError: Both ``--store`` and ``--name`` were given (exit 2).
        ValueError: ``name`` is not a plain name (letters, digits, ``.``, ``_``, ``-``).

    """
    return pick_store(store, name, must_exist=False) or default_store_uri()


def condition_names(kg: GraphStore, st: StoreStats) -> list[str] | None:
    """The names of ``kg``'s disease-typed entities (sorted), or ``None`` when there are too many to list.

    Only a KG with at most :data:`MAX_LISTED_CONDITIONS` conditions is read entity by entity.
    """
    n = sum(count for etype, count in st.entities.items() if etype.lower() == "disease")
    if n > MAX_LISTED_CONDITIONS:
        return None
    if n == 0:
        return []
    names = {e.name for e in kg.iter_entities() if e.type.lower() == "disease"}
    return sorted(names, key=str.casefold)


def demo_notice(kg: GraphStore) -> str | None:
    """One line saying that ``kg`` is the shipped demo KG and how to bring a real one; ``None`` otherwise.

    ``kgmind ask`` prints it on every run on the demo KG (stderr, one line, not with
    ``--quiet``): whether an answer can be trusted depends on it every time (a question
    outside its conditions still gets a confident answer from the nearest ones), and a line
    on stderr costs nothing to skip, where a once-per-home note would be gone by the time
    it matters (and in CI every home is new).
    """
    from kgmind.importers.demo_store import demo_conditions

    n = demo_conditions(kg)
    if n is None:
        return None
    return (
        f"note: this is the demo KG, {n} common conditions (`kgmind kg stats` lists them); for a real KG: "
        f"`kgmind kg import FILE --format FORMAT --name NAME`, then `kgmind ask … --store "
        f"{default_store_uri('NAME')}`"
    )


def _print_conditions(names: list[str] | None, st: StoreStats) -> None:
    """Print the conditions line of ``kg stats`` (nothing for a KG without disease-typed entities)."""
    if names is None:
        n = sum(count for etype, count in st.entities.items() if etype.lower() == "disease")
        console.print(f"conditions: {n:,} (more than {MAX_LISTED_CONDITIONS}: not listed)", highlight=False)
    elif names:
        console.print(f"conditions ({len(names)}): " + ", ".join(names), highlight=False, markup=False)


@app.command("import")
@handle_errors
def import_cmd(
    path: Annotated[Path, typer.Argument(help="File to import (a directory for recrawl-json).")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="chatdoctor, mindmap-tsv, qasystem-json, recrawl-json or triples.",
        ),
    ],
    store: StoreOpt = None,
    name: NameOpt = None,
    schema: Annotated[
        Path | None,
        typer.Option(
            "--schema",
            help="Relation roles where names cannot be read: JSON, or `relation,role[,disease_end]` lines "
            "(role symptom/test/treatment/other; disease_end head/tail).",
        ),
    ] = None,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show progress bars.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary and report as JSON.")] = False,
) -> None:
    """Parse a KG file fully, load it into the store in one transaction, and report what it read."""
    from kgmind.importers import ProgressTracker, check_result, get_parser, import_result, read_for_import
    from kgmind.relations import load_schema_file
    from kgmind.stores.factory import open_store

    get_parser(fmt)  # an unknown format fails before anything is read
    uri = resolve_store_uri(store, name)
    # read the schema file and parse everything first: bad input never creates or touches the store
    overrides = load_schema_file(schema) if schema is not None else None
    with ProgressTracker(progress and not as_json) as tracker:
        t0 = time.perf_counter()
        result = read_for_import(path, fmt, tracker)
        parse_seconds = time.perf_counter() - t0
        check_result(result)
        summary = import_result(result, open_store(uri, create=True), tracker=tracker, overrides=overrides)
    summary.parse_seconds = parse_seconds
    if as_json:
        typer.echo(summary.model_dump_json(indent=2))
        return
    console.print(
        f"imported [bold]{summary.format}[/] {summary.source} into {summary.store}: "
        f"{summary.entities:,} entities, {summary.relations:,} relations, {summary.docs:,} docs "
        f"from {summary.rows:,} rows; {summary.skipped:,} malformed rows skipped "
        f"(parse {summary.parse_seconds:.1f} s, load {summary.load_seconds:.1f} s)",
        highlight=False,
        soft_wrap=True,
    )
    if summary.repaired:
        console.print(
            f"  repaired {summary.repaired:,} names and texts "
            "(escaped UTF-8 bytes decoded, stray backslashes dropped)",
            highlight=False,
            soft_wrap=True,
        )
    for err in summary.errors[:10]:
        console.print(f"  skipped {err}", highlight=False, soft_wrap=True)
    if summary.skipped > 10:
        console.print(f"  … and {summary.skipped - 10:,} more", highlight=False)
    if summary.report is not None:
        _print_report(summary.report)


#: Warnings the import report prints at most (the rest are counted; ``--json`` has them all).
MAX_REPORT_WARNINGS = 12


def _print_report(report: ImportReport) -> None:
    """Render the import report: entity types, one row per relation, warnings and notes."""
    from kgmind.importers.report import decided_by

    types = ", ".join(f"{t} {n:,}" for t, n in report.entity_types.items())
    console.print(f"entity types: {types}", highlight=False, markup=False, soft_wrap=True)
    table = Table(title="relations", title_justify="left", box=None, pad_edge=False)
    for title in ("relation", "count", "role", "direction", "decided by"):
        table.add_column(title, justify="right" if title == "count" else "left", overflow="fold")
    for ln in report.relations:
        table.add_row(
            ln.relation, f"{ln.count:,}", ln.role, f"{ln.head_type} → {ln.tail_type}", decided_by(ln)
        )
    console.print(table)
    for text in report.warnings[:MAX_REPORT_WARNINGS]:
        console.print(f"warning: {text}", highlight=False, markup=False, soft_wrap=True)
    if len(report.warnings) > MAX_REPORT_WARNINGS:
        more = len(report.warnings) - MAX_REPORT_WARNINGS
        console.print(f"… and {more} more warnings (--json lists them all)", highlight=False)
    for text in report.notes:
        console.print(f"note: {text}", highlight=False, markup=False, soft_wrap=True)


@app.command("stats")
@handle_errors
def stats_cmd(
    store: StoreOpt = None,
    name: NameOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print counts as JSON.")] = False,
) -> None:
    """Count entities and relations per type and list a small KG's conditions (default store: the demo KG)."""
    from kgmind.importers.demo_store import ensure_demo_store
    from kgmind.stores.factory import open_store

    uri = resolve_store_uri(store, name)
    # a reader: a missing store is an error, never created (the default demo store excepted)
    kg = ensure_demo_store(uri) if not (store or name) else open_store(uri)
    st = kg.stats()
    names = condition_names(kg, st)
    if as_json:
        payload = {
            "entities": dict(sorted(st.entities.items())),
            "relations": dict(sorted(st.relations.items())),
            "entities_total": st.entities_total,
            "relations_total": st.relations_total,
            "conditions": names,  # null: more than MAX_LISTED_CONDITIONS (the count is entities.disease)
        }
        typer.echo(json.dumps(payload, ensure_ascii=False, indent=2))
        return
    console.print(f"store {kg.uri}", highlight=False)
    for title, counts, total in (
        ("entity type", st.entities, st.entities_total),
        ("relation type", st.relations, st.relations_total),
    ):
        table = Table(show_footer=True)
        table.add_column(title, footer="total")
        table.add_column("count", justify="right", footer=f"{total:,}")
        for key, n in sorted(counts.items()):
            table.add_row(key, f"{n:,}")
        console.print(table)
    console.print(f"documents: {st.docs_total:,}", highlight=False)
    _print_conditions(names, st)


@app.command("demo")
@handle_errors
def demo_cmd(
    store: StoreOpt = None,
    reset: Annotated[bool, typer.Option("--reset", help="Clear the store before loading.")] = False,
) -> None:
    """(Re)load the shipped demo KG (default store: ladybug:$KGMIND_HOME/demo)."""
    from kgmind.importers.demo_store import load_demo
    from kgmind.stores.factory import open_store

    kg = open_store(resolve_store_uri(store, None), create=True)
    summary = load_demo(kg, reset=reset)
    console.print(
        f"loaded the demo KG into {kg.uri}: {summary.entities:,} entities, "
        f"{summary.relations:,} relations, {summary.docs:,} docs",
        highlight=False,
        soft_wrap=True,
    )


def _list_rows() -> list[dict[str, object]]:
    """One row per named store: name, URI, counts (None when it cannot be opened), default flag."""
    from kgmind.settings import DEFAULT_KG_NAME
    from kgmind.stores.factory import named_stores, open_store
    from kgmind.stores.protocol import StoreError

    rows: list[dict[str, object]] = []
    for kg_name, uri in named_stores().items():
        row: dict[str, object] = {"name": kg_name, "store": uri, "default": kg_name == DEFAULT_KG_NAME}
        try:
            st = open_store(uri).stats()
            row |= {"entities": st.entities_total, "relations": st.relations_total}
        except StoreError as exc:  # e.g. held by another process: listed, not fatal
            row |= {"entities": None, "relations": None, "error": str(exc)}
        rows.append(row)
    return rows


@app.command("list")
@handle_errors
def list_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print the stores as JSON.")] = False,
) -> None:
    """List the KGs under $KGMIND_HOME (use one with `--kg NAME`), with their entity and relation counts."""
    from kgmind.settings import DEFAULT_KG_NAME, kgmind_home

    rows = _list_rows()
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    default = f"{DEFAULT_KG_NAME} (default: the shipped demo KG, imported on first use)"
    if not rows:
        console.print(
            f"no KGs under {kgmind_home()} yet; import one with `kgmind kg import FILE --name NAME`; "
            f"without --kg or --store kgmind uses {default}",
            highlight=False,
            soft_wrap=True,
        )
        return
    table = Table(caption="use one with --kg NAME; without --kg or --store: the default demo KG")
    for title in ("name", "entities", "relations", "store"):
        table.add_column(title, justify="right" if title in ("entities", "relations") else "left")
    for row in rows:
        counts = [f"{row[k]:,}" if row[k] is not None else "?" for k in ("entities", "relations")]
        label = f"{row['name']} (default)" if row["default"] else str(row["name"])
        table.add_row(label, *counts, str(row.get("error") or row["store"]))
    console.print(table)
