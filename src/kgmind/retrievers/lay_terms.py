"""Lay terms: the everyday words people write ("tummy ache", 发烧) mapped to the clinical names KGs use.

Patients say "throwing up" and 胸口疼; the KGs say "Vomiting" and 胸痛. Neither an exact
name match nor a name embedding bridges that gap reliably (e5 scores no Chinese spans
by default), so a shipped list of lay → clinical pairs, ``kgmind/data/lay_terms_{en,zh}.tsv``
(sources in each file's header), lets the gazetteer and the linker treat a lay term as
one more alias of its clinical entity: only of a clinical name the open KG has, and
never in place of a name of the KG itself.

Each list is split into a calibration half (for any tuning choice) and a test half (for
the figure reported) by :func:`lay_term_split`.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Literal

from kgmind.models import normalize_name

__all__ = [
    "LANGUAGES",
    "LayTerm",
    "lay_synonyms",
    "lay_term_split",
    "load_lay_terms",
]

#: The languages with a shipped lay-term list (``kgmind/data/lay_terms_<language>.tsv``).
LANGUAGES: tuple[str, ...] = ("en", "zh")

Split = Literal["calib", "test"]


@dataclass(frozen=True)
class LayTerm:
    """One lay → clinical pair of a shipped list.

    Attributes:
        lay: The everyday word or phrase ("tummy ache", 发烧).
        clinical: The clinical name a KG uses for it ("Sharp abdominal pain", 发热).
        source: Where the pair comes from (the file header names the vocabularies).
        language: ``en`` or ``zh``.
    """

    lay: str
    clinical: str
    source: str
    language: str

    @property
    def split(self) -> Split:
        """This pair's half: ``calib`` or ``test`` (:func:`lay_term_split` of its lay term)."""
        return lay_term_split(self.lay)


def lay_term_split(lay: str) -> Split:
    """The half a lay term belongs to, fixed by the sha256 of its normalised text.

    A hash rather than a random draw keeps the halves stable as pairs are added: a new
    pair never moves an old one to the other half.

    Args:
        lay: A lay term.

    Returns:
        ``calib`` when the first byte of the digest is even, else ``test``.
    """
    digest = hashlib.sha256(normalize_name(lay).encode("utf-8")).digest()
    return "calib" if digest[0] % 2 == 0 else "test"


def _parse(text: str, language: str) -> list[LayTerm]:
    out: list[LayTerm] = []
    header_seen = False
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if not header_seen:
            header_seen = True
            if parts[:2] == ["lay", "clinical"]:
                continue
        if len(parts) != 3 or not parts[0].strip() or not parts[1].strip():
            raise ValueError(f"lay_terms_{language}.tsv line {number}: expected lay<TAB>clinical<TAB>source")
        out.append(LayTerm(parts[0].strip(), parts[1].strip(), parts[2].strip(), language))
    return out


@functools.cache
def load_lay_terms(language: str | None = None) -> tuple[LayTerm, ...]:
    """The shipped lay-term pairs of ``language`` (``None``: every language), in file order.

    Args:
        language: ``en``, ``zh`` or ``None``.

    Returns:
        The pairs.

    Raises:
        ValueError: An unknown language, or a malformed line in a shipped file.
    """
    if language is not None and language not in LANGUAGES:
        raise ValueError(f"no lay-term list for language {language!r} (have {', '.join(LANGUAGES)})")
    out: list[LayTerm] = []
    for lang in LANGUAGES if language is None else (language,):
        path = resources.files("kgmind") / "data" / f"lay_terms_{lang}.tsv"
        out.extend(_parse(path.read_text(encoding="utf-8"), lang))
    return tuple(out)


@functools.cache
def lay_synonyms() -> Mapping[str, tuple[str, ...]]:
    """Normalised lay term → the normalised clinical names it stands for (every language).

    A lay term may stand for several clinical names (one per KG that words it
    differently); a store links it to those its KG has.
    """
    out: dict[str, list[str]] = {}
    for term in load_lay_terms():
        clinical = normalize_name(term.clinical)
        names = out.setdefault(normalize_name(term.lay), [])
        if clinical not in names:
            names.append(clinical)
    return MappingProxyType({lay: tuple(names) for lay, names in out.items()})
