"""Many short keys, each mapped to entity ids, held in a few arrays instead of a Python object per string.

A big KG's gazetteer maps every normalised name, alias, variant and lay term to its
entities: 495k keys at the generated 10M KG, a Python string, a tuple and a dict slot each
as a dict. Here the keys and the ids are each one UTF-8 blob with offsets, the ids of a key
a slice of one int32 array, and a key is found by its hash in a sorted int64 array and then
compared byte for byte, so a lookup is as exact as a dict's.

The keys' hash is :func:`~kgmind.retrievers.packed.stable_hash`, the same in every process, so a
table's arrays can be saved (:attr:`KeyTable.arrays`) and mapped by another process
(:meth:`KeyTable.from_arrays`).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from kgmind.retrievers.packed import StringColumn, equal_hash_position, stable_hash

__all__ = ["KeyTable"]


class KeyTable(Mapping[str, tuple[str, ...]]):
    """A read-only ``{key: ids}`` map, built once from ``items`` (keys unique, ids in order)."""

    #: The keys' hash (a test's subclass makes many equal).
    _hash = staticmethod(stable_hash)

    #: The arrays a table is made of (:attr:`arrays`).
    ARRAYS = frozenset(
        {"key_blob", "key_ends", "id_blob", "id_ends", "key_ids", "key_id_ends", "hashes", "order"}
    )

    def __init__(self, items: Iterable[tuple[str, Sequence[str]]]) -> None:
        keys: list[str] = []
        id_number: dict[str, int] = {}
        flat, ends = array("l"), array("q")  # machine ints while building: no int object each
        for key, ids in items:
            keys.append(key)
            flat.extend(id_number.setdefault(eid, len(id_number)) for eid in ids)
            ends.append(len(flat))
        hashes = np.fromiter((self._hash(k) for k in keys), dtype=np.int64, count=len(keys))
        order = np.argsort(hashes, kind="stable")
        key_blob, key_ends = StringColumn.of(keys).arrays
        id_blob, id_ends = StringColumn.of(id_number).arrays  # in the order their numbers were given
        self._set(
            {
                "key_blob": key_blob,
                "key_ends": key_ends,
                "id_blob": id_blob,
                "id_ends": id_ends,
                "key_ids": np.frombuffer(flat, dtype=flat.typecode).astype(np.int32),
                "key_id_ends": np.frombuffer(ends, dtype=np.int64).copy(),
                "hashes": hashes[order],
                "order": order.astype(np.int32),
            }
        )

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> KeyTable:
        """The table whose :attr:`arrays` these are (mapped from a file, say), without building anything."""
        table = cls.__new__(cls)
        table._set(arrays)
        return table

    def _set(self, arrays: Mapping[str, Any]) -> None:
        self.arrays: dict[str, np.ndarray] = dict(arrays)
        self._keys = StringColumn(arrays["key_blob"], arrays["key_ends"])
        self._ids = StringColumn(arrays["id_blob"], arrays["id_ends"])
        self._id_numbers = arrays["key_ids"]
        self._id_ends = arrays["key_id_ends"]
        self._hashes = arrays["hashes"]
        self._order = arrays["order"]

    def __len__(self) -> int:
        return len(self._keys)

    def key(self, i: int) -> str:
        """The ``i``-th key, in the order they were given."""
        return self._keys[i]

    def ids(self, i: int) -> tuple[str, ...]:
        """The ids of the ``i``-th key."""
        start = int(self._id_ends[i - 1]) if i else 0
        return tuple(self._ids[int(n)] for n in self._id_numbers[start : int(self._id_ends[i])])

    def __iter__(self) -> Iterator[str]:
        return (self.key(i) for i in range(len(self)))

    def __getitem__(self, text: str) -> tuple[str, ...]:
        (i,) = self.find([text])
        if i is None:
            raise KeyError(text)
        return self.ids(i)

    def position(self, text: str) -> int | None:
        """The number of the key equal to ``text``, or ``None``: :meth:`find` for one text, without arrays."""
        h = self._hash(text)
        return self._key_from(int(self._hashes.searchsorted(h)), h, text)

    def find(self, texts: Sequence[str]) -> list[int | None]:
        """For each of ``texts`` the number of the key equal to it, or ``None``; one array search for all."""
        if not texts or not len(self):
            return [None] * len(texts)
        wanted = np.fromiter((self._hash(t) for t in texts), dtype=np.int64, count=len(texts))
        pos = np.searchsorted(self._hashes, wanted)
        inside = pos < len(self._hashes)
        hit = np.zeros(len(texts), dtype=bool)
        hit[inside] = self._hashes[pos[inside]] == wanted[inside]
        out: list[int | None] = [None] * len(texts)
        for t in np.flatnonzero(hit).tolist():
            out[t] = self._key_from(int(pos[t]), int(wanted[t]), texts[t])
        return out

    def _key_from(self, p: int, h: int, text: str) -> int | None:
        """The key equal to ``text`` among the keys of hash ``h``, from sorted position ``p`` on."""
        return equal_hash_position(self._keys, self._hashes, self._order, p, h, text)
