"""Many strings and integers held as a few flat arrays, optionally mapped from one file.

A big KG's names are hundreds of thousands of short strings. As Python objects each costs
~60–100 bytes of heap, and once a process has made them, freeing them rarely gives the
memory back (the small-object arenas stay half used). A :class:`StringColumn` keeps them as
one UTF-8 blob with end offsets and decodes a string when it is read. :func:`write_arrays`
and :func:`read_arrays` keep such arrays in one file that a worker maps instead of reading:
the kernel loads the pages a question touches, and workers on one host share them.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np

__all__ = [
    "KeyedRuns",
    "StringColumn",
    "Strings",
    "equal_hash_position",
    "int64_view",
    "read_arrays",
    "stable_hash",
    "write_arrays",
]

#: The file starts with this, then the header's length (8 bytes, little-endian) and the header (JSON).
_MAGIC = b"KGMPACK1"
_ALIGN = 8


def _aligned(n: int) -> int:
    """``n`` rounded up to a multiple of :data:`_ALIGN`."""
    return -(-n // _ALIGN) * _ALIGN


def int64_view(values: np.ndarray) -> memoryview:
    """``values`` as 64-bit integers read as Python ints: indexing and ``bisect`` make no numpy scalar."""
    return memoryview(np.ascontiguousarray(values, dtype=np.int64).data).cast("B").cast("q")


class Strings(Sequence[str]):
    """A read-only sequence of strings made on demand: a subclass says how many and how to read one."""

    def __len__(self) -> int:
        raise NotImplementedError

    def _at(self, i: int) -> str:
        """The ``i``-th string, ``0 <= i < len(self)``."""
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self._at(j) for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("string index out of range")
        return self._at(i)


class StringColumn(Strings):
    """Strings as one UTF-8 blob and the end offset of each in it.

    ``surrogatepass``: any ``str`` can be stored, a lone surrogate too (strict UTF-8 cannot
    encode one); it comes back as the same string.
    """

    def __init__(self, blob: Any, ends: np.ndarray) -> None:
        self._blob = memoryview(blob).cast("B")
        self._ends = int64_view(ends)

    @classmethod
    def of(cls, strings: Iterable[str]) -> StringColumn:
        """A column holding ``strings``, in order."""
        encoded = [s.encode("utf-8", "surrogatepass") for s in strings]
        return cls(b"".join(encoded), np.cumsum([len(b) for b in encoded], dtype=np.int64))

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(blob as uint8, ends as int64)``, to be written by :func:`write_arrays`."""
        return np.frombuffer(self._blob, dtype=np.uint8), np.frombuffer(self._ends, dtype=np.int64)

    def __len__(self) -> int:
        return len(self._ends)

    def _at(self, i: int) -> str:
        return str(self._blob[self._ends[i - 1] if i else 0 : self._ends[i]], "utf-8", "surrogatepass")


