"""Node ``aggregate_evidence``: rerank, dedupe and prune all evidence, spend the budget, number it.

Evidence from every branch is reranked against the hypothesis chunks (HyKGE's HO
fragment granularity; the default reranker leaves the question out, see
``EntityVectorReranker``), deduplicated and pruned. In ``full`` mode the budget is then
spent by expected value per token (:mod:`kgmind.retrievers.packing`: the candidate
diseases and the best one's tests and medications first, each fact paid for once,
stopping when what is left is worth little); the single-method modes keep their items
in rank order while they fit ``budget_tokens``. Items are numbered P…/N…/C…/K…. With
``evidence_renderer="llm"`` one extra LLM call rewrites the template sentences as prose
(MindMap's third call); ids are kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage
from langgraph.runtime import Runtime

from kgmind.graphs import services
from kgmind.graphs.context import Context, context_of
from kgmind.graphs.state import State
from kgmind.models import Evidence
from kgmind.prompts.evidence import render_evidence_prompt
from kgmind.tuning import EVIDENCE_VALUES

if TYPE_CHECKING:
    from kgmind.retrievers.aggregate import Tokenizer

__all__ = [
    "aggregate_evidence",
    "aggregate_evidence_for_answer",
    "choose_evidence",
    "evidence_block",
    "rewrite_evidence",
]

_LINE = re.compile(r"^\s*\[?([PNCKD]\d+)\]?\s*[:：.)\]-]\s*(.+?)\s*$", re.M)


_DELIMS = re.compile(r'"""|</?\s*evidence\s*>', re.I)


def _quote(text: str) -> str:
    """Evidence text on one line, with the evidence block's own delimiters neutralised.

    KG text is data: a name or description containing the closing evidence tag or a
    triple quote must not close the block early, and a newline must not forge a new
    ``P99:`` line.
    """
    text = " ".join(text.splitlines())
    return _DELIMS.sub(
        lambda m: "'''" if m.group(0) == '"""' else m.group(0).replace("<", "‹").replace(">", "›"), text
    )


def evidence_block(evidence: Sequence[Evidence]) -> str:
    """Numbered evidence lines ``ID: text`` as the prompts show them, each quoted onto one line."""
    return "\n".join(f"{e.id}: {_quote(e.text)}" for e in evidence)


def rewrite_evidence(llm: Any, evidence: Sequence[Evidence], language: str) -> list[Evidence]:
    """Rewrite evidence texts with one LLM call; items the reply misses keep their text.

    Args:
        llm: Chat model or Runnable returning a message or text.
        evidence: Numbered evidence.
        language: Prompt language.

    Returns:
        Copies of ``evidence`` with rewritten ``text`` (template text kept in ``meta``).

    """
    messages: list[BaseMessage] = render_evidence_prompt(language).format_messages(
        evidence=evidence_block(evidence)
    )
    reply = llm.invoke(messages, config={"run_name": "render_evidence_llm"})
    text = reply.content if hasattr(reply, "content") else str(reply)
    rewritten = {m.group(1): m.group(2) for m in _LINE.finditer(text if isinstance(text, str) else str(text))}
    out: list[Evidence] = []
    for ev in evidence:
        new = rewritten.get(ev.id)
        if new:
            out.append(ev.model_copy(update={"text": new, "meta": {**ev.meta, "template_text": ev.text}}))
        else:
            out.append(ev)
    return out


