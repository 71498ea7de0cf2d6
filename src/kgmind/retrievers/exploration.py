"""Graph exploration over a :class:`GraphIndex`: MindMap paths and neighbors, HyKGE chains, KGCoT DFS.

Every function is pure (no store writes, no LLM) and returns ``list[Evidence]`` whose
``triples`` carry display names and whose ``relation_ids`` are aligned with them, so
feedback on a cited evidence item finds the edges behind it. ``text`` holds the raw
MindMap arrow form (``A->rel->B``); :func:`kgmind.retrievers.aggregate.render_evidence`
turns it into a sentence.

Faithful behaviour is the default; documented improvements sit behind flags:

* :func:`path_evidence` — MindMap's path-based evidence (Appendix E and its code): the
  first linked entity starts; for each next candidate, all shortest directed paths of
  at most ``max_hops`` edges; a path running through another remaining candidate is
  the only one kept and consumes that candidate (we consume every candidate it runs
  through, MindMap the last one); the end becomes the next start; when no path exists
  the segment is closed and the next candidate restarts. Segments are joined by a
  cartesian product *without duplicating the junction node* (MindMap's join repeats
  it). At most five paths per segment, the shortest by rendered length (MindMap) or,
  with ``weight_aware``, the most probable under the KGCoT edge probabilities. At most
  ``max_paths`` results, spread over head entities as MindMap does (one per head when
  there are at least ``max_paths`` heads, else an even share per head with the
  remainder to the last; unused shares are refilled in order). Entities are ids, so
  the ``_`` vs space name mismatch of MindMap cannot occur.
* :func:`neighbor_evidence` — MindMap's neighbor-based evidence: per linked entity one
  line per outgoing relation type listing every tail; relation types containing
  ``disease`` are not lines: the diseases they reach are expanded (``has_symptom``
  skipped), only the linked ones when any reached disease is linked. A visited set
  stops the endless loop on entities that are both disease and symptom (MindMap loops
  forever there) and drops the duplicate lines MindMap emits when two linked entities
  reach the same disease. Entity lines come first; expansion lines are appended only
  when there are at most ``max_lines`` entity lines. ``ranked=True`` (kgmind) instead
  scores candidate diseases by votes of the linked entities (see
  :func:`rank_diseases`) and emits the best diseases' lines first.
* :func:`hykge_chains` — HyKGE §4.4: for every pair of linked entities, undirected
  shortest paths within ``max_hops``, co-ancestor chains ``a → x ← b`` and
  co-occurrence chains ``a ← x → b``, with the end entities' descriptions.
* :func:`weighted_dfs_chains` — KGCoT §2.3: a probabilistic DFS choosing the next edge
  with ``p_i = w_i / Σ w_j`` over edges to unvisited nodes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Collection, Sequence
from functools import partial
from typing import Any, Protocol, TypeVar

import numpy as np

from kgmind.models import Evidence, KnowledgeDoc
from kgmind.tuning import PIPELINE, WEIGHT_VOTES, PipelineSettings
from kgmind.retrievers.graph_index import BfsMemo, GraphIndex, IndexPath

T = TypeVar("T")
N = TypeVar("N")

__all__ = [
    "DISEASE_MARK",
    "PATHS_PER_SEGMENT",
    "PIPELINE",
    "SYMPTOM_RELATION",
    "WEIGHT_VOTES",
    "DocSource",
    "PipelineSettings",
    "chain_segments",
    "hykge_chains",
    "neighbor_evidence",
    "path_evidence",
    "rank_diseases",
    "select_diverse",
    "weighted_dfs_chains",
]


#: MindMap: a relation whose type contains this word leads to diseases.
DISEASE_MARK = "disease"
#: MindMap skips this relation when it expands a disease.
SYMPTOM_RELATION = "has_symptom"
#: MindMap keeps at most this many shortest paths per segment.
PATHS_PER_SEGMENT = 5


class DocSource(Protocol):
    """What :func:`weighted_dfs_chains` needs from a store to attach edge knowledge."""

    def get_docs(self, ids: Sequence[str]) -> list[KnowledgeDoc]:
        """Knowledge documents by id."""
        ...


# -- helpers -------------------------------------------------------------------------
def _resolve(gi: GraphIndex, entity_ids: Sequence[str]) -> list[int]:
    """Known entity ids as node indices, deduplicated, in the order given."""
    out: list[int] = []
    seen: set[int] = set()
    for eid in entity_ids:
        i = gi.index_of.get(eid)
        if i is not None and i not in seen:
            seen.add(i)
            out.append(i)
    return out


def _triple(gi: GraphIndex, e: int) -> tuple[str, str, str]:
    return (gi.names[gi.edge_head[e]], gi.edge_type[e], gi.names[gi.edge_tail[e]])


def _arrow_path(gi: GraphIndex, nodes: Sequence[int], edges: Sequence[int]) -> str:
    """MindMap's ``A->rel->B->rel->C`` form (``_`` shown as spaces)."""
    parts = [gi.names[nodes[0]]]
    for e, n in zip(edges, nodes[1:], strict=True):
        parts.append(gi.edge_type[e].replace("_", " "))
        parts.append(gi.names[n])
    return "->".join(parts)


