"""MindMap's path-based evidence (Appendix E and its code) over a :class:`GraphIndex`.

The first linked entity starts; for each next candidate, all shortest directed paths of
at most ``max_hops`` edges; a path running through another remaining candidate is the
only one kept and consumes that candidate (we consume every candidate it runs through,
MindMap the last one); the end becomes the next start; when no path exists the segment
is closed and the next candidate restarts. Segments are joined by a cartesian product
*without duplicating the junction node* (MindMap's join repeats it). At most five paths
per segment, the shortest by rendered length (MindMap) or, with ``weight_aware``, the
most probable under the KGCoT edge probabilities. At most ``max_paths`` results, spread
over head entities as MindMap does (one per head when there are at least ``max_paths``
heads, else an even share per head with the remainder to the last; unused shares are
refilled in order). Entities are ids, so the ``_`` vs space name mismatch of MindMap
cannot occur.

The segment rules (:func:`pick_segment`, :func:`chain_segments`, :func:`select_diverse`)
do not depend on where paths come from: the store baseline
(:func:`kgmind.retrievers.baselines.mindmap_paths`) runs them on store queries.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Sequence
from typing import Any, TypeVar

from kgmind.models import Evidence
from kgmind.retrievers.exploration.items import (
    PATHS_PER_SEGMENT,
    arrow_path,
    evidence_item,
    path_prob,
    resolve,
)
from kgmind.retrievers.graph_index import GraphIndex
from kgmind.retrievers.graph_paths import BfsMemo, IndexPath
from kgmind.retrievers.graph_weights import WeightSnapshot

__all__ = ["chain_segments", "path_evidence", "pick_segment", "select_diverse"]

T = TypeVar("T")
N = TypeVar("N")
P = TypeVar("P")


def pick_segment(
    paths: list[P], candidates: Collection[N], nodes_of: Callable[[P], Sequence[N]], order: Callable[[P], Any]
) -> tuple[list[P], list[N]]:
    """MindMap's ``find_shortest_path`` rule: the paths a segment keeps and the candidates they consume.

    The first path that runs through a remaining candidate is the only one kept and
    consumes every candidate on it; otherwise at most :data:`PATHS_PER_SEGMENT` paths
    are kept, the first by ``order``.
    """
    cand = set(candidates)
    for p in paths:
        hit = [n for n in nodes_of(p) if n in cand]
        if hit:
            return [p], hit
    if len(paths) > PATHS_PER_SEGMENT:
        paths = sorted(paths, key=order)[:PATHS_PER_SEGMENT]
    return paths, []


def _segment_paths(
    gi: GraphIndex,
    start: int,
    end: int,
    candidates: list[int],
    max_hops: int,
    weights: WeightSnapshot | None,
    path_limit: int,
    memo: BfsMemo | None = None,
    max_degree: int | None = None,
) -> tuple[list[IndexPath], list[int]]:
    """One segment on the index: most probable paths first under ``weights``, else (None) shortest text."""
    paths = gi.shortest_paths(
        start, end, max_hops, directed=True, limit=path_limit, memo=memo, max_degree=max_degree
    )

    if weights is not None and len(paths) > PATHS_PER_SEGMENT:  # path_prob reads every head's edges
        gi.prefetch(gi.edge_head[e] for p in paths for e in p.edges)

    def order(p: IndexPath) -> float:
        return -path_prob(gi, weights, p) if weights is not None else len(arrow_path(gi, p.nodes, p.edges))

    return pick_segment(paths, candidates, lambda p: p.nodes, order)


def _join(segments: Sequence[IndexPath]) -> tuple[list[int], list[int]]:
    """Join consecutive segments, keeping the junction node once (MindMap repeats it)."""
    nodes = list(segments[0].nodes)
    edges = list(segments[0].edges)
    for seg in segments[1:]:
        nodes.extend(seg.nodes[1:])
        edges.extend(seg.edges)
    return nodes, edges


def chain_segments(
    nodes: Sequence[N], segment: Callable[[N, N, list[N]], tuple[list[T], Collection[N]]]
) -> list[list[list[T]]]:
    """MindMap's segment chaining (Appendix E), independent of how one segment is searched.

    ``start`` = the first node, the rest are candidates. Each next candidate is joined to
    ``start`` by ``segment(start, end, remaining)``, which returns the segment's paths and the
    candidates a path passed through (they are consumed). On success ``start := end``; when no
    path is found the run is closed and a new one restarts from the next candidate.

    Returns:
        Runs; each run is a list of segments; each segment is the list of its alternative paths.
    """
    start, cands = nodes[0], list(nodes[1:])
    runs: list[list[list[T]]] = []
    while True:
        restart = False
        segs: list[list[T]] = []
        while cands:
            end = cands.pop(0)
            paths, consumed = segment(start, end, cands)
            if not paths:
                if not cands:
                    break
                restart = True
                start = cands.pop(0)
                break
            segs.append(paths)
            cands = [c for c in cands if c not in consumed]
            start = end
        if segs:
            runs.append(segs)
        if not restart:
            break
    return runs


def select_diverse(runs: Sequence[Sequence[Sequence[T]]], max_paths: int) -> list[list[tuple[T, ...]]]:
    """Pick at most ``max_paths`` joined paths spread over the runs (MindMap's head diversity).

    Each run (one head entity) gets an even share (one each when there are ≥ ``max_paths``
    runs); shares a run cannot fill are refilled from the runs in head order. A joined path is
    one choice of alternative per segment (``itertools.product`` order).

    Returns:
        Per run, the chosen segment combinations.
    """
    n = len(runs)
    if n == 0:
        return []
    if n == 1:
        quotas = [max_paths]
    elif n >= max_paths:
        quotas = [1] * max_paths
    else:
        quotas = [max_paths // n] * n
        quotas[-1] += max_paths % n
    picked = [
        list(itertools.islice(itertools.product(*run), q)) for run, q in zip(runs, quotas, strict=False)
    ]
    total = sum(len(p) for p in picked)
    if total < max_paths and n < max_paths:  # refill unused shares in head order
        for r, run in enumerate(runs):
            if total >= max_paths:
                break
            extra = list(
                itertools.islice(itertools.product(*run), len(picked[r]), len(picked[r]) + max_paths - total)
            )
            picked[r].extend(extra)
            total += len(extra)
    return picked


def path_evidence(
    gi: GraphIndex,
    entity_ids: Sequence[str],
    *,
    max_hops: int = 5,
    max_paths: int = 5,
    weight_aware: bool = False,
    path_limit: int = 100,
    hub_percentile: float | None = None,
) -> list[Evidence]:
    """MindMap path-based evidence (see the module docstring).

    Args:
        gi: The graph index.
        entity_ids: Linked entities, in question order; the first one starts.
        max_hops: Longest path searched between consecutive entities.
        max_paths: How many joined paths to return.
        weight_aware: Keep the most probable paths per segment (KGCoT edge
            probabilities) instead of MindMap's shortest-rendered-text rule.
        path_limit: Cap on the shortest paths enumerated per pair (MindMap: all).
        hub_percentile: Paths walk through no node whose degree is above this percentile
            (:meth:`GraphIndex.hub_degree`; the two ends are always expanded), as HyKGE's
            chains; ``None`` (MindMap): through every node. Applied on a bounded index only,
            whose degrees are the store's kept ones in both modes (an unbounded pushed-down
            index knows only what it has read, and the modes must give the same paths).

    Returns:
        Up to ``max_paths`` ``path`` evidence items; ``[]`` for fewer than two known
        entities.
    """
    nodes = resolve(gi, entity_ids)
    if len(nodes) < 2 or max_paths <= 0:
        return []
    memo: BfsMemo = {}
    weights = gi.weight_snapshot() if weight_aware else None  # one set of weights for the whole call
    cap = gi.hub_degree(hub_percentile) if hub_percentile is not None and gi.bounded else None
    runs = chain_segments(
        nodes, lambda a, b, rest: _segment_paths(gi, a, b, rest, max_hops, weights, path_limit, memo, cap)
    )
    out: list[Evidence] = []
    for r, choices in enumerate(select_diverse(runs, max_paths)):
        for choice in choices:
            nodes_, edges_ = _join(choice)
            meta = {"head": gi.names[nodes_[0]], "hops": len(edges_), "segments": len(runs[r])}
            text = arrow_path(gi, nodes_, edges_)
            out.append(
                evidence_item(
                    gi, "path", edges_, nodes_, text=text, score=1.0, source="path_evidence", meta=meta
                )
            )
    return out
