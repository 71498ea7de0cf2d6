"""Pydantic schemas of the LLM outputs: the hypothesis call and the mind-map answer."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kgmind.models import normalize_name

__all__ = ["GroundedAnswer", "HypothesisOut", "InferenceStep", "MindMapAnswer", "MindMapNode"]


#: Bounds of the hypothesis call. A grammar-held small model otherwise repeats its answer up
#: to the token cap and never reaches the entity list (measured on the 0.5B local model).
#: 360 characters and 8 entities -> 200 and 6 on the calibration split (40 questions,
#: benchmarks/results/2026-11-24-grounded-calib): the call took 1.84 -> 1.62 s and the
#: evidence recall of the run stayed 0.800.
HYPOTHESIS_CHARS = 200
MAX_HYPOTHESIS_ENTITIES = 6
ENTITY_CHARS = 48


class HypothesisOut(BaseModel):
    """HyKGE hypothesis output plus the entities it names (doubles as LLM NER)."""

    # a grammar from this schema always writes the entity list (a default alone would make it optional)
    model_config = ConfigDict(json_schema_extra={"required": ["hypothesis", "entities"]})

    # the bounds are for the model's grammar (JSON schema) only; reading stays lenient
    hypothesis: str = Field(
        description="A short expert answer to the question from your own knowledge.",
        json_schema_extra={"maxLength": HYPOTHESIS_CHARS},
    )
    entities: list[str] = Field(
        default_factory=list,
        description="The specific entities (diseases, symptoms, tests, drugs, …) named in the question "
        "and in the hypothesis.",
        json_schema_extra={
            "maxItems": MAX_HYPOTHESIS_ENTITIES,
            "items": {"type": "string", "maxLength": ENTITY_CHARS},
        },
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

    @model_validator(mode="before")
    @classmethod
    def _flatten_workups(cls, data: Any) -> Any:
        """Read ``diagnoses`` given as workups (``{disease, tests, medications}``) into the flat fields.

        The per-question schema asks a medical answer for the tests and medications of each
        diagnosis; the answer keeps one flat shape, so every reader stays the same.
        """
        if not isinstance(data, dict) or not any(isinstance(d, dict) for d in data.get("diagnoses") or []):
            return data
        flat = dict(data)
        names: dict[str, list[str]] = {"diagnoses": [], "tests": list(flat.get("tests") or [])}
        names["medications"] = list(flat.get("medications") or [])
        seen = {field: {normalize_name(v) for v in values} for field, values in names.items()}
        for item in data["diagnoses"]:
            entry = item if isinstance(item, dict) else {"disease": item}
            for field, key in (("diagnoses", "disease"), ("tests", "tests"), ("medications", "medications")):
                values = entry.get(key) or []
                for value in [values] if isinstance(values, str) else values:
                    if isinstance(value, str) and value and normalize_name(value) not in seen[field]:
                        seen[field].add(normalize_name(value))
                        names[field].append(value)
        flat.update(names)
        return flat

    def conclusion_map(self) -> dict[str, list[str]]:
        """The non-empty conclusion fields, by name."""
        fields = {
            "diagnoses": self.diagnoses,
            "tests": self.tests,
            "medications": self.medications,
            "conclusions": self.conclusions,
        }
        return {k: list(v) for k, v in fields.items() if v}
