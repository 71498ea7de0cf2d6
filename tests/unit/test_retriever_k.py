"""``KGMindRetriever`` follows LangChain's retriever conventions: ``k`` and best-scored documents first.

The retrieval graph is replaced by a stub returning fixed evidence, so these tests check the
adapter (ordering, ``k`` from the constructor or ``invoke``, bad input) without a store or model;
tests/integration/test_langchain_standard.py runs LangChain's standard suite on the real demo KG.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import ValidationError

from kgmind.graphs import retriever as retriever_mod
from kgmind.graphs.retriever import KGMindRetriever, top_k_documents
from kgmind.models import Evidence

# The pipeline's order (P before N, as the answer call numbers them) is not the score order.
EVIDENCE = [
    Evidence(id="P1", kind="path", text="fever -> influenza", score=0.4),
    Evidence(id="P2", kind="path", text="cough -> influenza", score=0.9),
    Evidence(id="N1", kind="neighbor", text="influenza: tests PCR", score=0.7),
    Evidence(id="N2", kind="neighbor", text="influenza: drug oseltamivir", score=0.9),
    Evidence(id="K1", kind="kgcot", text="cough -> bronchitis", score=0.1),
]


class _StubGraph:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def invoke(self, state: dict[str, Any], config: Any = None, context: Any = None) -> dict[str, Any]:
        self.calls.append(state)
        return {"selected_evidence": [ev.model_copy() for ev in EVIDENCE]}


@pytest.fixture
def graph(monkeypatch: pytest.MonkeyPatch) -> _StubGraph:
    stub = _StubGraph()
    monkeypatch.setattr(retriever_mod, "_retrieval_graph", lambda: stub)
    return stub


def _ids(docs: list[Any]) -> list[str]:
    return [d.metadata["id"] for d in docs]


def test_documents_come_best_scored_first_ties_in_pipeline_order(graph: _StubGraph) -> None:
    docs = KGMindRetriever().invoke("fever and cough")
    assert _ids(docs) == ["P2", "N2", "N1", "P1", "K1"]
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)
    assert graph.calls == [{"question": "fever and cough"}]


def test_default_k_returns_every_selected_item(graph: _StubGraph) -> None:
    assert KGMindRetriever().k is None
    assert len(KGMindRetriever().invoke("q")) == len(EVIDENCE)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_k_constructor_caps_the_documents(graph: _StubGraph, k: int) -> None:
    docs = KGMindRetriever(k=k).invoke("q")
    assert _ids(docs) == ["P2", "N2", "N1", "P1", "K1"][:k]


def test_k_larger_than_the_evidence_returns_all(graph: _StubGraph) -> None:
    assert len(KGMindRetriever(k=50).invoke("q")) == len(EVIDENCE)


def test_invoke_k_wins_over_the_constructor(graph: _StubGraph) -> None:
    retriever = KGMindRetriever(k=4)
    assert _ids(retriever.invoke("q", k=2)) == ["P2", "N2"]
    assert len(retriever.invoke("q")) == 4  # the keyword does not stick
    assert len(retriever.invoke("q", k=None)) == len(EVIDENCE)


def test_k_through_ainvoke_batch_and_bind(graph: _StubGraph) -> None:
    retriever = KGMindRetriever()
    assert _ids(asyncio.run(retriever.ainvoke("q", k=1))) == ["P2"]
    assert [len(d) for d in retriever.batch(["a", "b"], k=3)] == [3, 3]
    assert _ids(retriever.bind(k=2).invoke("q")) == ["P2", "N2"]


@pytest.mark.parametrize("bad", [0, -1, 1.5, "3", True])
def test_bad_k_is_a_clear_error(graph: _StubGraph, bad: Any) -> None:
    with pytest.raises(ValidationError):
        KGMindRetriever(k=bad)
    with pytest.raises(ValueError, match="k must be a whole number"):
        KGMindRetriever().invoke("q", k=bad)
    assert graph.calls == []  # rejected before any retrieval ran


def test_unknown_keyword_is_a_clear_error(graph: _StubGraph) -> None:
    with pytest.raises(TypeError, match="top_k"):
        KGMindRetriever().invoke("q", top_k=2)


def test_top_k_documents_reads_missing_scores_as_zero() -> None:
    from langchain_core.documents import Document

    docs = [Document("a"), Document("b", metadata={"score": 0.5}), Document("c", metadata={"score": None})]
    assert [d.page_content for d in top_k_documents(docs, None)] == ["b", "a", "c"]
    assert [d.page_content for d in top_k_documents(docs, 1)] == ["b"]
