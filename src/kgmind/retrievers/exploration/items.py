"""From index positions to evidence: node and edge indices of a :class:`GraphIndex` as names, triples, items.

The exploration tools walk integer node and edge indices; what they return names the
entities and edges by their KG ids and display names. This module holds that
translation and the MindMap relation conventions every tool shares.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kgmind.models import Evidence, EvidenceKind
from kgmind.relations import reading_words
from kgmind.retrievers.graph_index import GraphIndex
from kgmind.retrievers.graph_paths import IndexPath
from kgmind.retrievers.graph_weights import WeightSnapshot

__all__ = [
    "PATHS_PER_SEGMENT",
    "arrow_path",
    "edge_prob",
    "evidence_item",
    "path_prob",
    "resolve",
    "triple",
    "triple_text",
]

#: MindMap keeps at most this many shortest paths per segment.
PATHS_PER_SEGMENT = 5


def resolve(gi: GraphIndex, entity_ids: Sequence[str]) -> list[int]:
    """Known entity ids as node indices, deduplicated, in the order given."""
    out: list[int] = []
    seen: set[int] = set()
    for eid in entity_ids:
        i = gi.index_of.get(eid)
        if i is not None and i not in seen:
            seen.add(i)
            out.append(i)
    return out


def triple(gi: GraphIndex, e: int) -> tuple[str, str, str]:
    """Edge ``e`` as ``(head name, relation type, tail name)``."""
    return (gi.names[gi.edge_head[e]], gi.edge_type[e], gi.names[gi.edge_tail[e]])


def arrow_path(gi: GraphIndex, nodes: Sequence[int], edges: Sequence[int]) -> str:
    """MindMap's ``A->rel->B->rel->C`` form (:func:`~kgmind.relations.reading_words` for each relation)."""
    parts = [gi.names[nodes[0]]]
    for e, n in zip(edges, nodes[1:], strict=True):
        parts.append(reading_words(gi.schema.reading(gi.edge_type[e])))
        parts.append(gi.names[n])
    return "->".join(parts)


def triple_text(gi: GraphIndex, edges: Sequence[int]) -> str:
    """The edges as ``A->rel->B; C->rel->D`` (:func:`~kgmind.relations.reading_words` for each relation)."""
    words = gi.schema.reading
    return "; ".join("->".join((h, reading_words(words(r)), t)) for h, r, t in (triple(gi, e) for e in edges))


def edge_prob(gi: GraphIndex, weights: WeightSnapshot, e: int) -> float:
    """KGCoT selection probability ``w_e / Σ w`` over the outgoing edges of ``e``'s head, in ``weights``."""
    total = float(weights.totals[gi.edge_head[e]])
    return float(weights.weights[e]) / total if total > 0 else 0.0


def path_prob(gi: GraphIndex, weights: WeightSnapshot, path: IndexPath) -> float:
    """Probability of drawing ``path`` edge by edge under the KGCoT edge probabilities of ``weights``."""
    if gi.pushed_down:  # a node's total is known once its edges are read
        for e in path.edges:
            gi.out_array(gi.edge_head[e])
    p = 1.0
    for e in path.edges:
        p *= edge_prob(gi, weights, e)
    return p


def evidence_item(
    gi: GraphIndex,
    kind: EvidenceKind,
    edges: Sequence[int],
    nodes: Iterable[int],
    *,
    text: str,
    score: float,
    source: str,
    meta: dict[str, Any],
) -> Evidence:
    """An evidence item over ``edges`` naming ``nodes``, with their ids, display names and types."""
    node_list = list(nodes)
    schema = gi.schema
    keys = {r: schema.reading(r).phrase_key for r in {gi.edge_type[e] for e in edges}}
    return Evidence(
        kind=kind,
        text=text,
        triples=[triple(gi, e) for e in edges],
        readings={r: k for r, k in keys.items() if k},
        relation_ids=[gi.edge_id[e] for e in edges],
        entity_ids=[gi.ids[n] for n in node_list],
        entity_types={gi.names[n]: gi.types[n] for n in node_list},
        score=score,
        source=source,
        meta=meta,
    )
