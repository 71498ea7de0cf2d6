"""MindMap's neighbor-based evidence over a :class:`GraphIndex`, and kgmind's disease-ranked variant.

Faithful (:func:`neighbor_evidence`): per linked entity one line per outgoing relation
type listing every tail; relations that lead to a disease (MindMap: types containing
``disease``; here any reading that :attr:`~kgmind.relations.Reading.votes`) are not lines:
the diseases they reach are expanded (their symptom lists skipped), only the linked ones
when any reached disease is linked. A visited set stops the endless loop on entities that are
both disease and symptom (MindMap loops forever there) and drops the duplicate lines
MindMap emits when two linked entities reach the same disease. Entity lines come first;
expansion lines are appended only when there are at most ``max_lines`` entity lines
(:func:`mindmap_neighbor_lines`, which the store baseline runs too).

Ranked (``ranked=True``, kgmind): candidate diseases are scored by the votes of the
linked entities (:func:`rank_diseases`) and the best diseases' lines come first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from kgmind.models import SUPPORT_RELATION, Evidence, normalize_name
from kgmind.relations import DISEASE, REVERSE_MARK, RelationSchema, reading_words
from kgmind.retrievers.exploration.items import evidence_item, resolve, triple_text
from kgmind.retrievers.graph_index import GraphIndex
from kgmind.retrievers.graph_weights import WeightSnapshot
from kgmind.tuning import PIPELINE, WEIGHT_VOTES

__all__ = ["mindmap_neighbor_lines", "neighbor_evidence", "rank_diseases"]

N = TypeVar("N", bound=Hashable)
E = TypeVar("E")
L = TypeVar("L")


def mindmap_neighbor_lines(
    nodes: Sequence[N],
    groups: Callable[[N], list[tuple[str, list[E]]]],
    tail: Callable[[E], N],
    line: Callable[[N, str, list[E], bool], L],
    max_lines: int,
    *,
    schema: RelationSchema,
    expand_all: bool = False,
    prefetch: Callable[[list[N]], None] | None = None,
) -> list[L]:
    """MindMap's neighbor lines, whatever the graph is read from (see the module docstring).

    Args:
        nodes: Linked entities, in question order.
        groups: ``node`` -> the node's outgoing edges grouped by relation type (reading),
            in first-seen order.
        tail: The node an edge leads to.
        line: ``(node, relation type, edges, expansion)`` -> the line (or a builder of it).
        max_lines: How many lines to return.
        schema: The relation roles: which readings lead to a disease, which list symptoms.
        expand_all: Expand every reached disease (MindMap's cost) instead of stopping once
            ``max_lines`` expansion lines are found (only that prefix can be returned).
        prefetch: Called with the diseases an expansion is about to read, all of them (a
            pushed-down index reads them in one store query instead of one each).

    Returns:
        Up to ``max_lines`` lines: entity lines, then expansion lines.
    """
    linked = set(nodes)
    entity_lines: list[L] = []
    disease_lines: list[L] = []
    visited: set[N] = set()
    for i in nodes:
        diseases: list[N] = []
        for rtype, edges in groups(i):
            if schema.votes(rtype):
                diseases.extend(tail(e) for e in edges)
            else:
                entity_lines.append(line(i, rtype, edges, False))
        while diseases and (expand_all or len(disease_lines) < max_lines):
            chosen = [d for d in diseases if d in linked] or diseases
            if prefetch is not None:
                prefetch([d for d in chosen if d not in visited])
            nxt: list[N] = []
            for d in chosen:
                if d in visited:
                    continue
                visited.add(d)
                nxt = []  # MindMap keeps the disease list of the last expansion only
                for rtype, edges in groups(d):
                    if schema.lists_symptoms(rtype):
                        continue
                    if schema.votes(rtype):
                        nxt.extend(tail(e) for e in edges)
                    else:
                        disease_lines.append(line(d, rtype, edges, True))
            diseases = [d for d in dict.fromkeys(nxt) if d not in visited]
    lines = entity_lines + (disease_lines if len(entity_lines) <= max_lines else [])
    return lines[:max_lines]


#: Ranked diseases a pushed-down index reads per store query. The packing's candidate lines
#: take 26-40 diseases on the calibration questions, and a query costs a few milliseconds
#: before its first row, so 16 a query: fitted on 40 calib questions of EMCKG and the re-crawl
#: (mean ms a question, rounds interleaved: 4: 135, 443; 8: 118, 421; 16: 106, 406; 32: 122,
#: 392), the evidence the same for every size (``benchmarks/results/2026-11-28-shared-pushdown``).
_PREFETCH = 16


def _groups(gi: GraphIndex, node: int) -> list[tuple[str, list[int]]]:
    """Outgoing edges of ``node`` grouped by relation type (reading), in first-seen order."""
    groups: dict[str, list[int]] = {}
    for e in gi.out_adj[node]:
        groups.setdefault(gi.edge_type[e], []).append(e)
    return list(groups.items())


def _line(
    gi: GraphIndex,
    node: int,
    rtype: str,
    edges: Sequence[int],
    *,
    weights: WeightSnapshot | None,
    max_tails: int | None,
    score: float = 1.0,
    **meta: Any,
) -> Evidence:
    """One relation line of ``node``: its tails, heaviest first under ``weights`` when given."""
    es = list(edges)
    if weights is not None:
        w = weights.weights
        es.sort(key=lambda e: -float(w[e]))
    if max_tails is not None:
        es = es[:max_tails]
    tail_nodes = [gi.edge_tail[e] for e in es]
    words = reading_words(gi.schema.reading(rtype))
    text = "->".join([gi.names[node], words, ",".join(gi.names[t] for t in tail_nodes)])
    meta = {"entity": gi.names[node], "relation": rtype, **meta}
    return evidence_item(
        gi, "neighbor", es, [node, *tail_nodes], text=text, score=score, source="neighbor_evidence", meta=meta
    )


def _reverse_lift(gi: GraphIndex, weights: WeightSnapshot, d: int, i: int) -> float:
    """``log(p · n)`` of the disease's own edge back to the voter (its symptom list), 0 when it has none.

    Learnt from the patients of the disease who reported the symptom: the likelihood side
    of the vote, where the voter's edge is the posterior side.
    """
    out = gi.out_adj[d]
    back = [e for e in out if gi.edge_tail[e] == i]
    if not back:
        return 0.0
    w = weights.weights
    e = max(back, key=lambda x: float(w[x]))
    group = [x for x in out if gi.edge_type[x] == gi.edge_type[e]]  # p(symptom | disease) among its symptoms
    total = float(w[group].sum())
    return math.log(float(w[e]) * len(group) / total) if total > 0 else 0.0


@dataclass
class _Votes:
    """The linked entities' votes per candidate disease (node index)."""

    tally: dict[int, float] = field(default_factory=dict)  # (scaled) votes
    fwd: dict[int, float] = field(default_factory=dict)  # Σ log(p · n) of the voters' edges
    spec: dict[int, float] = field(default_factory=dict)  # Σ 1 / n over the voters
    support: dict[int, list[int]] = field(default_factory=dict)  # the voters' edges
    order: dict[int, int] = field(default_factory=dict)  # first appearance
    voted: dict[int, set[Hashable]] = field(default_factory=dict)  # the phrases that voted

    def add(self, d: int, vote: float, spec: float, phrase: Hashable, edge: int | None = None) -> None:
        self.tally[d] = self.tally.get(d, 0.0) + vote
        self.spec[d] = self.spec.get(d, 0.0) + spec
        support = self.support.setdefault(d, [])
        if edge is not None:
            support.append(edge)
        self.order.setdefault(d, len(self.order))
        self.voted.setdefault(d, set()).add(phrase)


#: One phrase's best vote for a disease: (p · n of the edge, 1 / n of its voter, the edge or
#: ``None`` for a disease that is itself linked, n).
_Ballot = tuple[float, float, int | None, int]


#: A linked disease's vote for itself.
_SELF: _Ballot = (1.0, 1.0, None, 1)


def _better(ballot: _Ballot, than: _Ballot | None) -> bool:
    """Whether ``ballot`` beats ``than``: a higher ratio, then a more specific voter; else the first stays."""
    return than is None or ballot[:2] > than[:2]


def _count_votes(
    gi: GraphIndex,
    nodes: Sequence[int],
    weights: WeightSnapshot,
    weight_aware: bool,
    scale: bool,
    phrase_of: Mapping[int, Hashable] | None = None,
    named: Collection[int] = (),
) -> _Votes:
    """Each phrase's vote for every disease its linked entities reach (and a linked disease's for itself).

    A phrase of the question links up to a few entities (``分泌物`` -> three kinds of
    discharge; ``消癌平`` -> the tablet and the capsule), and a patient who said it once has
    given one finding: so a phrase votes at most once per disease, with the best of its
    entities' edges (``phrase_of``; an entity without a phrase is its own). A disease the
    question names word for word (``named``), and that is no finding of other diseases,
    gives itself :attr:`PipelineSettings.named_disease_votes`: the patient's own diagnosis.

    A bounded index lists a hub's first ``k`` diseases only, so a disease past the bound
    would lose the hub's vote, and the rarest diseases of a common symptom would outrank a
    disease that the symptom and a specific finding both point to. The missing votes are
    read from the edges between the cut voters and the candidates (:func:`_votes_past_bounds`).
    """
    votes = _Votes()
    schema = gi.schema
    w = weights.weights
    phrase_of = phrase_of or {}
    voters: dict[int, tuple[int, float]] = {}  # voter -> (its listed disease edges, their weight)
    ballots: dict[tuple[Hashable, int], _Ballot] = {}  # (phrase, disease) -> its best vote, first seen first
    for i in nodes:
        phrase = phrase_of.get(i, i)
        dedges = [e for e in gi.out_adj[i] if schema.votes(gi.edge_type[e])]
        is_disease = gi.types[i] == DISEASE or any(
            schema.lists_symptoms(gi.edge_type[e]) for e in gi.out_adj[i]
        )
        if is_disease and _better(_SELF, ballots.get((phrase, i))):
            ballots[(phrase, i)] = _SELF
        if not dedges:
            continue
        voters[i] = (len(dedges), float(w[dedges].sum()))
        n = voters[i][0]
        for e in dedges:
            ballot = (_vote_ratio(w, e, voters[i], weight_aware), 1.0 / n, e, n)
            key = (phrase, gi.edge_tail[e])
            if _better(ballot, ballots.get(key)):
                ballots[key] = ballot
    own = PIPELINE.named_disease_votes
    for (phrase, d), (r, _, e, n) in ballots.items():
        if e is None:
            votes.add(d, own if d in named and d not in voters else 1.0, 1.0, phrase)
        else:
            _add_vote(votes, d, r, e, n, weight_aware, scale, phrase)
    cut = [i for i in voters if _was_cut(gi, i)]
    if cut:
        _votes_past_bounds(gi, votes, {i: voters[i] for i in cut}, weights, weight_aware, scale, phrase_of)
    return votes


def _vote_ratio(w: Any, e: int, voter: tuple[int, float], weight_aware: bool) -> float:
    """``p · n`` of a voter's edge: its weight over the mean weight of the voter's listed disease edges."""
    n, total = voter
    return float(w[e]) * n / total if weight_aware and total > 0 else 1.0


def _add_vote(
    votes: _Votes, d: int, r: float, e: int, n: int, weight_aware: bool, scale: bool, phrase: Hashable
) -> None:
    v = r if scale else 1.0
    if weight_aware and not scale:
        votes.fwd[d] = votes.fwd.get(d, 0.0) + math.log(r)
    votes.add(d, v, v / n, phrase, e)


def _was_cut(gi: GraphIndex, node: int) -> bool:
    """Whether a bounded index lists fewer of ``node``'s stored edges than the store holds."""
    if not gi.bounded:
        return False
    types = gi.edge_type
    listed = sum(types[e][:1] != REVERSE_MARK for adj in (gi.out_adj[node], gi.in_adj[node]) for e in adj)
    return gi.degree(node) > listed


def _votes_past_bounds(
    gi: GraphIndex,
    votes: _Votes,
    cut: dict[int, tuple[int, float]],
    weights: WeightSnapshot,
    weight_aware: bool,
    scale: bool,
    phrase_of: Mapping[int, Hashable],
) -> None:
    """Add the votes of the ``cut`` voters that their bounded lists left out.

    Every visible edge from a cut voter to a candidate counts, as in an unbounded index
    (:meth:`GraphIndex.edges_to`: the voter's uncut lists in memory, one store read of
    the edges between voters and candidates pushed down), once per phrase that has not
    voted for the candidate yet.
    """
    candidates = list(votes.tally)
    edges = gi.edges_to(list(cut), candidates)
    schema, w = gi.schema, weights.weights  # read after the edges: it covers the ones just loaded
    best: dict[int, dict[Hashable, _Ballot]] = {}  # candidate -> phrase -> its best vote
    for e in edges:
        i, d = gi.edge_head[e], gi.edge_tail[e]
        if i == d or not schema.votes(gi.edge_type[e]):
            continue
        size = cut[i][0]
        ballot = (_vote_ratio(w, e, cut[i], weight_aware), 1.0 / size, e, size)
        at = best.setdefault(d, {})
        phrase = phrase_of.get(i, i)
        if _better(ballot, at.get(phrase)):
            at[phrase] = ballot
    for d in candidates:
        voted = votes.voted[d]
        for phrase, (r, _, edge, size) in best.get(d, {}).items():
            if phrase not in voted and edge is not None:
                _add_vote(votes, d, r, edge, size, weight_aware, scale, phrase)


def _order_diseases(
    gi: GraphIndex, weights: WeightSnapshot, votes: _Votes, mode: str, use_lift: bool
) -> list[int]:
    """The diseases in rank order: votes, specificity and first appearance, with the lift as ``mode`` says."""
    tally, spec, order = votes.tally, votes.spec, votes.order

    def lift(d: int) -> float:  # rounded: float noise must not reorder ties
        back = sum(_reverse_lift(gi, weights, d, gi.edge_head[e]) for e in votes.support[d])
        return round(votes.fwd.get(d, 0.0) + back, 9)

    if not use_lift:
        return sorted(tally, key=lambda d: (-tally[d], -round(spec[d], 9), order[d]))
    if mode == "lift_first":
        return sorted(tally, key=lambda d: (-tally[d], -lift(d), -spec[d], order[d]))
    # the lift only inside runs of equal votes and specificity (reads reverse edges for those only)
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
    return out


def rank_diseases(
    gi: GraphIndex,
    entity_ids: Sequence[str],
    *,
    weight_aware: bool = False,
    votes: str | None = None,
    weights: WeightSnapshot | None = None,
    phrases: Sequence[str] | None = None,
    named: Collection[str] = (),
) -> list[tuple[str, float, list[str]]]:
    """Candidate diseases ranked by the votes of the linked entities.

    Each linked entity votes once for every disease it reaches through a reading that
    leads from a symptom, test or drug to a disease (:attr:`kgmind.relations.Reading.votes`,
    whatever the relation's name or stored direction); a linked entity that is itself a disease votes for
    itself. The entities linked from one phrase of the question vote together, once per
    disease (``phrases``), and a disease the question names word for word (``named``) gives
    itself :attr:`~kgmind.tuning.PipelineSettings.named_disease_votes`. Without
    ``weight_aware`` the order is by votes, then by specificity
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
        weights: The weights of the calling exploration (``None``: a snapshot taken now).
        phrases: Per linked entity, the words of the question it was linked from
            (``None``: each entity is a phrase of its own).
        named: The linked entities the question names word for word (link score 1).

    Returns:
        ``(disease id, score, supporting relation ids)``, best first; score is the
        (scaled) vote total plus half the voters' mean specificity (display and
        scaling only: the order is as described).
    """
    mode = votes or PIPELINE.weight_votes
    if mode not in WEIGHT_VOTES:
        raise ValueError(f"votes must be one of {', '.join(WEIGHT_VOTES)}, got {votes!r}")
    scale = weight_aware and mode == "scale"
    weights = gi.weight_snapshot() if weights is None else weights
    phrase_of = _phrase_of(gi, entity_ids, phrases)
    counted = _count_votes(
        gi, resolve(gi, entity_ids), weights, weight_aware, scale, phrase_of, set(resolve(gi, list(named)))
    )
    # uniform weights: every lift is 0
    use_lift = weight_aware and not scale and not weights.uniform()
    tally, spec = counted.tally, counted.spec
    return [
        (gi.ids[d], tally[d] + 0.5 * spec[d] / tally[d], [gi.edge_id[e] for e in counted.support[d]])
        for d in _order_diseases(gi, weights, counted, mode, use_lift)
    ]


def _phrase_of(
    gi: GraphIndex, entity_ids: Sequence[str], phrases: Sequence[str] | None
) -> dict[int, Hashable]:
    """Node -> the (normalised) phrase it was linked from; an entity linked twice keeps its first."""
    if phrases is None:
        return {}
    if len(phrases) != len(entity_ids):
        raise ValueError(f"{len(phrases)} phrases for {len(entity_ids)} linked entities")
    out: dict[int, Hashable] = {}
    for eid, phrase in zip(entity_ids, phrases, strict=True):
        i = gi.index_of.get(eid)
        if i is not None:
            out.setdefault(i, normalize_name(phrase) or i)
    return out


def neighbor_evidence(
    gi: GraphIndex,
    entity_ids: Sequence[str],
    *,
    max_lines: int = 5,
    weight_aware: bool = False,
    ranked: bool = False,
    max_tails: int | None = None,
    tail_types: frozenset[str] | None = None,
    phrases: Sequence[str] | None = None,
    named: Collection[str] = (),
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
            medications, …) and, at a lower score, its symptom line; other
            relation lines of linked non-disease entities come after at half score.
            Lines are sorted by score (disease share of the top score × line factor).
        max_tails: Cap on the tails listed per line (``None``: all, as MindMap).
        tail_types: With ``ranked``, only relation lines with a tail of these types (support
            lines always): the candidates of value packing, which gives nothing for the others.
        phrases: With ``ranked``, per linked entity the words it was linked from, and
        named: the linked entities the question names word for word (see :func:`rank_diseases`).

    Returns:
        Up to ``max_lines`` ``neighbor`` evidence items; each lists its tails as
        separate triples so any one can be cited.
    """
    if max_lines <= 0:
        return []
    weights = gi.weight_snapshot()  # one set of weights for the whole call
    if ranked:
        return _ranked_neighbors(
            gi, entity_ids, max_lines, weights, weight_aware, max_tails, tail_types, phrases, named
        )
    opts: dict[str, Any] = {"weights": weights if weight_aware else None, "max_tails": max_tails}

    def builder(node: int, rtype: str, edges: list[int], expansion: bool) -> Callable[[], Evidence]:
        # lines are kept as builders and only the returned ones are materialised
        extra: dict[str, Any] = {"expansion": True} if expansion else {}
        return partial(_line, gi, node, rtype, edges, **extra, **opts)

    lines = mindmap_neighbor_lines(
        resolve(gi, entity_ids),
        partial(_groups, gi),
        gi.edge_tail.__getitem__,
        builder,
        max_lines,
        schema=gi.schema,
        prefetch=gi.prefetch,
    )
    return [build() for build in lines]


def _support_line(gi: GraphIndex, d: int, support_ids: Sequence[str], score: float, **meta: Any) -> Evidence:
    es = [gi.edge_index_of[r] for r in support_ids]
    meta = {"entity": gi.names[d], "relation": SUPPORT_RELATION, **meta}
    nodes = [*(gi.edge_head[e] for e in es), d]
    text = triple_text(gi, es)
    return evidence_item(
        gi, "neighbor", es, nodes, text=text, score=score, source="neighbor_evidence", meta=meta
    )


def _ranked_neighbors(
    gi: GraphIndex,
    entity_ids: Sequence[str],
    max_lines: int,
    weights: WeightSnapshot,
    weight_aware: bool,
    max_tails: int | None,
    tail_types: frozenset[str] | None = None,
    phrases: Sequence[str] | None = None,
    named: Collection[str] = (),
) -> list[Evidence]:
    nodes = resolve(gi, entity_ids)
    ranking = rank_diseases(
        gi, entity_ids, weight_aware=weight_aware, weights=weights, phrases=phrases, named=named
    )

    def wanted(edges: Sequence[int]) -> bool:
        return tail_types is None or any(gi.types[gi.edge_tail[e]] in tail_types for e in edges)

    lines: list[tuple[float, Callable[[], Evidence]]] = []
    top = ranking[0][1] if ranking else 1.0
    disease_set = {gi.index_of[d] for d, _, _ in ranking}
    opts: dict[str, Any] = {"weights": weights if weight_aware else None, "max_tails": max_tails}
    for rank, (did, score, support_ids) in enumerate(ranking):
        if len(lines) >= 3 * max_lines:  # enough candidates to sort
            break
        if rank % _PREFETCH == 0:  # pushed down: the next few diseases in one store query
            gi.prefetch(gi.index_of[r[0]] for r in ranking[rank : rank + _PREFETCH])
        d = gi.index_of[did]
        share = score / top if top > 0 else 0.0
        common: dict[str, Any] = {"disease": gi.names[d], "disease_rank": rank + 1, "votes": score}
        if support_ids:
            lines.append((share, partial(_support_line, gi, d, support_ids, share, **common)))
        for rtype, edges in _groups(gi, d):
            if gi.schema.votes(rtype) or not wanted(edges):
                continue
            sc = share * (0.6 if gi.schema.lists_symptoms(rtype) else 1.0)
            lines.append(
                (sc, partial(_line, gi, d, rtype, edges, score=sc, expansion=True, **common, **opts))
            )
    gi.prefetch(i for i in nodes if i not in disease_set)
    for i in nodes:
        if i in disease_set:
            continue
        for rtype, edges in _groups(gi, i):
            if gi.schema.votes(rtype) or not wanted(edges):
                continue
            lines.append((0.5, partial(_line, gi, i, rtype, edges, score=0.5, **opts)))
    lines.sort(key=lambda x: -x[0])  # stable: ties keep disease rank order
    return [build() for _, build in lines[:max_lines]]
