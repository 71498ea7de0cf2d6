"""Pydantic schemas of the LLM outputs: the hypothesis call and the mind-map answer."""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["HypothesisOut", "InferenceStep", "MindMapAnswer", "MindMapNode"]


class HypothesisOut(BaseModel):
    """HyKGE hypothesis output plus the entities it names (doubles as LLM NER)."""

    hypothesis: str = Field(description="A short expert answer to the question from your own knowledge.")
    entities: list[str] = Field(
        default_factory=list,
        description="The specific entities (diseases, symptoms, tests, drugs, …) named in the question "
        "and in the hypothesis.",
    )


class InferenceStep(BaseModel):
    """One step of the inference chain and the evidence ids it uses."""

    step: str = Field(description="What is inferred in this step.")
    evidence_ids: list[str] = Field(
        default_factory=list, description="Ids of the evidence used, e.g. P1, N2."
    )


class MindMapNode(BaseModel):
    """A node of the mind map: a label, the evidence behind it and its children."""

    label: str = Field(description="An entity, relation or conclusion.")
    evidence_ids: list[str] = Field(default_factory=list, description="Ids of the evidence supporting it.")
    children: list[MindMapNode] = Field(default_factory=list, description="Child nodes.")


class MindMapAnswer(BaseModel):
    """MindMap's three outputs: the answer, the inference chain and the mind map."""

    summary: str = Field(description="Output 1: the answer.")
    inference_chain: list[InferenceStep] = Field(
        default_factory=list, description="Output 2: the inference process, citing evidence ids."
    )
    mind_map: MindMapNode = Field(
        default_factory=lambda: MindMapNode(label="answer"),
        description="Output 3: the mind map (a tree) of the reasoning.",
    )
