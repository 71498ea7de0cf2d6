"""Graph exploration over a :class:`GraphIndex`: MindMap paths and neighbors, HyKGE chains, KGCoT DFS.

Every tool is pure (no store writes, no LLM) and returns ``list[Evidence]`` whose
``triples`` carry display names and whose ``relation_ids`` are aligned with them, so
feedback on a cited evidence item finds the edges behind it; ``entity_types`` carries the
type of every entity an item names, so later stages need not look it up again. ``text``
holds the raw MindMap arrow form (``A->rel->B``);
:func:`kgmind.retrievers.aggregate.render_evidence` turns it into a sentence.

Faithful behaviour is the default; documented improvements sit behind flags. One module
per method:

* :mod:`.paths` — :func:`path_evidence`, MindMap's path-based evidence (and the segment
  chaining :func:`chain_segments` / :func:`select_diverse` the store baseline shares);
* :mod:`.neighbors` — :func:`neighbor_evidence`, MindMap's neighbor-based evidence, and
  kgmind's disease-ranked variant (:func:`rank_diseases`);
* :mod:`.chains` — :func:`hykge_chains`, HyKGE §4.4's path, co-ancestor and co-occurrence chains;
* :mod:`.kgcot` — :func:`weighted_dfs_chains`, KGCoT §2.3's probabilistic DFS.
"""

from __future__ import annotations

from kgmind.retrievers.exploration.chains import hykge_chains
from kgmind.retrievers.exploration.items import PATHS_PER_SEGMENT
from kgmind.retrievers.exploration.kgcot import DocSource, weighted_dfs_chains
from kgmind.retrievers.exploration.neighbors import mindmap_neighbor_lines, neighbor_evidence, rank_diseases
from kgmind.retrievers.exploration.paths import chain_segments, path_evidence, pick_segment, select_diverse

__all__ = [
    "PATHS_PER_SEGMENT",
    "DocSource",
    "chain_segments",
    "hykge_chains",
    "mindmap_neighbor_lines",
    "neighbor_evidence",
    "path_evidence",
    "pick_segment",
    "rank_diseases",
    "select_diverse",
    "weighted_dfs_chains",
]
