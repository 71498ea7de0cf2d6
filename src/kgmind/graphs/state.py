"""The graph state: what each node reads and writes, with reducers for parallel branches.

Exploration tools run as parallel ``Send`` branches; each writes its own evidence list,
and lists, LLM call counts, timings and flags are merged by reducers instead of
overwritten.
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

# typing_extensions' TypedDict: pydantic (LangGraph's schema introspection, Studio's input form)
# refuses typing.TypedDict on Python < 3.12
from typing_extensions import TypedDict

from kgmind.models import Evidence, LinkedEntity, Mention

__all__ = [
    "RESET",
    "Answer",
    "ExploreTask",
    "Question",
    "State",
    "add_count",
    "extend_list",
    "merge_dicts",
    "merge_flags",
]

#: Writing ``RESET`` (None) to a reduced key clears it: a new question on a reused
#: thread (Studio) starts from empty evidence, zero LLM calls and no flags.
RESET = None


def extend_list(left: list[Any] | None, right: list[Any] | None) -> list[Any]:
    """Reducer: concatenate parallel branch outputs; ``None`` resets to ``[]``."""
    if right is None:
        return []
    return [*(left or []), *right]


def add_count(left: int | None, right: int | None) -> int:
    """Reducer: sum counts; ``None`` resets to 0."""
    if right is None:
        return 0
    return (left or 0) + right


def merge_dicts(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Reducer: the union of two dicts, ``right`` winning on equal keys; ``None`` resets."""
    if right is None:
        return {}
    return {**(left or {}), **right}


def merge_flags(left: dict[str, bool] | None, right: dict[str, bool] | None) -> dict[str, bool]:
    """Reducer for flags: a flag once raised stays raised (until a ``None`` reset)."""
    if right is None:
        return {}
    out = dict(left or {})
    for key, value in right.items():
        out[key] = bool(out.get(key)) or bool(value)
    return out


class Question(TypedDict):
    """Graph input: the question, optionally pre-extracted entity mentions and a reference answer.

    ``entities`` are mentions a caller already has (its own NER, or a data set's stored
    ChatGPT entities in ``kgmind eval``); they join the LLM's and the gazetteer's
    mentions. ``reference`` is used by ``feedback=auto``.
    """

    question: str
    entities: NotRequired[list[str]]
    reference: NotRequired[str]


class Answer(TypedDict, total=False):
    """Graph output: the answer, its reasoning, the evidence it rests on and run diagnostics."""

    run_id: str
    question: str
    hypothesis: str
    answer: str
    inference_chain: list[dict[str, Any]]
    mind_map: dict[str, Any]
    conclusions: dict[str, list[str]]
    own_knowledge: list[str]
    selected_evidence: list[Evidence]
    linked_entities: list[LinkedEntity]
    grounding: dict[str, Any]
    feedback: dict[str, Any]
    llm_calls: int
    timings_ms: dict[str, float]
    flags: dict[str, bool]


class State(TypedDict, total=False):
    """Everything a run carries from node to node.

    Attributes:
        question: The user's question.
        entities: Pre-extracted mentions given with the question (input).
        reference: Optional reference answer (used by ``feedback=auto``).
        run_id: Id of this run (the thread id when a checkpointer is used).
        store_uri: The store the run read (feedback writes to the same one).
        language: ``en`` or ``zh``.
        hypothesis: HyKGE hypothesis output (the LLM's first, unsupported answer).
        hypothesis_entities: Entities the hypothesis call named (LLM NER).
        mentions: Candidate entity mentions from gazetteer, embeddings and the LLM.
        linked_entities: Mentions linked to KG entities.
        path_evidence / neighbor_evidence / chain_evidence / kgcot_evidence: Evidence
            from each exploration tool (parallel branches, concatenated).
        selected_evidence: Reranked, pruned, numbered evidence given to the LLM.
        answer: Final answer text (the summary).
        inference_chain: ``[{step, evidence_ids}]``.
        mind_map: ``{label, evidence_ids, children}`` tree.
        conclusions: Grounded answers' chosen evidence entities by field
            (``diagnoses``/``tests``/``medications`` or ``conclusions``).
        own_knowledge: Points the model added from its own knowledge (never cited).
        mode: The run's mode (feedback credits KGCoT chains in ``kgcot`` mode).
        grounding: The grounding report (``flagged`` lists every unsupported item).
        feedback: The rating and the weight changes it caused.
        llm_calls: LLM calls made by the run (summed).
        timings_ms: Milliseconds per node (merged).
        flags: Booleans such as ``no_kg_evidence`` or ``fallback_parse`` (once set, stay set).

    """

    question: str
    entities: list[str]
    reference: str
    run_id: str
    store_uri: str
    language: str
    hypothesis: str
    hypothesis_entities: list[str]
    mentions: list[Mention]
    linked_entities: list[LinkedEntity]
    path_evidence: Annotated[list[Evidence], extend_list]
    neighbor_evidence: Annotated[list[Evidence], extend_list]
    chain_evidence: Annotated[list[Evidence], extend_list]
    kgcot_evidence: Annotated[list[Evidence], extend_list]
    selected_evidence: list[Evidence]
    answer: str
    inference_chain: list[dict[str, Any]]
    mind_map: dict[str, Any]
    conclusions: dict[str, list[str]]
    own_knowledge: list[str]
    mode: str
    grounding: dict[str, Any]
    feedback: dict[str, Any]
    llm_calls: Annotated[int, add_count]
    timings_ms: Annotated[dict[str, float], merge_dicts]
    flags: Annotated[dict[str, bool], merge_flags]


class ExploreTask(TypedDict):
    """Payload of one exploration ``Send`` branch: the linked entities to explore from.

    ``phrases``: per entity, the words of the question it was linked from (the entities of
    one phrase vote together when diseases are ranked); ``named``: the entities the question
    names word for word. Both absent in older checkpoints.
    """

    entity_ids: list[str]
    phrases: NotRequired[list[str]]
    named: NotRequired[list[str]]
