"""Concurrent feedback on the real LadybugStore: no lost update; result = serial replay in commit order."""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgmind.models import Entity, Relation
from kgmind.stores.factory import close_all_stores, open_store
from kgmind.stores.feedback import apply_feedback, feedback_key
from kgmind.stores.protocol import GraphStore
from kgmind.stores.weights import make_rule
from race_harness import run_threads

N_THREADS = 8
N_UPDATES = 200

HEADS = [Entity(name=f"disease {i}", type="disease") for i in range(3)]
TAILS = [Entity(name=f"symptom {i}", type="symptom") for i in range(4)]
LONE = Entity(name="lonely", type="disease")
RELS = [Relation(head=h.id, type="has_symptom", tail=t.id) for h in HEADS for t in TAILS]
RELS.append(Relation(head=LONE.id, type="has_symptom", tail=TAILS[0].id))  # a single out-edge
HEAD_OF = {r.id: r.head for r in RELS}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GraphStore]:
    close_all_stores()
    s = open_store(f"ladybug:{tmp_path / 'kg'}", create=True)
    s.bulk_load([*HEADS, *TAILS, LONE], RELS)
    yield s
    close_all_stores()


def _replay(order: list[str], submitted: dict[str, tuple[str, list[str]]]) -> tuple[dict[str, float], dict]:
    """Apply each feedback's pure rule on a fresh copy of the graph, in commit order."""
    weights = {r.id: 1.0 for r in RELS}
    before: dict[tuple[str, str], float] = {}
    for fid in order:
        rating, ids = submitted[fid]
        heads = {HEAD_OF[r] for r in ids}
        sib = {h: [(rid, weights[rid]) for rid in weights if HEAD_OF[rid] == h] for h in heads}
        for rid, w in make_rule(rating)(sib, ids).items():
            before[(fid, rid)] = weights[rid]
            weights[rid] = w
    return weights, before


def test_threads_on_shared_heads_equal_serial_replay(store: GraphStore) -> None:
    submitted: dict[str, tuple[str, list[str]]] = {}
    edge_ids = [r.id for r in RELS]

    def worker(k: int) -> None:
        rng = random.Random(1000 + k)
        for j in range(N_UPDATES):
            rating = rng.choice(["excellent", "poor"])
            ids = sorted(set(rng.sample(edge_ids, rng.choice([1, 1, 2]))))
            run_id = f"thread{k}-{j}"
            submitted[feedback_key(run_id, rating, ids)] = (rating, ids)
            apply_feedback(store, run_id, rating, ids)

    assert run_threads(worker, N_THREADS, together=True) == []
    assert len(submitted) == N_THREADS * N_UPDATES

    audit = store.weight_changes()
    order = list(dict.fromkeys(c.feedback_id for c in audit))  # commit order
    # none lost: every feedback that touches an edge with siblings is in the audit, once
    expected_in_audit = {
        fid for fid, (_, ids) in submitted.items() if any(HEAD_OF[r] != LONE.id for r in ids)
    }
    assert set(order) == expected_in_audit
    assert len(order) == len(expected_in_audit)
    # rows of one feedback are contiguous (one transaction at a time)
    seen_done: set[str] = set()
    current = None
    for c in audit:
        if c.feedback_id != current:
            assert c.feedback_id not in seen_done
            if current is not None:
                seen_done.add(current)
            current = c.feedback_id

    replayed, before = _replay(order, submitted)
    final = {r.id: r.weight for r in store.iter_relations()}
    assert set(final) == set(replayed)
    for rid, w in final.items():
        assert w > 0 and math.isfinite(w)
        assert w == pytest.approx(replayed[rid], rel=1e-9, abs=1e-12)
    # each audit row's old weight is what the serial replay had before that feedback
    for c in audit:
        assert c.old_weight == pytest.approx(before[(c.feedback_id, c.relation_id)], rel=1e-9, abs=1e-12)
    assert final[RELS[-1].id] == 1.0  # the single out-edge never moves


def test_threads_resubmitting_the_same_feedback_apply_it_once(store: GraphStore) -> None:
    ids = [RELS[0].id]
    results: list[int] = []
    lock = threading.Lock()

    def worker(_k: int) -> None:
        for _ in range(20):
            n = len(apply_feedback(store, "same-run", "excellent", ids))
            with lock:
                results.append(n)

    assert run_threads(worker, N_THREADS) == []
    assert sorted(results) == [0] * (N_THREADS * 20 - 1) + [1]
    expected = make_rule("excellent")({HEADS[0].id: [(r.id, 1.0) for r in RELS[:4]]}, ids)[ids[0]]
    assert store.get_relations(ids)[0].weight == pytest.approx(expected, rel=1e-12)
