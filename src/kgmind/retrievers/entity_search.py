"""The entity index's HNSW search graph, and where its exact float rows are read from.

An index that holds its float vectors searches a graph over them (``hnsw.faiss``), whose
storage is then the one copy of the vectors held. A large saved index does not hold them:
at 495k names (the generated 10M KG) they are 760 MB. It reads the rows it needs from the
saved ``vectors.faiss`` with ``pread`` (:class:`FileRows`): a search's few candidates and
the reranker's entities, a few thousand rows a question at most, so the kernel's page cache
keeps the hot ones and the worker does not. Its graph keeps 4-bit codes of the vectors
(``hnsw4.faiss``, 167 MB there, mapped from the file) and only finds candidates; they are
scored with the float rows (:func:`rescore`), so a link's cosine (what δ is compared with) is
the exact one.
"""

from __future__ import annotations

import os
import threading
import weakref
from pathlib import Path
from typing import Any, Protocol

import numpy as np

__all__ = [
    "CODED_GRAPH_FILE",
    "CODED_HNSW_EF_SEARCH",
    "CODED_HNSW_M",
    "FLOAT_GRAPH_FILE",
    "HNSW_EF_CONSTRUCTION",
    "HNSW_EF_SEARCH",
    "HNSW_M",
    "FileRows",
    "MemoryRows",
    "Rows",
    "build_graph",
    "candidates_to_fetch",
    "flat_storage",
    "read_graph",
    "rescore",
    "save_graph",
    "search_index",
]

#: HNSW graph degree, build and search breadth (faiss defaults are 32 / 40 / 16: the wider
#: search is what the recall in :mod:`kgmind.retrievers.entity_index` was measured with).
#: The graph keeps the vectors plus 2·M links each.
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 80
HNSW_EF_SEARCH = 128
#: The coded graph (an index whose float rows stay in the file) keeps 4-bit codes and 2·16
#: links a vector, and searches wider: its file is 167 MB at the generated 10M KG's 495k
#: names, where 8-bit codes and 2·32 links took 325 MB, all of it resident in a worker after
#: its first 100 questions. Against the exact scan of those names, for 3,044 CMCQA mentions
#: and 5 entities a mention, the same links at δ for 98.2 % of mentions (the 8-bit graph:
#: 96.9 %), the exact best entity for 94.7 % (90.7 %), 1.1 ms a search (0.6).
CODED_HNSW_M = 16
CODED_HNSW_EF_SEARCH = 384
#: The graph files in an index folder; a folder keeps one (saving one removes the others).
#: ``hnsw8.faiss`` is the 8-bit graph of earlier releases: it is not read, and it goes when
#: the 4-bit one is saved (on first use, or ``kgmind index build``).
FLOAT_GRAPH_FILE = "hnsw.faiss"
CODED_GRAPH_FILE = "hnsw4.faiss"
_GRAPH_FILES = (FLOAT_GRAPH_FILE, CODED_GRAPH_FILE, "hnsw8.faiss")


