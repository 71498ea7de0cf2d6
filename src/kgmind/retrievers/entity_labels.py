"""An entity index's labels held lean: which entity and text each vector is, and exact-name lookups.

A big KG's labels are many small strings: at 108k names (the generated 2M KG) they held
~80 MB as Python objects, ~0.9 KB a name beside its vector's 1.5 KB. A saved index reads
them packed (:class:`PackedLabels`, from ``labels.bin``, written beside ``labels.json`` when
the index is saved or first loaded); an index just built keeps its lists, with
:func:`exact_map` and :class:`SortedRuns` finding names and an entity's rows.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kgmind.models import normalize_name
from kgmind.retrievers.packed import (
    StringColumn,
    Strings,
    equal_hash_position,
    read_arrays,
    stable_hash,
    write_arrays,
)

__all__ = ["PACKED_LABELS_FILE", "PackedLabels", "SortedRuns", "exact_map", "read_labels"]


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


#: The labels in the packed form (:mod:`kgmind.retrievers.packed`), beside ``labels.json``.
PACKED_LABELS_FILE = "labels.bin"
_PACKED_FORMAT = 1
_ARRAYS = {
    *(f"{n}_{part}" for n in ("id", "name", "text", "key") for part in ("blob", "ends")),
    *(f"{n}_{part}" for n in ("id", "key") for part in ("hashes", "hash_order")),
    "type_codes",
    "vector_entity",
    "rows",
    "row_ends",
    "key_entities",
    "key_entity_ends",
}


def _source_stamp(path: Path) -> str:
    """A digest of ``labels.json``: a packed copy is used only while it matches.

    Of the content, not the file's time, so a copied or deployed index keeps its packed labels
    (hashing 55 MB of labels at 495k names takes ~0.1 s).
    """
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class _Column(Strings):
    """``strings[order[i]]``: the strings in another order (each vector's entity id)."""

    def __init__(self, strings: StringColumn, order: np.ndarray) -> None:
        self._strings = strings
        self._order = order

    def __len__(self) -> int:
        return len(self._order)

    def _at(self, i: int) -> str:
        return self._strings[int(self._order[i])]


class PackedLabels:
    """An entity index's labels as flat arrays (read from ``labels.bin``, or packed in memory).

    At the generated 10M KG's 495k names the labels held as Python objects took ~196 MB of
    heap, and dropping them after a conversion freed little (the arenas stay). Packed, they
    are 85 MB of arrays, mapped from the file: a worker holds the pages its questions touch.

    Entities are numbered in the order they were listed; ``vector_entity`` gives each vector's
    entity; ``rows``/``row_ends`` list each entity's vectors; ``key_entities``/``key_entity_ends``
    the entities of each exact key (keys sorted). An id or a key is found by its
    :func:`~kgmind.retrievers.packed.stable_hash` in a sorted array (``*_hashes``, with the
    number of each in ``*_hash_order``), then compared: 10–15 µs at 495k names, where
    bisecting the strings took 55–80 µs.
    """

    def __init__(self, arrays: Mapping[str, np.ndarray], types: Sequence[str]) -> None:
        self.arrays = arrays
        self.types = list(types)
        self.ids = StringColumn(arrays["id_blob"], arrays["id_ends"])
        self.names = StringColumn(arrays["name_blob"], arrays["name_ends"])
        self.texts = StringColumn(arrays["text_blob"], arrays["text_ends"])
        self.keys = StringColumn(arrays["key_blob"], arrays["key_ends"])
        self.vector_ids = _Column(self.ids, arrays["vector_entity"])
        self.entities = PackedEntities(self)
        self.exact = PackedExact(self)
        self.entity_rows = PackedRows(self)

    @classmethod
    def pack(
        cls,
        vector_ids: Sequence[str],
        vector_texts: Sequence[str],
        entities: Mapping[str, tuple[str, str] | Sequence[str]],
    ) -> PackedLabels:
        """The packed form of labels given as lists and a dict (as ``labels.json`` holds them).

        Raises:
            ValueError: A vector's entity is not among ``entities``, or the lists differ in length.
        """
        if len(vector_ids) != len(vector_texts):
            raise ValueError("labels: vector ids and texts differ in length")
        number = {eid: n for n, eid in enumerate(entities)}
        try:
            vector_entity = np.fromiter((number[v] for v in vector_ids), np.int32, len(vector_ids))
        except KeyError as exc:
            raise ValueError(f"labels: vector of unknown entity {exc.args[0]!r}") from None
        types: dict[str, int] = {}
        type_codes = np.fromiter(
            (types.setdefault(str(v[1]), len(types)) for v in entities.values()), np.int32, len(number)
        )
        ids = list(entities)
        exact = exact_map(zip(vector_texts, vector_ids, strict=True))
        keys = sorted(exact)
        key_entities = np.fromiter(
            (number[e] for k in keys for e in exact[k]), np.int32, sum(len(v) for v in exact.values())
        )
        per_entity = np.bincount(vector_entity, minlength=len(ids)) if len(ids) else np.zeros(0, np.int64)
        arrays: dict[str, np.ndarray] = {}
        for name, column in (
            ("id", StringColumn.of(ids)),
            ("name", StringColumn.of(str(v[0]) for v in entities.values())),
            ("text", StringColumn.of(vector_texts)),
            ("key", StringColumn.of(keys)),
        ):
            arrays[f"{name}_blob"], arrays[f"{name}_ends"] = column.arrays
        arrays["type_codes"] = type_codes
        arrays["vector_entity"] = vector_entity
        for name, strings in (("id", ids), ("key", keys)):
            hashes = np.fromiter((stable_hash(t) for t in strings), np.int64, len(strings))
            order = np.argsort(hashes, kind="stable")
            arrays[f"{name}_hashes"], arrays[f"{name}_hash_order"] = hashes[order], order.astype(np.int32)
        arrays["rows"] = np.argsort(vector_entity, kind="stable").astype(np.int32)
        arrays["row_ends"] = np.cumsum(per_entity, dtype=np.int64)
        arrays["key_entities"] = key_entities
        arrays["key_entity_ends"] = np.cumsum([len(exact[k]) for k in keys], dtype=np.int64)
        return cls(arrays, list(types))

    def number(self, eid: str) -> int | None:
        """The number of entity ``eid``, or ``None``."""
        return self._find("id", self.ids, eid)

    def key_number(self, key: str) -> int | None:
        """The number of exact key ``key``, or ``None``."""
        return self._find("key", self.keys, key)

    def _find(self, name: str, strings: StringColumn, text: str) -> int | None:
        hashes, h = self.arrays[f"{name}_hashes"], stable_hash(text)
        order = self.arrays[f"{name}_hash_order"]
        return equal_hash_position(strings, hashes, order, int(hashes.searchsorted(h)), h, text)

    def rows(self, n: int) -> list[int]:
        """The vectors of entity ``n``, in index order (its name first)."""
        return self.arrays["rows"][_span(self.arrays["row_ends"], n)].tolist()

    def write(self, path: Path, source: Path) -> None:
        """Save into ``path`` (atomically), stamped with ``source`` (the ``labels.json`` packed)."""
        meta = {"format": _PACKED_FORMAT, "types": self.types, "source": _source_stamp(source)}
        write_arrays(path, self.arrays, meta)

    @classmethod
    def read(cls, path: Path, source: Path) -> PackedLabels | None:
        """The labels saved in ``path``, mapped; ``None`` when missing, unreadable or not of ``source``."""
        try:
            arrays, meta = read_arrays(path)
            if meta.get("format") != _PACKED_FORMAT or meta.get("source") != _source_stamp(source):
                return None
            if set(arrays) != _ARRAYS:
                return None
            return cls(arrays, meta["types"])
        except (OSError, ValueError, KeyError, TypeError):
            return None


def _span(ends: np.ndarray, n: int) -> slice:
    """Where the ``n``-th run lies in an array cut by cumulative ``ends``."""
    return slice(int(ends[n - 1]) if n else 0, int(ends[n]))


class _ColumnKeyed(Mapping[str, Any]):
    """A mapping over packed labels whose keys are one of its string columns, in that column's order."""

    def __init__(self, labels: PackedLabels, keys: StringColumn) -> None:
        self._labels = labels
        self._keys = keys

    def __getitem__(self, key: str) -> Any:
        raise NotImplementedError

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


class PackedEntities(_ColumnKeyed):
    """``{entity id: (name, type)}`` over packed labels, in the order the entities were listed."""

    def __init__(self, labels: PackedLabels) -> None:
        super().__init__(labels, labels.ids)

    def __getitem__(self, eid: str) -> tuple[str, str]:
        n = self._labels.number(eid)
        if n is None:
            raise KeyError(eid)
        return self._labels.names[n], self._labels.types[int(self._labels.arrays["type_codes"][n])]


class PackedExact(_ColumnKeyed):
    """``{normalised name or alias: [entity ids]}`` (:func:`exact_map`) over packed labels."""

    def __init__(self, labels: PackedLabels) -> None:
        super().__init__(labels, labels.keys)

    def __getitem__(self, key: str) -> list[str]:
        i = self._labels.key_number(key)
        if i is None:
            raise KeyError(key)
        numbers = self._labels.arrays["key_entities"][_span(self._labels.arrays["key_entity_ends"], i)]
        return [self._labels.ids[int(n)] for n in numbers]


class PackedRows(Mapping[str, Sequence[int]]):
    """``{entity id: its vectors' rows}`` over packed labels; entities without a vector are absent."""

    def __init__(self, labels: PackedLabels) -> None:
        self._labels = labels

    def __getitem__(self, eid: str) -> list[int]:
        n = self._labels.number(eid)
        rows = [] if n is None else self._labels.rows(n)
        if not rows:
            raise KeyError(eid)
        return rows

    def __iter__(self) -> Iterator[str]:
        counts = np.diff(self._labels.arrays["row_ends"], prepend=0)
        return (self._labels.ids[int(n)] for n in np.flatnonzero(counts))

    def __len__(self) -> int:
        return int(np.count_nonzero(np.diff(self._labels.arrays["row_ends"], prepend=0)))


def read_labels(directory: Path) -> PackedLabels:
    """The labels of the index in ``directory``, packed: mapped from ``labels.bin``.

    An index saved before the packed form existed (or whose copy is stale) has its
    ``labels.json`` packed and saved now, once; where the folder cannot be written, the packed
    form is kept in memory. Reading the JSON makes the Python objects that the packed form
    avoids, so only this first load holds their arenas.

    Raises:
        OSError, ValueError, KeyError: ``labels.json`` is missing or not an index's labels.
    """
    source, packed_path = directory / "labels.json", directory / PACKED_LABELS_FILE
    packed = PackedLabels.read(packed_path, source)
    if packed is not None:
        return packed
    labels = json.loads(source.read_text(encoding="utf-8"))
    packed = PackedLabels.pack(labels["vector_ids"], labels["vector_texts"], labels["entities"])
    del labels
    try:
        packed.write(packed_path, source)
    except OSError:
        return packed
    return PackedLabels.read(packed_path, source) or packed
