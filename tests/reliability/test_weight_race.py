"""Race A (issue 45): readers of a cached graph index never see a half-applied weight update.

A server runs questions on many threads while feedback commits on others. Feedback reaches
the process's cached :class:`GraphIndex` the way production sends it: the feedback
listener :func:`notify_weight_changes` (``set_weights``) after each commit, and a weights
reload when another process committed (``get_graph_index`` → ``reload_weights``). Reader
threads meanwhile read the weights as one KGCoT exploration call does, and check that what
they read is one consistent set: for every node, the sum of its out-edge weights equals
the total published with them (KGCoT's normaliser, ``p = w / Σw``), so the probabilities
over its out-edges sum to one.

Each run loops until a reader finds a violation or a time budget runs out (a few
seconds). A fixed seed drives the writers; the interpreter switches threads every 10 µs
so that interleavings are frequent. On an index that changes weights in place a violation
shows within milliseconds; where updates are published atomically none may ever occur.
"""

from __future__ import annotations

import random
import sys
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from kgmind.models import Entity, Relation, WeightChange, entity_id
from kgmind.relations import RelationSchema
from kgmind.retrievers.graph_index import GraphIndex
from kgmind.retrievers.graph_index_cache import (
    clear_graph_index_cache,
    get_graph_index,
    notify_weight_changes,
)

NODES = 400
OUT_DEGREE = 6
BUDGET_S = 3.0
READERS = 3


class _FeedbackStore:
    """A store whose feedback commits change weights under a lock and bump the weights version."""

    def __init__(self, seed: int) -> None:
        rnd = random.Random(seed)
        self.uri = "mem:weight-race"
        self.entities = [Entity(name=f"n{i}") for i in range(NODES)]
        self.relations: list[Relation] = []
        for i in range(NODES):
            for j in rnd.sample(range(NODES), OUT_DEGREE):
                self.relations.append(
                    Relation(
                        head=entity_id(f"n{i}"),
                        type=f"r{j % 3}",
                        tail=entity_id(f"n{j}"),
                        weight=rnd.uniform(0.5, 2),
                    )
                )
        self.version = 0
        self._lock = threading.Lock()

    def iter_entities(self) -> Iterator[Entity]:
        return iter(list(self.entities))

    def iter_relations(self) -> Iterator[Relation]:
        with self._lock:
            return iter(list(self.relations))

    def fingerprint(self) -> str:
        return f"{len(self.entities)}:{len(self.relations)}"

    def relation_schema(self) -> RelationSchema:
        return RelationSchema()  # no roles: this race is about weights

    def weights_version(self) -> int:
        return self.version

    def commit(self, rnd: random.Random, feedback_id: str) -> tuple[list[WeightChange], int]:
        """One feedback: 3 edges rated up or down (bounded), committed; the changes and the new version."""
        excellent = rnd.random() < 0.5
        changes: list[WeightChange] = []
        with self._lock:
            for k in rnd.sample(range(len(self.relations)), 3):
                old = self.relations[k]
                new = min(10.0, old.weight * 1.2) if excellent else max(0.1, old.weight * 0.8)
                self.relations[k] = old.model_copy(update={"weight": new})
                changes.append(
                    WeightChange(
                        feedback_id=feedback_id,
                        run_id="r",
                        relation_id=old.id,
                        old_weight=old.weight,
                        new_weight=new,
                        rating="excellent" if excellent else "poor",
                        at="t",
                    )
                )
            self.version += 1
            return changes, self.version


class _Call:
    """The weight reads of one exploration call: one snapshot, taken when the call starts."""

    def __init__(self, gi: GraphIndex) -> None:
        self._snap = gi.weight_snapshot()

    def weights(self) -> np.ndarray:
        return self._snap.weights

    def totals(self) -> np.ndarray:
        return self._snap.totals


def _violations(gi: GraphIndex, heads: np.ndarray, rnd: random.Random) -> list[str]:
    """One exploration call's reads, checked: DFS steps, then the path probabilities, then every node.

    The steps read each node's out-edge weights (``p = w / Σw``); the path probabilities
    read the normaliser published with them later in the same call (``edge_prob``).
    Both must come from one set of weights.
    """
    call = _Call(gi)
    steps: list[tuple[int, np.ndarray]] = []
    for node in rnd.sample(range(NODES), 12):  # the DFS steps of a few chains
        leaving = gi.out_array(node)
        w = call.weights()[leaving]
        p = w / w.sum()
        np.searchsorted(np.cumsum(p), rnd.random(), side="right")  # the draw
        steps.append((node, w))
    out: list[str] = []
    for node, w in steps:  # the chains' probabilities, with the published normaliser
        total = float(call.totals()[node])
        if not np.isclose(w.sum(), total, rtol=1e-9, atol=1e-12):
            out.append(f"node {node}: out-weights sum {w.sum()!r}, published total {total!r}")
        elif not np.isclose((w / total).sum(), 1.0, rtol=1e-9):
            out.append(f"node {node}: probabilities sum to {(w / total).sum()!r}")
    sums = np.bincount(heads, weights=call.weights(), minlength=NODES)  # every node at once
    bad = np.flatnonzero(~np.isclose(sums, call.totals(), rtol=1e-9, atol=1e-12))
    out += [f"node {n}: out-weights sum {sums[n]!r}, published total {call.totals()[n]!r}" for n in bad[:3]]
    return out


@pytest.fixture
def fast_switching() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(before)


def test_readers_never_see_a_half_applied_weight_update(fast_switching: None) -> None:
    clear_graph_index_cache()
    store = _FeedbackStore(seed=45)
    gi = get_graph_index(store)
    heads = np.asarray(gi.edge_head, dtype=np.int64)
    stop = threading.Event()
    found: list[str] = []
    reads = [0] * READERS
    commits = [0]

    def feedback(seed: int) -> None:  # a feedback worker: commit, then the listener updates the index
        rnd = random.Random(seed)
        while not stop.is_set():
            changes, version = store.commit(rnd, f"f{seed}-{commits[0]}")
            notify_weight_changes(store.uri, changes, version)
            commits[0] += 1

    def other_process() -> None:  # feedback committed elsewhere: the next lookup reloads the weights
        rnd = random.Random(7)
        while not stop.is_set():
            store.commit(rnd, f"p-{commits[0]}")
            assert get_graph_index(store) is gi
            time.sleep(0.005)

    def reader(i: int) -> None:
        rnd = random.Random(100 + i)
        while not stop.is_set():
            bad = _violations(gi, heads, rnd)
            reads[i] += 1
            if bad:
                found.extend(bad)
                stop.set()

    threads = [threading.Thread(target=feedback, args=(s,)) for s in (1, 2)]
    threads += [threading.Thread(target=other_process)]
    threads += [threading.Thread(target=reader, args=(i,)) for i in range(READERS)]
    start = time.monotonic()
    for t in threads:
        t.start()
    stop.wait(BUDGET_S)
    took = time.monotonic() - start
    stop.set()
    for t in threads:
        t.join()

    assert found == [], f"after {took:.2f} s, {sum(reads)} reads, {commits[0]} feedbacks:\n" + "\n".join(
        found[:5]
    )
    assert commits[0] > 50 and min(reads) > 5  # writers and readers both ran
    # nothing is lost: after the next lookup the index holds exactly the store's weights
    final = get_graph_index(store)
    call = _Call(final)
    weights, totals = call.weights(), call.totals()
    for rel in store.relations:
        assert weights[final.edge_index_of[rel.id]] == rel.weight
    assert np.allclose(np.bincount(heads, weights=weights, minlength=len(totals)), totals, rtol=1e-9)
