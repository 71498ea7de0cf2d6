"""Derived gold: the KG entities (diseases, tests, medications) a reference answer names.

Only 203 GenMedGPT-5k rows carry annotated gold (``output_KG``), and it is noisy (see
``retrieval-anchors.md``). The harness therefore derives gold for *every* dialogue:

**Vocabulary.** The diseases, ``TestsAndProcedures`` and ``commonMedications`` of
EMCKG-full (``emckg/format_dataset.csv``, list cells parsed with ``ast.literal_eval``),
typed ``disease``/``test``/``medication`` (a name seen with two types keeps the first in
:data:`kgmind.models.TYPE_PRIORITY`). Chinese: the ``disease``/``check``/``drug`` lists of
``cmckg/entity_dict``.

**Surface forms** of an entity: its name; for a name ending in a parenthetical
``"Base (Inner)"`` also ``Base`` and, when ``Inner`` holds no ``;``, ``Inner``
("Hematologic tests (Blood test)" → "hematologic tests", "blood test"). Forms shorter
than 3 characters (2 for CJK) and a few generic words (:data:`STOP_FORMS`) are dropped.

**Matching rule.** Text and forms are normalised with :func:`kgmind.models.normalize_name`;
a form matches at word boundaries, optionally with a plural ``s``/``es`` (CJK: plain
substring). Overlapping matches are resolved *leftmost-longest*, so "depression screen"
yields the test, not the disease "depression". The derived gold of a dialogue is the
set of entities matched in its reference answer.

**Splits.** ``dev`` = every dialogue whose derived gold is non-empty; ``gold203`` = the
203 annotated rows with ``output_KG`` as gold; ``all`` = every dialogue. ``--limit N
--seed S`` draws a seeded sample (``random.Random(S).sample``) and keeps file order.
"""

from __future__ import annotations

import ast
import csv
import functools
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kgmind.eval.datasets import default_path
from kgmind.eval.metrics import has_cjk, mean, set_agreement
from kgmind.models import TYPE_PRIORITY, normalize_name
from kgmind.text import repair_escapes

__all__ = [
    "GOLD_TYPES",
    "STOP_FORMS",
    "NameMatcher",
    "VocabEntity",
    "Vocabulary",
    "derive_gold",
    "gold_agreement",
    "load_cmckg_vocabulary",
    "load_emckg_vocabulary",
    "sample",
    "surface_forms",
]

#: Entity types that count as gold.
GOLD_TYPES: tuple[str, ...] = ("disease", "test", "medication")

#: Normalised forms never used for matching: generic words that would match almost any answer.
STOP_FORMS: frozenset[str] = frozenset(
    {
        "air",
        "exercises",
        "removal",
        "evaluation",
        "interview",
        "consultation",
        "ml",
        "i d",
        "other",
        "therapy",
    }
)

T = TypeVar("T")


@dataclass(frozen=True)
class VocabEntity:
    """One vocabulary entity.

    Attributes:
        name: Display name as in the KG source.
        type: ``disease``, ``test`` or ``medication``.
        forms: Normalised surface forms (the full name first).

    """

    name: str
    type: str
    forms: tuple[str, ...]

    @property
    def key(self) -> str:
        """The normalised name."""
        return normalize_name(self.name)


def surface_forms(name: str) -> tuple[str, ...]:
    """Normalised surface forms of a name (see the module docstring).

    Args:
        name: A KG entity name.

    Returns:
        The forms, full name first, duplicates and stop forms removed.

    """
    key = normalize_name(name)
    forms = [key]
    if key.endswith(")") and "(" in key:
        base, _, inner = key[:-1].rpartition("(")
        forms.append(base.strip())
        if ";" not in inner:
            forms.append(inner.strip())
    out: list[str] = []
    for f in forms:
        min_len = 2 if has_cjk(f) else 3
        if len(f) >= min_len and f not in STOP_FORMS and f not in out:
            out.append(f)
    return tuple(out)


class NameMatcher:
    """Leftmost-longest matching of many surface forms in a text (Aho–Corasick)."""

    def __init__(self, entities: Iterable[VocabEntity]) -> None:
        import ahocorasick

        self._entities: dict[str, VocabEntity] = {}
        owner: dict[str, str] = {}
        for ent in entities:
            self._entities[ent.key] = ent
            for form in ent.forms:
                prev = owner.get(form)
                # a form that is some entity's full name belongs to that entity
                if prev is None or (form == ent.key and prev != form):
                    owner[form] = ent.key
        self._auto: Any = ahocorasick.Automaton()
        for form, key in owner.items():
            variants = [form]
            if not has_cjk(form) and form[-1].isascii() and form[-1].isalpha():
                variants += [form + "s", form + "es"]
            for v in variants:
                if v not in owner or v == form:
                    self._auto.add_word(v, (len(v), key, has_cjk(form)))
        if owner:
            self._auto.make_automaton()
        self._empty = not owner

    @property
    def entities(self) -> dict[str, VocabEntity]:
        """Vocabulary entities by normalised name."""
        return self._entities

    def find(self, text: str) -> list[VocabEntity]:
        """Entities whose forms occur in ``text`` (leftmost-longest, word boundaries).

        Args:
            text: Raw text (normalised here).

        Returns:
            Distinct entities in order of first occurrence.

        """
        if self._empty or not text:
            return []
        norm = normalize_name(text)
        spans: list[tuple[int, int, str]] = []
        for end, (length, key, cjk) in self._auto.iter(norm):
            start = end - length + 1
            if not cjk:
                if start > 0 and norm[start - 1].isalnum():
                    continue
                if end + 1 < len(norm) and norm[end + 1].isalnum():
                    continue
            spans.append((start, end + 1, key))
        spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
        out: list[VocabEntity] = []
        seen: set[str] = set()
        taken_until = -1
        for start, end, key in spans:
            if start < taken_until:
                continue
            taken_until = end
            if key not in seen:
                seen.add(key)
                out.append(self._entities[key])
        return out


