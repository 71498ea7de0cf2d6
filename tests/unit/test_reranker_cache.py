"""Regression: EmbeddingReranker's LRU eviction never drops a vector the current batch needs."""

from __future__ import annotations

import numpy as np

from kgmind.retrievers.aggregate import EmbeddingReranker
from kgmind.retrievers.embeddings.hashing import HashEmbedder


def test_cached_text_at_the_lru_end_survives_eviction() -> None:
    rr = EmbeddingReranker(HashEmbedder(), cache_size=3)
    q = ["fever and cough"]
    first = rr.score(q, ["influenza causes fever"])  # cached first: the oldest entry
    rr.score(q, ["a cold causes cough", "x ray checks pneumonia"])  # cache is now full
    texts = ["influenza causes fever", "rest", "fluids"]
    scores = rr.score(q, texts)  # adding 2 evicts the oldest, which this batch needs (was a KeyError)
    assert len(scores) == 3
    assert np.isclose(scores[0], first[0])
    assert len(rr._cache) <= 3


def test_no_cache_still_scores() -> None:
    rr = EmbeddingReranker(HashEmbedder(), cache_size=0)
    assert len(rr.score(["q"], ["a", "b", "a"])) == 3
    assert not rr._cache