def stable_hash(text: str) -> int:
    """A 64-bit hash of ``text``, alike in every process (Python's ``hash`` is not): one that can be saved."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def equal_hash_position(
    strings: Sequence[str], hashes: np.ndarray, order: np.ndarray, p: int, h: int, text: str
) -> int | None:
    """The number of the string equal to ``text``, or ``None``.

    ``hashes`` are the strings' hashes sorted, ``order`` the string number of each, ``p`` the
    first sorted position of hash ``h``: only strings of equal hash are compared.
    """
    while p < len(hashes) and hashes[p] == h:
        i = int(order[p])
        if strings[i] == text:
            return i
        p += 1
    return None


class KeyedRuns(Mapping[str, tuple[int, ...]]):
    """Strings, each with a run of integers, as flat arrays named ``<name>_<field>``: savable and mappable.

    A string is found by its :func:`stable_hash` in a sorted array and then compared whole, so a
    lookup answers exactly what a dict would, in a few microseconds (a bisection on a memoryview,
    no numpy scalar made); :meth:`find` looks up many in one array search. Several maps can share
    one file under different names.
    """

    FIELDS = ("blob", "ends", "values", "value_ends", "hashes", "order")

    #: The strings' hash (a test's subclass makes many equal; a saved map must keep the default).
    _hash = staticmethod(stable_hash)

    def __init__(self, arrays: Mapping[str, np.ndarray], name: str) -> None:
        self.arrays = {f"{name}_{f}": arrays[f"{name}_{f}"] for f in self.FIELDS}
        a = [self.arrays[f"{name}_{f}"] for f in self.FIELDS]
        self._keys = StringColumn(a[0], a[1])
        self._values, self._value_ends = int64_view(a[2]), int64_view(a[3])
        self._hashes, self._hash_view, self._order = a[4], int64_view(a[4]), a[5]

    @classmethod
    def names(cls, name: str) -> frozenset[str]:
        """The array names of the map called ``name``."""
        return frozenset(f"{name}_{f}" for f in cls.FIELDS)

    @classmethod
    def of(cls, runs: Mapping[str, Sequence[int]], name: str) -> KeyedRuns:
        """``runs``'s strings and integer runs, in its order."""
        values = np.fromiter((v for run in runs.values() for v in run), dtype=np.int64)
        ends = np.cumsum(np.fromiter(map(len, runs.values()), dtype=np.int64, count=len(runs)))
        return cls.from_flat(list(runs), values, ends, name)

    @classmethod
    def from_flat(
        cls, keys: Sequence[str], values: np.ndarray, value_ends: np.ndarray, name: str
    ) -> KeyedRuns:
        """``keys`` (unique), the ``i``-th with ``values`` up to ``value_ends[i]`` (from the previous end)."""
        blob, ends = StringColumn.of(keys).arrays
        hashes = np.fromiter((cls._hash(k) for k in keys), dtype=np.int64, count=len(keys))
        order = np.argsort(hashes, kind="stable")
        fields = {
            "blob": blob,
            "ends": ends,
            "values": np.asarray(values, dtype=np.int64),
            "value_ends": np.asarray(value_ends, dtype=np.int64),
            "hashes": hashes[order],
            "order": order.astype(np.int32),
        }
        return cls({f"{name}_{f}": arr for f, arr in fields.items()}, name)

    def key(self, i: int) -> str:
        """The ``i``-th string, in the order they were given."""
        return self._keys[i]

    def position(self, key: str) -> int | None:
        """The number of ``key`` among the strings, or ``None``."""
        h = self._hash(key)
        return equal_hash_position(
            self._keys, self._hashes, self._order, bisect.bisect_left(self._hash_view, h), h, key
        )

    def find(self, texts: Sequence[str]) -> list[int | None]:
        """For each of ``texts`` the number of the string equal to it, or ``None``: one array search."""
        if not texts or not len(self):
            return [None] * len(texts)
        wanted = np.fromiter((self._hash(t) for t in texts), dtype=np.int64, count=len(texts))
        pos = np.searchsorted(self._hashes, wanted)
        inside = pos < len(self._hashes)
        hit = np.zeros(len(texts), dtype=bool)
        hit[inside] = self._hashes[pos[inside]] == wanted[inside]
        out: list[int | None] = [None] * len(texts)
        for t in np.flatnonzero(hit).tolist():
            out[t] = equal_hash_position(
                self._keys, self._hashes, self._order, int(pos[t]), int(wanted[t]), texts[t]
            )
        return out

    def run(self, i: int) -> tuple[int, ...]:
        """The integers of the ``i``-th string."""
        return tuple(self._values[self._value_ends[i - 1] if i else 0 : self._value_ends[i]])

    def first(self, i: int) -> int:
        """The first integer of the ``i``-th string's run (a map of single values asks this)."""
        return self._values[self._value_ends[i - 1] if i else 0]

    def get(self, key: str, default: Any = None) -> Any:
        """The run of ``key``, else ``default`` (without raising, as a question asks mostly misses)."""
        i = self.position(key)
        return default if i is None else self.run(i)

    def __getitem__(self, key: str) -> tuple[int, ...]:
        i = self.position(key)
        if i is None:
            raise KeyError(key)
        return self.run(i)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.position(key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


def write_arrays(path: Path, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
    """Write ``arrays`` (1-D, numeric) and ``meta`` (JSON) into ``path`` atomically.

    Each array starts at a multiple of 8 bytes, so :func:`read_arrays` can map it as it is.
    """
    path = Path(path)
    layout: dict[str, list[Any]] = {}
    offset = 0
    for name, arr in arrays.items():
        a = np.ascontiguousarray(arr)
        if a.ndim != 1:
            raise ValueError(f"array {name!r} is not 1-D")
        layout[name] = [a.dtype.str, offset, len(a)]
        offset += _aligned(a.nbytes)
    header = json.dumps({"meta": dict(meta), "arrays": layout}, ensure_ascii=False).encode("utf-8")
    start = _aligned(len(_MAGIC) + 8 + len(header))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(_MAGIC + struct.pack("<Q", len(header)) + header)
            f.write(b"\0" * (start - f.tell()))
            for arr in arrays.values():
                a = np.ascontiguousarray(arr)
                f.write(a.tobytes())
                f.write(b"\0" * (-a.nbytes % _ALIGN))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_arrays(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The arrays and meta that :func:`write_arrays` wrote to ``path``, mapped read-only from the file.

    Raises:
        OSError: The file cannot be read.
        ValueError: It is not such a file, or it is cut short.
    """
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    head = bytes(raw[: len(_MAGIC) + 8])
    if len(head) < len(_MAGIC) + 8 or not head.startswith(_MAGIC):
        raise ValueError(f"{path} is not an array file")
    (size,) = struct.unpack("<Q", head[len(_MAGIC) :])
    try:
        header = json.loads(bytes(raw[len(_MAGIC) + 8 : len(_MAGIC) + 8 + size]).decode("utf-8"))
        start = _aligned(len(_MAGIC) + 8 + size)
        arrays: dict[str, np.ndarray] = {}
        for name, (dtype, offset, length) in header["arrays"].items():
            dt = np.dtype(dtype)
            begin = start + int(offset)
            end = begin + int(length) * dt.itemsize
            if end > len(raw):
                raise ValueError(f"{path} is cut short")
            arrays[name] = raw[begin:end].view(dt).view(np.ndarray)  # memmap's own indexing is slow
        return arrays, dict(header["meta"])
    except (KeyError, TypeError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} has a bad header: {exc}") from exc
