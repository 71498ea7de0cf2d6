"""Knowledge-graph importers: parse public medical KG files and bulk-load them into a GraphStore.

Formats (see each module's docstring for the exact mapping):

* ``chatdoctor`` — ChatDoctor ``format_dataset.csv`` / ``disease_database_mini.csv``
  (:mod:`kgmind.importers.chatdoctor`);
* ``mindmap-tsv`` — MindMap's ``head<TAB>relation<TAB>tail`` EMCKG triples
  (:mod:`kgmind.importers.triples`);
* ``qasystem-json`` — QASystemOnMedicalKG ``medical.json`` (:mod:`kgmind.importers.chinese`);
* ``recrawl-json`` — MedicalKGQA's ``medical_*.json`` parts (:mod:`kgmind.importers.chinese`);
* ``triples`` — generic ``head,relation,tail[,weight]`` CSV/TSV (:mod:`kgmind.importers.triples`).

Parsing is separate from writing: :func:`parse` reads everything (reporting, skipping and
counting malformed rows) and :func:`import_kg` then calls ``store.bulk_load`` once, so an
import lands entirely or not at all. An input with no valid row writes nothing.

Between the two, every import infers its relations' roles and types the ends of relations
outside the fixed vocabulary from them (:mod:`kgmind.importers.roles`), keeps the roles a
user gave (``--schema``) in the store, and reports what it read
(:mod:`kgmind.importers.report`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from kgmind.importers import base as _base
from kgmind.importers.base import *  # noqa: F403 - the importer building blocks, listed once in base.__all__
from kgmind.importers.base import ImportResult, ImportSummary, NoValidRowsError, Parser, ProgressTracker
from kgmind.importers.chatdoctor import parse_chatdoctor
from kgmind.importers.chinese import parse_qasystem_json, parse_recrawl_json
from kgmind.importers.columnar import COLUMNAR_FORMATS, ColumnarResult, parse_columns, type_columns
from kgmind.importers.demo import demo_kg_path, parse_demo
from kgmind.importers.report import ImportReport, build_report
from kgmind.importers.roles import type_by_roles
from kgmind.importers.triples import parse_mindmap_tsv, parse_triples
from kgmind.importers.vocab import INVERSE, RELATION_TYPES
from kgmind.relations import RelationSchema
from kgmind.stores.columns import load_columns
from kgmind.stores.protocol import GraphStore, LoadReport

__all__ = [
    "FORMATS",
    "INVERSE",
    "ImportReport",
    "RELATION_TYPES",
    *_base.__all__,
    "ColumnarResult",
    "check_result",
    "demo_kg_path",
    "get_parser",
    "import_kg",
    "import_result",
    "parse",
    "parse_chatdoctor",
    "parse_demo",
    "parse_mindmap_tsv",
    "parse_qasystem_json",
    "parse_recrawl_json",
    "parse_triples",
    "read_for_import",
    "type_by_roles",
]

#: format name -> parser
FORMATS: dict[str, Parser] = {
    "chatdoctor": parse_chatdoctor,
    "mindmap-tsv": parse_mindmap_tsv,
    "qasystem-json": parse_qasystem_json,
    "recrawl-json": parse_recrawl_json,
    "triples": parse_triples,
}


def get_parser(fmt: str) -> Parser:
    """Return the parser of format ``fmt``.

    Raises:
        ValueError: Unknown format (the message lists the known ones).

    """
    parser = FORMATS.get(fmt.strip().lower())
    if parser is None:
        raise ValueError(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    return parser


def parse(
    path: str | Path,
    fmt: str,
    *,
    progress: bool = False,
    overrides: Mapping[str, Mapping[str, str]] | None = None,
) -> ImportResult:
    """Parse ``path`` in format ``fmt`` and type entities by relation roles, without writing anything.

    Args:
        path: Input file (or directory for ``recrawl-json``).
        fmt: One of :data:`FORMATS`.
        progress: Show rich progress bars on stderr.
        overrides: Relation roles a user gave (:func:`kgmind.relations.load_schema_file`).

    Raises:
        ValueError: Unknown format.
        FileNotFoundError: ``path`` does not exist.

    """
    parser = get_parser(fmt)
    with ProgressTracker(progress) as tracker:
        result = parser(Path(path), tracker)
    type_by_roles(result, overrides)
    return result


def read_for_import(path: str | Path, fmt: str, tracker: ProgressTracker) -> ImportResult | ColumnarResult:
    """Parse ``path`` as an import reads it: triple files as columns (:mod:`kgmind.importers.columnar`).

    A triple file may hold millions of relations; read as columns it streams and never
    becomes one object per relation. Other formats are parsed to objects.

    Raises:
        ValueError: Unknown format.
        FileNotFoundError: ``path`` does not exist.
    """
    parser = get_parser(fmt)
    key = fmt.strip().lower()
    if key in COLUMNAR_FORMATS:
        return parse_columns(path, key, tracker)
    return parser(Path(path), tracker)


def check_result(result: ImportResult | ColumnarResult) -> None:
    """Raise unless ``result`` holds at least one valid row.

    Raises:
        NoValidRowsError: No valid row (the message quotes the first row error).

    """
    if result.rows == 0:
        first = f"; first error: {result.errors[0]}" if result.errors else ""
        raise NoValidRowsError(
            f"{result.source}: no valid rows ({result.skipped} malformed), nothing written{first}"
        )


def stored_roles(
    kept: Mapping[str, Mapping[str, str]],
    schema: RelationSchema,
    overrides: Mapping[str, Mapping[str, str]] | None,
) -> dict[str, dict[str, str]]:
    """The roles a store keeps after an import: its earlier ones, this import's reading, the user's.

    A role a user gave (now or at an earlier import) wins over any inferred one; among
    inferred ones the latest import's reading wins.
    """
    out = {k: dict(v) for k, v in kept.items()}
    for rel, role in schema.roles.items():
        if out.get(rel, {}).get("how", "schema") == "schema" and rel in out:
            continue  # given by a user before
        out[rel] = {"role": role.role, "disease_end": role.disease_end or "", "how": "import"}
    for rel, given in (overrides or {}).items():
        out[rel] = {**dict(given), "how": "schema"}
    return out


def import_result(
    result: ImportResult | ColumnarResult,
    store: GraphStore,
    *,
    tracker: ProgressTracker | None = None,
    overrides: Mapping[str, Mapping[str, str]] | None = None,
) -> ImportSummary:
    """Type ``result`` by relation roles, write it with one ``store.bulk_load`` call, and report.

    The roles given in ``overrides`` are merged into those the store already keeps (a
    relation named again takes the new role) and stored after the load, with the roles this
    import inferred for its other relations (``how="import"``; a role a user gave earlier
    stays), so the store's schema (:meth:`~kgmind.stores.protocol.GraphStore.relation_schema`)
    reads every relation as the import did, even where the import used cues the store
    cannot see (name sets, inverse pairs).

    Args:
        result: The parsed KG (its entities are typed in place, once), as objects or columns.
        store: The store to write to.
        tracker: Progress display.
        overrides: Relation roles a user gave (:func:`kgmind.relations.load_schema_file`).

    Raises:
        NoValidRowsError: The result holds no valid row (nothing is written).
        StoreError: The store rejected the load (nothing is written).
        ValueError: ``result`` was typed before with other overrides (nothing is written).

    """
    check_result(result)
    columnar = isinstance(result, ColumnarResult)
    schema = type_columns(result, overrides) if columnar else type_by_roles(result, overrides)  # type: ignore[arg-type]
    tracker = tracker or ProgressTracker(enabled=False)
    t0 = time.perf_counter()
    with tracker.status(f"writing {len(result.relations):,} relations to the store"):
        report: LoadReport
        if isinstance(result, ColumnarResult):
            report = load_columns(store, result.entities.values(), result.relations)
        else:
            report = store.bulk_load(result.entities, result.relations, result.docs)
        store.set_schema_overrides(stored_roles(store.schema_overrides(), schema, overrides))
    load_seconds = time.perf_counter() - t0
    entity_types, relation_types = result.entity_counts(), result.relation_counts()
    import_report = build_report(
        entity_types, relation_types, schema, overrides=overrides, store_schema=store.relation_schema()
    )
    return ImportSummary(
        format=result.format,
        source=result.source,
        store=store.uri,
        rows=result.rows,
        skipped=result.skipped,
        repaired=result.repaired,
        errors=result.errors,
        entities=report.entities,
        relations=report.relations,
        docs=report.docs,
        entity_types=entity_types,
        relation_types=relation_types,
        load_seconds=load_seconds,
        report=import_report,
    )


def import_kg(
    path: str | Path,
    fmt: str,
    store: GraphStore,
    progress: bool = True,
    *,
    overrides: Mapping[str, Mapping[str, str]] | None = None,
) -> ImportSummary:
    """Parse ``path`` fully, then load it into ``store`` in one unit (all or nothing).

    Triple files are read as columns and loaded in batches inside one transaction
    (:func:`read_for_import`); other formats with one ``bulk_load``.

    Args:
        path: Input file (or directory for ``recrawl-json``).
        fmt: One of :data:`FORMATS`.
        store: The store to write to.
        progress: Show rich progress bars on stderr.
        overrides: Relation roles a user gave (:func:`kgmind.relations.load_schema_file`).

    Returns:
        Counts of what was parsed, skipped and written, with timings.

    Raises:
        ValueError: Unknown format.
        FileNotFoundError: ``path`` does not exist.
        NoValidRowsError: No valid row in the input (nothing is written).
        StoreError: The store rejected the load.

    """
    with ProgressTracker(progress) as tracker:
        t0 = time.perf_counter()
        result = read_for_import(path, fmt, tracker)
        parse_seconds = time.perf_counter() - t0
        summary = import_result(result, store, tracker=tracker, overrides=overrides)
    summary.parse_seconds = parse_seconds
    return summary
