"""MindMap-faithful baseline retrievers that query the store per pair and per entity.

These reproduce MindMap's retrieval the way its code runs it — one graph query per
entity pair (``allShortestPaths``) and one per entity (neighbors) — through the
:class:`~kgmind.stores.protocol.GraphStore` API only, with no in-memory index. They are
the reference for the latency benchmark and for checking that the index-based
:mod:`kgmind.retrievers.exploration` functions return the same evidence.

* :func:`mindmap_paths` / :func:`mindmap_neighbors` — the same algorithms as
  :func:`~kgmind.retrievers.exploration.path_evidence` and
  :func:`~kgmind.retrievers.exploration.neighbor_evidence` (faithful mode, including
  the junction fix and the visited set), over ``store.paths`` and ``store.neighbors``.
  Edge order is the store's (``paths``: by node ids; ``neighbors``: by relation type,
  weight, tail), so line and path *order* can differ from the index version; the
  evidence sets agree.
* :func:`mindmap_retrieve` — both, as MindMap feeds them to the LLM.
* :func:`kg_shortest_path` — MindMap's plain "KG retriever" baseline: the first
  joined shortest path between the question entities.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kgmind.models import Entity, Evidence, Relation
from kgmind.retrievers.exploration import chain_segments, mindmap_neighbor_lines, pick_segment, select_diverse
from kgmind.retrievers.graph_index_cache import relation_schema_of
from kgmind.stores.protocol import GraphPath, GraphStore

__all__ = ["kg_shortest_path", "mindmap_neighbors", "mindmap_paths", "mindmap_retrieve"]


class _Names:
    """Entity display names and types fetched from the store on demand (one query per batch)."""

    def __init__(self, store: GraphStore) -> None:
        self.store = store
        self.names: dict[str, str] = {}
        self.types: dict[str, str] = {}
        self.schema = relation_schema_of(store)

    def readings(self, relations: Iterable[str]) -> dict[str, str]:
        """``relation -> from>to`` of the medical ones among ``relations`` (:attr:`Evidence.readings`)."""
        keys = {r: self.schema.reading(r).phrase_key for r in relations}
        return {r: k for r, k in keys.items() if k}

    def fetch(self, ids: Sequence[str]) -> None:
        missing = [i for i in dict.fromkeys(ids) if i not in self.names]
        if missing:
            found: list[Entity] = self.store.get_entities(missing)
            for e in found:
                self.names[e.id] = e.name
                self.types[e.id] = e.type
            for i in missing:
                self.names.setdefault(i, i)

    def __getitem__(self, entity_id: str) -> str:
        return self.names.get(entity_id, entity_id)

    def types_of(self, ids: Sequence[str]) -> dict[str, str]:
        """``display name -> type`` of the known entities among ``ids``."""
        return {self[i]: self.types[i] for i in ids if i in self.types}


def _arrow(names: _Names, nodes: Sequence[str], rels: Sequence[Relation]) -> str:
    parts = [names[nodes[0]]]
    for r, n in zip(rels, nodes[1:], strict=True):
        parts += [r.type.replace("_", " "), names[n]]
    return "->".join(parts)


def _segment(
    store: GraphStore,
    names: _Names,
    start: str,
    end: str,
    candidates: list[str],
    max_hops: int,
    path_limit: int,
) -> tuple[list[GraphPath], list[str]]:
    paths = store.paths(start, end, max_hops, directed=True, limit=path_limit)
    names.fetch([n for p in paths for n in p.nodes])
    return pick_segment(
        paths, candidates, lambda p: p.nodes, lambda p: len(_arrow(names, p.nodes, p.relations))
    )


def _path_ev(names: _Names, segs: Sequence[GraphPath], **meta: Any) -> Evidence:
    nodes = list(segs[0].nodes)
    rels = list(segs[0].relations)
    for s in segs[1:]:
        nodes += s.nodes[1:]
        rels += s.relations
    return Evidence(
        kind="path",
        text=_arrow(names, nodes, rels),
        triples=[(names[r.head], r.type, names[r.tail]) for r in rels],
        readings=names.readings(r.type for r in rels),
        relation_ids=[r.id for r in rels],
        entity_ids=nodes,
        entity_types=names.types_of(nodes),
        score=1.0,
        source="mindmap_paths",
        meta={"head": names[nodes[0]], **meta},
    )


def _known(store: GraphStore, entity_ids: Sequence[str]) -> list[str]:
    ids = list(dict.fromkeys(entity_ids))
    found = {e.id for e in store.get_entities(ids)}
    return [i for i in ids if i in found]


def mindmap_paths(
    store: GraphStore,
    entity_ids: Sequence[str],
    *,
    max_hops: int = 5,
    max_paths: int = 5,
    path_limit: int = 100,
) -> list[Evidence]:
    """MindMap path-based evidence with one ``store.paths`` call per entity pair.

    Args:
        store: The KG store.
        entity_ids: Linked entities in question order.
        max_hops: Longest path between consecutive entities.
        max_paths: How many joined paths to return.
        path_limit: Cap on the shortest paths fetched per pair.

    Returns:
        Up to ``max_paths`` ``path`` evidence items.
    """
    nodes = _known(store, entity_ids)
    if len(nodes) < 2 or max_paths <= 0:
        return []
    names = _Names(store)
    names.fetch(nodes)
    runs = chain_segments(nodes, lambda a, b, rest: _segment(store, names, a, b, rest, max_hops, path_limit))
    return [
        _path_ev(names, combo, hops=sum(len(s.relations) for s in combo), segments=len(runs[r]))
        for r, combos in enumerate(select_diverse(runs, max_paths))
        for combo in combos
    ]


def _grouped(store: GraphStore, entity: str) -> list[tuple[str, list[Relation]]]:
    groups: dict[str, list[Relation]] = {}
    for r in store.neighbors([entity], "out"):
        groups.setdefault(r.type, []).append(r)
    return list(groups.items())


def _line(names: _Names, entity: str, rtype: str, rels: Sequence[Relation], **meta: Any) -> Evidence:
    names.fetch([entity, *(r.tail for r in rels)])
    return Evidence(
        kind="neighbor",
        text="->".join([names[entity], rtype.replace("_", " "), ",".join(names[r.tail] for r in rels)]),
        triples=[(names[entity], rtype, names[r.tail]) for r in rels],
        readings=names.readings([rtype]),
        relation_ids=[r.id for r in rels],
        entity_ids=[entity, *(r.tail for r in rels)],
        entity_types=names.types_of([entity, *(r.tail for r in rels)]),
        score=1.0,
        source="mindmap_neighbors",
        meta={"entity": names[entity], "relation": rtype, **meta},
    )


def mindmap_neighbors(store: GraphStore, entity_ids: Sequence[str], *, max_lines: int = 5) -> list[Evidence]:
    """MindMap neighbor-based evidence with one ``store.neighbors`` call per entity.

    Args:
        store: The KG store.
        entity_ids: Linked entities in question order.
        max_lines: How many lines to return.

    Returns:
        Up to ``max_lines`` ``neighbor`` evidence items.
    """
    nodes = _known(store, entity_ids)
    if max_lines <= 0:
        return []
    names = _Names(store)

    def line(entity: str, rtype: str, rels: list[Relation], expansion: bool) -> Evidence:
        return _line(names, entity, rtype, rels, **({"expansion": True} if expansion else {}))

    return mindmap_neighbor_lines(
        nodes,
        lambda e: _grouped(store, e),
        lambda r: r.tail,
        line,
        max_lines,
        schema=names.schema,
        expand_all=True,
    )


def mindmap_retrieve(
    store: GraphStore,
    entity_ids: Sequence[str],
    *,
    max_hops: int = 5,
    max_paths: int = 5,
    max_lines: int = 5,
) -> list[Evidence]:
    """MindMap's retrieval: path-based then neighbor-based evidence, store queries only.

    Args:
        store: The KG store.
        entity_ids: Linked entities in question order.
        max_hops: Longest path between consecutive entities.
        max_paths: Paths kept.
        max_lines: Neighbor lines kept.

    Returns:
        The paths followed by the neighbor lines.
    """
    return mindmap_paths(store, entity_ids, max_hops=max_hops, max_paths=max_paths) + mindmap_neighbors(
        store, entity_ids, max_lines=max_lines
    )


def kg_shortest_path(store: GraphStore, entity_ids: Sequence[str], *, max_hops: int = 5) -> list[Evidence]:
    """MindMap's plain KG retriever: the first joined shortest path between the question entities.

    Args:
        store: The KG store.
        entity_ids: Linked entities in question order.
        max_hops: Longest path between consecutive entities.

    Returns:
        At most one ``path`` evidence item (``source="kg_shortest_path"``).
    """
    paths = mindmap_paths(store, entity_ids, max_hops=max_hops, max_paths=1)
    return [ev.model_copy(update={"source": "kg_shortest_path"}) for ev in paths[:1]]
