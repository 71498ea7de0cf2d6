"""The relation vocabulary shared by the medical importers (MindMap style, with inverses).

Every relation type maps to ``(head type, tail type, inverse type)``. Importers use it to
add inverse edges and to infer entity types from the relations a name takes part in
(e.g. the tail of ``has_symptom`` is a ``symptom``). ``has_complication`` is symmetric: its
inverse is itself, so both directions are stored.
"""

from __future__ import annotations

__all__ = ["INVERSE", "RELATION_TYPES", "infer_types"]

#: relation -> (head entity type, tail entity type, inverse relation)
RELATION_TYPES: dict[str, tuple[str, str, str]] = {
    # English (MindMap EMCKG) and Chinese KGs alike
    "has_symptom": ("disease", "symptom", "possible_disease"),
    "possible_disease": ("symptom", "disease", "has_symptom"),
    "need_medical_test": ("disease", "test", "can_check_disease"),
    "can_check_disease": ("test", "disease", "need_medical_test"),
    "need_medication": ("disease", "medication", "possible_cure_disease"),
    "possible_cure_disease": ("medication", "disease", "need_medication"),
    # Chinese KGs (QASystemOnMedicalKG medical.json, MedicalKGQA recrawl)
    "has_complication": ("disease", "disease", "has_complication"),
    "belongs_to_department": ("disease", "department", "department_of_disease"),
    "department_of_disease": ("department", "disease", "belongs_to_department"),
    "sub_department_of": ("department", "department", "has_sub_department"),
    "has_sub_department": ("department", "department", "sub_department_of"),
    "good_food": ("disease", "food", "food_good_for"),
    "food_good_for": ("food", "disease", "good_food"),
    "avoid_food": ("disease", "food", "food_avoided_by"),
    "food_avoided_by": ("food", "disease", "avoid_food"),
    "recommended_recipe": ("disease", "food", "recipe_recommended_for"),
    "recipe_recommended_for": ("food", "disease", "recommended_recipe"),
    "produces_drug": ("producer", "medication", "produced_by"),
    "produced_by": ("medication", "producer", "produces_drug"),
}

#: relation -> inverse relation
INVERSE: dict[str, str] = {rel: inv for rel, (_, _, inv) in RELATION_TYPES.items()}


def infer_types(rel_type: str) -> tuple[str, str]:
    """Entity types of head and tail implied by ``rel_type`` (``entity`` when unknown)."""
    head, tail, _ = RELATION_TYPES.get(rel_type, ("entity", "entity", ""))
    return head, tail
