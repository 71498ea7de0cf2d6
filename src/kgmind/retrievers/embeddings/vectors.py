"""What every embedder returns: float32 rows of unit length, so an inner product is a cosine.

Also the contextual span vectors MiniLM's two backends compute the same way, and the
version tag that names a model's vectors in the caches (a new package version, new keys).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

__all__ = ["ContextVectors", "l2_normalize", "package_version", "span_vectors"]


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Return ``vectors`` as a C-contiguous float32 array with unit-length rows (zero rows stay zero).

    Args:
        vectors: An ``(n, dim)`` array.

    Returns:
        The normalised copy.
    """
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(arr / norms, dtype=np.float32)


def package_version(name: str) -> str:
    """The installed version of package ``name`` (``"unknown"`` when it cannot be read), for cache keys."""
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # noqa: BLE001 - any failure just means "unknown version"
        return "unknown"


class ContextVectors(NamedTuple):
    """What :meth:`MiniLMEmbedder.embed_in_context` returns.

    Attributes:
        sentence: ``(dim,)`` vector of the whole text.
        spans: ``(n spans, dim)`` contextual span vectors (zero rows: no token inside).
        extra: ``(n extra, dim)`` standalone vectors of the extra texts.
    """

    sentence: np.ndarray
    spans: np.ndarray
    extra: np.ndarray


def span_vectors(
    states: np.ndarray, mask: np.ndarray, offsets: Sequence[Sequence[int]], spans: Sequence[tuple[int, int]]
) -> np.ndarray:
    """Contextual vectors of character ``spans``: the normalised mean of the token states inside each.

    Args:
        states: ``(tokens, dim)`` token states of one text.
        mask: ``(tokens,)`` attention mask (padding is 0).
        offsets: ``(start, end)`` character range of each token (special tokens: empty).
        spans: ``(start, end)`` character ranges.

    Returns:
        ``(len(spans), dim)`` float32; a span with no whole token inside it gets a zero row.
    """
    out = np.zeros((len(spans), states.shape[-1]), dtype=np.float32)
    real = [(i, a, b) for i, (a, b) in enumerate(offsets) if b > a and mask[i] > 0]
    for row, (start, end) in enumerate(spans):
        idx = [i for i, a, b in real if a >= start and b <= end]
        if idx:
            out[row] = states[idx].mean(0)
    return l2_normalize(out)
