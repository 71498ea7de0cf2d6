"""The kgmind graph: HyKGE hypothesis → linking → parallel exploration → MindMap/KGCoT reasoning → feedback.

Read top to bottom it is the method: the hypothesis (HyKGE) names entities, the
mentions are linked above δ, the tools the mode selects explore the KG in parallel
(``Send``), evidence is reranked and budgeted, the LLM answers with an inference chain
and a mind map (MindMap, or KGCoT's chain prompt), the answer is checked against the
evidence, and a rating updates edge weights (KGCoT). ``graph`` is compiled without a
checkpointer: LangGraph Studio adds its own; the CLI compiles with SQLite.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from kgmind.graphs.aggregate_evidence import aggregate_evidence, aggregate_evidence_for_answer
from kgmind.graphs.apply_feedback import apply_feedback
from kgmind.graphs.check_grounding import check_grounding
from kgmind.graphs.context import Context, context_of
from kgmind.graphs.explore import explore_chains, explore_kgcot, explore_neighbors, explore_paths
from kgmind.graphs.extract_entities import extract_entities
from kgmind.graphs.generate_hypothesis import generate_hypothesis
from kgmind.graphs.link_entities import link_entities
from kgmind.graphs.plan_exploration import EXPLORATION_NODES, plan_exploration
from kgmind.graphs.prepare_run import prepare_run
from kgmind.graphs.reason_kgcot import reason_kgcot
from kgmind.graphs.reason_mindmap import reason_mindmap
from kgmind.graphs.request_feedback import request_feedback
from kgmind.graphs.state import Answer, ExploreTask, Question, State

#: The type of the uncompiled kgmind graphs.
KGraph = StateGraph[State, Context, Question, Answer]

__all__ = [
    "KGraph",
    "build_graph",
    "build_retrieval_graph",
    "graph",
    "route_feedback",
    "route_reasoning",
    "route_start",
]


def route_start(state: State, runtime: Runtime[Context]) -> str:
    """``llm_only`` skips retrieval; every other mode starts with the hypothesis."""
    ctx = context_of(runtime)
    return "reason_mindmap" if ctx.mode == "llm_only" else "generate_hypothesis"


def route_reasoning(state: State, runtime: Runtime[Context]) -> str:
    """KGCoT mode reasons with KGCoT's chain prompt; the others with MindMap's."""
    ctx = context_of(runtime)
    return "reason_kgcot" if ctx.mode == "kgcot" and state.get("selected_evidence") else "reason_mindmap"


def route_feedback(state: State, runtime: Runtime[Context]) -> str:
    """Ask for feedback unless it is off."""
    ctx = context_of(runtime)
    return END if ctx.feedback == "off" else "request_feedback"


def _add_retrieval(
    g: KGraph, no_evidence_target: str, aggregate: Callable[..., dict[str, Any]] = aggregate_evidence
) -> None:
    g.add_node(prepare_run)
    g.add_node(generate_hypothesis)
    g.add_node(extract_entities)
    g.add_node(link_entities, retry_policy=RetryPolicy(max_attempts=2))
    # Send branches take an ExploreTask, not the State; LangGraph's overloads do not type that.
    g.add_node(explore_paths, input_schema=ExploreTask)  # type: ignore[call-overload]
    g.add_node(explore_neighbors, input_schema=ExploreTask)  # type: ignore[call-overload]
    g.add_node(explore_chains, input_schema=ExploreTask)  # type: ignore[call-overload]
    g.add_node(explore_kgcot, input_schema=ExploreTask)  # type: ignore[call-overload]
    g.add_node("aggregate_evidence", aggregate)
    g.add_edge(START, "prepare_run")
    g.add_edge("generate_hypothesis", "extract_entities")
    g.add_edge("extract_entities", "link_entities")
    g.add_conditional_edges(
        "link_entities",
        plan_exploration,
        {**{n: n for n in EXPLORATION_NODES}, "reason_mindmap": no_evidence_target},
    )
    for node in EXPLORATION_NODES:
        g.add_edge(node, "aggregate_evidence")


def build_graph() -> KGraph:
    """Return the full kgmind StateGraph (uncompiled).

    Returns:
        ``StateGraph(State, context_schema=Context, input_schema=Question, output_schema=Answer)``.

    """
    g = StateGraph(State, context_schema=Context, input_schema=Question, output_schema=Answer)
    # the graph's own model reads the evidence: its budget is counted in that model's tokens
    _add_retrieval(g, "reason_mindmap", aggregate_evidence_for_answer)
    g.add_node(reason_mindmap)
    g.add_node(reason_kgcot)
    g.add_node(check_grounding)
    g.add_node(request_feedback)
    g.add_node(apply_feedback)
    g.add_conditional_edges("prepare_run", route_start, ["generate_hypothesis", "reason_mindmap"])
    g.add_conditional_edges("aggregate_evidence", route_reasoning, ["reason_mindmap", "reason_kgcot"])
    g.add_edge("reason_mindmap", "check_grounding")
    g.add_edge("reason_kgcot", "check_grounding")
    g.add_conditional_edges("check_grounding", route_feedback, ["request_feedback", END])
    g.add_edge("request_feedback", "apply_feedback")
    g.add_edge("apply_feedback", END)
    return g


def build_retrieval_graph() -> KGraph:
    """Return the retrieval half only (hypothesis → … → ``aggregate_evidence``), for the LangChain retriever.

    Returns:
        A StateGraph ending after evidence selection (``selected_evidence`` in the output).

    """
    g = StateGraph(State, context_schema=Context, input_schema=Question, output_schema=Answer)
    _add_retrieval(g, END)
    g.add_edge("prepare_run", "generate_hypothesis")
    g.add_edge("aggregate_evidence", END)
    return g


graph = build_graph().compile(name="kgmind")