@dataclass
class Vocabulary:
    """A typed entity vocabulary with its matcher.

    Attributes:
        entities: Entities by normalised name.
        source: Where it was read from.

    """

    entities: dict[str, VocabEntity] = field(default_factory=dict)
    source: str = ""

    @functools.cached_property
    def matcher(self) -> NameMatcher:
        """The (lazily built) matcher over all entities."""
        return NameMatcher(self.entities.values())

    def add(self, name: str, type_: str) -> None:
        """Add a name with a type (first type by ``TYPE_PRIORITY`` wins)."""
        key = normalize_name(name)
        if not key:
            return
        prev = self.entities.get(key)
        if prev is not None and TYPE_PRIORITY.get(prev.type, 99) <= TYPE_PRIORITY.get(type_, 99):
            return
        forms = surface_forms(name)
        if forms:
            self.entities[key] = VocabEntity(name.strip(), type_, forms)

    def forms_of(self, name: str) -> tuple[str, ...]:
        """Surface forms of a name: the vocabulary's when known, else the name's own."""
        ent = self.entities.get(normalize_name(name))
        return ent.forms if ent else surface_forms(name) or (normalize_name(name),)

    def type_of(self, name: str) -> str | None:
        """Return the vocabulary type of a name, ``None`` if unknown."""
        ent = self.entities.get(normalize_name(name))
        return ent.type if ent else None


def _literal_list(cell: str) -> list[str]:
    cell = (cell or "").strip()
    if not cell:
        return []
    value = ast.literal_eval(cell)
    return [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]


@functools.lru_cache(maxsize=4)
def load_emckg_vocabulary(path: str | None = None) -> Vocabulary:
    """Read the diseases, tests and medications of ``emckg/format_dataset.csv`` (cached per path).

    Args:
        path: The CSV (``disease, TestsAndProcedures, commonMedications`` columns); default
            ``$KGMIND_DATA_DIR/emckg/format_dataset.csv``.

    Returns:
        The vocabulary.

    """
    p = Path(path) if path else default_path("emckg")
    vocab = Vocabulary(source=str(p))
    with p.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            # names cleaned as the importer cleans them, so the gold and the store agree
            if row.get("disease"):
                vocab.add(repair_escapes(row["disease"]), "disease")
            for name in _literal_list(row.get("TestsAndProcedures", "")):
                vocab.add(repair_escapes(name), "test")
            for name in _literal_list(row.get("commonMedications", "")):
                vocab.add(repair_escapes(name), "medication")
    return vocab


@functools.lru_cache(maxsize=2)
def load_cmckg_vocabulary(entity_dict_dir: str | None = None) -> Vocabulary:
    """Read the Chinese disease/check/drug lists of ``cmckg/entity_dict`` (cached per path)."""
    d = (
        Path(entity_dict_dir)
        if entity_dict_dir
        else default_path("emckg").parent.parent / "cmckg" / "entity_dict"
    )
    vocab = Vocabulary(source=str(d))
    for fname, type_ in (("disease.txt", "disease"), ("check.txt", "test"), ("drug.txt", "medication")):
        f = d / fname
        if not f.exists():
            raise FileNotFoundError(str(f))
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                vocab.add(line.strip(), type_)
    return vocab


def derive_gold(answer: str, vocab: Vocabulary, types: Sequence[str] = GOLD_TYPES) -> list[VocabEntity]:
    """Return the vocabulary entities of the given types that the reference answer names.

    Args:
        answer: The reference answer.
        vocab: The KG vocabulary.
        types: Entity types kept.

    Returns:
        Distinct entities in order of first mention.

    """
    return [e for e in vocab.matcher.find(answer) if e.type in types]


def gold_agreement(pairs: Iterable[tuple[Sequence[str], Sequence[str]]]) -> dict[str, float | int | None]:
    """Agreement of derived gold with annotated gold, macro-averaged over rows, plus micro figures.

    Args:
        pairs: ``(derived names, annotated names)`` per row.

    Returns:
        ``precision``, ``recall``, ``jaccard`` (macro means), ``micro_precision``,
        ``micro_recall`` and ``rows``.

    """
    rows = [(list(d), list(a)) for d, a in pairs]
    per = [set_agreement(d, a) for d, a in rows]
    inter = tot_d = tot_a = 0
    for d, a in rows:
        dk, ak = {normalize_name(x) for x in d}, {normalize_name(x) for x in a}
        inter += len(dk & ak)
        tot_d += len(dk)
        tot_a += len(ak)
    return {
        "rows": len(rows),
        "precision": mean(p["precision"] for p in per),
        "recall": mean(p["recall"] for p in per),
        "jaccard": mean(p["jaccard"] for p in per),
        "micro_precision": inter / tot_d if tot_d else None,
        "micro_recall": inter / tot_a if tot_a else None,
    }


def sample(items: Sequence[T], limit: int | None, seed: int = 0) -> list[T]:
    """Draw a seeded sample of ``limit`` items, kept in original order (all items if ``limit`` is falsy)."""
    if not limit or limit >= len(items):
        return list(items)
    idx = sorted(random.Random(seed).sample(range(len(items)), limit))
    return [items[i] for i in idx]