class Rows(Protocol):
    """The float vectors of an index, by row."""

    ntotal: int
    d: int

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The ``(len(rows), d)`` float32 vectors of ``rows`` (in that order)."""
        ...

    def all(self) -> np.ndarray:
        """Every vector as one ``(ntotal, d)`` float32 array."""
        ...


class MemoryRows:
    """Rows of an array held in memory (an index not saved, or a small one)."""

    def __init__(self, matrix: np.ndarray) -> None:
        self.matrix = matrix
        self.ntotal = int(matrix.shape[0])
        self.d = int(matrix.shape[1]) if matrix.ndim == 2 else 0

    def take(self, rows: np.ndarray) -> np.ndarray:
        """``matrix[rows]`` (a copy)."""
        return self.matrix[np.asarray(rows, dtype=np.int64)]

    def all(self) -> np.ndarray:
        """The array itself."""
        return self.matrix


class FileRows:
    """Rows read with ``pread`` from a saved flat faiss index (``vectors.faiss``), none held.

    A flat inner-product index is written as a header, the count of its floats and then
    the floats, row after row, to the end of the file: a row's offset is known from the
    header's dimension and count. :meth:`open` checks that layout and returns ``None``
    otherwise. The descriptor stays open for the object's life, so an index folder replaced
    by a rebuild is still read as it was (the old file lives on until it is closed).
    """

    def __init__(self, fd: int, offset: int, ntotal: int, d: int) -> None:
        self._fd = fd
        self._offset = offset
        self.ntotal = ntotal
        self.d = d
        self._row_bytes = d * 4
        self._closer = weakref.finalize(self, os.close, fd)

    @classmethod
    def open(cls, path: Path, ntotal: int) -> FileRows | None:
        """Rows of the flat index saved at ``path``, if it is one holding ``ntotal`` vectors.

        faiss writes the header as the fourcc ``IxFI``, the dimension (int32) and the count
        (int64); the float count (uint64) comes just before the floats.
        """
        if ntotal <= 0:
            return None
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return None
        try:
            head = os.pread(fd, 16, 0)
            if len(head) != 16 or head[:4] != b"IxFI":
                raise ValueError("not a flat inner-product index")
            d = int(np.frombuffer(head[4:8], dtype="<i4")[0])
            count = int(np.frombuffer(head[8:16], dtype="<i8")[0])
            floats = ntotal * d
            offset = os.fstat(fd).st_size - floats * 4
            if d <= 0 or count != ntotal or offset < 24:
                raise ValueError("unexpected header")
            declared = np.frombuffer(os.pread(fd, 8, offset - 8), dtype="<u8")
            if declared.size != 1 or int(declared[0]) != floats:
                raise ValueError("unexpected layout")
        except (OSError, ValueError):
            os.close(fd)
            return None
        return cls(fd, offset, ntotal, d)

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The vectors of ``rows``; each run of consecutive rows is one read."""
        idx = np.asarray(rows, dtype=np.int64).reshape(-1)
        if not idx.size:
            return np.empty((0, self.d), dtype=np.float32)
        uniq, inverse = np.unique(idx, return_inverse=True)
        if int(uniq[0]) < 0 or int(uniq[-1]) >= self.ntotal:
            raise IndexError(f"row out of range 0..{self.ntotal - 1}")
        starts = np.flatnonzero(np.diff(uniq, prepend=-2) != 1)
        lengths = np.diff(starts, append=uniq.size)
        size, base, fd = self._row_bytes, self._offset, self._fd
        data = b"".join(
            os.pread(fd, n * size, base + first * size)
            for first, n in zip(uniq[starts].tolist(), lengths.tolist(), strict=True)
        )
        if len(data) != uniq.size * size:
            raise OSError(f"short read of {len(data)} bytes from the index's vectors")
        return np.frombuffer(data, dtype=np.float32).reshape(-1, self.d)[inverse.reshape(-1)]

    def all(self) -> np.ndarray:
        """Every vector (read whole: building a graph needs them all once)."""
        return self.take(np.arange(self.ntotal))

    def close(self) -> None:
        """Close the file now (tests; the object closes it when collected otherwise)."""
        self._closer()


def _graph_file(coded: bool) -> str:
    return CODED_GRAPH_FILE if coded else FLOAT_GRAPH_FILE


def _ef_search(coded: bool) -> int:
    return CODED_HNSW_EF_SEARCH if coded else HNSW_EF_SEARCH


def candidates_to_fetch(k: int, total: int, *, coded: bool) -> int:
    """How many vectors a search for ``k`` entities asks the index for.

    Several vectors may belong to one entity, so a search over-fetches and merges. The coded
    graph fetches twice as many again: its 4-bit distances order the candidates roughly, and
    rescoring only puts back the exact order of those fetched.
    """
    wanted = max(k * 8, k + 24) if coded else max(k * 4, k + 8)
    return min(total, wanted)


def build_graph(vectors: np.ndarray, *, coded: bool) -> Any:
    """An HNSW graph over ``vectors`` (inner product), float or 4-bit codes, ready to search."""
    import faiss

    d = int(vectors.shape[1])
    graph: Any
    if coded:
        codes: Any = faiss.ScalarQuantizer.QT_4bit  # per-dimension min/max, trained on the vectors
        graph = faiss.IndexHNSWSQ(d, codes, CODED_HNSW_M, faiss.METRIC_INNER_PRODUCT)
        graph.train(vectors)
    else:
        graph = faiss.IndexHNSWFlat(d, HNSW_M, faiss.METRIC_INNER_PRODUCT)
    graph.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    graph.add(vectors)
    graph.hnsw.efSearch = _ef_search(coded)
    return graph


