"""The aggregation pipeline: rerank, dedupe, prune, spend the budget, number.

See :mod:`kgmind.retrievers.aggregate` for the steps and why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, TypedDict, Unpack

from kgmind.models import EVIDENCE_PREFIX, Evidence
from kgmind.retrievers.aggregate.budget import ID_OVERHEAD, ShownFacts, fit_budget, longest_fitting_line
from kgmind.retrievers.aggregate.render import Tokenizer, chunk_text, count_tokens, render_evidence
from kgmind.retrievers.aggregate.rerankers import EvidenceReranker, Reranker, default_reranker
from kgmind.retrievers.packing import ANSWER_TYPES, pack_by_value
from kgmind.tuning import PIPELINE, EvidenceValue

__all__ = [
    "Selection",
    "aggregate_evidence",
    "dedupe_evidence",
    "number_evidence",
    "prune_redundant",
    "rank_candidates",
    "rerank_evidence",
    "select_evidence",
]


def _normalised_prior(evidence: Sequence[Evidence]) -> list[float]:
    top: dict[str, float] = {}
    for ev in evidence:
        top[ev.kind] = max(top.get(ev.kind, 0.0), ev.score)
    return [ev.score / top[ev.kind] if top[ev.kind] > 0 else 0.0 for ev in evidence]


def rerank_evidence(
    evidence: Sequence[Evidence],
    question: str,
    hypothesis: str = "",
    *,
    reranker: Reranker | EvidenceReranker | None = None,
    prior_weight: float = 0.5,
) -> list[Evidence]:
    """Score and sort evidence (copies; ``meta`` gains ``prior_score``/``rerank_score``).

    Args:
        evidence: Items with rendered ``text``.
        question: The user question.
        hypothesis: The hypothesis output, chunked with :func:`chunk_text`.
        reranker: Scores items (:class:`EvidenceReranker`) or their texts
            (:class:`Reranker`) against ``[question, *chunks]``; ``None``: prior only.
        prior_weight: Weight of the per-kind normalised exploration score.

    Returns:
        New items sorted by final score (stable on ties).
    """
    prior = _normalised_prior(evidence)
    if reranker is not None and evidence:
        queries = [question, *chunk_text(hypothesis)] if hypothesis else [question]
        if isinstance(reranker, EvidenceReranker):
            rr = reranker.score_evidence(queries, evidence)
        else:
            rr = reranker.score(queries, [ev.text for ev in evidence])
    else:
        rr = [0.0] * len(evidence)
    out = []
    for ev, p, r in zip(evidence, prior, rr, strict=True):
        final = r + prior_weight * p if reranker is not None else p
        meta = {**ev.meta, "prior_score": ev.score, "rerank_score": r}
        out.append(ev.model_copy(update={"score": final, "meta": meta}))
    order = sorted(range(len(out)), key=lambda i: -out[i].score)
    return [out[i] for i in order]


def dedupe_evidence(evidence: Sequence[Evidence]) -> list[Evidence]:
    """Drop items repeating an earlier item's relation-id set or (normalised) text."""
    seen_rel: set[frozenset[str]] = set()
    seen_text: set[str] = set()
    out: list[Evidence] = []
    for ev in evidence:
        key = frozenset(ev.relation_ids)
        text = " ".join(ev.text.split()).casefold()
        if (key and key in seen_rel) or (text and text in seen_text):
            continue
        if key:
            seen_rel.add(key)
        if text:
            seen_text.add(text)
        out.append(ev)
    return out


def prune_redundant(evidence: Sequence[Evidence]) -> list[Evidence]:
    """Drop items whose edges are all in one item kept before them (no new facts)."""
    kept: list[Evidence] = []
    kept_sets: list[frozenset[str]] = []
    for ev in evidence:
        s = frozenset(ev.relation_ids)
        if s and any(s <= k for k in kept_sets):
            continue
        kept.append(ev)
        kept_sets.append(s)
    return kept


def number_evidence(evidence: Sequence[Evidence]) -> list[Evidence]:
    """Copies with citation ids per kind in list order (``P1``, ``N1``, ``C1``, ``K1``, ``D1``)."""
    counters: dict[str, int] = {}
    out = []
    for ev in evidence:
        n = counters.get(ev.kind, 0) + 1
        counters[ev.kind] = n
        out.append(ev.model_copy(update={"id": f"{EVIDENCE_PREFIX[ev.kind]}{n}"}))
    return out


