"""An entity index's labels held lean: which entity and text each vector is, and exact-name lookups.

A big KG's labels are many small strings: at 108k names (the generated 2M KG) they held
~80 MB, ~0.9 KB a name beside its vector's 1.5 KB; at 495k names (10M) ~360 MB. These
helpers keep one object per repeated string and find an entity's rows without a table.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from kgmind.models import normalize_name

__all__ = ["SortedRuns", "exact_map", "shared_labels"]


def exact_map(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """``{normalised name or alias: [entity ids]}`` for exact matching."""
    exact: dict[str, list[str]] = {}
    for text, eid in pairs:
        key = normalize_name(text)
        ids = exact.setdefault(text if key == text else key, [])  # the text's own string where equal
        if eid not in ids:
            ids.append(eid)
    return exact


class SortedRuns(Mapping[str, Sequence[int]]):
    """``{id: range of its rows}`` over a sorted id list, by bisection (no table)."""

    def __init__(self, ids: Sequence[str]) -> None:
        self._ids = ids

    def __getitem__(self, key: str) -> range:
        lo = bisect.bisect_left(self._ids, key)
        hi = bisect.bisect_right(self._ids, key, lo)
        if lo == hi:
            raise KeyError(key)
        return range(lo, hi)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(self._ids))

    def __len__(self) -> int:
        return len(dict.fromkeys(self._ids))


def shared_labels(labels: dict[str, Any]) -> tuple[list[str], list[str], dict[str, tuple[str, str]]]:
    """The saved labels with one string object per id, type and equal name (JSON makes one per occurrence).

    At 108k names (the generated 2M KG) the labels held ~80 MB; an id repeats for each alias
    and as the entity's key, a type for every entity, a name as its first vector's text.
    """
    canon: dict[str, str] = {}
    vector_ids = [canon.setdefault(i, i) for i in labels["vector_ids"]]
    vector_texts = list(labels["vector_texts"])
    first_text: dict[str, str] = {}
    for eid, text in zip(vector_ids, vector_texts, strict=True):
        first_text.setdefault(eid, text)
    types: dict[str, str] = {}
    entities: dict[str, tuple[str, str]] = {}
    for key, (name, etype) in labels["entities"].items():
        eid = canon.get(key, key)
        text = first_text.get(eid)
        entities[eid] = (text if text is not None and text == name else name, types.setdefault(etype, etype))
    return vector_ids, vector_texts, entities
