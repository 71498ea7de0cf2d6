"""Node ``generate_hypothesis``: HyKGE's hypothesis output, which also names the entities (LLM NER).

One structured LLM call returns the hypothesis text and the entities of question and
hypothesis; the entities feed :mod:`extract_entities` as ``extra`` mentions.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kgmind.graphs import services
from kgmind.graphs.context import Context, context_of
from kgmind.graphs.state import State
from kgmind.llm import invoke_structured
from kgmind.prompts.hypothesis import hypothesis_prompt
from kgmind.prompts.parsing import parse_hypothesis
from kgmind.prompts.schemas import HypothesisOut

__all__ = ["HYPOTHESIS_MAX_TOKENS", "generate_hypothesis"]

#: The hypothesis is at most ~80 words plus an entity list: cap its generation.
HYPOTHESIS_MAX_TOKENS = 192


def generate_hypothesis(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Ask the LLM for a hypothesis answer and the entities it involves (one call).

    Args:
        state: Needs ``question`` and ``language``.
        runtime: LangGraph runtime with the :class:`Context`.

    Returns:
        ``hypothesis``, ``hypothesis_entities``, one LLM call, timing and a
        ``fallback_parse`` flag when the text parser had to be used. When the run makes no
        hypothesis call (:func:`~kgmind.graphs.services.hypothesis_skip`): an empty
        hypothesis, the ``hypothesis_skipped`` flag and a ``skipped`` progress event saying why.

    """
    ctx = context_of(runtime)
    skip = services.hypothesis_skip(ctx)
    if skip is not None:
        services.emit({"node": "generate_hypothesis", "status": "skipped", "why": skip})
        return {"hypothesis": "", "hypothesis_entities": [], "flags": {"hypothesis_skipped": True}}
    timings: dict[str, float] = {}
    with services.timed("generate_hypothesis", timings):
        language = state.get("language") or services.resolve_language(ctx, state["question"])
        messages = hypothesis_prompt(language).format_messages(question=state["question"])
        result = invoke_structured(
            services.get_llm(ctx, "hypothesis", max_tokens=min(ctx.max_tokens, HYPOTHESIS_MAX_TOKENS)),
            HypothesisOut,
            messages,
            parse_hypothesis,
            config={"run_name": "hypothesis_llm", "metadata": {"kgmind_purpose": "hypothesis"}},
        )
    out: HypothesisOut = result.value
    entities = list(dict.fromkeys(e.strip() for e in out.entities if e and e.strip()))
    return {
        "hypothesis": out.hypothesis.strip(),
        "hypothesis_entities": entities,
        "llm_calls": 1,
        "timings_ms": timings,
        "flags": {"fallback_parse": result.used_fallback},
    }
