"""LadybugDB connections: one writer; pooled readers; a reader of its own for a statement that holds pages.

A LadybugDB connection keeps a prepared statement for each query it ran. A connection per
thread outlived its thread: pushed-down questions grew the process about 15 MB each (EMCKG-full,
60 questions: 686 → 1,276 MB; pooled: 513 → 691 MB), so readers are pooled.

Some prepared statements hold pages of the store's page cache, where they cannot be evicted.
Replaying 40 questions of the generated 10M KG on 4 readers in a 128 MiB cache failed ("the
buffer pool is full") when the readers kept their prepared ``EDGES_BETWEEN``, and passed when
they kept every other statement. So that statement (``fresh_for``) gets a reader opened for its
read and closed after it, pooled or not (the re-crawl's worker then held ~30 MB less after 20
questions, at the same speed).

The others still hold some pages. Under a bounded cache that is small next to the store
(:func:`pools_readers`), every read gets a fresh reader: pooled, the 10M worker in 128 MiB was no
faster and held 30-50 MB more. Where the cache is bigger, pooled readers spare preparing each
statement again (``WHOLE_EDGES``: 5.4 against 2.2 ms): the 10M worker in 384 MiB answered 1,000
questions at p50 225-320 ms per 100 against 282-361 with a fresh reader per read (issue 42,
``benchmarks/results/2026-11-30-pooled-readers/``).

Should pooled readers still fill a small page cache, :meth:`Connections.run` closes the idle
ones, and with them what their statements hold, and runs the read once more on a fresh reader.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Collection, Iterator
from typing import Any, TypeVar

from kgmind.tuning import POOLED_READERS_MIN_CACHE_SHARE

__all__ = ["Connections", "page_cache_full", "pools_readers"]

T = TypeVar("T")

_log = logging.getLogger(__name__)


def pools_readers(cache_bytes: int | None, store_bytes: int) -> bool:
    """Whether a store's readers are pooled: unless its page cache is bounded below a share of its file.

    (:data:`~kgmind.tuning.POOLED_READERS_MIN_CACHE_SHARE`; ``cache_bytes`` None: the engine's default.)
    """
    return cache_bytes is None or cache_bytes >= POOLED_READERS_MIN_CACHE_SHARE * store_bytes


def page_cache_full(exc: BaseException) -> bool:
    """Whether the engine failed a read because its page cache had no page left to give."""
    return "buffer pool" in str(exc).lower()


class Connections:
    """Every open connection of one database (to close them all on close), and the idle pooled readers.

    Args:
        connect: Opens a connection.
        pooled: Keep readers for later reads; else each read opens one and closes it.
        fresh_for: Queries read on a reader opened for them and closed after, pooled or not
            (their prepared statements hold pages of the page cache).
    """

    def __init__(
        self, connect: Callable[[], Any], *, pooled: bool = True, fresh_for: Collection[str] = ()
    ) -> None:
        self._connect = connect
        self._pooled = pooled
        self._fresh_for = frozenset(fresh_for)
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
    def reading(self, query: str | None = None, *, fresh: bool = False) -> Iterator[Any]:
        """A reader for one read of ``query``: an idle pooled one (new when all are busy), or a fresh one.

        ``fresh`` (or a ``query`` of ``fresh_for``): a reader opened for this read and closed after it.
        """
        fresh = fresh or not self._pooled or query in self._fresh_for
        with self._lock:
            conn = self._idle.pop() if self._idle and not fresh else None
        if conn is None:
            conn = self.new()
        try:
            yield conn
        finally:
            with self._lock:
                kept = not self.closed
                if kept and not fresh:
                    self._idle.append(conn)
                elif kept:
                    self._all.remove(conn)
            if kept and fresh:  # a closed pool closed it already
                with contextlib.suppress(RuntimeError):
                    conn.close()

    def run(self, query: str, read: Callable[[Any], T]) -> T:
        """``read(reader)`` for ``query``; once more on a fresh reader if the page cache was full.

        The idle readers are closed first: what their prepared statements hold is what filled it.
        """
        try:
            with self.reading(query) as conn:
                return read(conn)
        except RuntimeError as exc:
            if not self._pooled or not page_cache_full(exc) or self.closed:
                raise
        _log.info("page cache full: idle readers closed, the read runs again on a fresh one")
        self.close_idle()
        with self.reading(query, fresh=True) as conn:
            return read(conn)

    def close_idle(self) -> None:
        """Close the idle pooled readers (the next reads open new ones)."""
        with self._lock:
            idle, self._idle = self._idle, []
            for conn in idle:
                self._all.remove(conn)
        for conn in idle:
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
