"""LadybugDB connections: one writer; readers pooled, or a fresh one per read under a bounded page cache.

A LadybugDB connection keeps a prepared statement for each query it ran, and a prepared
``EDGES_BETWEEN`` held pages of the store's page cache, where they cannot be evicted (pooled
readers still fill a 128 MiB cache with the statement that tests offsets). A
connection per thread outlived its thread: pushed-down questions grew the process about 15 MB
each (EMCKG-full, 60 questions: 686 → 1,276 MB; pooled: 513 → 691 MB). Pooled readers still
pile it up: with a 256 MiB page cache the generated 10M KG failed a question it had answered
316 questions before ("the buffer pool is full"). A fresh connection per read (0.08 ms to open
and close) gives the memory back when it is closed, and the 10M worker answered 1,000
questions in 256 MiB; but each read then prepares its statement again (``WHOLE_EDGES``: 5.4
against 2.2 ms), and the re-crawl's pushed-down p50 went from ~400 to ~470-530 ms. So a store
whose page cache the user bounded (``KGMIND_STORE_BUFFER_MB``) opens a reader per read, and
one left at the engine's default pools them (issue 42,
``benchmarks/results/2026-11-29-worker-memory/``, ``…/2026-11-29-votes-offsets/``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Connections"]


class Connections:
    """Every open connection of one database (to close them all on close), and the idle pooled readers.

    Args:
        connect: Opens a connection.
        pooled: Keep readers for later reads; else each read opens one and closes it.
    """

    def __init__(self, connect: Callable[[], Any], *, pooled: bool = True) -> None:
        self._connect = connect
        self._pooled = pooled
        self._lock = threading.Lock()
        self._all: list[Any] = []
        self._idle: list[Any] = []
        self.closed = False

    def new(self) -> Any:
        """A connection kept open until it is closed here or the pool closes (the writer)."""
        conn = self._connect()
        with self._lock:
            self._all.append(conn)
        return conn

    @contextlib.contextmanager
    def reading(self) -> Iterator[Any]:
        """A reader for one read: an idle pooled one (new when all are busy), or one closed after it."""
        with self._lock:
            conn = self._idle.pop() if self._pooled and self._idle else None
        if conn is None:
            conn = self.new()
        try:
            yield conn
        finally:
            with self._lock:
                kept = not self.closed
                if kept and self._pooled:
                    self._idle.append(conn)
                elif kept:
                    self._all.remove(conn)
            if kept and not self._pooled:  # a closed pool closed it already
                with contextlib.suppress(RuntimeError):
                    conn.close()

    def close(self) -> None:
        """Close every connection (a reader in use is closed too: the store is closing)."""
        with self._lock:
            self.closed = True
            conns, self._all, self._idle = self._all, [], []
        for conn in conns:
            with contextlib.suppress(RuntimeError):
                conn.close()
