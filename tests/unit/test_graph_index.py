"""GraphIndex: construction, lookups, all-shortest-paths search, cache and weight updates."""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kgmind.models import Entity, Relation, WeightChange, entity_id
from kgmind.relations import RelationSchema, schema_from_graph
from kgmind.retrievers.graph_index import GraphIndex
from kgmind.retrievers.graph_index_cache import (
    clear_graph_index_cache,
    get_graph_index,
    notify_weight_changes,
)
from kgmind.retrievers.graph_paths import BfsMemo


class FakeStore:
    """The five members GraphIndex needs, backed by lists; ``weights`` is the weights version."""

    def __init__(self, uri: str, entities: list[Entity], relations: list[Relation]) -> None:
        self.uri = uri
        self.entities = entities
        self.relations = relations
        self.builds = 0
        self.weights = 0
        self.relation_reads = 0

    def iter_entities(self) -> Iterator[Entity]:
        self.builds += 1
        return iter(list(self.entities))

    def iter_relations(self) -> Iterator[Relation]:
        self.relation_reads += 1
        return iter(list(self.relations))

    def fingerprint(self) -> str:
        return f"{len(self.entities)}:{len(self.relations)}"

    def weights_version(self) -> int:
        return self.weights

    def relation_schema(self) -> RelationSchema:
        return schema_from_graph(self.entities, self.relations)

    def commit_weight(self, index: int, weight: float) -> WeightChange:
        """What another process's feedback does: change a weight and bump the version."""
        old = self.relations[index]
        self.relations[index] = old.model_copy(update={"weight": weight})
        self.weights += 1
        return WeightChange(
            feedback_id=f"f{self.weights}",
            run_id="r",
            relation_id=old.id,
            old_weight=old.weight,
            new_weight=weight,
            rating="excellent",
            at="t",
        )


def ents(*names: str) -> list[Entity]:
    return [Entity(name=n) for n in names]


def rel(h: str, t: str, typ: str = "r", w: float = 1.0) -> Relation:
    return Relation(head=entity_id(h), type=typ, tail=entity_id(t), weight=w)


def make(names: list[str], edges: list[tuple[str, str]]) -> GraphIndex:
    """The path machinery on the stored directions only (both-way walking: test_reverse_readings.py)."""
    return GraphIndex(ents(*names), [rel(h, t) for h, t in edges], reverse_readings=False)


def named(gi: GraphIndex, nodes: tuple[int, ...]) -> list[str]:
    return [gi.names[n] for n in nodes]


@pytest.fixture(autouse=True)
def _clear_cache() -> Iterator[None]:
    clear_graph_index_cache()
    yield
    clear_graph_index_cache()


def test_lookups_and_edge_order() -> None:
    es = [Entity(name="Flu", type="disease", description="A viral infection."), Entity(name="Fever")]
    rs = [
        rel("Flu", "Fever", "has_symptom"),
        rel("Flu", "Cough", "has_symptom", 2.0),  # Cough is not an entity: placeholder node
        rel("Fever", "Flu", "possible_disease"),
    ]
    gi = GraphIndex(es, rs, uri="u", fingerprint="f", reverse_readings=False)
    flu, fever, cough = entity_id("Flu"), entity_id("Fever"), entity_id("Cough")
    assert gi.name(flu) == "Flu" and gi.type(flu) == "disease"
    assert gi.description(flu) == "A viral infection."
    assert gi.description(fever) == ""
    assert cough in gi and gi.name(cough) == cough  # placeholder named after its id
    assert [e.tail for e in gi.out_edges(flu)] == [fever, cough]
    assert [e.weight for e in gi.out_edges(flu)] == [1.0, 2.0]
    assert [e.head for e in gi.in_edges(flu)] == [fever]
    assert gi.out_edges("nope") == [] and gi.in_edges("nope") == []
    assert gi.num_nodes == 3 and gi.num_edges == 3


def test_duplicate_relations_and_entities_are_kept_once() -> None:
    gi = GraphIndex(ents("A", "A", "B"), [rel("A", "B"), rel("A", "B")], reverse_readings=False)
    assert gi.num_nodes == 2 and gi.num_edges == 1


