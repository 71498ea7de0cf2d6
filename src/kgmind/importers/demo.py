"""Import the shipped demo KG (``kgmind/data/demo_kg.json``): common conditions, English and Chinese.

The file is a JSON object ``{"name", "version", "conditions": [...]}``; each condition is
``{"name", "aliases", "description", "symptoms", "tests", "medications"}``. It maps onto the
ChatDoctor vocabulary (see :mod:`kgmind.importers.chatdoctor`): ``has_symptom`` /
``possible_disease``, ``need_medical_test`` / ``can_check_disease``, ``need_medication`` /
``possible_cure_disease``; the description becomes the disease's description and a
knowledge document that is the ``source`` of its relations.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from kgmind.importers.base import GraphBuilder, ImportResult, ProgressTracker, RowError, check_path, item_list
from kgmind.models import normalize_name

__all__ = ["DEMO_FIELDS", "demo_kg_path", "parse_demo"]

#: condition field -> (tail type, relation, inverse)
DEMO_FIELDS: dict[str, tuple[str, str, str]] = {
    "symptoms": ("symptom", "has_symptom", "possible_disease"),
    "tests": ("test", "need_medical_test", "can_check_disease"),
    "medications": ("medication", "need_medication", "possible_cure_disease"),
}


def demo_kg_path() -> Path:
    """Path of the shipped ``demo_kg.json`` (package data)."""
    return Path(str(resources.files("kgmind") / "data" / "demo_kg.json"))


def parse_demo(path: str | Path | None = None, tracker: ProgressTracker | None = None) -> ImportResult:
    """Parse the demo KG file.

    Args:
        path: A file in the demo format; the shipped ``demo_kg.json`` when omitted.
        tracker: Progress display (none when omitted).

    Returns:
        The parsed KG; conditions without a name or with a non-list field are in ``errors``
        (``line`` = the condition's 1-based position).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: The file is not a JSON object with a ``conditions`` list.

    """
    p = check_path(path if path is not None else demo_kg_path())
    tracker = tracker or ProgressTracker(enabled=False)
    with p.open(encoding="utf-8") as fh:
        data = json.load(fh)
    conditions = data.get("conditions") if isinstance(data, dict) else None
    if not isinstance(conditions, list):
        raise ValueError(f"{p}: expected a JSON object with a 'conditions' list")
    builder = GraphBuilder()
    errors: list[RowError] = []
    rows = 0
    for pos, cond in tracker.track(enumerate(conditions, 1), len(conditions), "demo KG"):
        name = cond.get("name") if isinstance(cond, dict) else None
        if not isinstance(name, str) or not normalize_name(name):
            errors.append(RowError(file=str(p), line=pos, reason="condition without a name"))
            continue
        try:
            fields = {key: item_list(cond.get(key)) for key in (*DEMO_FIELDS, "aliases")}
        except ValueError as exc:
            errors.append(RowError(file=str(p), line=pos, reason=f"{name}: {exc}"))
            continue
        description = str(cond.get("description") or "")
        did = builder.entity(name, "disease", description, aliases=fields["aliases"])
        source = builder.doc(did, description)
        for key, (tail_type, rel, inverse) in DEMO_FIELDS.items():
            for item in dict.fromkeys(fields[key]):
                builder.relate(did, rel, builder.entity(item, tail_type), inverse=inverse, source=source)
        rows += 1
    return builder.result("demo", p, errors, rows)