def aggregate_evidence(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Select the evidence for a reader the graph does not know (the retrieval graph).

    The budget is counted by the word-based approximation
    (:func:`kgmind.retrievers.aggregate.count_tokens`): the evidence goes to the caller's
    own model. See :func:`_select` for what is returned.
    """
    return _select(state, runtime, None)


def aggregate_evidence_for_answer(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Select the evidence the graph's own model will read (the full graph's node ``aggregate_evidence``).

    The budget is counted in that model's tokens where they are at hand (the local
    llama.cpp models, :func:`kgmind.llm.local_tokenizer`), so ``budget_tokens`` is what the
    prompt really carries. Measured on the calibration split (40 questions, 0.5B model):
    the approximation let ~550 Qwen tokens through for a 300 budget; counted exactly, the
    answer named more gold entities (answer recall 0.457 -> 0.492, precision 0.150 ->
    0.174) and a full run took 10.0 -> 8.2 s (benchmarks/results/2026-11-24-reader-tokens-calib/).
    """
    from kgmind.llm import local_tokenizer

    ctx = context_of(runtime)
    return _select(state, runtime, local_tokenizer(ctx.model))


def choose_evidence(
    ctx: Context,
    pool: Sequence[Evidence],
    question: str,
    hypothesis: str = "",
    *,
    language: str = "",
    seeds: Sequence[str] = (),
    tokenizer: Tokenizer | None = None,
) -> list[Evidence]:
    """The aggregate stage as the graph runs it (the node, and benchmarks timing it, call this).

    In ``full`` mode with ``packing="value"`` the budget is spent by the language's fitted
    :data:`~kgmind.tuning.EVIDENCE_VALUES` and the entities' types read off the explored index;
    otherwise in rank order. See :func:`kgmind.retrievers.aggregate.aggregate_evidence`.

    Args:
        ctx: The run's settings (``budget_tokens``, ``mode``, ``packing``, the store).
        pool: The evidence of every exploration branch.
        question: The user question.
        hypothesis: The hypothesis output, may be empty.
        language: ``en`` or ``zh``; ``""``: resolved from ``question`` as the graph does.
        seeds: The linked entity ids the exploration started from.
        tokenizer: Counts the budget exactly (the reader's tokens); ``None``: approximately.

    Returns:
        The numbered evidence the reader is shown.
    """
    from kgmind.retrievers import aggregate

    value, types = None, None
    if ctx.packs_by_value and pool:
        language = language or services.resolve_language(ctx, question)
        value = EVIDENCE_VALUES["zh" if language == "zh" else "en"]
        types = services.index_entity_types(ctx, seeds, pool)
    reranker = (
        None
        if ctx.rerank_question is None
        else aggregate.default_reranker(pool, question=ctx.rerank_question)
    )
    return aggregate.aggregate_evidence(
        pool,
        question,
        hypothesis,
        reranker=reranker,
        budget_tokens=ctx.budget_tokens,
        tokenizer=tokenizer,
        value=value,
        types=types,
    )


def _select(state: State, runtime: Runtime[Context], tokenizer: Tokenizer | None) -> dict[str, Any]:
    """Select the evidence the LLM will see.

    Args:
        state: The four evidence lists, ``question`` and ``hypothesis``.
        runtime: LangGraph runtime with the :class:`Context` (``budget_tokens``, ``packing``,
            ``evidence_renderer``).
        tokenizer: Counts the budget exactly (the reader's tokens); ``None``: approximately.

    Returns:
        ``selected_evidence`` (numbered), timing, LLM calls (0, or 1 with the LLM
        renderer) and the ``no_kg_evidence`` flag when nothing survived.

    """
    ctx = context_of(runtime)
    timings: dict[str, float] = {}
    calls = 0
    with services.timed("aggregate_evidence", timings):
        pool: list[Evidence] = [
            *(state.get("path_evidence") or []),
            *(state.get("neighbor_evidence") or []),
            *(state.get("chain_evidence") or []),
            *(state.get("kgcot_evidence") or []),
        ]
        selected = choose_evidence(
            ctx,
            pool,
            state["question"],
            state.get("hypothesis", ""),
            language=state.get("language") or "",
            seeds=[le.entity_id for le in state.get("linked_entities") or []],
            tokenizer=tokenizer,
        )
        if selected and ctx.evidence_renderer == "llm":
            selected = rewrite_evidence(
                services.get_llm(ctx, "render"), selected, state.get("language") or "en"
            )
            calls = 1
    services.trace_evidence("aggregate_evidence.selected", selected, kgmind_pool_size=len(pool))
    services.release_question_heap(ctx)  # the explorations are done: what they freed goes back
    return {
        "selected_evidence": selected,
        "llm_calls": calls,
        "timings_ms": timings,
        "flags": {"no_kg_evidence": not selected},
    }