def test_directed_all_shortest_paths_diamond() -> None:
    gi = make(
        ["S", "A", "B", "T", "C"], [("S", "A"), ("S", "B"), ("A", "T"), ("B", "T"), ("S", "C"), ("C", "A")]
    )
    s, t = gi.idx(entity_id("S")), gi.idx(entity_id("T"))
    paths = gi.shortest_paths(s, t, 5)
    assert sorted(named(gi, p.nodes) for p in paths) == [["S", "A", "T"], ["S", "B", "T"]]
    for p in paths:
        assert len(p.edges) == 2
        for i, e in enumerate(p.edges):
            assert gi.edge_head[e] == p.nodes[i] and gi.edge_tail[e] == p.nodes[i + 1]
    # direction matters: T cannot reach S
    assert gi.shortest_paths(t, s, 5) == []
    # the hop limit is respected
    assert gi.shortest_paths(s, t, 1) == []
    assert len(gi.shortest_paths(s, t, 5, limit=1)) == 1


def test_undirected_paths_walk_edges_against_direction() -> None:
    gi = make(["A", "X", "B"], [("A", "X"), ("B", "X")])
    a, b = gi.idx(entity_id("A")), gi.idx(entity_id("B"))
    assert gi.shortest_paths(a, b, 3, directed=True) == []
    (p,) = gi.shortest_paths(a, b, 3, directed=False)
    assert named(gi, p.nodes) == ["A", "X", "B"]
    second = p.edges[1]
    assert gi.edge_head[second] == b and gi.edge_tail[second] == p.nodes[1]


def test_self_path_is_empty() -> None:
    gi = make(["A"], [])
    (p,) = gi.shortest_paths(0, 0, 3)
    assert p.nodes == (0,) and p.edges == ()


def _brute_force(gi: GraphIndex, s: int, t: int, max_hops: int, directed: bool) -> set[tuple]:
    """All simple walks s→t of minimal length ≤ max_hops by exhaustive DFS."""
    found: list[tuple[tuple[int, ...], tuple[int, ...]]] = []

    def steps(u: int) -> list[tuple[int, int]]:
        out = [(e, gi.edge_tail[e]) for e in gi.out_adj[u]]
        if not directed:
            out += [(e, gi.edge_head[e]) for e in gi.in_adj[u]]
        return out

    def dfs(u: int, nodes: list[int], edges: list[int]) -> None:
        if u == t:
            found.append((tuple(nodes), tuple(edges)))
            return
        if len(edges) == max_hops:
            return
        for e, v in steps(u):
            if v not in nodes:
                dfs(v, [*nodes, v], [*edges, e])

    dfs(s, [s], [])
    if not found:
        return set()
    best = min(len(e) for _, e in found)
    return {p for p in found if len(p[1]) == best}


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("directed", [True, False])
def test_shortest_paths_match_brute_force(seed: int, directed: bool) -> None:
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(9)]
    edges = [(rng.choice(names), rng.choice(names)) for _ in range(18)]
    edges = [(h, t) for h, t in edges if h != t]
    gi = make(names, edges)
    for _ in range(6):
        s, t = rng.randrange(9), rng.randrange(9)
        if s == t:
            continue
        got = gi.shortest_paths(s, t, 4, directed=directed, limit=None)
        got_set = {(p.nodes, p.edges) for p in got}
        assert len(got_set) == len(got), "a path was enumerated twice"
        assert got_set == _brute_force(gi, s, t, 4, directed)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("directed", [True, False])
def test_shared_bfs_memo_gives_the_same_paths(seed: int, directed: bool) -> None:
    """Pairs searched through one memo (each root's levels expanded once) = each pair alone, in order."""
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(14)]
    edges = [(rng.choice(names), rng.choice(names)) for _ in range(40)]
    gi = make(names, [(h, t) for h, t in edges if h != t])
    memo: BfsMemo = {}
    pairs = [(rng.randrange(14), rng.randrange(14)) for _ in range(30)]
    for hops in (3, 1, 4, 2):  # a deeper search first leaves deeper levels in the memo
        for cap in (None, 3):  # capped and uncapped searches share one memo without mixing
            for s, t in pairs:
                alone = gi.shortest_paths(s, t, hops, directed=directed, limit=5, max_degree=cap)
                shared = gi.shortest_paths(s, t, hops, directed=directed, limit=5, memo=memo, max_degree=cap)
                assert shared == alone
    assert memo  # the sides were kept
    if not directed:  # one side per root serves both directions
        assert all(direction is None for _, direction, _ in memo)


