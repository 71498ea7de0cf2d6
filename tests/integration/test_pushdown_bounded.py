"""Bounded reads (issue 42): the store picks each node's kept edges; the full index keeps the same ones.

The real embedded store with the shipped demo KG and a bound small enough to cut its hubs:
every exploration gives the same evidence on the cut whole-KG index and on a pushed-down
index that read each node's kept edges from the store, also after a dispute and after
feedback moved weights; no node lists more than the bound per type and direction.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from kgmind.models import EDGE_ID
from kgmind.relations import REVERSE_MARK

K = 2  # the demo KG's hubs have more than two edges of a type


def _key(evidence: list[Any]) -> list[tuple[str, str, tuple[str, ...], float]]:
    return [(e.id, e.text, tuple(e.relation_ids), round(e.score, 9)) for e in evidence]


def _indexes(store: Any, seeds: list[str]) -> tuple[Any, Any]:
    from kgmind.retrievers.graph_index import GraphIndex

    hidden = set(store.disputed_relations())
    full = GraphIndex(store.iter_entities(), store.iter_relations(), schema=store.relation_schema())
    full.set_hidden(hidden)
    full.bound(K)
    part = GraphIndex.neighborhood(
        store,
        seeds,
        schema=store.relation_schema(),
        hidden=hidden,
        bound=K,
        degree_values=np.asarray(store.degree_values()),
        uniform=store.weights_uniform(),
    )
    return full, part


def _explorations(gi: Any, seeds: list[str]) -> dict[str, list[Any]]:
    from kgmind.retrievers import exploration as ex

    return {
        "neighbors": ex.neighbor_evidence(gi, seeds, max_lines=40, weight_aware=True, ranked=True),
        "mindmap": ex.neighbor_evidence(gi, seeds, max_lines=5),
        "chains": ex.hykge_chains(gi, seeds, max_hops=3, hub_percentile=90.0),
        "paths": ex.path_evidence(gi, seeds, max_hops=3, weight_aware=True),
        "kgcot": ex.weighted_dfs_chains(gi, seeds, n_chains=5, max_depth=3, seed=1),
    }


def _seed_sets(full: Any) -> list[list[str]]:
    by_degree = sorted(range(full.num_nodes), key=lambda n: (-full.degree(n), full.ids[n]))
    hubs = [full.ids[n] for n in by_degree[:6]]
    return [hubs[:2], hubs[2:5], [hubs[0], full.ids[by_degree[-1]]], hubs[1::2]]


def _bounded_full(store: Any) -> Any:
    from kgmind.retrievers.graph_index import GraphIndex

    full = GraphIndex(store.iter_entities(), store.iter_relations(), schema=store.relation_schema())
    full.bound(K)
    return full


def _assert_same(store: Any) -> int:

    compared = 0
    for seeds in _seed_sets(_bounded_full(store)):
        full, part = _indexes(store, seeds)
        mem, push = _explorations(full, seeds), _explorations(part, seeds)
        for name in mem:
            assert _key(push[name]) == _key(mem[name]), (name, seeds)
            compared += len(mem[name])
        assert part.num_edges < full.num_edges
    return compared


def test_every_exploration_gives_the_same_evidence_on_both_bounded_indexes(demo_uri: str) -> None:
    from kgmind.stores.factory import open_store
    from kgmind.stores.feedback import apply_verdicts
    from kgmind.stores.weights import make_rule

    store = open_store(demo_uri)
    assert _assert_same(store) > 20
    rel = next(iter(store.iter_relations()))
    store.apply_weight_updates("fb-bounded", "run", "excellent", [rel.id], make_rule("excellent"))
    assert _assert_same(store) > 20
    for run in ("a", "b"):
        apply_verdicts(store, f"{run}:bounded", run, [(rel.id, "wrong")], source="test")
    assert rel.id in store.disputed_relations()
    assert _assert_same(store) > 20


def _assert_lists_as_full(store: Any, seed_sets: list[list[str]], every_node: bool = False) -> int:
    """Each node a pushed-down index completed lists what the bounded full index lists, edge by edge.

    Also: the index holds one string per relation type, reading and source, however many
    groups and reads brought it (issue 42: a string per edge was ~50 bytes of a pushed-down edge).
    ``every_node``: complete every node, not only those the explorations read.
    """
    compared = 0
    for seeds in seed_sets:
        full, part = _indexes(store, seeds)
        _explorations(part, seeds)  # completes nodes as the searches read them
        if every_node:
            part.add_seeds(full.ids)  # bounded, a seed is completed as it is added
        done = sorted(part._complete or ())
        assert len(done) > len(seeds)
        for n in done:
            f = full.index_of[part.ids[n]]
            for side in ("out_adj", "in_adj"):
                got = [(part.edge_id[e], part.edge_type[e]) for e in list.__getitem__(getattr(part, side), n)]
                want = [(full.edge_id[e], full.edge_type[e]) for e in getattr(full, side)[f]]
                assert got == want, (part.ids[n], side)
                compared += len(want)
        for column in (part.edge_type, part.edge_source):
            assert len({id(x) for x in column}) == len(set(column))
    return compared


def test_a_completed_node_lists_the_full_index_edges_and_shares_one_string_per_type(demo_uri: str) -> None:
    from kgmind.stores.factory import open_store

    store = open_store(demo_uri)
    assert _assert_lists_as_full(store, _seed_sets(_bounded_full(store))[:2]) > 50


def test_self_loops_and_stored_ways_back_list_as_on_the_full_index(tmp_path: Any) -> None:
    """A random KG with self-loops, edges stored both ways, ties and hubs cut by the bound."""
    import random

    from kgmind.models import Entity, Relation
    from kgmind.stores.factory import open_store

    rng = random.Random(11)
    ents = [Entity(name=f"E{i}", type="disease" if i % 3 else "symptom") for i in range(30)]
    rels: dict[str, Relation] = {}
    for _ in range(260):
        h = rng.choice(ents[:6]) if rng.random() < 0.5 else rng.choice(ents)
        t = h if rng.random() < 0.08 else rng.choice(ents)
        r = Relation(head=h.id, type=rng.choice(["a", "b"]), tail=t.id, weight=rng.choice([0.5, 1.0, 2.0]))
        rels[r.id] = r
        if rng.random() < 0.2:  # the way back stored too
            back = Relation(head=t.id, type=r.type, tail=h.id, weight=r.weight)
            rels[back.id] = back
    assert any(r.head == r.tail for r in rels.values())
    store = open_store(f"ladybug:{tmp_path / 'kg'}", create=True)
    store.bulk_load(ents, list(rels.values()))
    seeds = [[ents[0].id, ents[1].id], [ents[7].id]]
    assert _assert_lists_as_full(store, seeds, every_node=True) > 200


def test_a_cut_node_lists_at_most_k_edges_per_type_and_direction(demo_uri: str) -> None:
    from kgmind.retrievers.graph_index import GraphIndex
    from kgmind.stores.factory import open_store

    store = open_store(demo_uri)
    full = GraphIndex(store.iter_entities(), store.iter_relations(), schema=store.relation_schema())
    sizes = [len(full.out_adj[n]) + len(full.in_adj[n]) for n in range(full.num_nodes)]
    full.bound(K)
    cut = [n for n in range(full.num_nodes) if len(full.out_adj[n]) + len(full.in_adj[n]) < sizes[n]]
    assert cut, "the bound cuts the demo KG's hubs"
    for n in range(full.num_nodes):
        stored = Counter(
            (full.edge_type[e], side)
            for side, adj in (("out", full.out_adj[n]), ("in", full.in_adj[n]))
            for e in adj
            if not full.edge_type[e].startswith(REVERSE_MARK)
        )
        assert max(stored.values(), default=0) <= K
    # the hub cap reads the store's kept degrees, known before a pushed-down index reads a hub's edges
    seeds = [full.ids[cut[0]]]
    part = GraphIndex.neighborhood(
        store, seeds, bound=K, degree_values=np.asarray(store.degree_values()), schema=store.relation_schema()
    )
    assert part.hub_degree(90.0) == full.hub_degree(90.0)
    assert part.degree(part.index_of[seeds[0]]) == full.degree(cut[0]) == store.degrees(seeds)[seeds[0]][0]


def test_a_store_without_bounded_reads_is_bounded_in_python_the_same_way(demo_uri: str) -> None:
    from kgmind.retrievers.graph_bounds import bounded_rows
    from kgmind.stores.factory import open_store
    from kgmind.stores.feedback import apply_verdicts

    store = open_store(demo_uri)

    class Plain:  # only the protocol's neighbour reads
        def neighbors(self, ids: list[str], direction: str) -> list[Any]:
            return store.neighbors(ids, direction)  # type: ignore[arg-type]

    ids = [e.id for e in store.iter_entities()][:12]
    first = next(iter(store.neighbors(ids[:1], "both")))
    apply_verdicts(store, "plain:bounded", "plain", [(first.id, "wrong")], source="test")
    hidden = set(store.disputed_relations())  # what a caller hides: the kept degrees leave the same edges out
    assert first.id in hidden

    def key(rows: list[Any]) -> list[tuple[Any, ...]]:
        return sorted((n, r[EDGE_ID], side, deg, back) for n, r, side, deg, back in rows)

    assert key(bounded_rows(Plain(), ids, K, hidden)) == key(store.bounded_edges(ids, K, hidden))
    assert len(store.bounded_edges(ids, K, hidden)) < len(store.neighbors(ids, "both")) * 2


def test_reads_from_many_threads_list_what_one_thread_lists(demo_uri: str, monkeypatch: Any) -> None:
    """The store is read outside the index's lock, so explorations' reads overlap: nodes completed
    from eight threads at once (overlapping sets, reads slowed so they do overlap) are listed
    exactly as one thread lists them, and give the same evidence."""
    import threading
    import time

    from kgmind.retrievers.graph_bounds import BOUNDED_READS
    from kgmind.retrievers.graph_index import GraphIndex
    from kgmind.stores.factory import open_store

    store = open_store(demo_uri)
    probe = GraphIndex(store.iter_entities(), store.iter_relations(), schema=store.relation_schema())
    seeds = _seed_sets(probe)[0]
    names = sorted(probe.ids)

    def lists(gi: Any) -> dict[str, tuple[list[str], list[str]]]:
        return {
            gi.ids[n]: ([gi.edge_id[e] for e in gi.out_adj[n]], [gi.edge_id[e] for e in gi.in_adj[n]])
            for n in gi._complete
        }

    def build(threads: int) -> Any:
        BOUNDED_READS.clear()
        _, part = _indexes(store, seeds)
        known = [part.index_of[i] for i in names if i in part.index_of]
        batches = [known[i::threads] + known[: len(known) // 3] for i in range(threads)]
        workers = [threading.Thread(target=part.prefetch, args=(b,)) for b in batches]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        return part

    read = store.bounded_edges
    inflight: list[int] = [0, 0]  # now, most at once

    counting = threading.Lock()

    def slow(ids: Any, k: int, hidden: Any = (), small: Any = ()) -> Any:
        with counting:
            inflight[0] += 1
            inflight[1] = max(inflight)
        time.sleep(0.02)
        try:
            return read(ids, k, hidden, small)
        finally:
            with counting:
                inflight[0] -= 1

    one = build(1)
    monkeypatch.setattr(store, "bounded_edges", slow)
    many = build(8)
    assert inflight[1] > 1, "the reads overlapped"
    assert lists(many) == lists(one) and len(lists(one)) > 5
    assert _key(_explorations(many, seeds)["paths"]) == _key(_explorations(one, seeds)["paths"])


def _context_kg(path: Any) -> Any:
    """A small medical KG on the real store whose biggest hubs are context relations (foods, ailments)."""
    from kgmind.models import Entity, Relation
    from kgmind.stores.factory import open_store

    diseases = [Entity(name=f"Disease {i}", type="disease") for i in range(6)]
    symptoms = [Entity(name=f"Symptom {i}", type="symptom") for i in range(4)]
    test = Entity(name="Blood test", type="test")
    foods = [Entity(name=f"Food {i}", type="food") for i in range(3)]
    rels = []
    for i, d in enumerate(diseases):
        rels += [Relation(head=d.id, type="has_symptom", tail=s.id) for s in symptoms[: 2 + i % 3]]
        rels.append(Relation(head=d.id, type="need_medical_test", tail=test.id))
        rels += [Relation(head=d.id, type="good_food", tail=f.id) for f in foods[: 1 + i % 3]]
        rels += [Relation(head=d.id, type="has_complication", tail=o.id) for o in diseases if o is not d][
            : 1 + i % 4
        ]
    store = open_store(f"ladybug:{path}", create=True)
    store.bulk_load([*diseases, *symptoms, test, *foods], rels)
    return store


def test_context_relations_keep_their_own_smaller_bound_in_both_modes(tmp_path: Any) -> None:
    """A medical KG's context relations (role ``other``) are cut to their own bound, the medical ones
    to ``k``; every exploration still gives the same evidence on the cut full index and pushed down,
    and a Python-picked read keeps the same edges. A KG with no medical role has no context."""
    from kgmind.relations import RelationRole, RelationSchema
    from kgmind.retrievers.graph_bounds import GroupBound, bounded_rows
    from kgmind.retrievers.graph_index import GraphIndex

    store = _context_kg(tmp_path / "kg")
    schema = store.relation_schema()
    bound = GroupBound.for_schema(3, 1, schema)
    assert bound.context_types == {"good_food"}  # a disease's complications are diseases: they keep k
    assert (bound.limit("good_food"), bound.limit("has_symptom"), bound.least) == (1, 3, 1)
    with pytest.raises(ValueError):  # stores read k per group: a context bound must be below it
        GroupBound(3, 3, frozenset({"good_food"}))

    full = GraphIndex(store.iter_entities(), store.iter_relations(), schema=schema)
    full.bound(bound)
    groups: Counter[tuple[int, str, str]] = Counter(
        (n, full.edge_type[e], side)
        for n in range(full.num_nodes)
        for side, adj in (("out", full.out_adj[n]), ("in", full.in_adj[n]))
        for e in adj
        if not full.edge_type[e].startswith(REVERSE_MARK)
    )
    assert max(c for (_, t, _), c in groups.items() if t in bound.context_types) == 1
    assert (
        max(c for (_, t, _), c in groups.items() if t not in bound.context_types) == 3
    )  # cut at k, not at 1
    by_degree = sorted(range(full.num_nodes), key=lambda n: (-full.degree(n), full.ids[n]))
    hubs = [full.ids[n] for n in by_degree[:6]]
    for seeds in (hubs[:2], hubs[2:5], [hubs[0], full.ids[by_degree[-1]]]):
        part = GraphIndex.neighborhood(
            store,
            seeds,
            schema=schema,
            bound=bound,
            degree_values=np.asarray(store.degree_values()),
            uniform=store.weights_uniform(),
        )
        mem, push = _explorations(full, seeds), _explorations(part, seeds)
        for name in mem:
            assert _key(push[name]) == _key(mem[name]), (name, seeds)

    class Plain:  # only the protocol's neighbour reads
        def neighbors(self, ids: list[str], direction: str) -> list[Any]:
            return store.neighbors(ids, direction)  # type: ignore[arg-type]

    def key(rows: list[Any]) -> list[tuple[Any, ...]]:
        return sorted((n, r[EDGE_ID], side, deg, back) for n, r, side, deg, back in rows)

    ids = sorted(full.ids)
    assert key(bounded_rows(Plain(), ids, bound, ())) == key(bounded_rows(store, ids, bound, ()))
    assert len(bounded_rows(store, ids, bound, ())) < len(bounded_rows(store, ids, 3, ()))

    no_medical = RelationSchema({"likes": RelationRole("likes", "other", "entity", "entity")})
    assert GroupBound.for_schema(3, 1, no_medical) == GroupBound(3)
    untyped = RelationSchema({**schema.roles, "near": RelationRole("near", "other", "disease", "entity")})
    assert GroupBound.for_schema(3, 1, untyped).context_types == {"good_food"}  # an unknown end: not context
    assert GroupBound.for_schema(3, None, schema) == GroupBound(3)


@pytest.mark.parametrize("side", ["fewer edges", "candidates"])
def test_a_cut_hub_votes_for_every_disease_it_reaches_as_unbounded_in_both_modes(
    demo_uri: str, monkeypatch: pytest.MonkeyPatch, side: str
) -> None:
    """A hub's bounded list leaves diseases out; its votes for them come from the edges to the candidates.

    Every candidate then has the voters the unbounded index gives it, also where the
    disease's own list of that type was cut too (the demo KG's diseases have many symptoms),
    and a pushed-down index reads those edges in one store statement, not by completing the
    candidates (issue 42). The store reads the lists of the side with fewer edges (the demo
    KG's hubs); read from the candidates' side, as a big KG's are, the votes are the same.
    """
    from kgmind.retrievers import graph_pushdown
    from kgmind.retrievers.exploration import rank_diseases
    from kgmind.retrievers.graph_index import GraphIndex
    from kgmind.stores.factory import open_store

    store = open_store(demo_uri)
    unbounded = GraphIndex(store.iter_entities(), store.iter_relations(), schema=store.relation_schema())
    schema = unbounded.schema

    def vote_edges(gi: Any, n: int) -> list[int]:
        return [e for e in gi.out_adj[n] if schema.votes(gi.edge_type[e])]

    by_votes = sorted(range(unbounded.num_nodes), key=lambda n: (-len(vote_edges(unbounded, n)), n))
    bounded = GraphIndex(store.iter_entities(), store.iter_relations(), schema=store.relation_schema())
    bounded.bound(K)

    def voters(gi: Any, ranking: list[Any]) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for d, _, rids in ranking:
            for rid in rids:
                e = gi.edge_index_of[rid]
                out.setdefault(d, set()).update({gi.ids[gi.edge_head[e]], gi.ids[gi.edge_tail[e]]} - {d})
        return out

    def doubly_cut(gi: Any, got: dict[str, set[str]]) -> list[tuple[str, str]]:
        """Votes that neither end's bounded list holds: the voter's lists and the disease's were cut."""
        return [
            (v, d)
            for d, vs in got.items()
            for v in vs
            if d not in {gi.ids[gi.edge_tail[e]] for e in gi.out_adj[gi.index_of[v]]}
            and v not in {gi.ids[gi.edge_head[e]] for e in gi.in_adj[gi.index_of[d]]}
        ]

    pairs = [[unbounded.ids[a], unbounded.ids[b]] for a in by_votes[:12] for b in by_votes[:12] if a < b]
    seeds = next(p for p in pairs if doubly_cut(bounded, voters(bounded, rank_diseases(bounded, p))))
    full, part = _indexes(store, seeds)
    asked: list[tuple[list[str], list[str]]] = []
    between = store.edges_between

    def spy(a: Any, b: Any) -> Any:
        asked.append((list(a), list(b)))
        return between(a, b)

    monkeypatch.setattr(store, "edges_between", spy)
    if side == "candidates":
        monkeypatch.setattr(graph_pushdown, "reads_second_side", lambda *_: True)
    mem, push = rank_diseases(full, seeds), rank_diseases(part, seeds)
    assert push == mem
    assert len(asked) == 1  # one read
    read, tested = asked[0]
    hubs, candidates = (read, tested) if side == "fewer edges" else (tested, read)
    assert set(hubs) <= set(seeds) and not set(candidates) <= set(seeds)
    if side == "fewer edges":
        edges = store.degrees([*read, *tested])
        assert sum(edges[x][0] for x in read) <= sum(edges[x][0] for x in tested)
    reach = voters(unbounded, rank_diseases(unbounded, seeds))
    got = voters(full, mem)
    assert got and all(got[d] == reach[d] for d in got)  # every candidate: the unbounded index's voters
    assert doubly_cut(full, got)
