"""Pydantic schemas of the LLM outputs: the hypothesis call and the mind-map answer."""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["GroundedAnswer", "HypothesisOut", "InferenceStep", "MindMapAnswer", "MindMapNode"]


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
    about: str = Field(default="", description="The evidence entity the step is about (grounded answers).")


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


class GroundedAnswer(MindMapAnswer):
    """The evidence-constrained answer (:mod:`kgmind.prompts.grounded`): MindMap's outputs plus conclusions.

    The per-question JSON schema restricts ids and conclusions to what the evidence
    shows; this model only reads the result, so it is the same for every question.
    """

    diagnoses: list[str] = Field(default_factory=list, description="Diagnoses chosen from the evidence.")
    tests: list[str] = Field(default_factory=list, description="Tests chosen from the evidence.")
    medications: list[str] = Field(default_factory=list, description="Medications chosen from the evidence.")
    conclusions: list[str] = Field(default_factory=list, description="Conclusions (non-medical KGs).")
    own_knowledge: list[str] = Field(
        default_factory=list, description="Points from the model's own knowledge, not from the evidence."
    )

    def conclusion_map(self) -> dict[str, list[str]]:
        """The non-empty conclusion fields, by name."""
        fields = {
            "diagnoses": self.diagnoses,
            "tests": self.tests,
            "medications": self.medications,
            "conclusions": self.conclusions,
        }
        return {k: list(v) for k, v in fields.items() if v}
