"""Node ``reason_kgcot``: KGCoT's reasoning prompt — chains and their knowledge as prior turns.

Each evidence item becomes a chain ``e1 -> r1 -> e2 …`` with its knowledge (the
documents behind its edges, when the DFS attached them); output schema and parsing
are those of ``reason_mindmap``.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kgmind.graphs import services
from kgmind.graphs.context import Context, context_of
from kgmind.graphs.reason_mindmap import run_reasoning
from kgmind.graphs.state import State
from kgmind.models import Evidence
from kgmind.prompts.kgcot import build_kgcot_messages

__all__ = ["chain_text", "knowledge_text", "reason_kgcot"]


def chain_text(ev: Evidence) -> str:
    """Return the chain as ``e1 -> r1 -> e2 -> r2 -> e3`` (falls back to the evidence text).

    A chain whose middle edge was already shown by an earlier item (evidence shows each
    fact once) has a gap: it is written as segments joined by ``; ``, never as one chain
    through a relation that does not exist.
    """
    if not ev.triples:
        return ev.text
    segments: list[list[str]] = []
    for head, rel, tail in ev.triples:
        if not segments or segments[-1][-1] != head:
            segments.append([head])
        segments[-1] += [rel, tail]
    return "; ".join(" -> ".join(seg) for seg in segments)


def knowledge_text(ev: Evidence) -> str:
    """Return the knowledge attached to a chain (KGCoT edge documents), else its sentence."""
    knowledge = ev.meta.get("knowledge")
    if isinstance(knowledge, list | tuple):
        knowledge = " ".join(str(k) for k in knowledge if k)
    if isinstance(knowledge, dict):
        knowledge = " ".join(str(v) for v in knowledge.values() if v)
    return str(knowledge).strip() if knowledge else ev.text


def reason_kgcot(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Answer with KGCoT's prompt over the selected chains.

    Args:
        state: ``question``, ``language`` and ``selected_evidence``.
        runtime: LangGraph runtime with the :class:`Context`.

    Returns:
        See :func:`kgmind.graphs.reason_mindmap.run_reasoning`.

    """
    ctx = context_of(runtime)
    language = state.get("language") or services.resolve_language(ctx, state["question"])
    evidence = list(state.get("selected_evidence") or [])
    chains = [(ev.id, chain_text(ev), knowledge_text(ev)) for ev in evidence]
    messages = build_kgcot_messages(state["question"], chains, language)
    linked = list(state.get("linked_entities") or [])
    return run_reasoning("reason_kgcot", messages, evidence, ctx, state["question"], linked)
