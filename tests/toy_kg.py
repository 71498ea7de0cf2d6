"""Small disease tables made into KGs: the toy graphs of the exploration and learning tests.

A table maps each disease to its symptoms, tests and medications; :func:`disease_kg` makes
the entities and one relation each way per pair (as the importers do), optionally with a
one-line document per disease that the disease and its relations cite.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kgmind.models import Entity, KnowledgeDoc, Relation, entity_id
from kgmind.stores.columns import RelationColumns

#: Symptoms, tests and medications of a disease: the three lists of a table row.
DiseaseRow = tuple[Sequence[str], Sequence[str], Sequence[str]]

#: The reverse of each relation a table row makes.
INVERSE = {
    "has_symptom": "possible_disease",
    "need_medical_test": "can_check_disease",
    "need_medication": "possible_cure_disease",
}


def disease_kg(
    table: Mapping[str, DiseaseRow], *, with_docs: bool = False
) -> tuple[list[Entity], list[Relation], list[KnowledgeDoc]]:
    """Entities, relations (both ways) and documents (``with_docs``: "X is a common illness.")."""
    ents: dict[str, Entity] = {}
    rels: list[Relation] = []
    docs: list[KnowledgeDoc] = []
    for d, (syms, tests, meds) in table.items():
        source = ""
        if with_docs:
            docs.append(KnowledgeDoc(entity_id=entity_id(d), text=f"{d} is a common illness."))
            source = docs[-1].id
        ents[d] = Entity(name=d, type="disease", description=docs[-1].text if with_docs else "")
        for rtype, tails, typ in (
            ("has_symptom", syms, "symptom"),
            ("need_medical_test", tests, "test"),
            ("need_medication", meds, "medication"),
        ):
            for t in tails:
                ents.setdefault(t, Entity(name=t, type=typ))
                head, tail = entity_id(d), entity_id(t)
                rels.append(Relation(head=head, type=rtype, tail=tail, source=source))
                rels.append(Relation(head=tail, type=INVERSE[rtype], tail=head, source=source))
    return list(ents.values()), rels, docs


def relation_columns(entities: Sequence[Entity], rels: Sequence[Relation]) -> RelationColumns:
    """``rels`` as the columns a columnar load takes (``bulk_load_columns``), over ``entities``' ids."""
    ids = [e.id for e in entities]
    types = sorted({r.type for r in rels})
    return RelationColumns(
        ids,
        np.array([ids.index(r.head) for r in rels], dtype=np.int32),
        np.array([types.index(r.type) for r in rels], dtype=np.int32),
        np.array([ids.index(r.tail) for r in rels], dtype=np.int32),
        np.ones(len(rels)),
        types,
    )
