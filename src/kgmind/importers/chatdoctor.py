"""Import ChatDoctor's disease CSV (EMCKG) as a MindMap-style medical KG.

Two variants are accepted:

* ``format_dataset.csv`` ("EMCKG-full", 796 diseases): columns
  ``idx, disease, Symptom, reason, TestsAndProcedures, commonMedications``;
* ``disease_database_mini.csv`` ("EMCKG-mini", 100 diseases): columns
  ``idx, disease, Symptom, Medical Tests, Medications`` (no ``reason``).

List cells are Python list literals and are read with :func:`ast.literal_eval` (drug
names contain commas, so they are never split on commas). The file is read with the
:mod:`csv` module (CRLF line endings, quoted multi-line cells).

Mapping (each relation with its MindMap inverse):

=====================  ============  =====================  ==========================
column                 tail type     relation               inverse
=====================  ============  =====================  ==========================
``Symptom``            symptom       ``has_symptom``        ``possible_disease``
``TestsAndProcedures`` test          ``need_medical_test``  ``can_check_disease``
``commonMedications``  medication    ``need_medication``    ``possible_cure_disease``
=====================  ============  =====================  ==========================

``disease`` becomes an entity of type ``disease``; ``reason`` becomes its description and
a :class:`~kgmind.models.KnowledgeDoc`, and every relation of that disease gets
``source`` = that doc's id. A name listed twice in one cell gives one edge.
"""

from __future__ import annotations

import ast
from pathlib import Path

from kgmind.importers.base import ImportResult, ProgressTracker, RowError, begin_parse, csv_records, item_list
from kgmind.models import normalize_name

__all__ = ["COLUMN_RELATIONS", "parse_chatdoctor"]

#: Accepted header spellings per role (first match wins).
_DISEASE_COLS = ("disease",)
_REASON_COLS = ("reason", "description")
#: role -> (accepted column names, tail entity type, relation, inverse relation)
COLUMN_RELATIONS: dict[str, tuple[tuple[str, ...], str, str, str]] = {
    "symptom": (("symptom", "symptoms"), "symptom", "has_symptom", "possible_disease"),
    "test": (
        ("testsandprocedures", "medical tests", "tests"),
        "test",
        "need_medical_test",
        "can_check_disease",
    ),
    "medication": (
        ("commonmedications", "medications", "medication"),
        "medication",
        "need_medication",
        "possible_cure_disease",
    ),
}


def _find(header: list[str], names: tuple[str, ...]) -> int | None:
    low = [h.strip().lower() for h in header]
    for name in names:
        if name in low:
            return low.index(name)
    return None


def _read_rows(p: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """The header and the ``(line, row)`` records of a CSV file, read whole before any row is parsed."""
    records = csv_records(p)
    if not records:
        raise ValueError(f"{p}: empty file (expected a ChatDoctor CSV header)")
    return records[0][1], records[1:]


def parse_chatdoctor(path: str | Path, tracker: ProgressTracker | None = None) -> ImportResult:
    """Parse a ChatDoctor disease CSV.

    Args:
        path: ``format_dataset.csv`` or ``disease_database_mini.csv`` (or a file with the
            same columns).
        tracker: Progress display (none when omitted).

    Returns:
        The parsed KG; malformed rows (wrong column count, blank disease, a list cell
        that is not a Python list literal) are in ``errors``.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: The header lacks a ``disease`` column or every list column, or the file
            cannot be read as CSV (a field past the csv module's 128 KiB limit).

    """
    p, tracker, builder, errors = begin_parse(path, tracker)
    rows = 0
    fname = str(p)
    header, records = _read_rows(p)
    d_col = _find(header, _DISEASE_COLS)
    r_col = _find(header, _REASON_COLS)
    rel_cols = [
        (col, etype, rel, inv)
        for names, etype, rel, inv in COLUMN_RELATIONS.values()
        if (col := _find(header, names)) is not None
    ]
    if d_col is None or not rel_cols:
        raise ValueError(
            f"{fname}: not a ChatDoctor CSV (need a 'disease' column and Symptom/Tests/Medications "
            f"columns; got {header})"
        )
    for start, row in tracker.track(records, len(records), f"chatdoctor {p.name}"):
        if not any(cell.strip() for cell in row):
            continue  # blank line
        if len(row) != len(header):
            errors.append(
                RowError(file=fname, line=start, reason=f"expected {len(header)} columns, got {len(row)}")
            )
            continue
        disease = row[d_col].strip()
        if not normalize_name(disease):
            errors.append(RowError(file=fname, line=start, reason="blank disease name"))
            continue
        try:
            cells = []
            for col, etype, rel, inv in rel_cols:
                raw = row[col].strip()
                value = ast.literal_eval(raw) if raw else []
                if not isinstance(value, list | tuple):
                    raise ValueError(f"column {header[col]!r} is not a list literal")
                cells.append((item_list(value), etype, rel, inv))
        except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
            reason = (
                str(exc)
                if isinstance(exc, ValueError) and "column" in str(exc)
                else (f"bad list literal: {type(exc).__name__}: {exc}")
            )
            errors.append(RowError(file=fname, line=start, reason=reason))
            continue
        reason_text = row[r_col].strip() if r_col is not None else ""
        did = builder.entity(disease, "disease", reason_text)
        source = builder.doc(did, reason_text)
        for items, etype, rel, inv in cells:
            for item in dict.fromkeys(items):
                tid = builder.entity(item, etype)
                builder.relate(did, rel, tid, inverse=inv, source=source)
        rows += 1
    return builder.result("chatdoctor", p, errors, rows)
