"""Feedback committed by another process reaches this process's cached graph index.

The in-memory graph index is cached per store URI and its fingerprint ignores weights,
so before the store counted weight commits, weights changed elsewhere stayed invisible
until the process restarted. LadybugDB lets one process open a directory at a time, so
this process closes the store, a child process rates an edge, and this process reopens
the store and asks for the index again: it must hold the child's weights (re-read, not
rebuilt). A Neo4j database shared by several workers is the same situation without the
closing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from kgmind.retrievers.graph_index_cache import get_graph_index
from kgmind.stores.factory import close_all_stores, open_store

HARNESS = Path(__file__).resolve().parent / "rel_harness.py"
SRC = Path(__file__).resolve().parents[2] / "src"


def _rate_in_child(home: Path, uri: str, rel_id: str, rating: str) -> dict[str, float]:
    env = dict(os.environ)
    env["KGMIND_HOME"] = str(home)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(HARNESS.parent), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, str(HARNESS), "rate", uri, rel_id, rating],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {str(k): float(v) for k, v in json.loads(proc.stdout.strip().splitlines()[-1]).items()}


@pytest.mark.timeout(600)
def test_index_sees_weights_another_process_committed(demo_uri: str, isolated_home: Path) -> None:
    store = open_store(demo_uri)
    fanout = Counter(r.head for r in store.iter_relations())
    edge = next(r for r in store.iter_relations() if fanout[r.head] > 1)  # a rating moves its weight
    gi = get_graph_index(store)
    before = gi.weight(edge.id)
    version = gi.weights_version
    close_all_stores()  # LadybugDB: one process per directory; the cached index stays

    changed = _rate_in_child(isolated_home, demo_uri, edge.id, "excellent")
    assert changed and changed[edge.id] != before

    store = open_store(demo_uri)
    assert get_graph_index(store) is gi  # same graph: weights re-read, nothing rebuilt
    assert gi.weights_version == version + 1
    stored = {r.id: r.weight for r in store.iter_relations()}
    assert gi.weight(edge.id) == pytest.approx(changed[edge.id], rel=1e-12)
    assert all(gi.weight(rid) == pytest.approx(w, rel=1e-12) for rid, w in stored.items())
    for node in {edge.head}:
        i = gi.idx(node)
        total = sum(w for rid, w in stored.items() if gi.edge_head[gi.edge_index_of[rid]] == i)
        assert gi.out_weight_total[i] == pytest.approx(total)  # KGCoT's normaliser follows
