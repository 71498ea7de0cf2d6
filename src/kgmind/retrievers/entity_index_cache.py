"""The entity indexes of this process: where each lives, which model a store gets, one loaded per fingerprint.

:func:`get_entity_index` caches one :class:`~kgmind.retrievers.entity_index.EntityIndex` per
(store URI, model, fingerprint): loaded from beside the store when its fingerprint matches,
built and saved otherwise. A store's next fingerprint replaces its older index in the cache.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from kgmind.retrievers.embeddings import model_for_language
from kgmind.retrievers.entity_index import EntityIndex, build_and_save
from kgmind.settings import kgmind_home
from kgmind.stores.protocol import GraphStore
from kgmind.text import detect_language

__all__ = [
    "cached_entity_indexes",
    "clear_entity_index_cache",
    "dominant_language",
    "entity_index_dir",
    "find_cached_index",
    "get_entity_index",
    "resolve_model",
]


def entity_index_dir(store_uri: str, model: str) -> Path:
    """Where the index of ``store_uri`` built with ``model`` lives.

    ``ladybug:/x/kg`` → ``/x/kg.index/<model>``; any other URI →
    ``$KGMIND_HOME/index/<sha256 of uri, 16 hex>/<model>``.
    """
    if store_uri.startswith("ladybug:"):
        from kgmind.stores.factory import parse_store_uri

        location = Path(parse_store_uri(store_uri).location)
        return location.with_name(location.name + ".index") / model
    digest = hashlib.sha256(store_uri.encode("utf-8")).hexdigest()[:16]
    return kgmind_home() / "index" / digest / model


def dominant_language(store: GraphStore, sample: int = 2000) -> str:
    """``en`` or ``zh``: the language most of the first ``sample`` entity names are in."""
    counts: Counter[str] = Counter()
    for i, ent in enumerate(store.iter_entities()):
        if i >= sample:
            break
        counts[detect_language(ent.name)] += 1
    return "zh" if counts["zh"] > counts["en"] else "en"


def resolve_model(store: GraphStore, model: str | None) -> str:
    """The embedding model to use for ``store``: ``model`` unless it is ``None``/``auto``.

    ``auto`` picks :func:`~kgmind.retrievers.embeddings.model_for_language` of the
    store's :func:`dominant_language` (English KG → minilm, Chinese KG → e5).
    """
    if model is None or model == "auto":
        return model_for_language(dominant_language(store))
    return model


_lock = threading.Lock()
_cache: dict[tuple[str, str, str], EntityIndex] = {}
_key_locks: dict[tuple[str, str], threading.Lock] = {}


def get_entity_index(store: GraphStore, model: str, *, progress: bool = False) -> EntityIndex:
    """Return the entity index of ``store`` for ``model``: cached, else loaded from disk, else built.

    Args:
        store: The store.
        model: Embedding model name (``minilm``, ``e5``, ``hash``; ``auto`` resolves by the KG language).
        progress: Show a progress bar if the index has to be built.

    Returns:
        The index matching the store's current fingerprint.
    """
    model = resolve_model(store, model)
    fingerprint = store.fingerprint()
    key = (store.uri, model, fingerprint)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    with _lock:
        key_lock = _key_locks.setdefault((store.uri, model), threading.Lock())
    with key_lock:
        hit = _cache.get(key)
        if hit is not None:
            return hit
        directory = entity_index_dir(store.uri, model)
        index = EntityIndex.load(directory, model=model, fingerprint=fingerprint)
        if index is None:
            index = build_and_save(store, model, directory, fingerprint=fingerprint, progress=progress)
        with _lock:
            for old in [k for k in _cache if k[:2] == key[:2]]:
                del _cache[old]
            _cache[key] = index
        return index


def cached_entity_indexes() -> list[EntityIndex]:
    """The entity indexes loaded in this process, most recently loaded first."""
    with _lock:
        return list(reversed(_cache.values()))


def find_cached_index(entity_ids: Iterable[str], *, min_coverage: float = 0.5) -> EntityIndex | None:
    """The loaded entity index that knows most of ``entity_ids`` (no loading, no building).

    Used by :func:`kgmind.retrievers.aggregate.aggregate_evidence` to pick the
    default reranker's vectors: the pipeline has always linked (and so loaded the
    KG's index) before it aggregates evidence.

    Args:
        entity_ids: Entity ids of the evidence.
        min_coverage: Smallest fraction of the distinct ids the index must hold.

    Returns:
        The best-covering index (ties: the most recently loaded), or ``None``.
    """
    ids = set(entity_ids)
    if not ids:
        return None
    best: EntityIndex | None = None
    best_n = 0
    for idx in cached_entity_indexes():
        n = sum(1 for e in ids if e in idx.entities)
        if n > best_n:
            best, best_n = idx, n
    if best is None or best_n < min_coverage * len(ids):
        return None
    return best


def clear_entity_index_cache() -> None:
    """Forget every cached index (tests)."""
    with _lock:
        _cache.clear()
