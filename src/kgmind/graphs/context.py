"""Run settings of the kgmind graph: one described dataclass that Studio renders as a form.

``Context`` holds what a user chooses per run; the fitted defaults it starts from are
:mod:`kgmind.tuning`'s. Nodes read it with :func:`context_of`, so callers may omit the
context. Importing this module imports nothing heavy (no model, store or index code).
"""

# _setting returns dataclasses.field(...), a described field, which RUF009 cannot see through
# ruff: noqa: RUF009

from __future__ import annotations

from dataclasses import dataclass, field, fields
from types import UnionType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union, cast, get_args, get_origin, get_type_hints

from kgmind.tuning import DEFAULT_MODEL, PIPELINE

if TYPE_CHECKING:
    from langgraph.runtime import Runtime

__all__ = ["MODES", "Context", "Mode", "check_context", "context_of"]

Mode = Literal["full", "mindmap", "hykge", "kgcot", "llm_only"]

#: Every mode the graph knows, in the order the docs list them.
MODES: tuple[str, ...] = ("full", "mindmap", "hykge", "kgcot", "llm_only")

_T = TypeVar("_T")


def _setting(default: _T, description: str) -> _T:
    """A ``Context`` field with the ``description`` Studio's form shows beside it."""
    return cast(_T, field(default=default, metadata={"description": description}))


@dataclass(kw_only=True)
class Context:
    """Settings of one kgmind run (LangGraph ``context_schema``)."""

    mode: Mode = _setting(
        "full",
        "full = HyKGE + MindMap + KGCoT evidence; mindmap = paths + neighbors (faithful "
        "MindMap); hykge = reranked chains; kgcot = weighted DFS chains; llm_only = no retrieval.",
    )
    model: str = _setting(
        DEFAULT_MODEL,
        "Chat model: 'local' (offline Qwen2.5-Coder-0.5B GGUF via llama.cpp; default), "
        "'local-1.5b' (Qwen2.5-1.5B GGUF, slower), 'fake:<tag>' "
        "(deterministic test model) or any langchain init_chat_model string, e.g. 'openai:gpt-4o-mini'.",
    )
    hypothesis: bool | Literal["auto"] = _setting(
        "auto",
        "Write HyKGE's hypothesis answer first (one LLM call that also names the "
        "entities). auto = yes, except in full mode when the hypothesis model is one whose "
        "hypotheses were measured to buy nothing there (the bundled 0.5B local model); true = "
        "always; false = never: the question and the given entities alone guide retrieval.",
    )
    hypothesis_model: str | None = _setting(
        None, "Model for the hypothesis + entity call; None = the same as `model`."
    )
    store: str | None = _setting(
        None, "Graph store URI (ladybug:PATH, neo4j://…, bolt://…); None = the shipped demo KG."
    )
    top_k: int = _setting(5, "Candidate entities per mention when linking.")
    threshold: float | None = _setting(
        None, "Linking threshold δ on cosine similarity; None = the linker's calibrated default."
    )
    max_linked: int | None = _setting(
        10,
        "Most linked entities explored (best linking score first); None = all. "
        "Exploration cost grows with it (HyKGE chains pairwise).",
    )
    max_hops: int = _setting(PIPELINE.max_hops, "Maximum path length (edges) between entities.")
    max_paths: int = _setting(PIPELINE.max_paths, "Cap on path-based evidence (MindMap P…).")
    max_neighbors: int = _setting(
        PIPELINE.max_neighbors,
        "Cap on neighbor-based evidence (N…); a value-packed full run considers at least "
        "PIPELINE.candidate_lines and keeps those worth their tokens.",
    )
    max_chains: int = _setting(PIPELINE.max_chains, "Cap on HyKGE chains before reranking (C…).")
    hub_percentile: float | None = _setting(
        PIPELINE.hub_percentile,
        "HyKGE chains (and, with bounded reads, MindMap paths) walk through no node whose degree "
        "is above this percentile of the KG's (hubs such as a blood test tied to thousands of "
        "diseases), read from the store's kept degrees under pushdown; None = through every node.",
    )
    dfs_chains: int = _setting(PIPELINE.dfs_chains, "KGCoT: number of weighted-DFS chains (K…).")
    dfs_depth: int = _setting(PIPELINE.dfs_depth, "KGCoT: maximum depth of each DFS chain.")
    seed: int = _setting(0, "Random seed of the weighted DFS (reproducible runs).")
    budget_tokens: int = _setting(
        PIPELINE.budget_tokens,
        "Token budget of the evidence block given to the LLM: counted in the answering "
        "model's own tokens for the local models, else approximated (1.3 per word, 1 per CJK character).",
    )
    packing: Literal["value", "rank"] = _setting(
        "value",
        "full mode: value = spend the budget by expected value per token (the candidate "
        "diseases and the best one's tests and medications first; stops when what is left is worth "
        "little, kgmind.retrievers.packing); rank = keep items in rerank order while they fit.",
    )
    rerank_question: Literal["ignore", "embed", "anchors"] | None = _setting(
        None,
        "How the evidence reranker uses the question next to the hypothesis chunks: ignore "
        "(leave it out), embed (score it like a chunk), anchors (the linked entities stand in "
        "for it); None = the default fitted on the calibration split "
        "(kgmind.retrievers.aggregate.DEFAULT_QUESTION_MODE, benchmarks/calibrate_reranker.py).",
    )
    answer_schema: Literal["grounded", "free"] = _setting(
        "grounded",
        "grounded = the answer's schema is built from the evidence shown: every step "
        "and mind-map node cites a shown id, conclusions are chosen from evidence entities; free = "
        "MindMap's prompt with a fixed schema (citations optional).",
    )
    evidence_renderer: Literal["template", "llm"] = _setting(
        "template",
        "template = evidence as template sentences; llm = one extra LLM call rewrites "
        "them as prose (MindMap's third call).",
    )
    feedback: Literal["off", "human", "auto"] = _setting(
        "off",
        "off = no feedback; human = pause (interrupt) for an excellent/poor rating; "
        "auto = rate against the input's `reference` answer.",
    )
    language: Literal["auto", "en", "zh"] = _setting(
        "auto", "Prompt language; auto detects it from the question."
    )
    weight_aware: bool = _setting(
        PIPELINE.weight_aware, "Rank paths and neighbors by learned edge weights (ignored in mindmap mode)."
    )
    max_tokens: int = _setting(512, "Maximum tokens the LLM may generate per call.")
    embedding_spans: Literal["always", "unnamed", "never"] = _setting(
        "always",
        "Score n-grams of the question against the entity index (one embedding pass "
        "over the question). always; unnamed = only when neither the hypothesis call nor the input "
        "named a mention (faster, but GenMedGPT-5k evidence recall fell 3.4 points on the "
        "calibration split); never.",
    )
    exploration: Literal["auto", "memory", "pushdown"] = _setting(
        "auto",
        "memory = explore an in-memory index of the whole KG (built once per process); "
        "pushdown = read only each question's neighbourhood from the store (bounded id-keyed queries, "
        "Neo4j readers); auto = pushdown above "
        "kgmind.retrievers.graph_index_cache.PUSHDOWN_MIN_RELATIONS.",
    )

    @property
    def packs_by_value(self) -> bool:
        """Whether the evidence budget is spent by value (``packing="value"``: ``full`` mode only)."""
        return self.mode == "full" and self.packing == "value"


