"""Import delimited triple files: MindMap's EMCKG TSV (``mindmap-tsv``) and generic ``triples``.

``mindmap-tsv``: ``head<TAB>relation<TAB>tail`` per line, no header, names written with
``_`` for spaces (``Panic_disorder``), as in MindMap's ``mindmap_emckg_triples.tsv``
(5,802 triples, 6 relations, both directions already present). Underscores become spaces
in the display names; no inverse is added.

``triples``: generic ``head,relation,tail[,weight]`` in CSV or TSV. The delimiter is taken
from the extension (``.tsv``/``.tab`` → tab, ``.csv`` → comma) or else sniffed from the first
line (a tab anywhere → tab, else comma). A first row reading ``head,relation,tail[,weight]``
(or ``subject,predicate,object`` / ``source,relation,target`` / ``h,r,t``) is a header.
Names are kept as written; no inverse is added.

Relation types may be written in any script (``症状``, ``presents with``): a type is
trimmed, lower-cased, its spaces become ``_``, and it must then be an identifier
(:data:`kgmind.models.RELATION_TYPE_RULE`), so that it can never break out of a query.

For both, the parser types entities from the relation vocabulary of
:mod:`kgmind.importers.vocab` (the tail of ``has_symptom`` is a ``symptom`` …; unknown
relations give ``entity``); the import then types the ends of the other relations from
their inferred roles (:mod:`kgmind.importers.roles`). Malformed rows (wrong column count,
blank name, a relation type that breaks the rule above, a weight that is not a finite
number > 0) are reported and skipped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kgmind.importers.base import (
    GraphBuilder,
    ImportResult,
    ProgressTracker,
    RowError,
    check_path,
    csv_records,
)
from kgmind.importers.vocab import infer_types
from kgmind.models import (
    RELATION_TYPE_RULE,
    normalize_name,
    normalize_relation_type,
    valid_relation_type,
)

__all__ = [
    "DelimitedFormat",
    "mindmap_format",
    "parse_mindmap_tsv",
    "parse_triples",
    "sniff_delimiter",
    "triples_format",
    "valid_triples",
]

_HEADERS = {
    ("head", "relation", "tail"),
    ("subject", "predicate", "object"),
    ("source", "relation", "target"),
    ("h", "r", "t"),
}


def sniff_delimiter(path: Path, first_line: str) -> str:
    """Delimiter of a triple file: by extension, else tab if the first line has one, else comma."""
    suffix = path.suffix.lower()
    if suffix in (".tsv", ".tab"):
        return "\t"
    if suffix == ".csv":
        return ","
    return "\t" if "\t" in first_line else ","


@dataclass(frozen=True)
class DelimitedFormat:
    """How one delimited triple format reads: its name, delimiter and what a row may hold."""

    fmt: str
    delimiter: str
    underscores: bool
    allow_weight: bool
    allow_header: bool


def mindmap_format() -> DelimitedFormat:
    """``mindmap-tsv``: tab-separated, ``_`` for spaces, no weight, no header."""
    return DelimitedFormat("mindmap-tsv", "\t", underscores=True, allow_weight=False, allow_header=False)


def triples_format(p: Path) -> DelimitedFormat:
    """``triples``: delimiter by extension or sniffed, optional weight column and header row."""
    with p.open(encoding="utf-8-sig", newline="") as fh:
        first_line = fh.readline()
    return DelimitedFormat(
        "triples", sniff_delimiter(p, first_line), underscores=False, allow_weight=True, allow_header=True
    )


def valid_triples(
    p: Path,
    spec: DelimitedFormat,
    records: Iterable[tuple[int, list[str]]],
    errors: list[RowError],
    tracker: ProgressTracker,
    total: int | None = None,
) -> Iterator[tuple[str, str, str, float]]:
    """Each valid row of ``records`` as ``(head, relation type, tail, weight)``; a bad row goes to ``errors``.

    ``records`` may be a stream (:func:`~kgmind.importers.base.iter_csv_records`): a header is
    recognised on the first record only.
    """
    fname = str(p)
    ncols = (3, 4) if spec.allow_weight else (3,)
    types: dict[str, str] = {}  # relation type as written -> as stored (validated)
    first = True
    for start, row in tracker.track(records, total, f"{spec.fmt} {p.name}"):
        if first:
            first = False
            if spec.allow_header and tuple(c.strip().lower() for c in row[:3]) in _HEADERS:
                continue
        if not any(c.strip() for c in row):
            continue
        if len(row) not in ncols:
            want = "3 or 4" if spec.allow_weight else "3"
            errors.append(RowError(file=fname, line=start, reason=f"expected {want} columns, got {len(row)}"))
            continue
        head, rel_type, tail = (c.strip() for c in row[:3])
        if spec.underscores:
            head, tail = head.replace("_", " ").strip(), tail.replace("_", " ").strip()
        if not normalize_name(head) or not normalize_name(tail):
            errors.append(RowError(file=fname, line=start, reason="blank head or tail name"))
            continue
        weight = 1.0
        if len(row) == 4 and row[3].strip():
            try:
                weight = float(row[3])
            except ValueError:
                errors.append(RowError(file=fname, line=start, reason=f"bad weight {row[3]!r}"))
                continue
            if not (math.isfinite(weight) and weight > 0):
                errors.append(
                    RowError(file=fname, line=start, reason=f"weight must be a finite number > 0: {row[3]!r}")
                )
                continue
        rtype = types.get(rel_type)
        if rtype is None:
            rtype = normalize_relation_type(rel_type)
            if not valid_relation_type(rtype):
                reason = f"bad relation type {rel_type!r}: {RELATION_TYPE_RULE}"
                errors.append(RowError(file=fname, line=start, reason=reason))
                continue
            types[rel_type] = rtype
        yield head, rtype, tail, weight


def _parse_delimited(p: Path, spec: DelimitedFormat, tracker: ProgressTracker) -> ImportResult:
    builder = GraphBuilder()
    errors: list[RowError] = []
    rows = 0
    records = csv_records(p, spec.delimiter)
    for head, rtype, tail, weight in valid_triples(p, spec, records, errors, tracker, len(records)):
        head_type, tail_type = infer_types(rtype)
        hid = builder.entity(head, head_type)
        tid = builder.entity(tail, tail_type)
        builder.relate(hid, rtype, tid, weight=weight)
        rows += 1
    return builder.result(spec.fmt, p, errors, rows)


def parse_mindmap_tsv(path: str | Path, tracker: ProgressTracker | None = None) -> ImportResult:
    """Parse MindMap's ``head<TAB>relation<TAB>tail`` triples (``_`` in names → space).

    Args:
        path: The TSV file (e.g. ``emckg/mindmap_emckg_triples.tsv``).
        tracker: Progress display (none when omitted).

    Returns:
        The parsed KG (duplicate triples collapse to one edge).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: The file cannot be read as CSV (a field past the csv module's 128 KiB limit).

    """
    p = check_path(path)
    return _parse_delimited(p, mindmap_format(), tracker or ProgressTracker(enabled=False))


def parse_triples(path: str | Path, tracker: ProgressTracker | None = None) -> ImportResult:
    """Parse a generic ``head,relation,tail[,weight]`` CSV/TSV file.

    Args:
        path: The file; delimiter by extension or sniffed, optional header row.
        tracker: Progress display (none when omitted).

    Returns:
        The parsed KG (edge weights from the 4th column, default 1.0).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: The file cannot be read as CSV (a field past the csv module's 128 KiB limit).

    """
    p = check_path(path)
    return _parse_delimited(p, triples_format(p), tracker or ProgressTracker(enabled=False))
