"""Evidence aggregation: rerank, dedupe, prune, fit a token budget, number and render.

:func:`aggregate_evidence` turns the raw output of the exploration tools into the
numbered, rendered evidence the LLM sees, with zero LLM calls:

1. **render** every item by template into one natural-language sentence
   (:func:`render_evidence`; the relation ids stay on the item);
2. **rerank**: a reranker scores each item against the question and the chunks of
   the hypothesis (HyKGE eq. 8: windows of ``lc=10`` words overlapping by ``oc=4``,
   :func:`chunk_text`); the final score is the rerank score plus ``prior_weight`` ×
   the exploration score normalised per kind (so the disease-vote order of ranked
   neighbor lines is not thrown away). Without a reranker the normalised
   exploration score alone orders the items (ties keep the input order).
   Two rerankers ship. :class:`EntityVectorReranker` (the default of
   :func:`aggregate_evidence`) embeds only the hypothesis chunks — by default not the
   question, which scored worse (see the class) — and compares them with the name
   vectors the entity index already holds for each item's entities: a handful of
   embeddings per question instead of one per evidence sentence.
   :class:`EmbeddingReranker` embeds every evidence sentence and scores against the
   question and the chunks (HyKGE-faithful, ~100× slower on CPU);
3. **dedupe** (same relation-id set or same text) and **prune** items whose edges are
   a subset of an item already kept;
4. **budget**: keep items in rank order while they fit ``budget_tokens``
   (:func:`count_tokens`), or, given an ``EvidenceValue`` (the graph's ``full`` mode),
   by expected value per token with a floor (:func:`kgmind.retrievers.packing.pack_by_value`);
   a neighbor line that does not fit is cut to the tails that do. A fact is paid for
   once: an item loses the triples whose two entities an item kept before it already
   joins (a relation and its inverse are one fact) and the descriptions or sources
   already shown, and is dropped when nothing new is left
   (five shortest paths that share their first hops otherwise repeat them five times);
5. **number** per kind in the order kept: ``P1…`` paths, ``N1…`` neighbor lines, ``C1…``
   HyKGE chains, ``K1…`` KGCoT chains, ``D1…`` documents.

One module per job: :mod:`.render` (sentences, chunks, token counts), :mod:`.rerankers`,
:mod:`.budget` (fitting a budget, each fact paid for once) and :mod:`.pipeline` (the steps
in order).
"""

from __future__ import annotations

from kgmind.retrievers.aggregate.budget import ID_OVERHEAD, ShownFacts, fit_budget, kept_triples
from kgmind.retrievers.aggregate.pipeline import (
    aggregate_evidence,
    dedupe_evidence,
    number_evidence,
    prune_redundant,
    rank_candidates,
    rerank_evidence,
    select_evidence,
)
from kgmind.retrievers.aggregate.render import Tokenizer, chunk_text, count_tokens, render_evidence
from kgmind.retrievers.aggregate.rerankers import (
    EmbeddingReranker,
    EntityVectorReranker,
    EvidenceReranker,
    Reranker,
    default_reranker,
)

__all__ = [
    "ID_OVERHEAD",
    "EmbeddingReranker",
    "EntityVectorReranker",
    "EvidenceReranker",
    "Reranker",
    "ShownFacts",
    "Tokenizer",
    "aggregate_evidence",
    "chunk_text",
    "count_tokens",
    "dedupe_evidence",
    "default_reranker",
    "fit_budget",
    "kept_triples",
    "number_evidence",
    "prune_redundant",
    "rank_candidates",
    "render_evidence",
    "rerank_evidence",
    "select_evidence",
]