def rescore(rows: Rows, q: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The coded graph's candidates ``idx`` (``-1``: none) per query in ``q``, scored exactly, re-sorted.

    Returns:
        ``(scores, idx)`` like ``index.search``: best first, missing candidates last at ``-inf``.
    """
    found = idx >= 0
    uniq, where = np.unique(idx[found], return_inverse=True)
    vectors = rows.take(uniq)[where.reshape(-1)]
    scores = np.full(idx.shape, -np.inf, dtype=np.float32)
    scores[found] = np.einsum("ij,ij->i", vectors, np.repeat(q, found.sum(axis=1), axis=0))
    order = np.argsort(-scores, axis=1, kind="stable")
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(idx, order, axis=1)


def read_graph(folder: Path, ntotal: int, *, coded: bool) -> Any:
    """The graph of that kind saved in ``folder`` if it covers ``ntotal`` vectors, else ``None``.

    The coded graph is mapped from its file, not copied: a search touches a few of its pages, so
    the rest stay on disk, the kernel may drop the touched ones under pressure, and every worker
    on the host shares one copy (the generated 10M KG's graph is 167 MB). Nothing writes to a
    read graph: a rebuild saves a new file and reads that. The float graph, whose storage becomes
    the index's one copy of the vectors, is read into memory.
    """
    import faiss

    path = folder / _graph_file(coded)
    if not path.is_file():
        return None
    mapped = getattr(faiss, "IO_FLAG_MMAP_IFC", 0) if coded else 0
    try:
        graph: Any = _read_index(faiss, path, mapped)  # read as its own class
    except RuntimeError:
        return None
    kind = faiss.IndexHNSWSQ if coded else faiss.IndexHNSWFlat
    if not isinstance(graph, kind) or graph.ntotal != ntotal:
        return None
    graph.hnsw.efSearch = _ef_search(coded)
    return graph


def _read_index(faiss: Any, path: Path, flags: int) -> Any:
    """``faiss.read_index``, mapped when ``flags`` ask for it and the file can be mapped, else read."""
    if flags:
        try:
            return faiss.read_index(str(path), flags)
        except RuntimeError:
            pass  # a faiss or file system that cannot map it: read it whole
    return faiss.read_index(str(path))


def save_graph(graph: Any, folder: Path, *, coded: bool) -> None:
    """Write ``graph`` into ``folder`` atomically and remove the other graphs saved there."""
    import faiss

    name = _graph_file(coded)
    tmp = folder / f".{name}.{os.getpid()}.{threading.get_ident()}"
    faiss.write_index(graph, str(tmp))
    tmp.replace(folder / name)
    for other in _GRAPH_FILES:
        if other != name:
            (folder / other).unlink(missing_ok=True)


def flat_storage(graph: Any, flat: Any) -> Any:
    """The float graph's own copy of the vectors as a flat index that keeps the graph alive.

    The graph stores every vector (``IndexHNSWFlat.storage``); the flat index read from
    ``vectors.faiss`` holds the same floats again (166 MB at 108k names): the caller keeps
    this one instead. ``None`` when the graph's storage does not match ``flat``.
    """
    import faiss

    storage: Any = faiss.downcast_index(graph.storage)
    if not hasattr(storage, "get_xb") or storage.ntotal != flat.ntotal or storage.d != flat.d:
        return None
    storage.referenced_objects = [graph]  # faiss idiom: the wrapper keeps the graph (its memory) alive
    return storage


def search_index(index: Any, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``index.search``; single-threaded for small query batches.

    An OpenMP team for a handful of queries costs more than it saves, and on a busy
    machine its spin-waiting turns a sub-millisecond search into tens of milliseconds.
    """
    if q.shape[0] > 64:
        return index.search(q, k)
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        return index.search(q, k)
    finally:
        faiss.omp_set_num_threads(before)