def test_hub_cap_walks_around_hubs_but_not_from_or_into_them() -> None:
    # A - H - G - B: two hubs in the middle (degree 4 each); A - X - Y - B goes around them
    names = ["A", "B", "H", "G", "X", "Y", "p", "q", "r", "s"]
    edges = [("A", "H"), ("H", "G"), ("G", "B"), ("H", "p"), ("H", "q"), ("G", "r"), ("G", "s")]
    gi = make(names, edges)
    a, b, h = (gi.idx(entity_id(n)) for n in ("A", "B", "H"))
    assert gi.hub_degree(100) == 4 and gi.hub_degree(50) <= 2
    with pytest.raises(ValueError, match="percentile"):
        gi.hub_degree(0)
    (free,) = gi.shortest_paths(a, b, 3, directed=False)
    assert named(gi, free.nodes) == ["A", "H", "G", "B"]
    assert gi.shortest_paths(a, b, 3, directed=False, max_degree=3) == []  # would walk through a hub
    # two hops meet *at* the hub: no hub is walked through, so the path stays
    p_ = gi.idx(entity_id("p"))
    assert [named(gi, q.nodes) for q in gi.shortest_paths(a, p_, 3, directed=False, max_degree=3)] == [
        ["A", "H", "p"]
    ]
    # a hub that is a search's own end is still expanded
    assert [named(gi, q.nodes) for q in gi.shortest_paths(h, b, 3, directed=False, max_degree=3)] == [
        ["H", "G", "B"]
    ]
    # with a way around, the capped search takes it
    gi2 = make(names, [*edges, ("A", "X"), ("X", "Y"), ("Y", "B")])
    a2, b2 = gi2.idx(entity_id("A")), gi2.idx(entity_id("B"))
    got = [named(gi2, q.nodes) for q in gi2.shortest_paths(a2, b2, 3, directed=False, max_degree=3)]
    assert got == [["A", "X", "Y", "B"]]


def test_shortest_paths_deterministic() -> None:
    gi = make(
        ["S", "A", "B", "C", "T"], [("S", "A"), ("S", "B"), ("S", "C"), ("A", "T"), ("B", "T"), ("C", "T")]
    )
    runs = [[p.nodes for p in gi.shortest_paths(0, 4, 3)] for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]
    assert len(runs[0]) == 3


def test_cache_by_uri_and_fingerprint() -> None:
    store = FakeStore("mem:1", ents("A", "B"), [rel("A", "B")])
    gi1 = get_graph_index(store)
    assert get_graph_index(store) is gi1 and store.builds == 1
    store.entities.append(Entity(name="C"))
    store.relations.append(rel("B", "C"))
    gi2 = get_graph_index(store)
    assert gi2 is not gi1 and store.builds == 2 and gi2.num_relations == 2
    other = FakeStore("mem:2", ents("A"), [])
    assert get_graph_index(other) is not gi2


def test_threads_asking_for_one_store_share_one_build() -> None:
    import threading

    class SlowStore(FakeStore):
        def iter_entities(self) -> Iterator[Entity]:
            started.set()
            release.wait(timeout=10)
            return super().iter_entities()

    started, release = threading.Event(), threading.Event()
    store = SlowStore("mem:once", ents("A", "B"), [rel("A", "B")])
    got: list[GraphIndex] = []
    threads = [threading.Thread(target=lambda: got.append(get_graph_index(store))) for _ in range(4)]
    for t in threads:
        t.start()
    assert started.wait(timeout=10)
    release.set()
    for t in threads:
        t.join(timeout=10)
    assert len(got) == 4 and all(g is got[0] for g in got) and store.builds == 1


def test_neighbourhood_indexes_are_kept_per_seeds_and_weights_version() -> None:
    from kgmind.retrievers.graph_index_cache import get_neighborhood_index

    class HoodStore(FakeStore):
        def get_entities(self, ids: list[str]) -> list[Entity]:
            return [e for e in self.entities if e.id in ids]

        def neighbors(self, ids: list[str], direction: str) -> list[Relation]:
            return [r for r in self.relations if r.head in ids or r.tail in ids]

    store = HoodStore("mem:hood", ents("A", "B", "C"), [rel("A", "B"), rel("B", "C")])
    hood = get_neighborhood_index(store, [entity_id("A")])  # type: ignore[arg-type]
    assert get_neighborhood_index(store, [entity_id("A"), entity_id("A")]) is hood  # type: ignore[arg-type]
    assert hood.pushed_down and entity_id("B") in hood
    store.weights += 1  # a committed weight change: a fresh neighbourhood with the new weights
    assert get_neighborhood_index(store, [entity_id("A")]) is not hood  # type: ignore[arg-type]


