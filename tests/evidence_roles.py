"""The readings the exploration tools give evidence over EMCKG-style relation names (``Evidence.readings``).

Hand-made evidence in the rendering and packing tests uses these names; a tool would fill
``readings`` from the KG's relation roles (:mod:`kgmind.relations`), so the tests do too.
"""

from __future__ import annotations

#: relation name -> ``from>to`` entity types of its role, as :class:`kgmind.relations.Reading` gives them.
FITTED_READINGS: dict[str, str] = {
    "has_symptom": "disease>symptom",
    "possible_disease": "symptom>disease",
    "need_medical_test": "disease>test",
    "can_check_disease": "test>disease",
    "need_medication": "disease>medication",
    "possible_cure_disease": "medication>disease",
}
