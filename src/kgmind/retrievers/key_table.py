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

from kgmind.retrievers.packed import KeyedRuns, StringColumn

__all__ = ["KeyTable"]


class KeyTable(Mapping[str, tuple[str, ...]]):
    """A read-only ``{key: ids}`` map, built once from ``items`` (keys unique, ids in order).

    A :class:`~kgmind.retrievers.packed.KeyedRuns` of each key's id numbers, and the ids as one
    string column in the order their numbers were given.
    """

    #: The map of keys to id numbers (a test's subclass makes its hashes collide).
    _runs_type: type[KeyedRuns] = KeyedRuns

    #: The arrays a table is made of (:attr:`arrays`).
    ARRAYS = KeyedRuns.names("keys") | {"id_blob", "id_ends"}

    def __init__(self, items: Iterable[tuple[str, Sequence[str]]]) -> None:
        keys: list[str] = []
        id_number: dict[str, int] = {}
        flat, ends = array("l"), array("q")  # machine ints while building: no int object each
        for key, ids in items:
            keys.append(key)
            flat.extend(id_number.setdefault(eid, len(id_number)) for eid in ids)
            ends.append(len(flat))
        numbers = np.frombuffer(flat, dtype=flat.typecode)
        runs = self._runs_type.from_flat(keys, numbers, np.frombuffer(ends, dtype=np.int64), "keys")
        id_blob, id_ends = StringColumn.of(id_number).arrays
        self._set({**runs.arrays, "id_blob": id_blob, "id_ends": id_ends})

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> KeyTable:
        """The table whose :attr:`arrays` these are (mapped from a file, say), without building anything."""
        table = cls.__new__(cls)
        table._set(arrays)
        return table

    def _set(self, arrays: Mapping[str, Any]) -> None:
        self.arrays: dict[str, np.ndarray] = {name: arrays[name] for name in self.ARRAYS}
        self._runs = self._runs_type(arrays, "keys")
        self._ids = StringColumn(arrays["id_blob"], arrays["id_ends"])

    def __len__(self) -> int:
        return len(self._runs)

    def key(self, i: int) -> str:
        """The ``i``-th key, in the order they were given."""
        return self._runs.key(i)

    def ids(self, i: int) -> tuple[str, ...]:
        """The ids of the ``i``-th key."""
        return tuple(self._ids[n] for n in self._runs.run(i))

    def __iter__(self) -> Iterator[str]:
        return iter(self._runs)

    def __getitem__(self, text: str) -> tuple[str, ...]:
        i = self._runs.position(text)
        if i is None:
            raise KeyError(text)
        return self.ids(i)

    def position(self, text: str) -> int | None:
        """The number of the key equal to ``text``, or ``None``."""
        return self._runs.position(text)

    def find(self, texts: Sequence[str]) -> list[int | None]:
        """For each of ``texts`` the number of the key equal to it, or ``None``; one array search for all."""
        return self._runs.find(texts)
