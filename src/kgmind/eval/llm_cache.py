"""On-disk cache of LLM outputs keyed by (model, prompt), so evaluations can be re-run for free.

The cache is one SQLite file, by default ``$KGMIND_HOME/llm_cache/cache.sqlite``. A
:class:`CachedLLM` wraps any LangChain chat model (or a plain callable ``str -> str``),
counts logical calls (cache hits included: they stand for calls the method makes) and
times the calls that really ran, so the harness can report non-LLM latency.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kgmind.settings import kgmind_home

__all__ = ["CachedLLM", "LLMCache", "default_cache_path"]


def default_cache_path() -> Path:
    """``$KGMIND_HOME/llm_cache/cache.sqlite``."""
    return kgmind_home() / "llm_cache" / "cache.sqlite"


class LLMCache:
    """A thread-safe SQLite map ``sha256(model, prompt) -> output``."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False)
        with self._lock:
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS llm_cache "
                "(key TEXT PRIMARY KEY, model TEXT, prompt TEXT, output TEXT)"
            )
            self._conn.commit()

    @staticmethod
    def key(model: str, prompt: str) -> str:
        """Return the cache key of a (model, prompt) pair."""
        return hashlib.sha256(f"{model}\x1f{prompt}".encode()).hexdigest()

    def get(self, model: str, prompt: str) -> str | None:
        """Return the cached output, or ``None``."""
        with self._lock:
            row = self._conn.execute(
                "SELECT output FROM llm_cache WHERE key = ?", (self.key(model, prompt),)
            ).fetchone()
        return None if row is None else str(row[0])

    def put(self, model: str, prompt: str, output: str) -> None:
        """Store an output (replacing an older one)."""
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO llm_cache (key, model, prompt, output) VALUES (?, ?, ?, ?)",
                (self.key(model, prompt), model, prompt, output),
            )
            self._conn.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._conn.close()


def _content(result: Any) -> str:
    content = getattr(result, "content", result)
    if isinstance(content, list):
        return "".join(c.get("text", "") if isinstance(c, dict) else str(c) for c in content)
    return str(content)


class CachedLLM:
    """An LLM behind the cache: ``invoke(prompt) -> str``.

    Attributes:
        model: The model name used in cache keys.
        calls: Logical calls made (hits and misses).
        misses: Calls that ran the model.
        seconds: Wall time spent in calls (model runs and cache look-ups).

    """

    def __init__(self, llm: Any, model: str, cache: LLMCache | None = None) -> None:
        self._llm = llm
        self.model = model
        self.cache = cache
        self.calls = 0
        self.misses = 0
        self.seconds = 0.0

    def _run(self, prompt: str) -> str:
        if hasattr(self._llm, "invoke"):
            return _content(self._llm.invoke(prompt))
        fn: Callable[[str], Any] = self._llm
        return _content(fn(prompt))

    def invoke(self, prompt: str) -> str:
        """Answer ``prompt`` from the cache or by calling the model (and caching it)."""
        t0 = time.perf_counter()
        try:
            self.calls += 1
            if self.cache is not None:
                hit = self.cache.get(self.model, prompt)
                if hit is not None:
                    return hit
            self.misses += 1
            out = self._run(prompt)
            if self.cache is not None:
                self.cache.put(self.model, prompt, out)
            return out
        finally:
            self.seconds += time.perf_counter() - t0