def _edge_prob(gi: GraphIndex, e: int, exclude: set[int] | None = None) -> float:
    """KGCoT selection probability ``w_e / Σ w`` over the outgoing edges of ``e``'s head."""
    head = gi.edge_head[e]
    if exclude:
        sib = [s for s in gi.out_adj[head] if gi.edge_tail[s] not in exclude]
        total = float(gi.weights[sib].sum()) if sib else 0.0
    else:
        total = float(gi.out_weight_total[head])
    return float(gi.weights[e]) / total if total > 0 else 0.0


def _path_prob(gi: GraphIndex, path: IndexPath) -> float:
    p = 1.0
    for e in path.edges:
        p *= _edge_prob(gi, e)
    return p


def _path_evidence_item(gi: GraphIndex, nodes: Sequence[int], edges: Sequence[int], **meta: Any) -> Evidence:
    return Evidence(
        kind="path",
        text=_arrow_path(gi, nodes, edges),
        triples=[_triple(gi, e) for e in edges],
        relation_ids=[gi.edge_id[e] for e in edges],
        entity_ids=[gi.ids[n] for n in nodes],
        score=1.0,
        source="path_evidence",
        meta=dict(meta),
    )


# -- MindMap path-based evidence -----------------------------------------------------
def _segment_paths(
    gi: GraphIndex,
    start: int,
    end: int,
    candidates: list[int],
    max_hops: int,
    weight_aware: bool,
    path_limit: int,
    memo: BfsMemo | None = None,
) -> tuple[list[IndexPath], list[int]]:
    """MindMap's ``find_shortest_path``: the kept paths and the candidates they consume."""
    paths = gi.shortest_paths(start, end, max_hops, directed=True, limit=path_limit, memo=memo)
    cand = set(candidates)
    for p in paths:
        hit = [n for n in p.nodes if n in cand]
        if hit:
            return [p], hit
    if len(paths) > PATHS_PER_SEGMENT:
        if weight_aware:
            paths = sorted(paths, key=lambda p: -_path_prob(gi, p))
        else:
            paths = sorted(paths, key=lambda p: len(_arrow_path(gi, p.nodes, p.edges)))
        paths = paths[:PATHS_PER_SEGMENT]
    return paths, []


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

    Returns:
        Up to ``max_paths`` ``path`` evidence items; ``[]`` for fewer than two known
        entities.
    """
    nodes = _resolve(gi, entity_ids)
    if len(nodes) < 2 or max_paths <= 0:
        return []
    memo: BfsMemo = {}
    runs = chain_segments(
        nodes, lambda a, b, rest: _segment_paths(gi, a, b, rest, max_hops, weight_aware, path_limit, memo)
    )
    out: list[Evidence] = []
    for r, choices in enumerate(select_diverse(runs, max_paths)):
        for choice in choices:
            nodes_, edges_ = _join(choice)
            out.append(
                _path_evidence_item(
                    gi, nodes_, edges_, head=gi.names[nodes_[0]], hops=len(edges_), segments=len(runs[r])
                )
            )
    return out


# -- MindMap neighbor-based evidence -------------------------------------------------
def _groups(gi: GraphIndex, node: int, skip: str | None = None) -> list[tuple[str, list[int]]]:
    """Outgoing edges of ``node`` grouped by relation type, in first-seen order."""
    groups: dict[str, list[int]] = {}
    for e in gi.out_adj[node]:
        t = gi.edge_type[e]
        if t == skip:
            continue
        groups.setdefault(t, []).append(e)
    return list(groups.items())


def _line(
    gi: GraphIndex,
    node: int,
    rtype: str,
    edges: Sequence[int],
    *,
    weight_aware: bool,
    max_tails: int | None,
    score: float = 1.0,
    **meta: Any,
) -> Evidence:
    es = list(edges)
    if weight_aware:
        es.sort(key=lambda e: -float(gi.weights[e]))
    if max_tails is not None:
        es = es[:max_tails]
    tail_nodes = [gi.edge_tail[e] for e in es]
    text = "->".join([gi.names[node], rtype.replace("_", " "), ",".join(gi.names[t] for t in tail_nodes)])
    return Evidence(
        kind="neighbor",
        text=text,
        triples=[_triple(gi, e) for e in es],
        relation_ids=[gi.edge_id[e] for e in es],
        entity_ids=[gi.ids[node]] + [gi.ids[t] for t in tail_nodes],
        score=score,
        source="neighbor_evidence",
        meta={"entity": gi.names[node], "relation": rtype, **meta},
    )


def _reverse_lift(gi: GraphIndex, d: int, i: int) -> float:
    """``log(p · n)`` of the disease's own edge back to the voter (``has_symptom``), 0 when it has none.

    Learnt from the patients of the disease who reported the symptom: the likelihood side
    of the vote, where the voter's edge is the posterior side.
    """
    out = gi.out_adj[d]
    back = [e for e in out if gi.edge_tail[e] == i]
    if not back:
        return 0.0
    e = max(back, key=lambda x: float(gi.weights[x]))
    group = [x for x in out if gi.edge_type[x] == gi.edge_type[e]]  # p(symptom | disease) among its symptoms
    total = float(gi.weights[group].sum())
    return math.log(float(gi.weights[e]) * len(group) / total) if total > 0 else 0.0


def rank_diseases(
    gi: GraphIndex,
    entity_ids: Sequence[str],
    *,
    weight_aware: bool = False,
    votes: str | None = None,
) -> list[tuple[str, float, list[str]]]:
    """Candidate diseases ranked by the votes of the linked entities.

    Each linked entity votes once for every disease it reaches through a relation
    whose type contains ``disease`` (``possible_disease``, ``can_check_disease``,
    ``possible_cure_disease``); a linked entity that is itself a disease votes for
    itself. Without ``weight_aware`` the order is by votes, then by specificity
    (``Σ 1 / n`` over the voters: a symptom shared by few diseases says more), then by
    first appearance. With ``weight_aware`` the learnt edge weights enter as ``votes``
    says (default :attr:`PipelineSettings.weight_votes`):

    * ``tiebreak`` (default): votes, then specificity, then the learnt lift, then first
      appearance. The lift of a disease is ``Σ log(p · n)`` over its voters, for the
      voter's edge to the disease (``p = w / Σ w`` over the voter's disease edges, ``1 / n``
      its uniform value) and for the disease's edge back to the voter among the disease's
      edges of that type (p(symptom | disease), what ``kgmind learn`` credits); 0 on an
      unlearnt graph. Learning only reorders diseases the question cannot tell apart.
    * ``lift_first``: votes, then the lift, then specificity.
    * ``scale``: each vote is scaled to ``p · n``, so one learnt symptom can outvote
      several unlearnt ones.

    The README ("Learning from feedback") has what each gave on held-out questions.

    Args:
        gi: The graph index.
        entity_ids: Linked entities.
        weight_aware: Use the learnt edge weights.
        votes: ``tiebreak``, ``lift_first`` or ``scale`` (``None``: the pipeline default).

    Returns:
        ``(disease id, score, supporting relation ids)``, best first; score is the
        (scaled) vote total plus half the voters' mean specificity (display and
        scaling only: the order is as described).
    """
    mode = votes or PIPELINE.weight_votes
    if mode not in WEIGHT_VOTES:
        raise ValueError(f"votes must be one of {', '.join(WEIGHT_VOTES)}, got {votes!r}")
    scale = weight_aware and mode == "scale"
    nodes = _resolve(gi, entity_ids)
    tally: dict[int, float] = {}
    fwd: dict[int, float] = {}
    spec: dict[int, float] = {}
    support: dict[int, list[int]] = {}
    order: dict[int, int] = {}
    for i in nodes:
        dedges = [e for e in gi.out_adj[i] if DISEASE_MARK in gi.edge_type[e]]
        if gi.types[i] == "disease" or any(gi.edge_type[e] == SYMPTOM_RELATION for e in gi.out_adj[i]):
            tally[i] = tally.get(i, 0.0) + 1.0
            spec[i] = spec.get(i, 0.0) + 1.0
            support.setdefault(i, [])
            order.setdefault(i, len(order))
        if not dedges:
            continue
        n = len(dedges)
        total = float(gi.weights[dedges].sum())
        best: dict[int, tuple[float, int]] = {}
        for e in dedges:
            d = gi.edge_tail[e]
            r = float(gi.weights[e]) * n / total if weight_aware and total > 0 else 1.0
            if d not in best or r > best[d][0]:
                best[d] = (r, e)
        for d, (r, e) in best.items():
            v = r if scale else 1.0
            tally[d] = tally.get(d, 0.0) + v
            if weight_aware and not scale:
                fwd[d] = fwd.get(d, 0.0) + math.log(r)
            spec[d] = spec.get(d, 0.0) + v / n
            support.setdefault(d, []).append(e)
            order.setdefault(d, len(order))

    def lift(d: int) -> float:  # rounded: float noise must not reorder ties
        back = sum(_reverse_lift(gi, d, gi.edge_head[e]) for e in support[d])
        return round(fwd.get(d, 0.0) + back, 9)

    if not weight_aware or scale or gi.uniform_weights():  # uniform weights: every lift is 0
        ranked = sorted(tally, key=lambda d: (-tally[d], -round(spec[d], 9), order[d]))
    elif mode == "lift_first":
        ranked = sorted(tally, key=lambda d: (-tally[d], -lift(d), -spec[d], order[d]))
    else:  # the lift only inside runs of equal votes and specificity (reads reverse edges for those only)
        ranked = sorted(tally, key=lambda d: (-tally[d], -round(spec[d], 9), order[d]))
        out: list[int] = []
        start = 0
        while start < len(ranked):
            key = (tally[ranked[start]], round(spec[ranked[start]], 9))
            stop = start + 1
            while stop < len(ranked) and (tally[ranked[stop]], round(spec[ranked[stop]], 9)) == key:
                stop += 1
            run = ranked[start:stop]
            out.extend(sorted(run, key=lambda d: (-lift(d), order[d])) if len(run) > 1 else run)
            start = stop
        ranked = out
    return [
        (gi.ids[d], tally[d] + 0.5 * spec[d] / tally[d], [gi.edge_id[e] for e in support[d]]) for d in ranked
    ]


def neighbor_evidence(
    gi: GraphIndex,
    entity_ids: Sequence[str],
    *,
    max_lines: int = 5,
    weight_aware: bool = False,
    ranked: bool = False,
    max_tails: int | None = None,
    tail_types: frozenset[str] | None = None,
) -> list[Evidence]:
    """MindMap neighbor-based evidence, or kgmind's disease-ranked variant.

    Args:
        gi: The graph index.
        entity_ids: Linked entities, in question order.
        max_lines: How many lines to return.
        weight_aware: Order tails by weight (heaviest first); with ``ranked``, also
            weight the disease votes (see :func:`rank_diseases`).
        ranked: kgmind's improvement: rank candidate diseases by the votes of all
            linked entities, then emit per disease (best first) a support line (the
            linked entities' edges to it), its non-symptom relation lines (tests,
            medications, …) and, at a lower score, its ``has_symptom`` line; other
            relation lines of linked non-disease entities come after at half score.
            Lines are sorted by score (disease share of the top score × line factor).
        max_tails: Cap on the tails listed per line (``None``: all, as MindMap).
        tail_types: With ``ranked``, only relation lines with a tail of these types (support
            lines always): the candidates of value packing, which gives nothing for the others.

    Returns:
        Up to ``max_lines`` ``neighbor`` evidence items; each lists its tails as
        separate triples so any one can be cited.
    """
    if max_lines <= 0:
        return []
    if ranked:
        return _ranked_neighbors(gi, entity_ids, max_lines, weight_aware, max_tails, tail_types)
    nodes = _resolve(gi, entity_ids)
    linked = set(nodes)
    # lines are kept as builders and only the returned ones are materialised
    entity_lines: list[Callable[[], Evidence]] = []
    disease_lines: list[Callable[[], Evidence]] = []
    visited: set[int] = set()
    opts: dict[str, Any] = {"weight_aware": weight_aware, "max_tails": max_tails}
    for i in nodes:
        diseases: list[int] = []
        for rtype, edges in _groups(gi, i):
            if DISEASE_MARK in rtype:
                diseases.extend(gi.edge_tail[e] for e in edges)
            else:
                entity_lines.append(partial(_line, gi, i, rtype, edges, **opts))
        # only a prefix of max_lines expansion lines can ever be returned
        while diseases and len(disease_lines) < max_lines:
            chosen = [d for d in diseases if d in linked] or diseases
            nxt: list[int] = []
            for d in chosen:
                if d in visited:
                    continue
                visited.add(d)
                nxt = []  # MindMap keeps the disease list of the last expansion only
                for rtype, edges in _groups(gi, d, skip=SYMPTOM_RELATION):
                    if DISEASE_MARK in rtype:
                        nxt.extend(gi.edge_tail[e] for e in edges)
                    else:
                        disease_lines.append(partial(_line, gi, d, rtype, edges, expansion=True, **opts))
            diseases = [d for d in dict.fromkeys(nxt) if d not in visited]
    lines = entity_lines + (disease_lines if len(entity_lines) <= max_lines else [])
    return [build() for build in lines[:max_lines]]


def _support_line(gi: GraphIndex, d: int, support_ids: Sequence[str], score: float, **meta: Any) -> Evidence:
    es = [gi.edge_index_of[r] for r in support_ids]
    return Evidence(
        kind="neighbor",
        text="; ".join("->".join(_fmt(_triple(gi, e))) for e in es),
        triples=[_triple(gi, e) for e in es],
        relation_ids=list(support_ids),
        entity_ids=[gi.ids[gi.edge_head[e]] for e in es] + [gi.ids[d]],
        score=score,
        source="neighbor_evidence",
        meta={"entity": gi.names[d], "relation": "support", **meta},
    )


def _ranked_neighbors(
    gi: GraphIndex,
    entity_ids: Sequence[str],
    max_lines: int,
    weight_aware: bool,
    max_tails: int | None,
    tail_types: frozenset[str] | None = None,
) -> list[Evidence]:
    nodes = _resolve(gi, entity_ids)
    ranking = rank_diseases(gi, entity_ids, weight_aware=weight_aware)

    def wanted(edges: Sequence[int]) -> bool:
        return tail_types is None or any(gi.types[gi.edge_tail[e]] in tail_types for e in edges)

    lines: list[tuple[float, Callable[[], Evidence]]] = []
    top = ranking[0][1] if ranking else 1.0
    disease_set = {gi.index_of[d] for d, _, _ in ranking}
    opts: dict[str, Any] = {"weight_aware": weight_aware, "max_tails": max_tails}
    for rank, (did, score, support_ids) in enumerate(ranking):
        if len(lines) >= 3 * max_lines:  # enough candidates to sort
            break
        d = gi.index_of[did]
        share = score / top if top > 0 else 0.0
        common: dict[str, Any] = {"disease": gi.names[d], "disease_rank": rank + 1, "votes": score}
        if support_ids:
            lines.append((share, partial(_support_line, gi, d, support_ids, share, **common)))
        for rtype, edges in _groups(gi, d):
            if DISEASE_MARK in rtype or not wanted(edges):
                continue
            sc = share * (0.6 if rtype == SYMPTOM_RELATION else 1.0)
            lines.append(
                (sc, partial(_line, gi, d, rtype, edges, score=sc, expansion=True, **common, **opts))
            )
    for i in nodes:
        if i in disease_set:
            continue
        for rtype, edges in _groups(gi, i):
            if DISEASE_MARK in rtype or not wanted(edges):
                continue
            lines.append((0.5, partial(_line, gi, i, rtype, edges, score=0.5, **opts)))
    lines.sort(key=lambda x: -x[0])  # stable: ties keep disease rank order
    return [build() for _, build in lines[:max_lines]]


def _fmt(t: tuple[str, str, str]) -> list[str]:
    return [t[0], t[1].replace("_", " "), t[2]]


# -- HyKGE chains --------------------------------------------------------------------
def _chain(
    gi: GraphIndex, a: int, b: int, edges: Sequence[int], nodes: Sequence[int], ctype: str
) -> Evidence:
    descs = {gi.names[n]: gi.descriptions[n] for n in (a, b) if gi.descriptions[n]}
    meta: dict[str, Any] = {"chain_type": ctype, "pair": (gi.ids[a], gi.ids[b])}
    if descs:
        meta["descriptions"] = descs
    return Evidence(
        kind="chain",
        text="; ".join("->".join(_fmt(_triple(gi, e))) for e in edges),
        triples=[_triple(gi, e) for e in edges],
        relation_ids=[gi.edge_id[e] for e in edges],
        entity_ids=[gi.ids[n] for n in nodes],
        score=1.0 / max(len(edges), 1),
        source="hykge_chains",
        meta=meta,
    )


#: A HyKGE chain candidate: (edge indices, node indices, chain type, (a, b) pair).
_Cand = tuple[tuple[int, ...], tuple[int, ...], str, tuple[int, int]]


def _meetings(
    first_a: dict[int, int], first_b: dict[int, int], a: int, b: int, ctype: str, cap: int
) -> list[_Cand]:
    """Two-edge chains ``a – x – b`` through every shared neighbor ``x`` (first edges), at most ``cap``."""
    out: list[_Cand] = []
    for x, ea in first_a.items():
        if x in first_b and x not in (a, b):
            out.append(((ea, first_b[x]), (a, x, b), ctype, (a, b)))
            if len(out) >= cap:
                break
    return out


def _first_edges(adj: list[int], other: list[int]) -> dict[int, int]:
    """First edge (insertion order) to each neighbor, keyed by that neighbor."""
    out: dict[int, int] = {}
    for e in adj:
        out.setdefault(other[e], e)
    return out


def hykge_chains(
    gi: GraphIndex,
    entity_ids: Sequence[str],
    *,
    max_hops: int = 2,
    max_chains: int = 30,
    hub_percentile: float | None = None,
) -> list[Evidence]:
    """HyKGE reasoning chains between every pair of linked entities.

    For each pair ``(a, b)`` (in question order): undirected shortest paths of at
    most ``max_hops`` edges (``chain_type="path"``), co-ancestor chains ``a → x ← b``
    (``"co_ancestor"``) and co-occurrence chains ``a ← x → b`` (``"co_occurrence"``).
    The chains are taken round-robin over the pairs and chain types so one busy pair
    cannot fill the quota; a chain whose edges repeat an earlier one is dropped.
    ``meta["descriptions"]`` maps end-entity names to their descriptions when the KG
    has them.

    Args:
        gi: The graph index.
        entity_ids: Linked entities.
        max_hops: Longest path (HyKGE paper: 3, code: 2).
        max_chains: Total number of chains returned.
        hub_percentile: Paths walk through no node whose degree is above this
            percentile of the KG's degrees (:meth:`GraphIndex.hub_degree`; the linked
            entities themselves are always expanded); ``None``: through every node.

    Returns:
        Up to ``max_chains`` ``chain`` evidence items; score ``1 / length``.
    """
    nodes = _resolve(gi, entity_ids)
    cap = gi.hub_degree(hub_percentile) if hub_percentile is not None else None
    if len(nodes) < 2 or max_chains <= 0:
        return []
    # candidates stay (edges, nodes, type, pair) tuples; only the selected ones become Evidence
    outs = {n: _first_edges(gi.out_adj[n], gi.edge_tail) for n in nodes}
    ins = {n: _first_edges(gi.in_adj[n], gi.edge_head) for n in nodes}
    queues: list[list[_Cand]] = []
    memo: BfsMemo = {}  # each entity's BFS levels, expanded once for all of its pairs
    for a, b in itertools.combinations(nodes, 2):
        anc = _meetings(outs[a], outs[b], a, b, "co_ancestor", max_chains)
        occ = _meetings(ins[a], ins[b], a, b, "co_occurrence", max_chains)
        co_keys = {frozenset(c[0]) for c in anc + occ}
        paths: list[_Cand] = [
            (p.edges, p.nodes, "path", (a, b))
            for p in gi.shortest_paths(
                a, b, max_hops, directed=False, limit=max_chains + len(co_keys), memo=memo, max_degree=cap
            )
        ]
        # an undirected 2-hop path may be a co-ancestor/co-occurrence chain: keep the specific type
        queues.append([c for c in paths if frozenset(c[0]) not in co_keys][:max_chains])
        queues.append(anc)
        queues.append(occ)
    out: list[Evidence] = []
    seen: set[frozenset[str]] = set()
    for group in itertools.zip_longest(*queues):
        for cand in group:
            if cand is None:
                continue
            edges, path_nodes, ctype, (a, b) = cand
            key = frozenset(gi.edge_id[e] for e in edges)
            if key in seen:
                continue
            seen.add(key)
            out.append(_chain(gi, a, b, edges, path_nodes, ctype))
            if len(out) >= max_chains:
                return out
    return out


# -- KGCoT weighted DFS --------------------------------------------------------------
def weighted_dfs_chains(
    gi: GraphIndex,
    entity_ids: Sequence[str],
    *,
    n_chains: int = 3,
    max_depth: int = 3,
    seed: int = 0,
    store: DocSource | None = None,
) -> list[Evidence]:
    """KGCoT probabilistic DFS chains from each linked entity.

    At each step the next edge is drawn among the current node's outgoing edges with
    ``p_i = w_i / Σ_j w_j`` (edges into the chain's visited set ``N`` have ``p = 0``):
    one ``u = rng.random()`` per step picks the first edge whose cumulative
    probability exceeds ``u``. A chain stops at ``max_depth`` edges or a dead end.
    One ``numpy.random.default_rng(seed)`` serves the whole call, so results are
    reproducible; duplicate chains from the same start are kept once
    (``meta["draws"]`` counts them).

    Args:
        gi: The graph index (its current weights are used).
        entity_ids: Start entities.
        n_chains: Draws per start entity.
        max_depth: Longest chain in edges.
        seed: Random seed.
        store: When given, ``meta["knowledge"]`` holds, per edge, the text of the doc
            named by the edge's ``source`` (or the source itself when it is not a doc
            id, ``""`` when the edge has none).

    Returns:
        ``kgcot`` evidence items; score = probability of drawing the chain;
        ``meta["probabilities"]`` the step probabilities.
    """
    nodes = _resolve(gi, entity_ids)
    rng = np.random.default_rng(seed)
    found: list[tuple[int, list[int], list[int], list[float]]] = []
    counts: dict[tuple[int, ...], int] = {}
    for s in nodes:
        for _ in range(n_chains):
            visited = {s}
            cur = s
            path_nodes = [s]
            edges: list[int] = []
            probs: list[float] = []
            for _depth in range(max_depth):
                leaving = gi.out_array(cur)
                cand = (
                    leaving[~np.isin(gi.edge_tail_array[leaving], list(visited))] if len(leaving) else leaving
                )
                if not len(cand):
                    break
                w = gi.weights[cand]
                p = w / w.sum()
                u = rng.random()
                k = min(int(np.searchsorted(np.cumsum(p), u, side="right")), len(cand) - 1)
                e = int(cand[k])
                edges.append(e)
                probs.append(float(p[k]))
                cur = gi.edge_tail[e]
                visited.add(cur)
                path_nodes.append(cur)
            if not edges:
                continue
            key = (s, *edges)
            if key in counts:
                counts[key] += 1
                continue
            counts[key] = 1
            found.append((s, path_nodes, edges, probs))
    knowledge: dict[str, str] = {}
    if store is not None:
        sources = list(
            dict.fromkeys(gi.edge_source[e] for _, _, es, _ in found for e in es if gi.edge_source[e])
        )
        if sources:
            knowledge = {d.id: d.text for d in store.get_docs(sources)}
    out: list[Evidence] = []
    for s, path_nodes, edges, probs in found:
        meta: dict[str, Any] = {
            "start": gi.names[s],
            "probabilities": probs,
            "draws": counts[(s, *edges)],
            "seed": seed,
        }
        if store is not None:
            meta["knowledge"] = [knowledge.get(gi.edge_source[e], gi.edge_source[e]) for e in edges]
        out.append(
            Evidence(
                kind="kgcot",
                text=_arrow_path(gi, path_nodes, edges),
                triples=[_triple(gi, e) for e in edges],
                relation_ids=[gi.edge_id[e] for e in edges],
                entity_ids=[gi.ids[n] for n in path_nodes],
                score=float(np.prod(probs)),
                source="weighted_dfs_chains",
                meta=meta,
            )
        )
    return out
