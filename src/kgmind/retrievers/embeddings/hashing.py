"""A deterministic character-trigram embedder, for fast tests of the wiring (no model, no randomness)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from kgmind.retrievers.embeddings.vectors import l2_normalize

__all__ = ["HashEmbedder"]


class HashEmbedder:
    """Deterministic character-trigram hashing embedder for fast tests of the wiring.

    Strings sharing many character trigrams get a high cosine (``headache`` vs
    ``headaches``); unrelated strings get a low one. No model, no randomness.
    """

    def __init__(self, dim: int = 256) -> None:
        self.name = "hash"
        self.dim = dim

    def _one(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float32)
        padded = f"  {text.casefold().strip()}  "
        for i in range(len(padded) - 2):
            gram = padded[i : i + 3].encode("utf-8")
            h = int.from_bytes(hashlib.blake2b(gram, digest_size=8).digest(), "little")
            vec[h % self.dim] += 1.0 if (h >> 63) & 1 else 0.8
        return vec

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts (same function for documents and queries)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return l2_normalize(np.stack([self._one(t) for t in texts]))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts (same function for documents and queries)."""
        return self.embed_documents(texts)
