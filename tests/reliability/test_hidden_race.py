"""Readers of a cached graph index never see a half-hidden edge set (issue 41).

A server explores questions on many threads while verdicts change the disputed set on
others. The cache re-applies the store's disputed set when its disputes version moves
(:func:`get_graph_index` → :meth:`GraphIndex.set_hidden`), and feedback changes weights
meanwhile (:func:`notify_weight_changes`). Reader threads read node lists as the
explorations do (``out_adj``, ``in_adj``, ``out_array``) and a weight snapshot, and check:

* every list they read is a node's whole list under one of the disputed sets the writer
  applies, never a list with part of a change;
* the published normaliser of a node (KGCoT's ``Σ w``) is the sum of its weights over one
  of those whole lists;
* the four explorations run without an error.

Each run loops until a reader finds a violation or the time budget runs out; the
interpreter switches threads every 10 µs so interleavings are frequent.
"""

from __future__ import annotations

import random
import sys
import threading
import traceback
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from kgmind.models import Entity, Relation, WeightChange, entity_id
from kgmind.relations import RelationSchema
from kgmind.retrievers.exploration import hykge_chains, neighbor_evidence, path_evidence, weighted_dfs_chains
from kgmind.retrievers.graph_index import GraphIndex
from kgmind.retrievers.graph_index_cache import (
    clear_graph_index_cache,
    get_graph_index,
    notify_weight_changes,
)

NODES = 300
OUT_DEGREE = 5
BUDGET_S = 3.0
READERS = 3


class _DisputedStore:
    """A store whose disputed set flips between a few fixed sets, bumping its disputes version."""

    def __init__(self, seed: int) -> None:
        rnd = random.Random(seed)
        self.uri = "mem:hidden-race"
        self.entities = [Entity(name=f"n{i}") for i in range(NODES)]
        self.relations = [
            Relation(
                head=entity_id(f"n{i}"), type=f"r{j % 3}", tail=entity_id(f"n{j}"), weight=rnd.uniform(0.5, 2)
            )
            for i in range(NODES)
            for j in rnd.sample([k for k in range(NODES) if k != i], OUT_DEGREE)
        ]
        ids = [r.id for r in self.relations]
        # overlapping sets: a hub's edges, random edges, both, none
        self.sets = [
            frozenset(),
            frozenset(rnd.sample(ids, 150)),
            frozenset(ids[:OUT_DEGREE] + rnd.sample(ids, 100)),
        ]
        self.current = 0
        self.version = 0
        self._lock = threading.Lock()

    def iter_entities(self) -> Iterator[Entity]:
        return iter(list(self.entities))

    def iter_relations(self) -> Iterator[Relation]:
        return iter(list(self.relations))

    def relation_schema(self) -> RelationSchema:
        return RelationSchema()

    def fingerprint(self) -> str:
        return "fixed"

    def weights_version(self) -> int:
        return 0

    def disputes_version(self) -> int:
        return self.version

    def disputed_relations(self) -> dict[str, str]:
        with self._lock:
            return dict.fromkeys(self.sets[self.current], "disputed")

    def flip(self, k: int) -> None:
        with self._lock:
            self.current = k
            self.version += 1


def _valid_lists(store: _DisputedStore) -> tuple[list[set[tuple[int, ...]]], list[set[tuple[int, ...]]]]:
    """Per node, its whole out- and in-lists under each of the store's disputed sets."""
    outs: list[set[tuple[int, ...]]] = [set() for _ in range(NODES)]
    ins: list[set[tuple[int, ...]]] = [set() for _ in range(NODES)]
    for hidden in store.sets:
        ref = GraphIndex(store.iter_entities(), store.iter_relations())
        ref.set_hidden(hidden)
        for n in range(NODES):
            outs[n].add(tuple(ref.out_adj[n]))
            ins[n].add(tuple(ref.in_adj[n]))
    return outs, ins


def _violations(gi: GraphIndex, valid: Any, rnd: random.Random) -> list[str]:
    outs, ins = valid
    snap = gi.weight_snapshot()
    out: list[str] = []
    for n in rnd.sample(range(NODES), 20):
        listed = tuple(gi.out_adj[n])
        arr = tuple(int(e) for e in gi.out_array(n))
        back = tuple(gi.in_adj[n])
        if listed not in outs[n] or arr not in outs[n] or back not in ins[n]:
            out.append(f"node {n}: a list that no disputed set gives: {listed} / {arr} / {back}")
        w, total = snap.weights, float(snap.totals[n])
        if not any(np.isclose(w[list(v)].sum(), total, rtol=1e-9, atol=1e-12) for v in outs[n]):
            out.append(f"node {n}: published total {total!r} sums no whole list")
    seeds = [gi.ids[i] for i in rnd.sample(range(NODES), 3)]
    for fn in (neighbor_evidence, hykge_chains, path_evidence, weighted_dfs_chains):
        fn(gi, seeds)  # type: ignore[operator]
    neighbor_evidence(gi, seeds, ranked=True)
    return out


@pytest.fixture
def fast_switching() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(before)


def test_readers_never_see_a_half_hidden_edge_set(fast_switching: None) -> None:
    clear_graph_index_cache()
    store = _DisputedStore(seed=41)
    valid = _valid_lists(store)
    gi = get_graph_index(store)
    stop = threading.Event()
    found: list[str] = []
    errors: list[BaseException] = []
    reads = [0] * READERS
    flips = [0]

    def verdicts() -> None:  # a verdict lands, the next question's lookup hides the new set
        rnd = random.Random(3)
        while not stop.is_set():
            store.flip(rnd.randrange(len(store.sets)))
            assert get_graph_index(store) is gi
            flips[0] += 1

    def feedback() -> None:  # weights change meanwhile (KGCoT's normaliser is recomputed from the lists)
        rnd = random.Random(5)
        while not stop.is_set():
            rel = rnd.choice(store.relations)
            change = WeightChange(
                feedback_id="f", run_id="r", relation_id=rel.id, old_weight=1.0,
                new_weight=rnd.uniform(0.5, 2), rating="excellent", at="t",
            )  # fmt: skip
            notify_weight_changes(store.uri, [change])

    def reader(i: int) -> None:
        rnd = random.Random(100 + i)
        while not stop.is_set():
            bad = _violations(gi, valid, rnd)
            reads[i] += 1
            if bad:
                found.extend(bad)
                stop.set()

    def guarded(fn: Any, *args: Any) -> None:  # a crash on any thread is a finding too
        try:
            fn(*args)
        except BaseException as exc:
            errors.append(exc)
            stop.set()

    workers: list[tuple[Any, ...]] = [(verdicts,), (feedback,), *((reader, i) for i in range(READERS))]
    threads = [threading.Thread(target=guarded, args=w) for w in workers]
    for t in threads:
        t.start()
    stop.wait(BUDGET_S)
    stop.set()
    for t in threads:
        t.join()

    assert errors == [], "".join(traceback.format_exception(errors[0]))
    assert found == [], "\n".join(found[:5])
    assert flips[0] > 20 and min(reads) > 3  # writers and readers both ran
    # settled: the lists are those of the last disputed set, and every total sums its whole list
    store.flip(2)
    final = get_graph_index(store)
    ref = GraphIndex(store.iter_entities(), store.iter_relations())
    ref.set_hidden(store.sets[2])
    snap = final.weight_snapshot()
    for n in range(NODES):
        assert list(final.out_adj[n]) == list(ref.out_adj[n]) and list(final.in_adj[n]) == list(ref.in_adj[n])
        assert snap.totals[n] == pytest.approx(snap.weights[list(final.out_adj[n])].sum(), rel=1e-9)
