"""The graph-exploration functions as LangChain tools (store URI + entity ids in, evidence dicts out).

Their defaults are the pipeline's (:data:`kgmind.tuning.PIPELINE`), the
same the graph's ``Context`` uses, so an agent calling a tool gets what the graph gets.

Each tool opens the store with :func:`kgmind.stores.factory.open_store` (cached per
URI), takes its cached :class:`~kgmind.retrievers.graph_index.GraphIndex` and runs one
function of :mod:`kgmind.retrievers.exploration`. The result is a list of
:class:`~kgmind.models.Evidence` dumped to dicts (JSON-serialisable), so
an agent or a LangGraph node can call the tools directly.

Tools: :data:`path_evidence_tool`, :data:`neighbor_evidence_tool`,
:data:`hykge_chains_tool`, :data:`weighted_dfs_chains_tool`; :data:`EXPLORATION_TOOLS`
lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from kgmind.models import Evidence
from kgmind.retrievers import exploration as ex
from kgmind.retrievers.graph_index import GraphIndex
from kgmind.retrievers.graph_index_cache import get_graph_index
from kgmind.stores.factory import open_store
from kgmind.tuning import PIPELINE

__all__ = [
    "EXPLORATION_TOOLS",
    "RECHECK_S",
    "ExplorationInput",
    "HykgeChainsInput",
    "NeighborEvidenceInput",
    "PathEvidenceInput",
    "WeightedDfsInput",
    "hykge_chains_tool",
    "neighbor_evidence_tool",
    "path_evidence_tool",
    "weighted_dfs_chains_tool",
]


class ExplorationInput(BaseModel):
    """Arguments every exploration tool takes."""

    entity_ids: list[str] = Field(description="Linked KG entity ids, in question order.")
    store_uri: str | None = Field(
        default=None, description="Store URI (ladybug:PATH, neo4j://HOST…); empty = the default store."
    )


class PathEvidenceInput(ExplorationInput):
    """Arguments of :data:`path_evidence_tool`."""

    max_hops: int = Field(
        default=PIPELINE.max_hops, ge=1, le=8, description="Longest path between consecutive entities."
    )
    max_paths: int = Field(
        default=PIPELINE.max_paths, ge=1, le=50, description="How many joined paths to return."
    )
    weight_aware: bool = Field(
        default=PIPELINE.weight_aware, description="Prefer paths with high learnt edge weights."
    )


class NeighborEvidenceInput(ExplorationInput):
    """Arguments of :data:`neighbor_evidence_tool`."""

    max_lines: int = Field(
        default=PIPELINE.max_neighbors, ge=1, le=200, description="How many neighbor lines to return."
    )
    weight_aware: bool = Field(default=PIPELINE.weight_aware, description="Use learnt edge weights.")
    ranked: bool = Field(
        default=PIPELINE.ranked,
        description="Rank candidate diseases by votes (kgmind) instead of MindMap order.",
    )
    max_tails: int | None = Field(default=None, ge=1, description="Cap on the tails listed per line.")


class HykgeChainsInput(ExplorationInput):
    """Arguments of :data:`hykge_chains_tool`."""

    max_hops: int = Field(
        default=PIPELINE.max_chain_hops, ge=1, le=4, description="Longest path between two entities."
    )
    max_chains: int = Field(
        default=PIPELINE.max_chains, ge=1, le=500, description="How many chains to return."
    )


class WeightedDfsInput(ExplorationInput):
    """Arguments of :data:`weighted_dfs_chains_tool`."""

    n_chains: int = Field(default=PIPELINE.dfs_chains, ge=1, le=100, description="Draws per start entity.")
    max_depth: int = Field(default=PIPELINE.dfs_depth, ge=1, le=8, description="Longest chain in edges.")
    seed: int = Field(default=0, description="Random seed (reproducible draws).")
    with_knowledge: bool = Field(default=True, description="Attach the knowledge behind each edge.")


#: The tools re-read the store fingerprint (index freshness) at most this often, in seconds.
RECHECK_S = 1.0


def _index(store_uri: str | None) -> tuple[Any, GraphIndex]:
    store = open_store(store_uri)
    return store, get_graph_index(store, recheck_s=RECHECK_S)


def _dump(evidence: list[Evidence]) -> list[dict[str, Any]]:
    return [ev.model_dump(mode="json") for ev in evidence]


def _explorer(
    fn: Callable[..., list[Evidence]], *, knowledge: bool = False
) -> Callable[..., list[dict[str, Any]]]:
    """A tool body: open the store and its index, run ``fn`` with the tool's arguments, dump the evidence.

    The defaults live in the argument schemas (:data:`~kgmind.tuning.PIPELINE`),
    not here. ``knowledge``: ``fn`` takes the store (KGCoT's edge knowledge) unless the
    caller passes ``with_knowledge=False``.
    """

    def run(entity_ids: list[str], store_uri: str | None = None, **kwargs: Any) -> list[dict[str, Any]]:
        store, gi = _index(store_uri)
        if knowledge:
            kwargs["store"] = store if kwargs.pop("with_knowledge", True) else None
        return _dump(fn(gi, entity_ids, **kwargs))

    run.__name__ = fn.__name__
    return run


def _tool(
    name: str, fn: Callable[..., list[Evidence]], schema: type[BaseModel], about: str
) -> StructuredTool:
    knowledge = fn is ex.weighted_dfs_chains
    return StructuredTool.from_function(
        func=_explorer(fn, knowledge=knowledge), name=name, description=about, args_schema=schema
    )


path_evidence_tool = _tool(
    "path_evidence",
    ex.path_evidence,
    PathEvidenceInput,
    "MindMap path-based evidence: shortest directed KG paths chaining the linked entities "
    "(returns evidence dicts with triples and relation ids).",
)
neighbor_evidence_tool = _tool(
    "neighbor_evidence",
    ex.neighbor_evidence,
    NeighborEvidenceInput,
    "MindMap neighbor-based evidence: one line per (entity, relation) listing its neighbors, "
    "expanding the diseases the entities point to; ranked=True orders diseases by votes.",
)
hykge_chains_tool = _tool(
    "hykge_chains",
    ex.hykge_chains,
    HykgeChainsInput,
    "HyKGE reasoning chains between every pair of linked entities: paths within k hops, "
    "co-ancestor and co-occurrence chains, with entity descriptions.",
)
weighted_dfs_chains_tool = _tool(
    "weighted_dfs_chains",
    ex.weighted_dfs_chains,
    WeightedDfsInput,
    "KGCoT chains: a seeded probabilistic DFS from each linked entity choosing edges in "
    "proportion to their learnt weights, with the knowledge behind each edge.",
)

#: Every exploration tool, e.g. for ``llm.bind_tools``.
EXPLORATION_TOOLS: list[StructuredTool] = [
    path_evidence_tool,
    neighbor_evidence_tool,
    hykge_chains_tool,
    weighted_dfs_chains_tool,
]
