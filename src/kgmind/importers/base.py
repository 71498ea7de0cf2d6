"""Building blocks shared by every importer: the result types, a deduplicating graph builder, progress.

An importer is a *parser*: it reads a file (or directory) and returns an :class:`ImportResult`
holding :class:`~kgmind.models.Entity`, :class:`~kgmind.models.Relation` and
:class:`~kgmind.models.KnowledgeDoc` objects plus one :class:`RowError` per malformed row
(the row is reported, skipped and counted; parsing goes on). Nothing is written by a parser:
:func:`kgmind.importers.import_kg` writes the whole result with one ``bulk_load``.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field, PrivateAttr
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from kgmind.importers.report import ImportReport
from kgmind.models import (
    TYPE_PRIORITY,
    Entity,
    KnowledgeDoc,
    Relation,
    entity_id,
    normalize_name,
    relation_id,
)
from kgmind.relations import RelationSchema
from kgmind.text import repair_escapes

__all__ = [
    "GraphBuilder",
    "ImportResult",
    "ImportSummary",
    "NoValidRowsError",
    "ProgressTracker",
    "RowError",
    "begin_parse",
    "check_path",
    "csv_records",
    "item_list",
    "iter_csv_records",
]

T = TypeVar("T")


class RowError(BaseModel):
    """One malformed input row: reported, skipped and counted.

    Attributes:
        file: The file the row is in.
        line: 1-based line (CSV/TSV/JSONL) or record number (JSON dict files) of the row.
        reason: Why the row was skipped.

    """

    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


class ImportResult(BaseModel):
    """What a parser read.

    Attributes:
        format: The importer that produced it (``chatdoctor``, ``mindmap-tsv`` …).
        source: The path parsed.
        entities: Deduplicated entities (one per stable id).
        relations: Deduplicated relations (one per stable id).
        docs: Knowledge documents.
        errors: One entry per malformed row.
        rows: Rows (records, triples) read successfully.
        skipped: Rows skipped because they were malformed (``len(errors)``).
        repaired: Distinct names and texts whose escaping was repaired
            (:func:`kgmind.text.repair_escapes`).

    """

    format: str
    source: str
    entities: list[Entity] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    docs: list[KnowledgeDoc] = Field(default_factory=list)
    errors: list[RowError] = Field(default_factory=list)
    rows: int = 0
    skipped: int = 0
    repaired: int = 0
    _schema: RelationSchema | None = PrivateAttr(default=None)
    _overrides: dict[str, dict[str, str]] = PrivateAttr(default_factory=dict)

    @property
    def roles_schema(self) -> RelationSchema | None:
        """The relation roles the import typed entities by (:mod:`kgmind.importers.roles`); None before."""
        return self._schema

    @roles_schema.setter
    def roles_schema(self, schema: RelationSchema | None) -> None:
        self._schema = schema

    @property
    def roles_overrides(self) -> dict[str, dict[str, str]]:
        """The ``--schema`` roles that typing used."""
        return self._overrides

    @roles_overrides.setter
    def roles_overrides(self, overrides: dict[str, dict[str, str]]) -> None:
        self._overrides = overrides

    def relation_counts(self) -> dict[str, int]:
        """Relations per type, sorted by type."""
        counts: dict[str, int] = {}
        for rel in self.relations:
            counts[rel.type] = counts.get(rel.type, 0) + 1
        return dict(sorted(counts.items()))

    def entity_counts(self) -> dict[str, int]:
        """Entities per type, sorted by type."""
        counts: dict[str, int] = {}
        for ent in self.entities:
            counts[ent.type] = counts.get(ent.type, 0) + 1
        return dict(sorted(counts.items()))


class ImportSummary(BaseModel):
    """What :func:`kgmind.importers.import_kg` parsed and wrote.

    Attributes:
        format: Importer name.
        source: Path imported.
        store: URI of the store written to.
        rows: Rows read successfully.
        skipped: Malformed rows skipped.
        repaired: Distinct names and texts whose escaping was repaired.
        errors: The row errors (all of them).
        entities: Entities written (as reported by the store).
        relations: Relations written.
        docs: Documents written.
        entity_types: Entities parsed per type.
        relation_types: Relations parsed per type.
        parse_seconds: Wall time spent parsing.
        load_seconds: Wall time spent in ``bulk_load``.
        report: What the import read: relation roles, directions, warnings
            (:mod:`kgmind.importers.report`).

    """

    format: str
    source: str
    store: str
    rows: int
    skipped: int
    repaired: int = 0
    errors: list[RowError] = Field(default_factory=list)
    entities: int = 0
    relations: int = 0
    docs: int = 0
    entity_types: dict[str, int] = Field(default_factory=dict)
    relation_types: dict[str, int] = Field(default_factory=dict)
    parse_seconds: float = 0.0
    load_seconds: float = 0.0
    report: ImportReport | None = None


class NoValidRowsError(ValueError):
    """The input held no valid row, so nothing was written."""


def check_path(path: str | Path, *, allow_dir: bool = False) -> Path:
    """Return ``path`` as a :class:`Path`, raising if it does not exist.

    Args:
        path: The input path.
        allow_dir: Accept a directory as well as a file.

    Raises:
        FileNotFoundError: Nothing exists at ``path``.
        ValueError: ``path`` is a directory and ``allow_dir`` is false.

    """
    p = Path(path).expanduser()
    if not p.exists():
        raise FileNotFoundError(2, "No such file or directory", str(p))
    if p.is_dir() and not allow_dir:
        raise ValueError(f"{p} is a directory; this format reads one file")
    return p


def begin_parse(
    path: str | Path, tracker: ProgressTracker | None, *, allow_dir: bool = False
) -> tuple[Path, ProgressTracker, GraphBuilder, list[RowError]]:
    """What every parser starts with: the checked path, a tracker, an empty builder and error list.

    Raises:
        FileNotFoundError: ``path`` does not exist (see :func:`check_path`).
    """
    return (
        check_path(path, allow_dir=allow_dir),
        tracker or ProgressTracker(enabled=False),
        GraphBuilder(),
        [],
    )


def item_list(value: Any) -> list[str]:
    """Normalise a list-like cell value to a list of stripped strings with a non-blank lookup key.

    ``None`` gives ``[]``; a string gives a one-item list; numbers are stringified.

    Raises:
        ValueError: ``value`` is neither a list/tuple, a string, a number nor ``None``.

    """
    if value is None:
        return []
    if isinstance(value, str):
        return [value.strip()] if normalize_name(value) else []
    if isinstance(value, list | tuple):
        out: list[str] = []
        for item in value:
            if isinstance(item, str | int | float) and normalize_name(str(item)):
                out.append(str(item).strip())
        return out
    raise ValueError(f"expected a list, got {type(value).__name__}")


@dataclass
class GraphBuilder:
    """Accumulates entities, relations and docs, deduplicating by stable id.

    An entity seen with several types keeps the type ranked first by
    :data:`kgmind.models.TYPE_PRIORITY`; its description is the first non-empty one.
    A relation seen twice is kept once (the first ``source`` and ``weight`` win).
    Every name, alias, description and doc text passes through :meth:`clean` first, so
    each importer gets the same repair of escaped bytes and stray backslashes.
    """

    entities: dict[str, Entity] = field(default_factory=dict)
    relations: dict[str, Relation] = field(default_factory=dict)
    docs: dict[str, KnowledgeDoc] = field(default_factory=dict)
    _ids: dict[str, str] = field(default_factory=dict, repr=False)  # name as given -> entity id
    _rel_types: dict[str, str] = field(default_factory=dict, repr=False)  # type as given -> validated
    _repaired: set[str] = field(default_factory=set, repr=False)  # texts as given that were changed

    def clean(self, text: str) -> str:
        """Return ``text`` with escaping repaired (:func:`kgmind.text.repair_escapes`), counting repairs."""
        fixed = repair_escapes(text)
        if fixed != text:
            self._repaired.add(text)
        return fixed

    @property
    def repaired(self) -> int:
        """Distinct names and texts :meth:`clean` changed so far."""
        return len(self._repaired)

    def entity(
        self, name: str, type_: str = "entity", description: str = "", aliases: Iterable[str] = ()
    ) -> str:
        """Add (or merge) the entity called ``name`` and return its id.

        Raises:
            ValueError: ``name`` is blank.

        """
        raw, name = name, self.clean(name)
        eid = self._ids.get(raw)
        if eid is None:
            eid = self._ids[raw] = entity_id(name)
        description = self.clean(description)
        aliases = [self.clean(a) for a in aliases]
        ent = self.entities.get(eid)
        if ent is None:
            self.entities[eid] = Entity(
                id=eid, name=name, type=type_, description=description.strip(), aliases=list(aliases)
            )
            return eid
        for alias in aliases:
            if alias not in ent.aliases:
                ent.aliases.append(alias)
        rank_new = TYPE_PRIORITY.get(type_, len(TYPE_PRIORITY))
        rank_old = TYPE_PRIORITY.get(ent.type, len(TYPE_PRIORITY))
        if rank_new < rank_old:
            ent.type = type_
        if description.strip() and not ent.description:
            ent.description = description.strip()
        return eid

    def relate(
        self,
        head: str,
        rel_type: str,
        tail: str,
        *,
        inverse: str | None = None,
        weight: float = 1.0,
        source: str = "",
    ) -> None:
        """Add ``head -[rel_type]-> tail`` (entity ids) and, if given, ``tail -[inverse]-> head``."""
        self._add(head, rel_type, tail, weight, source)
        if inverse:
            self._add(tail, inverse, head, weight, source)

    def add_relation(self, rel: Relation) -> None:
        """Add an already-built relation (kept once per id)."""
        self.relations.setdefault(rel.id, rel)

    def _add(self, head: str, rel_type: str, tail: str, weight: float, source: str) -> None:
        valid = self._rel_types.get(rel_type)
        if valid is None:  # validate each distinct type (and any non-default weight) once via pydantic
            valid = self._rel_types[rel_type] = Relation(head=head, type=rel_type, tail=tail).type
        if weight != 1.0:
            weight = Relation(head=head, type=valid, tail=tail, weight=weight).weight
        rid = relation_id(head, valid, tail)
        if rid not in self.relations:
            # fields are validated above: skip pydantic's per-object validation (~400k edges)
            self.relations[rid] = Relation.model_construct(
                id=rid, head=head, type=valid, tail=tail, weight=weight, source=source
            )

    def doc(self, entity: str, text: str) -> str:
        """Add a knowledge document about entity id ``entity``; returns the doc id ("" for blank text)."""
        text = self.clean(text).strip()
        if not text:
            return ""
        d = KnowledgeDoc(entity_id=entity, text=text)
        self.docs.setdefault(d.id, d)
        return d.id

    def result(self, fmt: str, source: str | Path, errors: list[RowError], rows: int) -> ImportResult:
        """Freeze the builder into an :class:`ImportResult`."""
        return ImportResult.model_construct(
            format=fmt,
            source=str(source),
            entities=list(self.entities.values()),
            relations=list(self.relations.values()),
            docs=list(self.docs.values()),
            errors=errors,
            rows=rows,
            skipped=len(errors),
            repaired=self.repaired,
        )


_err_console = Console(stderr=True)


class ProgressTracker:
    """Rich progress bars on stderr, or nothing when disabled.

    Use as a context manager; :meth:`track` wraps an iterable in a bar.
    """

    def __init__(self, enabled: bool = True, console: Console | None = None) -> None:
        self.enabled = enabled
        self._progress: Progress | None = None
        self._console = console or _err_console
        self._live = ExitStack()  # the bars' display, closed on exit

    def __enter__(self) -> ProgressTracker:
        if self.enabled:
            columns = (
                TextColumn("[progress.description]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
            )
            self._progress = self._live.enter_context(
                Progress(*columns, console=self._console, transient=False)
            )
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress = None
        self._live.close()

    def track(self, items: Iterable[T], total: int | None, description: str) -> Iterator[T]:
        """Yield ``items``, advancing a bar of ``total`` steps when enabled."""
        if self._progress is None:
            yield from items
            return
        task = self._progress.add_task(description, total=total)
        for item in items:
            yield item
            self._progress.advance(task)
        if total is None:
            self._progress.update(task, total=self._progress.tasks[task].completed)

    def status(self, description: str) -> AbstractContextManager[Any]:
        """Show a spinner while a step of unknown size runs (e.g. ``bulk_load``)."""
        if self._progress is None:
            return nullcontext()
        return _step(self._progress, description)


@contextmanager
def _step(progress: Progress, description: str) -> Iterator[None]:
    """A spinner task while the block runs, shown complete when it ends (even by an error)."""
    task = progress.add_task(description, total=None)
    try:
        yield
    finally:
        progress.update(task, total=1, completed=1)


#: A parser: ``(path, tracker) -> ImportResult``.
Parser = Callable[[Path, ProgressTracker], ImportResult]


def csv_records(path: Path, delimiter: str = ",") -> list[tuple[int, list[str]]]:
    """Every ``(line, row)`` of a CSV file (``line``: where the row starts), read whole before any is parsed.

    Raises:
        ValueError: The file cannot be read as CSV (a field past csv's 128 KiB limit hides the
            rows after it), naming the file and line.
    """
    return list(iter_csv_records(path, delimiter))


def iter_csv_records(path: Path, delimiter: str = ",") -> Iterator[tuple[int, list[str]]]:
    """Each ``(line, row)`` of a CSV file as it is read (a file of 10M rows never sits in memory whole).

    Raises:
        ValueError: The file cannot be read as CSV (a field past csv's 128 KiB limit hides the
            rows after it), naming the file and line.
    """
    with path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        line = reader.line_num
        try:
            for row in reader:
                yield line + 1, row
                line = reader.line_num
        except csv.Error as exc:
            raise ValueError(f"{path}:{reader.line_num}: not readable as CSV: {exc}") from None
