"""Router ``plan_exploration``: fan out (``Send``) to the exploration tools the mode selects.

full: MindMap paths + ranked neighbors, HyKGE chains and KGCoT weighted DFS;
mindmap: paths + neighbors (faithful); hykge: chains; kgcot: DFS. Without linked
entities (or in ``llm_only`` mode) the run goes straight to reasoning.
"""

from __future__ import annotations

import re

from langgraph.runtime import Runtime
from langgraph.types import Send

from kgmind.graphs.check_grounding import mention_position
from kgmind.graphs.context import Context, context_of
from kgmind.graphs.state import ExploreTask, State
from kgmind.models import LinkedEntity, normalize_name
from kgmind.relations import DISEASE
from kgmind.text import CJK, has_cjk

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

    A word inside a finding the question states, linked from another of its phrases, is
    that finding's word, not a diagnosis: "my eyes burn and sting" states "Eye burns or
    stings", so "burn" does not make the disease Burn the patient's own. A finding linked
    by a near name the question does not state ("红色胎记" → 白色胎记) leaves the word named.
    """
    findings = [le for le in linked if le.type != DISEASE]
    return [
        le.entity_id
        for le in linked
        if le.score >= 1.0
        and mention_position(question, le.mention) >= 0
        and not any(f.mention != le.mention and _holds(f.name, le.mention, question) for f in findings)
    ]


def _holds(name: str, word: str, question: str) -> bool:
    """Whether ``name``, stated by ``question``, holds ``word`` inside a longer name."""
    return (
        normalize_name(name) != normalize_name(word)
        and mention_position(name, word) >= 0
        and _states(question, name)
    )


def _states(text: str, name: str) -> bool:
    """Whether ``text`` says every word of ``name``: each CJK character, each Latin word of 3+ letters.

    Latin words match by a shared stem (:func:`_same_stem`), so "eyes burn" states "Eye
    burns"; no word list, no language model.
    """
    low = normalize_name(text)
    words = re.findall(r"[^\W\d_]{3,}", low)
    for unit in CJK.findall(name) + re.findall(r"[a-z]{3,}", normalize_name(name)):
        if has_cjk(unit):
            if unit not in low:
                return False
        elif not any(_same_stem(unit, w) for w in words):
            return False
    return True


def _same_stem(a: str, b: str) -> bool:
    """A shared stem of 3+ letters that each word passes by at most 3 ("burns", "pregnant" / "pregnancy")."""
    shared = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return shared >= 3 and max(len(a), len(b)) - shared <= 3
