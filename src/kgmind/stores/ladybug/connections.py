"""LadybugDB connections: one writer, and a fresh reader for each read, closed after it.

A LadybugDB connection keeps memory from the queries it ran, in the store's page cache,
where it cannot be evicted. A connection per thread outlived its thread: pushed-down
questions grew the process about 15 MB each (EMCKG-full, 60 questions: 686 → 1,276 MB;
pooled: 513 → 691 MB). Pooled readers still piled it up: with a 256 MiB page cache the
generated 10M KG failed a question it had answered 316 questions before ("the buffer pool is
full"), so a worker needed 512 MiB. A connection costs 0.08 ms to open and close, so each
read now gets its own and gives the memory back when it is closed: the 10M worker answered
1,000 questions in 256 MiB (issue 42, ``benchmarks/results/2026-11-29-worker-memory/``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Connections"]


class Connections:
    """Every open connection of one database (to close them all on close)."""

    def __init__(self, connect: Callable[[], Any]) -> None:
        self._connect = connect
        self._lock = threading.Lock()
        self._all: list[Any] = []
        self.closed = False

    def new(self) -> Any:
        """A connection kept open until it is closed here or the pool closes (the writer)."""
        conn = self._connect()
        with self._lock:
            self._all.append(conn)
        return conn

    @contextlib.contextmanager
    def reading(self) -> Iterator[Any]:
        """A reader of its own for one read, closed after it."""
        conn = self.new()
        try:
            yield conn
        finally:
            with self._lock:
                mine = not self.closed
                if mine:
                    self._all.remove(conn)
            if mine:  # else the store's close closed it
                with contextlib.suppress(RuntimeError):
                    conn.close()

    def close(self) -> None:
        """Close every connection (a reader in use is closed too: the store is closing)."""
        with self._lock:
            self.closed = True
            conns, self._all = self._all, []
        for conn in conns:
            with contextlib.suppress(RuntimeError):
                conn.close()
