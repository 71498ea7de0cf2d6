"""Typed evidence: what the exploration tools return and what the LLM finally sees.

Every evidence item carries the relation ids it was built from, so that feedback on
an answer can find the edges behind the evidence the answer cited.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = ["EVIDENCE_PREFIX", "Evidence", "EvidenceKind", "LinkedEntity", "Mention"]

EvidenceKind = Literal["path", "neighbor", "chain", "kgcot", "doc"]

#: Id prefix per kind when evidence is numbered (P1…, N1…, C1…, K1…, D1…).
EVIDENCE_PREFIX: dict[str, str] = {
    "path": "P",
    "neighbor": "N",
    "chain": "C",
    "kgcot": "K",
    "doc": "D",
}


class Mention(BaseModel):
    """A span of the question (or hypothesis) that may name a KG entity.

    Attributes:
        text: The span as written.
        source: Which extractor found it: ``gazetteer``, ``llm``, ``embedding``, ``given``.
        entity_id: Set when the extractor already knows the entity (gazetteer).
        score: Extractor confidence in [0, 1].
    """

    text: str
    source: str = "given"
    entity_id: str | None = None
    score: float = 1.0


class LinkedEntity(BaseModel):
    """A mention linked to a KG entity.

    Attributes:
        mention: The mention text.
        entity_id: The KG entity.
        name: The entity's display name.
        type: The entity's type.
        score: Similarity of mention and entity name (1.0 for exact matches).
    """

    mention: str
    entity_id: str
    name: str
    type: str = "entity"
    score: float = 1.0


class Evidence(BaseModel):
    """One unit of KG evidence.

    Attributes:
        id: Citation id assigned when evidence is numbered (``P1``, ``N3``, ``K2``…);
            empty before :func:`number_evidence`.
        kind: ``path`` (MindMap path-based), ``neighbor`` (MindMap neighbor-based),
            ``chain`` (HyKGE path / co-ancestor / co-occurrence chain), ``kgcot``
            (KGCoT weighted-DFS chain), ``doc`` (a retrieved document).
        text: The evidence as one natural-language sentence (or the raw form before
            rendering).
        triples: ``(head name, relation type, tail name)`` per edge, in order.
        relation_ids: The KG edges used, aligned with ``triples`` where possible.
        entity_ids: KG entities the evidence mentions.
        score: Ranking score (higher is better).
        source: The tool that produced it.
        meta: Extra data (e.g. ``{"knowledge": …}`` for KGCoT edges, ``chain_type``).
    """

    id: str = ""
    kind: EvidenceKind
    text: str = ""
    triples: list[tuple[str, str, str]] = Field(default_factory=list)
    relation_ids: list[str] = Field(default_factory=list)
    entity_ids: list[str] = Field(default_factory=list)
    score: float = 0.0
    source: str = ""
    meta: dict[str, Any] = Field(default_factory=dict)