def rank_candidates(
    evidence: Sequence[Evidence],
    question: str,
    hypothesis: str = "",
    *,
    reranker: Reranker | EvidenceReranker | Literal["auto", "prior"] | None = None,
    prior_weight: float = 0.5,
) -> list[Evidence]:
    """Render, rerank, dedupe and prune: the candidates a budget is then spent on, best first.

    Args:
        evidence: Raw items from the exploration tools.
        question: The user question.
        hypothesis: The hypothesis output (HyKGE), may be empty.
        reranker: A reranker (e.g. :class:`EmbeddingReranker` for HyKGE's sentence
            reranking); ``None`` or ``"auto"`` (default): :func:`default_reranker`
            (an :class:`EntityVectorReranker` on the loaded entity index of the
            evidence's KG; prior only when none is loaded); ``"prior"``: no reranker.
        prior_weight: Weight of the normalised exploration score next to the rerank score.

    Returns:
        Rendered items in rank order, repeats and items inside earlier ones dropped.
    """
    rendered = [ev.model_copy(update={"text": render_evidence(ev)}) for ev in evidence]
    chosen: Reranker | EvidenceReranker | None
    if reranker is None or reranker == "auto":
        chosen = default_reranker(rendered)
    elif reranker == "prior":
        chosen = None
    elif isinstance(reranker, str):
        raise ValueError(f"unknown reranker {reranker!r}: pass a reranker, 'auto' or 'prior'")
    else:
        chosen = reranker
    ranked = rerank_evidence(rendered, question, hypothesis, reranker=chosen, prior_weight=prior_weight)
    return prune_redundant(dedupe_evidence(ranked))


def select_evidence(
    candidates: Sequence[Evidence],
    budget_tokens: int,
    *,
    tokenizer: Tokenizer | None = None,
    share_facts: bool = True,
    value: EvidenceValue | None = None,
    types: Mapping[str, str] | None = None,
) -> list[Evidence]:
    """Spend the budget on ``candidates``: by value per token, or in rank order while they fit.

    Args:
        candidates: Rendered items in rank order (:func:`rank_candidates`).
        budget_tokens: Token budget for the kept items.
        tokenizer: Optional exact tokenizer for the budget.
        share_facts: Pay for each fact once (see :func:`fit_budget`).
        value: Pack by expected value per token (:func:`~kgmind.retrievers.packing.pack_by_value`)
            instead of keeping items in rank order while they fit; needs ``types``, and
            falls back to rank order when they name no answer type (a non-medical KG).
        types: ``normalize_name(name) -> entity type`` of the evidence's entities.

    Returns:
        The kept items, not yet numbered.
    """
    if value is None or not types or not ANSWER_TYPES & set(types.values()):
        return fit_budget(candidates, budget_tokens, tokenizer=tokenizer, share_facts=share_facts)
    shown = ShownFacts()

    def cost(ev: Evidence) -> int:
        return count_tokens(ev.text, tokenizer) + ID_OVERHEAD

    return pack_by_value(
        candidates,
        budget_tokens,
        value,
        types,
        cost=cost,
        without_shown=shown.without_shown if share_facts else (lambda ev: ev),
        on_keep=shown.add,
        cut_to=lambda ev, room: longest_fitting_line(ev, room, cost),
    )


class Selection(TypedDict, total=False):
    """How :func:`select_evidence` spends the budget (see there); :func:`aggregate_evidence` passes it on."""

    tokenizer: Tokenizer | None
    share_facts: bool
    value: EvidenceValue | None
    types: Mapping[str, str] | None


def aggregate_evidence(
    evidence: Sequence[Evidence],
    question: str,
    hypothesis: str = "",
    *,
    reranker: Reranker | EvidenceReranker | Literal["auto", "prior"] | None = None,
    budget_tokens: int = PIPELINE.budget_tokens,
    max_items: int | None = None,
    prior_weight: float = 0.5,
    **selection: Unpack[Selection],
) -> list[Evidence]:
    """Render, rerank, dedupe, prune, spend the budget and number (see :mod:`kgmind.retrievers.aggregate`).

    Args:
        evidence: The pool: the raw items of every exploration branch.
        question: The user question.
        hypothesis: The hypothesis output (HyKGE), may be empty.
        reranker: See :func:`rank_candidates`.
        budget_tokens: Token budget for the kept items.
        max_items: Cap on the number of items (before the budget).
        prior_weight: Weight of the normalised exploration score next to the rerank score.
        **selection: ``tokenizer``, ``share_facts``, ``value``, ``types``: how the budget is
            spent (see :func:`select_evidence`).

    Returns:
        The final evidence: rendered ``text``, numbered ``id``; rank order, or best value
        per token first when packed by value.
    """
    kept = rank_candidates(evidence, question, hypothesis, reranker=reranker, prior_weight=prior_weight)
    if max_items is not None:
        kept = kept[:max_items]
    return number_evidence(select_evidence(kept, budget_tokens, **selection))