def test_notify_weight_changes_updates_cached_index() -> None:
    r = rel("A", "B")
    store = FakeStore("mem:w", ents("A", "B"), [r])
    gi = get_graph_index(store)
    change = WeightChange(
        feedback_id="f",
        run_id="r",
        relation_id=r.id,
        old_weight=1.0,
        new_weight=1.7,
        rating="excellent",
        at="t",
    )
    unknown = change.model_copy(update={"relation_id": "rnope"})
    notify_weight_changes("mem:w", [change, unknown])
    assert gi.weight(r.id) == pytest.approx(1.7)
    assert get_graph_index(store).out_edges(entity_id("A"))[0].weight == pytest.approx(1.7)
    notify_weight_changes("mem:other", [change])  # no cached index: nothing happens


def test_weights_changed_elsewhere_are_reloaded_without_a_rebuild() -> None:
    clear_graph_index_cache()
    store = FakeStore("mem:elsewhere", ents("A", "B", "C"), [rel("A", "B"), rel("A", "C")])
    gi = get_graph_index(store)
    assert (store.builds, store.relation_reads, gi.weights_version) == (1, 1, 0)
    store.commit_weight(0, 3.0)  # another process: no notification reaches this one
    assert get_graph_index(store) is gi and store.builds == 1  # same graph, not rebuilt
    assert gi.weight(store.relations[0].id) == 3.0 and gi.weights_version == 1
    assert gi.out_weight_total[gi.idx(entity_id("A"))] == pytest.approx(4.0)
    reads = store.relation_reads
    get_graph_index(store)
    assert store.relation_reads == reads  # version unchanged: no weights read


def test_own_commit_advances_the_version_and_needs_no_reload() -> None:
    clear_graph_index_cache()
    store = FakeStore("mem:own", ents("A", "B", "C"), [rel("A", "B"), rel("A", "C")])
    gi = get_graph_index(store)
    change = store.commit_weight(0, 2.0)
    notify_weight_changes(store.uri, [change], store.weights_version())
    assert gi.weights_version == 1 and gi.weight(change.relation_id) == 2.0
    reads = store.relation_reads
    assert get_graph_index(store) is gi and store.relation_reads == reads


def test_commit_with_another_in_between_leaves_a_reload_to_do() -> None:
    clear_graph_index_cache()
    store = FakeStore("mem:both", ents("A", "B", "C"), [rel("A", "B"), rel("A", "C")])
    gi = get_graph_index(store)
    mine = store.commit_weight(0, 2.0)
    store.commit_weight(1, 5.0)  # another process, before this one's listener ran
    notify_weight_changes(store.uri, [mine], store.weights_version())
    assert gi.weight(mine.relation_id) == 2.0 and gi.weights_version == 0  # not claimed as current
    get_graph_index(store)
    assert gi.weight(store.relations[1].id) == 5.0 and gi.weights_version == 2


def test_stale_listener_does_not_undo_a_newer_reload() -> None:
    clear_graph_index_cache()
    store = FakeStore("mem:late", ents("A", "B"), [rel("A", "B")])
    gi = get_graph_index(store)
    mine = store.commit_weight(0, 2.0)
    version_after_mine = store.weights_version()
    store.commit_weight(0, 7.0)  # another process moves the same edge again
    get_graph_index(store)  # another thread reloads first
    notify_weight_changes(store.uri, [mine], version_after_mine)
    assert gi.weight(mine.relation_id) == 7.0 and gi.weights_version == 2


def test_recheck_window_skips_fingerprint_reads() -> None:
    store = FakeStore("mem:r", ents("A", "B"), [rel("A", "B")])
    calls = {"n": 0}
    real = store.fingerprint

    def counted() -> str:
        calls["n"] += 1
        return real()

    store.fingerprint = counted  # type: ignore[method-assign]
    gi = get_graph_index(store, recheck_s=3600)
    assert get_graph_index(store, recheck_s=3600) is gi and calls["n"] == 1
    store.entities.append(Entity(name="C"))
    assert get_graph_index(store, recheck_s=3600) is gi  # inside the window: trusted
    assert get_graph_index(store).num_nodes == 3 and calls["n"] == 2  # recheck_s=0: always read