def _allowed(hint: Any, value: Any) -> bool:
    """Whether ``value`` fits the type ``hint`` of a Context field (Literal, bool, int, float, str, None)."""
    if get_origin(hint) is Literal:
        return any(value == v and type(value) is type(v) for v in get_args(hint))
    if get_origin(hint) in (Union, UnionType):
        return any(_allowed(h, value) for h in get_args(hint))
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _describe(hint: Any) -> str:
    """A Context field's type as a user reads it: ``one of 'full', 'mindmap'``, ``int or None``."""
    if get_origin(hint) is Literal:
        return "one of " + ", ".join(repr(v) for v in get_args(hint))
    if get_origin(hint) in (Union, UnionType):
        return " or ".join(_describe(h) for h in get_args(hint))
    return "None" if hint is type(None) else hint.__name__


def check_context(ctx: Context) -> None:
    """Refuse a Context field of the wrong type or outside its choices (``mode="ful"``).

    A dataclass checks nothing, and a LangGraph server builds the Context from a client's
    JSON: an unknown mode would otherwise answer with no KG evidence, and a count given as a
    string would fail deep inside a node.

    Raises:
        ValueError: The first bad field, with what it may be.

    """
    hints = get_type_hints(Context)
    for f in fields(Context):
        value = getattr(ctx, f.name)
        if not _allowed(hints[f.name], value):
            raise ValueError(f"context field {f.name} must be {_describe(hints[f.name])}, got {value!r:.100}")


def context_of(runtime: Runtime[Context]) -> Context:
    """The run's :class:`Context`: the one the caller passed, else the defaults (callers may omit it)."""
    return runtime.context or Context()
