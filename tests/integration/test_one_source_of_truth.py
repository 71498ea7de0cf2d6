"""The evaluation measures the product: `kgmind eval`, the compiled graph and the LangChain retriever agree.

Same question, same settings, the real embedded store with the shipped demo KG and the
real MiniLM embedder: the evidence that ``kgmind eval``'s ``kgmind`` method scores is
the evidence the graph selects and the evidence ``KGMindRetriever`` returns. Without an
LLM (``Context(hypothesis=False)``) and with the deterministic ``fake:`` model.
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = [pytest.mark.slow]

QUESTIONS = [
    "I have had a fever, a cough and body aches for two days. What could it be?",
    "My joints are swollen and painful in the morning. Which tests should I take?",
]


def _key(evidence: list[Any]) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(e.id, e.text, tuple(e.relation_ids)) for e in evidence]


@pytest.mark.parametrize("model", [None, "fake:truth"])
def test_eval_graph_and_retriever_return_the_same_evidence(demo_uri: str, model: str | None) -> None:
    from kgmind.eval.methods import run_graph
    from kgmind.eval.resources import Resources
    from kgmind.graphs.pipeline import build_retrieval_graph
    from kgmind.graphs.retriever import KGMindRetriever

    res = Resources(store_uri=demo_uri, model=model)
    ctx = res.context("full", 800)
    retriever = KGMindRetriever(context=ctx)
    graph = build_retrieval_graph().compile()
    for question in QUESTIONS:
        from_eval = run_graph("full", question, [], res, 800)
        from_graph = graph.invoke({"question": question}, context=ctx)["selected_evidence"]
        docs = retriever.invoke(question)
        assert from_eval.evidence, "the demo KG has evidence for these questions"
        assert _key(from_eval.evidence) == _key(from_graph)
        # the retriever returns the same items, best-scored first (ties in the graph's order)
        by_score = sorted(from_graph, key=lambda e: -e.score)
        assert [(d.metadata["id"], d.page_content, tuple(d.metadata["relation_ids"])) for d in docs] == _key(
            by_score
        )
        assert bool(from_eval.hypothesis) == (model is not None)


def test_eval_context_is_the_shipped_default(demo_uri: str) -> None:
    from dataclasses import asdict

    from kgmind.eval.resources import Resources
    from kgmind.graphs.context import Context
    from kgmind.llm import DEFAULT_MODEL

    ctx = asdict(Resources(store_uri=demo_uri, model=DEFAULT_MODEL).context("full", Context().budget_tokens))
    shipped = asdict(Context())
    differs = {k for k in shipped if ctx[k] != shipped[k]}
    assert differs <= {"store", "feedback"}, differs  # the run's store; eval never waits for a rating
