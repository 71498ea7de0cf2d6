"""The FAISS entity index: exact cosine search over every entity name and alias of a store.

One vector per distinct (entity, name-or-alias); each maps back to its entity id. The
index is persisted beside the store (``<store dir>.index/<model>/`` for LadybugDB,
``$KGMIND_HOME/index/<sha of uri>/<model>/`` otherwise) with a ``meta.json`` holding
the store fingerprint and model name; it is reloaded when the fingerprint matches
and rebuilt otherwise. Where an index lives and the process's cache of loaded ones are
:mod:`kgmind.retrievers.entity_index_cache`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kgmind.models import Entity, normalize_name
from kgmind.retrievers.embeddings import Embedder, get_embedder
from kgmind.retrievers.entity_labels import (
    PACKED_LABELS_FILE,
    PackedLabels,
    SortedRuns,
    exact_map,
    read_labels,
)
from kgmind.retrievers.entity_search import (
    FileRows,
    MemoryRows,
    Rows,
    build_graph,
    candidates_to_fetch,
    flat_storage,
    read_graph,
    rescore,
    save_graph,
    search_index,
)
from kgmind.retrievers.entity_vectors import (
    Checkpoint,
    KnownVectors,
    checkpoint_dir,
    fill_index,
    flat_view,
    saved_vectors,
    vectors_key,
)
from kgmind.stores.protocol import GraphStore

__all__ = [
    "INDEX_FORMAT_VERSION",
    "EntityIndex",
    "build_and_save",
    "build_entity_index",
]

#: Bumped when the on-disk layout changes (older indexes are rebuilt).
INDEX_FORMAT_VERSION = 1

#: From this many vectors on, searches go through an HNSW graph instead of the flat scan
#: (:mod:`kgmind.retrievers.entity_search`). On the CMCKG re-crawl (24,335 names; ~9
#: unmatched mentions per CMCQA question) one search took 1.52 ms flat and 0.60 ms in the
#: graph, with recall@5 0.975 and the same links at the calibrated δ for 99.2% of mentions
#: (``benchmarks/entity_ann.py``). Below it the flat scan is fast and exact.
HNSW_MIN_VECTORS = 20_000
#: From this many vectors on, a saved index reads its float vectors from its file instead of
#: holding them, and its graph keeps 4-bit codes of them: ~150 MB less held at this size (384
#: floats a name); at the generated 10M KG's 495k names the index holds 0.28 GB after 2,000
#: searches instead of 1.16 GB. A search then costs more (candidates rescored from the file:
#: 1.1 ms against 0.85 with the floats held), so below it the floats are held.
ROWS_FROM_FILE_MIN_VECTORS = 100_000


@dataclass
class EntityIndex:
    """Exact inner-product (cosine) index over entity names and aliases.

    Attributes:
        model: Embedding model name the vectors were made with.
        fingerprint: Store fingerprint at build time.
        vector_ids: Entity id of each vector, in index order.
        vector_texts: Name or alias each vector embeds.
        entities: ``{entity id: (display name, type)}``.
        exact: ``{normalised name or alias: [entity ids]}`` for exact matching.
        index: The ``faiss.IndexFlatIP``; ``None`` once a saved index of at least
            :data:`ROWS_FROM_FILE_MIN_VECTORS` reads its vectors from the file (:attr:`rows`).
        vectors_key: What the vectors were made with (:func:`~kgmind.retrievers.entity_vectors.vectors_key`):
            a later build reuses them only under the same key.
        reused: How many distinct texts the build took from vectors made before (not saved).
    """

    model: str
    fingerprint: str
    vector_ids: Sequence[str]
    vector_texts: Sequence[str]
    entities: Mapping[str, tuple[str, str]]
    exact: Mapping[str, Sequence[str]] = field(default_factory=dict)
    index: Any = None
    vectors_key: str = ""
    reused: int = 0

    def __len__(self) -> int:
        return len(self.vector_ids)

    # -- stored vectors ------------------------------------------------------------
    @property
    def rows(self) -> Rows:
        """Where the float vectors are read from: the flat index's memory, or the saved file."""
        cached = self.__dict__.get("_rows")
        if cached is not None:
            return cached
        rows = MemoryRows(self.matrix)
        self.__dict__["_rows"] = rows
        return rows

    @property
    def matrix(self) -> np.ndarray:
        """All stored vectors as one read-only ``(len(self), dim)`` float32 array.

        Held in memory: a view of the flat index's own memory, not a copy (cached). Read
        from the file: every row, read again on each call (building a graph needs them).
        """
        cached = self.__dict__.get("_matrix")
        if cached is not None:
            return cached
        index = self.index
        if index is None:
            file_rows = self.__dict__.get("_rows")
            return file_rows.all() if file_rows is not None else np.zeros((0, 0), dtype=np.float32)
        if index.ntotal == 0:
            mat = np.zeros((0, int(getattr(index, "d", 0) or 0)), dtype=np.float32)
        elif hasattr(index, "get_xb"):
            mat = flat_view(index)
        else:
            mat = np.ascontiguousarray(index.reconstruct_n(0, index.ntotal), dtype=np.float32)
        self.__dict__["_matrix"] = mat
        return mat

    def _read_rows_from(self, path: Path) -> None:
        """Let a large index read its vectors from the flat index saved at ``path`` and drop its own.

        At 495k names that frees the 760 MB the flat index held (the search graph keeps
        4-bit codes). A smaller index, or a file that is not the expected flat index, is
        left as it is.
        """
        if len(self) < ROWS_FROM_FILE_MIN_VECTORS:
            return
        file_rows = FileRows.open(path, len(self))
        if file_rows is None:
            return
        self.__dict__["_rows"] = file_rows
        self.__dict__.pop("_matrix", None)
        self.index = None

    @property
    def entity_rows(self) -> Mapping[str, Sequence[int]]:
        """``{entity id: rows of its name/alias vectors}``, name first (built once, cached).

        Stores list entities by id, so ``vector_ids`` is sorted and each entity's rows are one
        run, found by bisection: a table of every entity's rows held ~90 MB at 495k names. An
        index over unsorted ids (a store that lists in another order) gets the table.
        """
        cached = self.__dict__.get("_entity_rows")
        if cached is not None:
            return cached
        ids = self.vector_ids
        rows: Mapping[str, Sequence[int]]
        if all(a <= b for a, b in itertools.pairwise(ids)):
            rows = SortedRuns(ids)
        else:
            table: dict[str, list[int]] = {}
            for i, eid in enumerate(ids):
                table.setdefault(eid, []).append(i)
            rows = table
        self.__dict__["_entity_rows"] = rows
        return rows

    def entity_vectors(self, entity_ids: Sequence[str]) -> tuple[np.ndarray, list[list[int]]]:
        """The stored vectors of ``entity_ids`` (every name and alias of each).

        Args:
            entity_ids: Entity ids; unknown ids get no rows.

        Returns:
            ``(vectors, groups)``: the stacked ``(m, dim)`` vectors and, per asked id,
            the positions of its rows in ``vectors`` (``[]`` for an unknown id).
        """
        known = self.entity_rows
        rows: list[int] = []
        groups: list[list[int]] = []
        for eid in entity_ids:
            r = known.get(eid, [])
            groups.append(list(range(len(rows), len(rows) + len(r))))
            rows.extend(r)
        vectors = self.rows
        if not rows:
            return np.zeros((0, vectors.d), dtype=np.float32), groups
        return vectors.take(np.asarray(rows, dtype=np.int64)), groups

    def search(self, vectors: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """Nearest entities of each query vector.

        Args:
            vectors: ``(n, dim)`` L2-normalised float32 query vectors.
            k: Entities per query (after merging several names of one entity).

        Returns:
            Per query, up to ``k`` ``(entity_id, cosine)`` pairs, best first, one per entity.
            The cosines are exact: the graph's candidates are scored with the float vectors.
        """
        q = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
        if q.ndim == 1:
            q = q.reshape(1, -1)
        if q.shape[0] == 0:
            return []
        if k <= 0 or len(self) == 0 or (self.index is None and "_rows" not in self.__dict__):
            return [[] for _ in range(q.shape[0])]
        # Several vectors may belong to one entity: over-fetch, then merge.
        graph = self.ann()
        fetch = candidates_to_fetch(k, len(self), coded=graph is not None and self.index is None)
        if graph is None:
            scores, idx = search_index(self.index, q, fetch)
        elif self.index is None:  # 4-bit codes found the candidates: score them exactly
            scores, idx = rescore(self.rows, q, search_index(graph, q, fetch)[1])
        else:
            scores, idx = search_index(graph, q, fetch)
        out: list[list[tuple[str, float]]] = []
        for row_scores, row_idx in zip(scores, idx, strict=True):
            seen: dict[str, float] = {}
            for s, i in zip(row_scores, row_idx, strict=True):
                if i < 0:
                    continue
                eid = self.vector_ids[int(i)]
                if eid not in seen:
                    seen[eid] = float(s)
                    if len(seen) >= k:
                        break
            out.append(list(seen.items()))
        return out

    def ann(self) -> Any:
        """The HNSW graph (``None`` below :data:`HNSW_MIN_VECTORS`).

        Over the float vectors, or over 4-bit codes when the vectors are read from the file.
        Read from the index folder when it was saved there, else built on first use (seconds
        at 24k vectors, minutes at 495k) and saved into the folder the index was loaded from.
        """
        if len(self) < HNSW_MIN_VECTORS or (self.index is None and "_rows" not in self.__dict__):
            return None
        cached = self.__dict__.get("_ann")
        if cached is not None:
            return cached
        with _ann_lock:
            cached = self.__dict__.get("_ann")
            if cached is not None:
                return cached
            coded = self.index is None
            folder: Path | None = self.__dict__.get("_folder")
            graph = read_graph(folder, len(self), coded=coded) if folder is not None else None
            if graph is None:
                graph = build_graph(self.matrix, coded=coded)
                if folder is not None:
                    with contextlib.suppress(OSError, RuntimeError):
                        save_graph(graph, folder, coded=coded)
            self.__dict__["_ann"] = graph
            storage = None if coded else flat_storage(graph, self.index)
            if storage is not None:  # one float copy held: the graph's
                self.index = storage
                self.__dict__.pop("_matrix", None)
                self.__dict__.pop("_rows", None)
            return graph

    def lookup(self, key: str) -> list[str]:
        """Entity ids whose normalised name or alias is ``key`` (already normalised)."""
        return list(self.exact.get(key, ()))

    # -- persistence -------------------------------------------------------------
    def save(self, directory: Path) -> None:
        """Write the index atomically into ``directory`` (replacing what is there)."""
        import faiss

        directory = Path(directory)
        directory.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
        try:
            flat = self.index
            if flat is None:  # read from the file: write the rows back as a flat index
                flat = faiss.IndexFlatIP(self.rows.d)
                flat.add(self.rows.all())
            faiss.write_index(flat, str(tmp / "vectors.faiss"))
            labels = {
                "vector_ids": list(self.vector_ids),
                "vector_texts": list(self.vector_texts),
                "entities": {k: list(v) for k, v in self.entities.items()},
            }
            (tmp / "labels.json").write_text(json.dumps(labels, ensure_ascii=False), encoding="utf-8")
            packed = PackedLabels.pack(self.vector_ids, self.vector_texts, self.entities)
            packed.write(tmp / PACKED_LABELS_FILE, tmp / "labels.json")
            del labels, packed
            meta = {
                "format": INDEX_FORMAT_VERSION,
                "model": self.model,
                "fingerprint": self.fingerprint,
                "vectors_key": self.vectors_key,
                "vectors": len(self.vector_ids),
                "entities": len(self.entities),
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            (tmp / "meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
            if directory.exists():
                old = directory.with_name(f".{directory.name}.old-{os.getpid()}-{time.monotonic_ns()}")
                directory.rename(old)
                tmp.rename(directory)
                shutil.rmtree(old, ignore_errors=True)
            else:
                tmp.rename(directory)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self.__dict__.pop("_ann", None)  # a graph read from the old folder may not match
        self.__dict__["_folder"] = directory
        self._read_rows_from(directory / "vectors.faiss")

    @classmethod
    def load(cls, directory: Path, *, model: str, fingerprint: str) -> EntityIndex | None:
        """Load the index in ``directory`` if it was built with ``model`` for ``fingerprint``.

        Returns:
            The index, or ``None`` when it is missing, stale or unreadable.
        """
        import faiss

        directory = Path(directory)
        try:
            meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
            if (
                meta.get("format") != INDEX_FORMAT_VERSION
                or meta.get("model") != model
                or meta.get("fingerprint") != fingerprint
            ):
                return None
            labels = read_labels(directory)
            file_rows = None
            if len(labels.vector_ids) >= ROWS_FROM_FILE_MIN_VECTORS:
                file_rows = FileRows.open(directory / "vectors.faiss", len(labels.vector_ids))
            index = None if file_rows is not None else faiss.read_index(str(directory / "vectors.faiss"))
        except (OSError, ValueError, RuntimeError, KeyError, TypeError):
            return None
        ei = cls(
            model=model,
            fingerprint=fingerprint,
            vector_ids=labels.vector_ids,
            vector_texts=labels.texts,
            entities=labels.entities,
            exact=labels.exact,
            index=index,
            vectors_key=str(meta.get("vectors_key") or ""),
        )
        ei.__dict__["_entity_rows"] = labels.entity_rows
        if file_rows is not None:
            ei.__dict__["_rows"] = file_rows
        elif index is None or index.ntotal != len(ei.vector_ids):
            return None
        ei.__dict__["_folder"] = directory
        return ei


_ann_lock = threading.Lock()


def _names(entity: Entity) -> Iterator[str]:
    seen: set[str] = set()
    for text in (entity.name, *entity.aliases):
        text = text.replace("_", " ").strip()
        key = normalize_name(text)
        if key and key not in seen:
            seen.add(key)
            yield text


def build_entity_index(
    store: GraphStore,
    embedder: Embedder,
    *,
    batch_size: int = 256,
    progress: bool = False,
    fingerprint: str | None = None,
    known: KnownVectors | None = None,
    checkpoint: Checkpoint | None = None,
) -> EntityIndex:
    """Embed every entity name and alias of ``store`` into a new in-memory index.

    Args:
        store: The store to index (read with ``iter_entities``).
        embedder: The embedding model (its ``embed_documents`` is used).
        batch_size: Texts embedded per batch.
        progress: Show a rich progress bar on stderr.
        fingerprint: The store fingerprint to record (read from the store when ``None``).
        known: Vectors made before under this embedder's key: their texts are not embedded again.
        checkpoint: Where each embedded batch is kept as it is made (an interrupted build resumes).

    Returns:
        The index (not saved).
    """
    fingerprint = store.fingerprint() if fingerprint is None else fingerprint
    vector_ids: list[str] = []
    vector_texts: list[str] = []
    entities: dict[str, tuple[str, str]] = {}
    for ent in store.iter_entities():
        entities[ent.id] = (ent.name, ent.type)
        for text in _names(ent):
            vector_ids.append(ent.id)
            vector_texts.append(text)
    index, reused = fill_index(
        vector_texts, embedder, known=known, checkpoint=checkpoint, batch_size=batch_size, progress=progress
    )
    return EntityIndex(
        model=embedder.name,
        fingerprint=fingerprint,
        vector_ids=vector_ids,
        vector_texts=vector_texts,
        entities=entities,
        exact=exact_map(zip(vector_texts, vector_ids, strict=True)),
        index=index,
        vectors_key=vectors_key(embedder),
        reused=reused,
    )


def build_and_save(
    store: GraphStore,
    model: str,
    directory: Path,
    *,
    fingerprint: str,
    progress: bool = False,
    reuse: bool = True,
) -> EntityIndex:
    """Build the index of ``store`` into ``directory``, reusing the vectors made before (``reuse``).

    The vectors of the index it replaces and of an interrupted build are taken as they
    are (:mod:`kgmind.retrievers.entity_vectors`); each new batch is kept in the checkpoint
    until the index is saved, then the checkpoint is deleted, and the search graph is built
    and saved beside it. ``reuse=False`` embeds every text again (and starts the checkpoint
    afresh). A read-only location keeps the index in memory only.
    """
    embedder = get_embedder(model)
    key = vectors_key(embedder)
    checkpoint = Checkpoint.open(checkpoint_dir(directory), key)
    try:
        known = KnownVectors()
        if reuse:
            saved_vectors(directory, key, known)
            if checkpoint is not None:
                checkpoint.read(known)
        elif checkpoint is not None:
            checkpoint.reset()
        index = build_entity_index(
            store, embedder, progress=progress, fingerprint=fingerprint, known=known, checkpoint=checkpoint
        )
        del known  # the replaced index's vectors, before the new one is written over its folder
        try:
            index.save(directory)
        except OSError:
            return index
        if checkpoint is not None:
            checkpoint.remove()
        index.ann()  # the search graph is saved beside it now, not built by a worker's first question
        return index
    finally:
        if checkpoint is not None:
            checkpoint.close()
