"""Tuning constants: kgmind's fitted defaults, in one place, each with why it is what it is.

Run settings a user chooses per run are :class:`kgmind.graphs.context.Context` fields,
whose defaults come from here; environment variables are :mod:`kgmind.settings`.
Benchmarks and experiments that try other values pass a changed copy
(``dataclasses.replace(PIPELINE, budget_tokens=500)``) as a parameter, never by
patching this module. Importing it imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_MODEL", "PIPELINE", "WEIGHT_VOTES", "PipelineSettings"]

#: The chat model a run uses unless it names another: the bundled offline Qwen2.5-Coder-0.5B GGUF.
DEFAULT_MODEL = "local"


@dataclass(frozen=True)
class PipelineSettings:
    """kgmind's exploration defaults: the one place the graph's ``Context`` and the LangChain tools read them.

    The functions below keep the papers' own defaults (MindMap, HyKGE, KGCoT) for the
    faithful baselines; kgmind's pipeline passes these.
    """

    max_hops: int = 3
    max_chain_hops: int = 3  # HyKGE chains: k-hop, capped (pairwise search grows fast)
    max_paths: int = 5
    max_neighbors: int = 5
    # neighbor lines a value-packed run (kgmind.retrievers.packing) considers: it keeps only what
    # is worth its tokens, so it is offered more than MindMap's five
    candidate_lines: int = 40
    max_chains: int = 30
    dfs_chains: int = 3
    dfs_depth: int = 3
    weight_aware: bool = True
    # how learnt weights rank diseases (rank_diseases, WEIGHT_VOTES): "tiebreak" keeps the vote count
    # and specificity first; fitted on the calib split (README, "Learning from feedback")
    weight_votes: str = "tiebreak"
    ranked: bool = True
    # HyKGE chains walk through no node above this degree percentile (GraphIndex.hub_degree). Fitted
    # on calib: 98 cut the re-crawl's chain p95 from 101 to 49 ms for -0.5 points of CMCQA recall
    # (99.9, 99.5 and 99 cost the same) and none on GenMedGPT-5k; None: through every node
    hub_percentile: float | None = 98.0
    # evidence tokens shown to the LLM. Value packing (kgmind.retrievers.packing) stops below a
    # fitted floor anyway (~400 tokens at any budget above it on GenMedGPT-5k calib); 300 keeps the
    # local model's prompt short (it reads ~155 tokens a second): on 20 calib questions with the
    # 0.5B model, answer recall 0.509 at 300 vs 0.532 at 500, 2.0 s less per question
    # (benchmarks/results/2026-11-24-grounded-calib)
    budget_tokens: int = 300


#: The pipeline's exploration defaults (see :class:`PipelineSettings`).
PIPELINE = PipelineSettings()

#: How :func:`rank_diseases` may use learnt weights (see there).
WEIGHT_VOTES: tuple[str, ...] = ("tiebreak", "lift_first", "scale")