def test_out_weight_totals_follow_weight_updates() -> None:
    import numpy as np

    rels = [rel("A", "B"), rel("A", "C"), rel("B", "C"), rel("C", "A")]
    gi = GraphIndex(ents("A", "B", "C"), rels, reverse_readings=False)

    def recomputed() -> list[float]:
        return [float(gi.weights[gi.out_adj[n]].sum()) if gi.out_adj[n] else 0.0 for n in range(gi.num_nodes)]

    assert gi.out_weight_total.tolist() == pytest.approx(recomputed())
    assert gi.set_weights([(rels[0].id, 3.5), (rels[3].id, 0.25), ("unknown", 9.0)]) == 2
    assert gi.out_weight_total.tolist() == pytest.approx(recomputed())
    assert gi.out_weight_total[gi.idx(entity_id("A"))] == pytest.approx(3.5 + float(gi.weights[1]))
    assert np.isclose(gi.out_weight_total[gi.idx(entity_id("B"))], float(gi.weights[2]))


def test_relation_ids_survive_the_compact_index_whether_derived_or_not() -> None:
    """Edge ids are derived from (head, type, tail) when the store used kgmind's ids, else kept as given."""
    a, b, c = (Entity(name=n) for n in ("A", "B", "C"))
    derived = Relation(head=a.id, type="r", tail=b.id)
    custom = Relation(id="my-edge-7", head=b.id, type="r", tail=c.id, weight=2.0)
    gi = GraphIndex(
        [a, b, c], [derived, custom, derived], reverse_readings=False
    )  # a repeated relation is indexed once
    assert gi.num_edges == 2
    assert [gi.edge_id[e] for e in range(2)] == [derived.id, "my-edge-7"]
    assert gi.edge_index_of[derived.id] == 0 and gi.edge_index_of.get("my-edge-7") == 1
    assert "my-edge-7" in gi.edge_index_of and "nope" not in gi.edge_index_of
    assert gi.edge_index_of.get("nope") is None
    with pytest.raises(KeyError):
        gi.edge_index_of["nope"]
    assert gi.weight("my-edge-7") == 2.0
    assert gi.set_weights([("my-edge-7", 3.0), ("nope", 9.0)]) == 1
    assert gi.out_weight_total[gi.idx(b.id)] == 3.0
    assert [list(gi.out_adj[i]) for i in range(3)] == [[0], [1], []]
    assert [list(gi.in_adj[i]) for i in range(3)] == [[], [0], [1]]


class _HoodStore(FakeStore):
    """A fake store that counts the nodes whose edges a pushed-down index reads."""

    def __init__(self, uri: str, entities: list[Entity], relations: list[Relation]) -> None:
        super().__init__(uri, entities, relations)
        self.read: list[str] = []

    def get_entities(self, ids: list[str]) -> list[Entity]:
        return [e for e in self.entities if e.id in ids]

    def neighbors(self, ids: list[str], direction: str) -> list[Relation]:
        self.read += ids
        return [r for r in self.relations if r.head in ids or r.tail in ids]


