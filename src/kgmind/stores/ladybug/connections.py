"""LadybugDB connections: one writer, and readers pooled across threads.

A LadybugDB connection runs one query at a time and keeps memory from the queries it
ran. A server runs each question on fresh pool threads, so one connection per thread
outlived its thread: pushed-down questions grew the process about 15 MB each
(EMCKG-full, 60 questions: 686 → 1,276 MB; pooled: 513 → 691 MB, the rest being the
per-question index cache). Pooled, there are at most as many readers as reads at once.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Connections"]


class Connections:
    """Every connection of one database (to close them all), the idle readers among them."""

    def __init__(self, connect: Callable[[], Any]) -> None:
        self._connect = connect
        self._lock = threading.Lock()
        self._all: list[Any] = []
        self._idle: list[Any] = []
        self.closed = False

    def new(self) -> Any:
        """A connection of this pool's own (the writer)."""
        conn = self._connect()
        with self._lock:
            self._all.append(conn)
        return conn

    @contextlib.contextmanager
    def reading(self) -> Iterator[Any]:
        """An idle reader (a new one when every reader is busy), returned to the pool after use."""
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self.new()
        try:
            yield conn
        finally:
            with self._lock:
                if not self.closed:
                    self._idle.append(conn)

    def close(self) -> None:
        """Close every connection (a reader in use is closed too: the store is closing)."""
        with self._lock:
            self.closed = True
            conns, self._all, self._idle = self._all, [], []
        for conn in conns:
            with contextlib.suppress(RuntimeError):
                conn.close()
