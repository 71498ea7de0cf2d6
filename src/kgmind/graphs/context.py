"""Run settings of the kgmind graph: one described dataclass that Studio renders as a form.

Nodes read ``ctx = runtime.context or Context()``, so callers may omit the context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from kgmind.tuning import DEFAULT_MODEL, PIPELINE

__all__ = ["MODES", "Context", "Mode"]

Mode = Literal["full", "mindmap", "hykge", "kgcot", "llm_only"]

#: Every mode the graph knows, in the order the docs list them.
MODES: tuple[str, ...] = ("full", "mindmap", "hykge", "kgcot", "llm_only")


@dataclass(kw_only=True)
class Context:
    """Settings of one kgmind run (LangGraph ``context_schema``)."""

    mode: Mode = field(
        default="full",
        metadata={
            "description": "full = HyKGE + MindMap + KGCoT evidence; mindmap = paths + neighbors (faithful "
            "MindMap); hykge = reranked chains; kgcot = weighted DFS chains; llm_only = no retrieval."
        },
    )
    model: str = field(
        default=DEFAULT_MODEL,
        metadata={
            "description": "Chat model: 'local' (offline Qwen2.5-Coder-0.5B GGUF via llama.cpp; default), "
            "'local-1.5b' (Qwen2.5-1.5B GGUF, slower), 'fake:<tag>' "
            "(deterministic test model) or any langchain init_chat_model string, e.g. 'openai:gpt-4o-mini'."
        },
    )
    hypothesis: bool | Literal["auto"] = field(
        default="auto",
        metadata={
            "description": "Write HyKGE's hypothesis answer first (one LLM call that also names the "
            "entities). auto = yes, except in full mode when the hypothesis model is one whose "
            "hypotheses were measured to buy nothing there (the bundled 0.5B local model); true = "
            "always; false = never: the question and the given entities alone guide retrieval."
        },
    )
    hypothesis_model: str | None = field(
        default=None,
        metadata={"description": "Model for the hypothesis + entity call; None = the same as `model`."},
    )
    store: str | None = field(
        default=None,
        metadata={
            "description": "Graph store URI (ladybug:PATH, neo4j://…, bolt://…); None = the shipped demo KG."
        },
    )
    top_k: int = field(default=5, metadata={"description": "Candidate entities per mention when linking."})
    threshold: float | None = field(
        default=None,
        metadata={
            "description": "Linking threshold δ on cosine similarity; None = the linker's calibrated default."
        },
    )
    max_linked: int | None = field(
        default=10,
        metadata={
            "description": "Most linked entities explored (best linking score first); None = all. "
            "Exploration cost grows with it (HyKGE chains pairwise)."
        },
    )
    max_hops: int = field(
        default=PIPELINE.max_hops, metadata={"description": "Maximum path length (edges) between entities."}
    )
    max_paths: int = field(
        default=PIPELINE.max_paths, metadata={"description": "Cap on path-based evidence (MindMap P…)."}
    )
    max_neighbors: int = field(
        default=PIPELINE.max_neighbors,
        metadata={
            "description": "Cap on neighbor-based evidence (N…); a value-packed full run considers at least "
            "PIPELINE.candidate_lines and keeps those worth their tokens."
        },
    )
    max_chains: int = field(
        default=PIPELINE.max_chains, metadata={"description": "Cap on HyKGE chains before reranking (C…)."}
    )
    hub_percentile: float | None = field(
        default=PIPELINE.hub_percentile,
        metadata={
            "description": "HyKGE chains walk through no node whose degree is above this percentile of "
            "the KG's (hubs such as a blood test tied to thousands of diseases); None = through every "
            "node. Not applied under pushdown exploration."
        },
    )
    dfs_chains: int = field(
        default=PIPELINE.dfs_chains, metadata={"description": "KGCoT: number of weighted-DFS chains (K…)."}
    )
    dfs_depth: int = field(
        default=PIPELINE.dfs_depth, metadata={"description": "KGCoT: maximum depth of each DFS chain."}
    )
    seed: int = field(
        default=0, metadata={"description": "Random seed of the weighted DFS (reproducible runs)."}
    )
    budget_tokens: int = field(
        default=PIPELINE.budget_tokens,
        metadata={
            "description": "Token budget of the evidence block given to the LLM: counted in the answering "
            "model's own tokens for the local models, else approximated (1.3 per word, 1 per CJK character)."
        },
    )
    packing: Literal["value", "rank"] = field(
        default="value",
        metadata={
            "description": "full mode: value = spend the budget by expected value per token (the candidate "
            "diseases and the best one's tests and medications first; stops when what is left is worth "
            "little, kgmind.retrievers.packing); rank = keep items in rerank order while they fit."
        },
    )
    answer_schema: Literal["grounded", "free"] = field(
        default="grounded",
        metadata={
            "description": "grounded = the answer's schema is built from the evidence shown: every step "
            "and mind-map node cites a shown id, conclusions are chosen from evidence entities; free = "
            "MindMap's prompt with a fixed schema (citations optional)."
        },
    )
    evidence_renderer: Literal["template", "llm"] = field(
        default="template",
        metadata={
            "description": "template = evidence as template sentences; llm = one extra LLM call rewrites "
            "them as prose (MindMap's third call)."
        },
    )
    feedback: Literal["off", "human", "auto"] = field(
        default="off",
        metadata={
            "description": "off = no feedback; human = pause (interrupt) for an excellent/poor rating; "
            "auto = rate against the input's `reference` answer."
        },
    )
    language: Literal["auto", "en", "zh"] = field(
        default="auto", metadata={"description": "Prompt language; auto detects it from the question."}
    )
    weight_aware: bool = field(
        default=PIPELINE.weight_aware,
        metadata={
            "description": "Rank paths and neighbors by learned edge weights (ignored in mindmap mode)."
        },
    )
    max_tokens: int = field(
        default=512, metadata={"description": "Maximum tokens the LLM may generate per call."}
    )
    embedding_spans: Literal["always", "unnamed", "never"] = field(
        default="always",
        metadata={
            "description": "Score n-grams of the question against the entity index (one embedding pass "
            "over the question). always; unnamed = only when neither the hypothesis call nor the input "
            "named a mention (faster, but GenMedGPT-5k evidence recall fell 3.4 points on the "
            "calibration split); never."
        },
    )
    exploration: Literal["auto", "memory", "pushdown"] = field(
        default="auto",
        metadata={
            "description": "memory = explore an in-memory index of the whole KG (built once per process); "
            "pushdown = read only each question's neighbourhood from the store (bounded id-keyed queries, "
            "Neo4j readers); auto = pushdown above kgmind.retrievers.graph_index.PUSHDOWN_MIN_RELATIONS."
        },
    )

    @property
    def packs_by_value(self) -> bool:
        """Whether the evidence budget is spent by value (``packing="value"``: ``full`` mode only)."""
        return self.mode == "full" and self.packing == "value"
