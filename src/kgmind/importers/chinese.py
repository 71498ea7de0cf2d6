"""Import the Chinese medical KGs: QASystemOnMedicalKG ``medical.json`` and the MedicalKGQA recrawl.

Both formats map onto ONE MindMap-style relation vocabulary (see
:mod:`kgmind.importers.vocab`); every relation is stored with its inverse:

``qasystem-json`` field / ``recrawl-json`` field → tail type: relation / inverse

* ``symptom`` / ``symptom_data.symptoms`` → symptom: ``has_symptom`` / ``possible_disease``
* ``acompany`` / ``gaishu_info.has_complication`` → disease: ``has_complication``
  (symmetric: stored in both directions)
* ``check`` / ``inspect_info`` → test: ``need_medical_test`` / ``can_check_disease``
* ``common_drug`` and ``recommand_drug`` / ``gaishu_info.common_drug`` → medication:
  ``need_medication`` / ``possible_cure_disease``
* ``do_eat`` / ``food_info.good_food`` → food: ``good_food`` / ``food_good_for``
* ``not_eat`` / ``food_info.avoid_food`` → food: ``avoid_food`` / ``food_avoided_by``
* ``recommand_eat`` / ``food_info.recommand_recipes`` → food (recipes are foods):
  ``recommended_recipe`` / ``recipe_recommended_for``
* ``cure_department`` / ``gaishu_info.belongs_to_department`` → department:
  ``belongs_to_department`` / ``department_of_disease``, plus ``sub_department_of`` /
  ``has_sub_department`` between departments
* ``drug_detail`` (qasystem only) → producer: ``produces_drug`` / ``produced_by``
  (producer → medication)

Departments are listed broad → specific (``["内科", "呼吸内科"]``): as in
QASystemOnMedicalKG, the disease belongs to the last (most specific) one, and each
department is linked to the one before it with ``sub_department_of`` /
``has_sub_department``. A ``drug_detail`` item ``"厂商药名(药名)"`` gives a producer
(the text before the last ``(``) that ``produces_drug`` the drug inside the brackets;
items without brackets are ignored. ``name`` is the disease (type ``disease``);
``desc`` (``gaishu_info.desc``) is its description and a knowledge document, which is
the ``source`` of every relation of that disease.

``qasystem-json`` reads one JSON object per line (``medical.json``,
``medical_sample100.jsonl``). ``recrawl-json`` reads ``medical_*.json`` files, each a JSON
object ``{key: record}`` (a JSON list of records is accepted too); a directory means all
its ``medical_*.json`` parts in numeric order.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kgmind.importers.base import (
    GraphBuilder,
    ImportResult,
    ProgressTracker,
    RowError,
    begin_parse,
    item_list,
)
from kgmind.importers.vocab import RELATION_TYPES
from kgmind.models import normalize_name

__all__ = ["QASYSTEM_FIELDS", "RECRAWL_FIELDS", "parse_qasystem_json", "parse_recrawl_json", "recrawl_files"]

#: qasystem-json field -> relation (head is the disease)
QASYSTEM_FIELDS: dict[str, str] = {
    "symptom": "has_symptom",
    "acompany": "has_complication",
    "check": "need_medical_test",
    "common_drug": "need_medication",
    "recommand_drug": "need_medication",
    "do_eat": "good_food",
    "not_eat": "avoid_food",
    "recommand_eat": "recommended_recipe",
}

#: recrawl-json (section, field) -> relation; section "" = the record itself
RECRAWL_FIELDS: dict[tuple[str, str], str] = {
    ("symptom_data", "symptoms"): "has_symptom",
    ("gaishu_info", "has_complication"): "has_complication",
    ("", "inspect_info"): "need_medical_test",
    ("gaishu_info", "common_drug"): "need_medication",
    ("food_info", "good_food"): "good_food",
    ("food_info", "avoid_food"): "avoid_food",
    ("food_info", "recommand_recipes"): "recommended_recipe",
}


class _RecordError(ValueError):
    pass


def _add_disease(
    builder: GraphBuilder,
    name: Any,
    desc: Any,
    links: list[tuple[str, list[str]]],
    departments: list[str],
    drug_details: list[str],
) -> None:
    """Add one disease record (already validated) to ``builder``."""
    description = desc.strip() if isinstance(desc, str) else ""
    did = builder.entity(name, "disease", description)
    source = builder.doc(did, description)
    for rel, items in links:
        _, tail_type, inverse = RELATION_TYPES[rel]
        for item in dict.fromkeys(items):
            tid = builder.entity(item, tail_type)
            builder.relate(did, rel, tid, inverse=inverse, source=source)
    depts = list(dict.fromkeys(departments))
    if depts:
        last = builder.entity(depts[-1], "department")
        builder.relate(did, "belongs_to_department", last, inverse="department_of_disease", source=source)
        for broad, narrow in itertools.pairwise(depts):
            b, n = builder.entity(broad, "department"), builder.entity(narrow, "department")
            if b != n:
                builder.relate(n, "sub_department_of", b, inverse="has_sub_department")
    for detail in drug_details:
        cut = detail.rfind("(")
        if cut <= 0:
            continue
        producer, drug = detail[:cut].strip(), detail[cut + 1 :].rstrip(")").strip()
        if not producer or not drug:
            continue
        pid = builder.entity(producer, "producer")
        mid = builder.entity(drug, "medication")
        builder.relate(pid, "produces_drug", mid, inverse="produced_by")


def _name(value: Any) -> str:
    if not isinstance(value, str) or not normalize_name(value):
        raise _RecordError("blank or missing disease name")
    return value.strip()


def _items(record: Mapping[str, Any], field: str) -> list[str]:
    try:
        return item_list(record.get(field))
    except ValueError as exc:
        raise _RecordError(f"field {field!r}: {exc}") from None


def _qasystem_record(builder: GraphBuilder, rec: Any) -> None:
    if not isinstance(rec, dict):
        raise _RecordError(f"expected a JSON object, got {type(rec).__name__}")
    name = _name(rec.get("name"))
    links = [(rel, _items(rec, field)) for field, rel in QASYSTEM_FIELDS.items()]
    _add_disease(
        builder,
        name,
        rec.get("desc"),
        links,
        _items(rec, "cure_department"),
        _items(rec, "drug_detail"),
    )


def parse_qasystem_json(path: str | Path, tracker: ProgressTracker | None = None) -> ImportResult:
    """Parse QASystemOnMedicalKG ``medical.json`` (one JSON object per line).

    Args:
        path: ``medical.json`` or ``medical_sample100.jsonl``.
        tracker: Progress display (none when omitted).

    Returns:
        The parsed KG; lines that are not JSON objects, lack a name or hold a
        non-list list field are in ``errors``.

    Raises:
        FileNotFoundError: ``path`` does not exist.

    """
    p, tracker, builder, errors = begin_parse(path, tracker)
    rows = 0
    fname = str(p)
    with p.open(encoding="utf-8-sig") as fh:
        lines = fh.readlines()
    for lineno, line in tracker.track(enumerate(lines, 1), len(lines), f"qasystem-json {p.name}"):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(
                RowError(file=fname, line=lineno, reason=f"bad JSON: {exc.msg} (column {exc.colno})")
            )
            continue
        try:
            _qasystem_record(builder, rec)
        except (_RecordError, ValueError) as exc:
            errors.append(RowError(file=fname, line=lineno, reason=str(exc)))
            continue
        rows += 1
    return builder.result("qasystem-json", p, errors, rows)


def _section(rec: Mapping[str, Any], section: str) -> Mapping[str, Any]:
    if not section:
        return rec
    value = rec.get(section)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _RecordError(f"{section!r} is not an object")
    return value


def _recrawl_record(builder: GraphBuilder, rec: Any) -> None:
    if not isinstance(rec, dict):
        raise _RecordError(f"expected a JSON object, got {type(rec).__name__}")
    info = _section(rec, "gaishu_info")
    name = _name(info.get("name"))
    links = [(rel, _items(_section(rec, sec), field)) for (sec, field), rel in RECRAWL_FIELDS.items()]
    _add_disease(builder, name, info.get("desc"), links, _items(info, "belongs_to_department"), [])


_PART = re.compile(r"(\d+)")


def recrawl_files(path: Path) -> list[Path]:
    """List the recrawl parts at ``path``: the file itself, or a directory's ``medical_*.json`` by number.

    Raises:
        FileNotFoundError: ``path`` is a directory without ``medical_*.json`` files.

    """
    if not path.is_dir():
        return [path]
    parts = list(path.glob("medical_*.json"))
    if not parts:
        raise FileNotFoundError(2, "no medical_*.json files in directory", str(path))

    def order(p: Path) -> tuple[int, str]:
        m = _PART.search(p.stem)
        return (int(m.group(1)) if m else -1, p.name)

    return sorted(parts, key=order)


def parse_recrawl_json(path: str | Path, tracker: ProgressTracker | None = None) -> ImportResult:
    """Parse the MedicalKGQA recrawl (``cmckg/recrawl_full``): a directory of parts or one part.

    Args:
        path: A ``medical_*.json`` file or the directory holding them.
        tracker: Progress display (none when omitted).

    Returns:
        The parsed KG. A record without ``gaishu_info.name`` or with a malformed field is
        in ``errors`` (``line`` = the record's 1-based position in its file); a part that
        is not valid JSON is one error.

    Raises:
        FileNotFoundError: ``path`` does not exist (or is a directory without parts).

    """
    p, tracker, builder, errors = begin_parse(path, tracker, allow_dir=True)
    files = recrawl_files(p)
    rows = 0
    for part in tracker.track(files, len(files), f"recrawl-json {p.name}"):
        fname = str(part)
        try:
            with part.open(encoding="utf-8-sig") as fh:
                data = json.load(fh)
        except json.JSONDecodeError as exc:
            errors.append(RowError(file=fname, line=exc.lineno, reason=f"bad JSON: {exc.msg}"))
            continue
        if isinstance(data, dict):
            records = list(data.items())
        elif isinstance(data, list):
            records = [(str(i), r) for i, r in enumerate(data)]
        else:
            errors.append(RowError(file=fname, line=1, reason="expected a JSON object or list of records"))
            continue
        for pos, (key, rec) in enumerate(records, 1):
            try:
                _recrawl_record(builder, rec)
            except (_RecordError, ValueError) as exc:
                errors.append(RowError(file=fname, line=pos, reason=f"record {key!r}: {exc}"))
                continue
            rows += 1
    return builder.result("recrawl-json", p, errors, rows)
