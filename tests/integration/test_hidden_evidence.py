"""Disputed edges never reach the packed evidence (issue 41), through the compiled retrieval graph.

The shipped demo KG in a real embedded store, the real MiniLM linker and the retrieval graph
in each mode: the edges behind the first items a question gets are disputed, and the same
question run again, on the whole-KG index and pushed down, must show none of them, still
show evidence, and give the same evidence in both index modes. A restore brings the first
evidence back.

A verdict committed in this process tells the index cache (``notify_disputes_changed``), so
the next question sees it at once. Until the store keeps verdicts itself, the store instance
is given the two reads the index cache uses (``disputed_relations``, ``disputes_version``),
as a store with verdicts has them.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

pytestmark = [pytest.mark.slow]

QUESTION = "I have had a fever, a cough and body aches for two days. What could it be?"

#: The store's disputes version: never the same number for two disputed sets, as in a real store.
_VERSIONS = itertools.count(1_000_000)  # far from the real counter a later test moves


def _key(evidence: list[Any]) -> list[tuple[str, str, tuple[str, ...], float]]:
    return [(e.id, e.text, tuple(e.relation_ids), round(e.score, 9)) for e in evidence]


def _shown(evidence: list[Any]) -> set[str]:
    return {rid for ev in evidence for rid in ev.relation_ids}


@pytest.mark.parametrize("mode", ["full", "kgcot", "mindmap", "hykge"])
def test_packed_evidence_never_carries_a_disputed_edge(
    demo_uri: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgmind.graphs.context import Context
    from kgmind.graphs.pipeline import build_retrieval_graph
    from kgmind.retrievers.graph_index_cache import notify_disputes_changed
    from kgmind.stores.factory import open_store

    graph = build_retrieval_graph().compile()

    def run(exploration: str) -> list[Any]:
        ctx = Context(mode=mode, store=demo_uri, hypothesis=False, exploration=exploration)
        return list(graph.invoke({"question": QUESTION}, context=ctx)["selected_evidence"])

    before = run("memory")
    disputed = _shown(before[:3])
    assert disputed, "the demo KG has evidence for the question"
    verdicts = {"version": next(_VERSIONS), "ids": dict.fromkeys(disputed, "disputed")}
    store = open_store(demo_uri)
    monkeypatch.setattr(store, "disputed_relations", lambda: dict(verdicts["ids"]), raising=False)
    monkeypatch.setattr(store, "disputes_version", lambda: verdicts["version"], raising=False)
    notify_disputes_changed(demo_uri)  # what a verdict's commit does in this process

    runs = {exploration: run(exploration) for exploration in ("memory", "pushdown")}
    for exploration, evidence in runs.items():
        assert evidence, exploration  # the rest of the KG still answers
        assert not disputed & _shown(evidence), exploration
        assert all(ev.id for ev in evidence)  # numbered as packed
    assert _key(runs["pushdown"]) == _key(runs["memory"])

    verdicts.update(version=next(_VERSIONS), ids={})  # restored
    notify_disputes_changed(demo_uri)
    assert _key(run("memory")) == _key(before)
    assert _key(run("pushdown")) == _key(before)


def test_real_verdicts_hide_an_edge_until_it_is_restored(demo_uri: str) -> None:
    """A review calling the first item's edges wrong hides them and their twins; restore undoes it."""
    from kgmind.graphs.context import Context
    from kgmind.graphs.pipeline import build_retrieval_graph
    from kgmind.retrievers.graph_index_cache import get_graph_index
    from kgmind.stores.factory import open_store
    from kgmind.stores.feedback import apply_verdicts, restore_dispute

    graph = build_retrieval_graph().compile()

    def run(exploration: str) -> list[Any]:
        ctx = Context(mode="full", store=demo_uri, hypothesis=False, exploration=exploration)
        return list(graph.invoke({"question": QUESTION}, context=ctx)["selected_evidence"])

    store = open_store(demo_uri)
    flagged = sorted(_shown(run("memory")[:1]))
    assert flagged
    twins = {t for ts in store.relation_twins(flagged).values() for t in ts}
    apply_verdicts(store, "review-1:N1:wrong", "review-1", [(r, "wrong") for r in flagged], source="t")
    assert set(store.disputed_relations()) == {*flagged, *twins}
    runs = {exploration: run(exploration) for exploration in ("memory", "pushdown")}
    for exploration, evidence in runs.items():
        assert evidence and not {*flagged, *twins} & _shown(evidence), exploration
    assert _key(runs["pushdown"]) == _key(runs["memory"])
    restored = [restore_dispute(store, r, source="t") for r in flagged]  # a twin restored already: False
    assert restored[0] and any(restored)
    assert store.disputed_relations() == {}
    run("memory")
    assert not get_graph_index(store).hidden.ids  # the cache followed the restore
