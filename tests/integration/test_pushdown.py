"""Pushed-down exploration reads only each question's neighbourhood and selects the same evidence.

The real embedded store with the shipped demo KG, the real MiniLM linker and the compiled
graph: every mode runs once on the whole-KG index (``exploration="memory"``) and once on a
pushed-down index read from the store (``"pushdown"``), which the questions of a worker share;
the evidence must be identical.
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = [pytest.mark.slow]

QUESTIONS = [
    "I have had a fever, a cough and body aches for two days. What could it be?",
    "My joints are swollen and painful in the morning. Which tests should I take?",
    "I feel thirsty all the time and urinate a lot, and I am losing weight.",
]


def _key(evidence: list[Any]) -> list[tuple[str, str, tuple[str, ...], float]]:
    return [(e.id, e.text, tuple(e.relation_ids), round(e.score, 9)) for e in evidence]


@pytest.mark.parametrize("mode", ["full", "kgcot", "mindmap", "hykge"])
def test_pushdown_selects_the_same_evidence_as_the_whole_kg_index(demo_uri: str, mode: str) -> None:
    from kgmind.graphs.context import Context
    from kgmind.graphs.pipeline import build_retrieval_graph

    graph = build_retrieval_graph().compile()
    for question in QUESTIONS:
        runs = {}
        for exploration in ("memory", "pushdown"):
            ctx = Context(mode=mode, store=demo_uri, hypothesis=False, exploration=exploration)
            runs[exploration] = graph.invoke({"question": question}, context=ctx)["selected_evidence"]
        assert runs["memory"], f"the demo KG has evidence for {question!r}"
        assert _key(runs["pushdown"]) == _key(runs["memory"])


@pytest.mark.parametrize("kept_edges", [0, 10**9])
def test_questions_sharing_a_pushed_down_index_get_their_own_evidence(
    demo_uri: str, kept_edges: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever earlier questions completed, a question's evidence is its memory-mode evidence.

    ``kept_edges=0``: an index per question; 10**9: one index grown by every question (in
    the reverse order of the test above, so each finds other questions' nodes complete).
    """
    from kgmind.graphs.context import Context
    from kgmind.graphs.pipeline import build_retrieval_graph
    from kgmind.retrievers import graph_index_cache as gx

    graph = build_retrieval_graph().compile()

    def evidence(question: str, exploration: str) -> list[Any]:
        ctx = Context(mode="full", store=demo_uri, hypothesis=False, exploration=exploration)
        return _key(graph.invoke({"question": question}, context=ctx)["selected_evidence"])

    memory = {q: evidence(q, "memory") for q in QUESTIONS}
    shared = gx._SharedNeighborhoods(kept_edges)
    monkeypatch.setattr(gx, "_NEIGHBORHOODS", shared)
    for question in reversed(QUESTIONS):
        assert evidence(question, "pushdown") == memory[question]
    assert len(shared) == 1  # one index served every question, or (0) only the last one is kept


def test_a_pushed_down_index_holds_the_neighbourhood_only(demo_uri: str) -> None:
    from kgmind.retrievers.exploration import hykge_chains, neighbor_evidence, weighted_dfs_chains
    from kgmind.retrievers.graph_index import GraphIndex
    from kgmind.retrievers.graph_index_cache import get_graph_index, get_neighborhood_index
    from kgmind.stores.factory import open_store

    store = open_store(demo_uri)
    full = get_graph_index(store)
    seed = max(
        range(full.num_nodes), key=lambda i: len(full.out_adj[i]) if full.types[i] == "symptom" else -1
    )
    seeds = [full.ids[seed]]
    part = get_neighborhood_index(store, seeds)
    assert part.pushed_down and not full.pushed_down
    assert 0 < part.num_edges < full.num_edges
    assert get_neighborhood_index(store, seeds) is part  # the explore nodes of one run share it
    # the same searches see the same graph, though only part of it is loaded
    for fn in (neighbor_evidence, hykge_chains):
        assert _key(fn(part, seeds)) == _key(fn(full, seeds))  # type: ignore[operator]
    loaded = part.num_edges
    assert _key(weighted_dfs_chains(part, seeds, n_chains=5, max_depth=4, seed=3)) == _key(
        weighted_dfs_chains(full, seeds, n_chains=5, max_depth=4, seed=3)
    )
    assert part.num_edges > loaded  # deep DFS steps completed nodes from the store on the way
    fresh = GraphIndex.neighborhood(store, ["no-such-entity"])
    assert fresh.num_nodes == 0 and fresh.num_edges == 0


def test_auto_pushes_down_only_above_the_threshold(demo_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from kgmind.retrievers import graph_index_cache as gx
    from kgmind.stores.factory import open_store

    store = open_store(demo_uri)
    assert not gx.pushdown_wanted(store, "auto")  # the demo KG is small
    assert gx.pushdown_wanted(store, "pushdown") and not gx.pushdown_wanted(store, "memory")
    monkeypatch.setattr(gx, "PUSHDOWN_MIN_RELATIONS", 10)
    assert gx.pushdown_wanted(store, "auto")
    with pytest.raises(ValueError, match="exploration"):
        gx.pushdown_wanted(store, "lazy")


def test_a_pushed_down_question_gives_its_freed_heap_back(
    demo_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After its explorations a pushed-down question trims the heap once; a whole-KG one does not."""
    from kgmind import machine
    from kgmind.graphs.context import Context
    from kgmind.graphs.pipeline import build_retrieval_graph

    calls: list[str] = []
    monkeypatch.setattr(machine, "release_free_heap", lambda: calls.append("trim") is None)
    graph = build_retrieval_graph().compile()
    for exploration in ("memory", "pushdown"):
        ctx = Context(mode="full", store=demo_uri, hypothesis=False, exploration=exploration)
        assert graph.invoke({"question": QUESTIONS[0]}, context=ctx)["selected_evidence"]
        assert calls == ([] if exploration == "memory" else ["trim"])