def test_questions_share_one_pushed_down_index_until_it_holds_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A later question reads only nodes no earlier one completed; past the bound a new index starts."""
    from kgmind.retrievers import graph_index_cache as gx
    from kgmind.retrievers.graph_pushdown import edges_loaded

    shared = gx._SharedNeighborhoods(max_edges=8)
    monkeypatch.setattr(gx, "_NEIGHBORHOODS", shared)
    names = [chr(ord("A") + i) for i in range(6)]
    store = _HoodStore("mem:kept", ents(*names), [rel(a, b) for a, b in itertools.pairwise(names)])
    first = gx.get_neighborhood_index(store, [entity_id("B")])  # type: ignore[arg-type]
    first.out_array(first.index_of[entity_id("C")])  # explored: C completed too
    reads, loaded = len(store.read), edges_loaded()
    assert gx.get_neighborhood_index(store, [entity_id("C")]) is first  # type: ignore[arg-type]
    assert len(store.read) == reads and edges_loaded() == loaded  # the second question read nothing again
    assert first.num_edges == 6  # A-B, B-C, C-D, each with its reverse reading
    second = gx.get_neighborhood_index(store, [entity_id("E")])  # type: ignore[arg-type]
    assert second is first and second.num_edges == 10  # under the bound when E came: shared
    assert edges_loaded() == loaded + 4  # what E's question read: D-E and E-F, each with its way back
    third = gx.get_neighborhood_index(store, [entity_id("A")])  # type: ignore[arg-type]
    assert third is not first and entity_id("A") in third  # past it: a new index
    assert len(shared) == 1  # the full one went (the newest always stays)
    # a run's other explore nodes still find theirs by its seeds, and seeds are completed once
    reads = len(store.read)
    assert gx.get_neighborhood_index(store, [entity_id("A"), entity_id("A")]) is third  # type: ignore[arg-type]
    assert len(store.read) == reads


def test_without_a_bound_each_new_question_gets_its_own_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """``KGMIND_PUSHDOWN_KEPT_EDGES=0``: an index per question, as before they were shared."""
    from kgmind.retrievers import graph_index_cache as gx

    monkeypatch.setenv("KGMIND_PUSHDOWN_KEPT_EDGES", "0")
    monkeypatch.setattr(gx, "_NEIGHBORHOODS", gx._SharedNeighborhoods())  # the bound read from the setting
    store = _HoodStore("mem:own", ents("A", "B", "C"), [rel("A", "B"), rel("B", "C")])
    a = gx.get_neighborhood_index(store, [entity_id("A")])  # type: ignore[arg-type]
    assert gx.get_neighborhood_index(store, [entity_id("A")]) is a  # type: ignore[arg-type]
    assert gx.get_neighborhood_index(store, [entity_id("C")]) is not a  # type: ignore[arg-type]


def test_concurrent_explore_nodes_complete_the_seeds_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four explore nodes asking at once: one reads the seeds, the others wait for it and share the index."""
    from kgmind.retrievers import graph_index_cache as gx

    monkeypatch.setattr(gx, "_NEIGHBORHOODS", gx._SharedNeighborhoods(max_edges=100))
    release, started = threading.Event(), threading.Event()

    class SlowStore(_HoodStore):
        def neighbors(self, ids: list[str], direction: str) -> list[Relation]:
            started.set()
            release.wait(timeout=10)
            return super().neighbors(ids, direction)

    store = SlowStore("mem:slow", ents("A", "B"), [rel("A", "B")])
    got: list[Any] = []
    threads = [
        threading.Thread(target=lambda: got.append(gx.get_neighborhood_index(store, [entity_id("A")])))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    assert started.wait(timeout=10)
    time.sleep(0.05)
    release.set()
    for t in threads:
        t.join(timeout=10)
    assert len(got) == 4 and all(g is got[0] for g in got)
    alone = _HoodStore("mem:alone", ents("A", "B"), [rel("A", "B")])
    gx.get_neighborhood_index(alone, [entity_id("A")])  # type: ignore[arg-type]
    assert sorted(store.read) == sorted(alone.read)  # the reads of one caller


class _GatedBoundedStore(_HoodStore):
    """A store with ``bounded_edges`` (the Python pick over its lists), counting the nodes each read asks.

    Once ``gate`` is armed, the next read waits for it to open (and then fails when
    ``fail``): a read still in flight when another thread asks for the same nodes.
    """

    def __init__(self, uri: str, entities: list[Entity], relations: list[Relation]) -> None:
        super().__init__(uri, entities, relations)
        self.asked: list[str] = []
        self.armed, self.inside, self.gate, self.fail = False, threading.Event(), threading.Event(), False
        self._count = threading.Lock()

    def bounded_edges(self, ids: Any, k: int, hidden: Any, small: Any = ()) -> list[Any]:
        from kgmind.retrievers.graph_bounds import bounded_rows
        from kgmind.stores.protocol import StoreError

        with self._count:
            self.asked += list(ids)
            gated, self.armed = self.armed, False
        if gated:
            self.inside.set()
            assert self.gate.wait(timeout=10)
            if self.fail:
                raise StoreError("the store went away mid-read")
        return bounded_rows(_HoodStore(self.uri, self.entities, self.relations), ids, k, hidden)


def _star_store(uri: str) -> _GatedBoundedStore:
    """A hub A tied to B-E, and the chain B-C-D-E: completing A adds every node, each read of B-E is cheap."""
    names = ["A", "B", "C", "D", "E"]
    edges = [rel("A", x) for x in names[1:]] + [rel(a, b) for a, b in itertools.pairwise(names[1:])]
    return _GatedBoundedStore(uri, ents(*names), edges)


def _lists(gi: GraphIndex) -> dict[str, tuple[list[str], list[str]]]:
    return {
        gi.ids[n]: (sorted(gi.edge_id[e] for e in gi.out_adj[n]), sorted(gi.edge_id[e] for e in gi.in_adj[n]))
        for n in range(len(gi.ids))
    }


def _gated_star(uri: str) -> tuple[_GatedBoundedStore, GraphIndex, dict[str, int]]:
    """A bounded pushed-down index of :func:`_star_store` (A read), the store armed for the next read."""
    from kgmind.retrievers.graph_bounds import BOUNDED_READS

    BOUNDED_READS.clear()  # no read kept from another test: every read goes to the store
    store = _star_store(uri)
    gi = GraphIndex.neighborhood(store, [entity_id("A")], bound=10)  # type: ignore[arg-type]
    store.asked.clear()
    store.armed = True
    return store, gi, {x: gi.index_of[entity_id(x)] for x in "BCD"}


def test_a_node_another_thread_is_reading_is_not_read_again() -> None:
    """Two explorations ask for C at once: one store read of it; the other thread reads only D, then waits."""
    from kgmind.retrievers.graph_bounds import BOUNDED_READS

    store, gi, at = _gated_star("mem:inflight")
    first = threading.Thread(target=gi.prefetch, args=([at["B"], at["C"]],))
    first.start()
    assert store.inside.wait(timeout=10)  # the first read (B, C) is in flight
    second = threading.Thread(target=gi.prefetch, args=([at["C"], at["D"]],))
    second.start()
    second.join(timeout=0.3)
    assert second.is_alive()  # D read, now waiting for C: it must not come back before C is listed
    assert sorted(store.asked) == sorted(entity_id(x) for x in "BCD")
    store.gate.set()
    first.join(timeout=10)
    second.join(timeout=10)
    assert not first.is_alive() and not second.is_alive()
    assert sorted(store.asked) == sorted(entity_id(x) for x in "BCD")  # each node read once
    BOUNDED_READS.clear()
    alone = _star_store("mem:inflight-alone")
    one = GraphIndex.neighborhood(alone, [entity_id("A")], bound=10)  # type: ignore[arg-type]
    one.prefetch([one.index_of[entity_id(x)] for x in "BCD"])
    assert _lists(gi) == _lists(one)  # the same lists as one thread reading them all


def test_a_failed_read_leaves_its_nodes_to_the_thread_that_waited() -> None:
    """The read the other thread waits on fails: its nodes stay incomplete, and the waiter reads C itself."""
    from kgmind.stores.protocol import StoreError

    store, gi, at = _gated_star("mem:inflight-fails")
    store.fail = True
    errors: list[BaseException] = []

    def first_read() -> None:
        try:
            gi.prefetch([at["B"], at["C"]])
        except StoreError as exc:
            errors.append(exc)

    first = threading.Thread(target=first_read)
    first.start()
    assert store.inside.wait(timeout=10)
    second = threading.Thread(target=gi.prefetch, args=([at["C"], at["D"]],))
    second.start()
    second.join(timeout=0.3)
    store.gate.set()
    first.join(timeout=10)
    second.join(timeout=10)
    assert not first.is_alive() and not second.is_alive() and len(errors) == 1
    assert store.asked == [entity_id("B"), entity_id("C"), entity_id("D"), entity_id("C")]
    assert gi._complete is not None
    assert at["C"] in gi._complete and at["D"] in gi._complete and at["B"] not in gi._complete


def test_pushed_down_tail_array_grows_in_place_and_old_views_stay_valid() -> None:
    """KGCoT reads ``edge_tail_array`` without the lock while a read appends edges: a view taken
    before an append (or a regrowth of the buffer) keeps its values, and the newest equals the tails."""
    from array import array

    from kgmind.retrievers.graph_pushdown import PushdownGrowth

    index = PushdownGrowth()
    index.edge_tail = array("i")
    views = []
    for step in range(40):  # 3,880 tails: the buffer (1,024 at first) regrows twice
        first = len(index.edge_tail)
        index.edge_tail.extend(range(step * 1000, step * 1000 + 97))
        index._publish_tails(first)
        views.append((index.edge_tail_array, index.edge_tail_array.copy()))
    for view, copy in views:
        assert (view == copy).all()
    assert index.edge_tail_array.tolist() == list(index.edge_tail)
    assert len(index._tail_buffer) >= 4096 and len(views[0][0]) == 97
