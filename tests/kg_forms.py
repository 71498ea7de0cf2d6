"""Three diseases' facts written three ways (issue 44): both ways as MindMap, one way as users do, reversed.

* ``both``: every fact stored both ways with EMCKG's names and typed entities (what
  ``kg import --format chatdoctor`` writes);
* ``natural``: one direction, disease → X, in a user's own words, untyped entities;
* ``reverse``: one direction, X → disease (``symptom_of``, ``test_for``, ``treats``), untyped.
"""

from __future__ import annotations

from kgmind.models import Entity, Relation, entity_id

FACTS: list[tuple[str, str, str]] = [
    ("Measles", "symptom", "Fever"),
    ("Measles", "symptom", "Rash"),
    ("Measles", "symptom", "Red eyes"),
    ("Measles", "test", "Measles IgM test"),
    ("Measles", "treatment", "Vitamin A"),
    ("Influenza", "symptom", "Fever"),
    ("Influenza", "symptom", "Cough"),
    ("Influenza", "test", "Rapid flu test"),
    ("Influenza", "treatment", "Oseltamivir"),
    ("Dengue", "symptom", "Fever"),
    ("Dengue", "symptom", "Rash"),
    ("Dengue", "symptom", "Joint pain"),
    ("Dengue", "test", "NS1 antigen test"),
    ("Dengue", "treatment", "Oral fluids"),
]
NATIVE = {
    "symptom": ("has_symptom", "possible_disease", "symptom"),
    "test": ("need_medical_test", "can_check_disease", "test"),
    "treatment": ("need_medication", "possible_cure_disease", "medication"),
}
NATURAL = {"symptom": "presents_with", "test": "diagnosed_by", "treatment": "treated_with"}
REVERSE = {"symptom": "symptom_of", "test": "test_for", "treatment": "treats"}
FORMS = ("both", "natural", "reverse")


def eid(name: str) -> str:
    """The id a KG gives the entity ``name``."""
    return entity_id(name)


def kg(form: str) -> tuple[list[Entity], list[Relation]]:
    """The facts written in ``form`` (see the module docstring)."""
    names = list(dict.fromkeys(n for d, _, x in FACTS for n in (d, x)))
    if form == "both":
        types = {d: "disease" for d, _, _ in FACTS} | {x: NATIVE[role][2] for _, role, x in FACTS}
        ents = [Entity(name=n, type=types[n]) for n in names]
        rels = [
            r
            for d, role, x in FACTS
            for r in (
                Relation(head=eid(d), type=NATIVE[role][0], tail=eid(x)),
                Relation(head=eid(x), type=NATIVE[role][1], tail=eid(d)),
            )
        ]
        return ents, rels
    ents = [Entity(name=n) for n in names]  # a triples file: no types
    if form == "natural":
        return ents, [Relation(head=eid(d), type=NATURAL[role], tail=eid(x)) for d, role, x in FACTS]
    return ents, [Relation(head=eid(x), type=REVERSE[role], tail=eid(d)) for d, role, x in FACTS]
