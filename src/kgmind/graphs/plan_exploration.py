"""Router ``plan_exploration``: fan out (``Send``) to the exploration tools the mode selects.

full: MindMap paths + ranked neighbors, HyKGE chains and KGCoT weighted DFS;
mindmap: paths + neighbors (faithful); hykge: chains; kgcot: DFS. Without linked
entities (or in ``llm_only`` mode) the run goes straight to reasoning.
"""

from __future__ import annotations

from langgraph.runtime import Runtime
from langgraph.types import Send

from kgmind.graphs.check_grounding import mention_position
from kgmind.graphs.context import Context, context_of
from kgmind.graphs.state import ExploreTask, State
from kgmind.models import LinkedEntity

__all__ = ["EXPLORATION_NODES", "TOOLS_BY_MODE", "plan_exploration"]

#: Every exploration node of the graph.
EXPLORATION_NODES: tuple[str, ...] = ("explore_paths", "explore_neighbors", "explore_chains", "explore_kgcot")

#: The exploration nodes each mode runs in parallel.
TOOLS_BY_MODE: dict[str, tuple[str, ...]] = {
    "full": EXPLORATION_NODES,
    "mindmap": ("explore_paths", "explore_neighbors"),
    "hykge": ("explore_chains",),
    "kgcot": ("explore_kgcot",),
    "llm_only": (),
}


def plan_exploration(state: State, runtime: Runtime[Context]) -> list[Send] | str:
    """Choose the exploration branches.

    Args:
        state: Needs ``linked_entities``.
        runtime: LangGraph runtime with the :class:`Context` (``mode``).

    Returns:
        One ``Send`` per tool, or ``"reason_mindmap"`` when there is nothing to explore.

    """
    ctx = context_of(runtime)
    linked = state.get("linked_entities") or []
    tools = TOOLS_BY_MODE.get(ctx.mode, ())
    if not linked or not tools:
        return "reason_mindmap"
    task = ExploreTask(
        entity_ids=[le.entity_id for le in linked],
        phrases=[le.mention for le in linked],
        named=_named(linked, state.get("question") or ""),
    )
    return [Send(node, task) for node in tools]


def _named(linked: list[LinkedEntity], question: str) -> list[str]:
    """The entities the question names word for word: linked exactly from its own words.

    Its words by :func:`~kgmind.graphs.check_grounding.mention_position`, the grounding check's rule;
    not the hypothesis' or another extractor's words: a disease a guess names is not the
    patient's diagnosis (:attr:`~kgmind.tuning.PipelineSettings.named_disease_votes`).
    """
    return [le.entity_id for le in linked if le.score >= 1.0 and mention_position(question, le.mention) >= 0]
