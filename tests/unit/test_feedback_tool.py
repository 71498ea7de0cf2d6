"""apply_feedback, cited_relation_ids and the update_edge_weights tool, over an in-memory fake store."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any, cast

import pytest

from kgmind.models import Evidence, WeightChange
from kgmind.stores import feedback as fb
from kgmind.stores.protocol import GraphStore, WeightRule
from kgmind.stores.weights import make_rule
from kgmind.tools import feedback as fb_tool
from race_harness import run_threads


class FakeStore:
    """Just enough of GraphStore for the feedback path: edges, idempotency, audit."""

    def __init__(self, edges: Mapping[str, tuple[str, float]], uri: str = "fake:test") -> None:
        self.uri = uri
        self.head = {rid: head for rid, (head, _) in edges.items()}
        self.edges = {rid: float(w) for rid, (_, w) in edges.items()}
        self.audit: list[WeightChange] = []
        self.calls: list[tuple[str, str, str, list[str]]] = []
        self.lock = threading.Lock()
        self.version = 0  # the weights version: +1 per commit that changed weights

    def apply_weight_updates(
        self, feedback_id: str, run_id: str, rating: str, relation_ids: Sequence[str], rule: WeightRule
    ) -> list[WeightChange]:
        with self.lock:
            self.calls.append((feedback_id, run_id, rating, list(relation_ids)))
            if any(c.feedback_id == feedback_id for c in self.audit):
                return []
            heads = {self.head[r] for r in relation_ids}
            sib = {h: [(r, w) for r, w in self.edges.items() if self.head[r] == h] for h in heads}
            new = rule(sib, list(relation_ids))
            changes = [
                WeightChange(
                    feedback_id=feedback_id,
                    run_id=run_id,
                    relation_id=r,
                    old_weight=self.edges[r],
                    new_weight=w,
                    rating=rating,
                    at="t",
                )
                for r, w in sorted(new.items())
            ]
            for c in changes:
                self.edges[c.relation_id] = c.new_weight
            self.audit.extend(changes)
            self.version += bool(changes)
            return changes

    def weights_version(self) -> int:
        return self.version

    def weight(self, rid: str) -> float:
        return self.edges[rid]


def _apply(store: FakeStore, *args: Any, **kwargs: Any) -> list[WeightChange]:
    return fb.apply_feedback(cast(GraphStore, store), *args, **kwargs)


@pytest.fixture
def store() -> FakeStore:
    return FakeStore(
        {
            "r1": ("a", 1.0),
            "r2": ("a", 1.0),
            "r3": ("a", 1.0),
            "r4": ("b", 1.0),
            "r5": ("c", 1.0),
            "r6": ("c", 1.0),
        }
    )


class Heard(list[tuple[str, list[WeightChange]]]):
    """(store URI, changes) per notification; ``versions``: the weights version each one carried."""

    def __init__(self) -> None:
        super().__init__()
        self.versions: list[int | None] = []


@pytest.fixture
def notified(monkeypatch: pytest.MonkeyPatch) -> Heard:
    """The weight listeners replaced by one that records (the graph index registers the real one)."""
    calls = Heard()

    def record(store_uri: str, changes: Sequence[WeightChange], version: int | None) -> None:
        calls.append((store_uri, list(changes)))
        calls.versions.append(version)

    monkeypatch.setattr(fb, "_weight_listeners", [record])
    return calls


@pytest.mark.parametrize("rating", [None, "", "neutral", " Neutral "])
def test_neutral_or_absent_rating_changes_nothing(
    store: FakeStore, rating: str | None, notified: list[Any]
) -> None:
    assert _apply(store, "run", rating, ["r1"]) == []
    assert store.calls == [] and notified == []
    assert store.weight("r1") == 1.0


@pytest.mark.parametrize("rating", ["good", "bad", "EXCELLENTS", "1"])
def test_invalid_rating_rejected_before_store(store: FakeStore, rating: str) -> None:
    with pytest.raises(ValueError):
        _apply(store, "run", rating, ["r1"])
    assert store.calls == []


def test_invalid_alpha_beta_rejected_before_store(store: FakeStore) -> None:
    with pytest.raises(ValueError):
        _apply(store, "run", "excellent", ["r1"], alpha=1.0)
    with pytest.raises(ValueError):
        _apply(store, "run", "poor", ["r1"], beta=0.0)
    with pytest.raises(ValueError):
        _apply(store, " ", "poor", ["r1"])
    assert store.calls == []


def test_excellent_changes_cited_edge_and_notifies_index(store: FakeStore, notified: Heard) -> None:
    changes = _apply(store, "run-1", "Excellent", ["r1"])
    assert [c.relation_id for c in changes] == ["r1"]
    expected = make_rule("excellent")({"a": [("r1", 1.0), ("r2", 1.0), ("r3", 1.0)]}, ["r1"])["r1"]
    assert store.weight("r1") == pytest.approx(expected)
    assert store.weight("r1") > 1.0 and store.weight("r2") == 1.0
    assert changes[0].rating == "excellent" and changes[0].run_id == "run-1"
    assert notified == [(store.uri, changes)]
    assert notified.versions == [1]  # the store's weights version read after the commit


def test_feedback_id_is_deterministic_and_repeat_is_idempotent(store: FakeStore, notified: list[Any]) -> None:
    first = _apply(store, "run-1", "poor", ["r2", "r1", "r1"])
    w = {r: store.weight(r) for r in store.edges}
    second = _apply(store, "run-1", "poor", ["r1", "r2"])
    assert first and second == []
    assert {r: store.weight(r) for r in store.edges} == w
    assert store.calls[0][0] == store.calls[1][0] == fb.feedback_key("run-1", "poor", ["r1", "r2"])
    assert store.calls[0][3] == ["r1", "r2"]  # deduplicated, sorted
    assert len(notified) == 1  # nothing committed the second time, nothing notified


def test_feedback_key_depends_on_run_rating_and_edge_set() -> None:
    k = fb.feedback_key("run", "poor", ["r1", "r2"])
    assert k == fb.feedback_key("run", "poor", ["r2", "r1", "r2"])
    others = {
        fb.feedback_key("run2", "poor", ["r1", "r2"]),
        fb.feedback_key("run", "excellent", ["r1", "r2"]),
        fb.feedback_key("run", "poor", ["r1"]),
    }
    assert len({k, *others}) == 4


def test_explicit_feedback_id_is_used(store: FakeStore) -> None:
    _apply(store, "run", "poor", ["r1"], feedback_id="my-id")
    assert store.calls[0][0] == "my-id"
    assert _apply(store, "run", "poor", ["r1"], feedback_id="my-id") == []


def test_single_out_edge_and_empty_ids_change_nothing(store: FakeStore, notified: list[Any]) -> None:
    assert _apply(store, "run", "poor", ["r4"]) == []
    assert store.weight("r4") == 1.0
    assert _apply(store, "run", "poor", []) == []
    assert notified == []


def test_the_graph_index_hears_of_committed_changes(store: FakeStore) -> None:
    from kgmind.retrievers import graph_index_cache

    # registered on import, no upward import
    assert graph_index_cache.notify_weight_changes in fb._weight_listeners


def test_listener_errors_propagate(store: FakeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(store_uri: str, changes: Sequence[WeightChange], version: int | None) -> None:
        raise RuntimeError("index broken")

    monkeypatch.setattr(fb, "_weight_listeners", [boom])
    with pytest.raises(RuntimeError, match="index broken"):
        _apply(store, "run", "excellent", ["r5"])


def _ev(eid: str, kind: str, rels: list[str], **meta: Any) -> Evidence:
    return Evidence(id=eid, kind=kind, relation_ids=rels, meta=meta)  # type: ignore[arg-type]


def test_cited_relation_ids_only_cited_items() -> None:
    evidence = [
        _ev("P1", "path", ["r1", "r2"]),
        _ev("N1", "neighbor", ["r3"]),
        _ev("N2", "neighbor", ["r4", "r1"]),
        _ev("C1", "chain", ["r5"]),
        _ev("K1", "kgcot", ["r6"], relation_ids=["r6", "r7"], edges=["r8"]),
        _ev("K2", "kgcot", ["r9"]),
        _ev("", "doc", ["r10"]),
    ]
    got = fb.cited_relation_ids(evidence, ["[p1]", "N2", "k1", "X9", ""])
    assert got == ["r1", "r2", "r4", "r6", "r7", "r8"]
    assert fb.cited_relation_ids(evidence, []) == []
    assert fb.cited_relation_ids(evidence, ["Z1"]) == []
    assert fb.cited_relation_ids(evidence, ["C1"]) == ["r5"]
    as_dicts = [e.model_dump() for e in evidence]
    assert fb.cited_relation_ids(as_dicts, ["P1", "N2", "K1"]) == ["r1", "r2", "r4", "r6", "r7", "r8"]


def test_update_edge_weights_tool(
    store: FakeStore, monkeypatch: pytest.MonkeyPatch, notified: list[Any]
) -> None:
    import kgmind.stores.factory as factory

    opened: list[str | None] = []

    def fake_open(uri: str | None = None) -> FakeStore:
        opened.append(uri)
        return store

    monkeypatch.setattr(factory, "open_store", fake_open)
    tool = fb_tool.update_edge_weights
    assert tool.name == "update_edge_weights"
    assert set(tool.args) == {"run_id", "rating", "relation_ids", "feedback_id", "store"}
    args = {"run_id": "run-7", "rating": "poor", "relation_ids": ["r6", "r5"], "store": "ladybug:/x"}
    out = tool.invoke(args)
    json.dumps(out)
    assert opened == ["ladybug:/x"]
    assert out["feedback_id"] == fb.feedback_key("run-7", "poor", ["r5", "r6"])
    assert out["applied"] is True
    assert {c["relation_id"] for c in out["changes"]} == {"r5", "r6"}
    assert all(c["new_weight"] < c["old_weight"] for c in out["changes"] if c["relation_id"] == "r5")
    again = tool.invoke({"run_id": "run-7", "rating": "poor", "relation_ids": ["r5", "r6"]})
    assert again["applied"] is False and again["changes"] == []
    neutral = tool.invoke({"run_id": "run-7", "rating": "neutral", "relation_ids": ["r5"]})
    assert neutral["changes"] == [] and neutral["rating"] is None


def test_concurrent_feedback_on_fake_store_loses_nothing(store: FakeStore) -> None:
    def worker(k: int) -> None:
        for j in range(20):
            _apply(store, f"run-{k}-{j}", "excellent" if (k + j) % 2 else "poor", ["r1", "r2"])

    assert run_threads(worker, 4) == []
    assert len({c.feedback_id for c in store.audit}) == 80
    assert all(store.weight(r) > 0 for r in store.edges)
