"""Fixtures for the GraphStore contract suite: one empty store per backend.

LadybugStore always runs (in a temp directory). Neo4jStore runs only when NEO4J_URI is
set; it is cleared before and after each test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kgmind.models import Entity, KnowledgeDoc, Relation
from kgmind.stores.protocol import GraphStore

NEO4J_SKIP_REASON = "NEO4J_URI not set: live Neo4j contract tests skipped"


def _open_neo4j() -> GraphStore:
    from kgmind.stores.neo4j import Neo4jStore

    return Neo4jStore(
        os.environ["NEO4J_URI"],
        user=os.environ.get("NEO4J_USER", "neo4j"),
        password=os.environ.get("NEO4J_PASSWORD", ""),
    )


@pytest.fixture(
    params=[
        pytest.param("ladybug", id="ladybug"),
        pytest.param(
            "neo4j",
            id="neo4j",
            marks=[
                pytest.mark.neo4j_live,
                pytest.mark.skipif(not os.environ.get("NEO4J_URI"), reason=NEO4J_SKIP_REASON),
            ],
        ),
    ]
)
def backend(request: pytest.FixtureRequest) -> str:
    """The backend under test."""
    return str(request.param)


@pytest.fixture
def store(backend: str, tmp_path: Path) -> Iterator[GraphStore]:
    """An empty store of the backend under test."""
    if backend == "ladybug":
        from kgmind.stores.ladybug import LadybugStore

        lb = LadybugStore(str(tmp_path / "kg"))
        yield lb
        lb.close()
        return
    neo = _open_neo4j()
    neo.clear()
    try:
        yield neo
    finally:
        neo.clear()
        neo.close()


@dataclass
class SmallKG:
    """The hand-made graph of the contract suite.

    Edges (weight)::

        A(Heart_Attack) -has_symptom-> B(Chest Pain) 1.0
        A -has_symptom-> E(Shortness of breath)       2.0
        A -need_medication-> C(Aspirin)                1.0
        A -need_test-> D(ECG)                          0.5
        G(ＡＢＣ Syndrome) -has_symptom-> B            1.0
        G -has_symptom-> E                             1.0
        B -need_test-> D                               1.0
        E -need_test-> D                               1.0
        F(Isolated) has no edge.
    """

    entities: dict[str, Entity]
    relations: dict[str, Relation]
    docs: dict[str, KnowledgeDoc]

    def eid(self, label: str) -> str:
        """Entity id of a label (A…G)."""
        return self.entities[label].id

    def rid(self, label: str) -> str:
        """Relation id of a label such as ``AB``."""
        return self.relations[label].id


def make_small_kg() -> SmallKG:
    """Build the :class:`SmallKG` models (nothing is loaded)."""
    ents = {
        "A": Entity(name="Heart_Attack", type="disease", aliases=["MI"]),
        "B": Entity(name="Chest Pain", type="symptom"),
        "C": Entity(name="Aspirin", type="medication", description="An antiplatelet drug."),
        "D": Entity(name="ECG", type="test"),
        "E": Entity(name="Shortness of breath", type="symptom"),
        "F": Entity(name="Isolated", type="entity"),
        "G": Entity(name="ＡＢＣ Syndrome", type="disease"),
    }

    def rel(h: str, t: str, rtype: str, w: float = 1.0) -> Relation:
        return Relation(head=ents[h].id, type=rtype, tail=ents[t].id, weight=w, source=f"src:{h}{t}")

    rels = {
        "AB": rel("A", "B", "has_symptom"),
        "AE": rel("A", "E", "has_symptom", 2.0),
        "AC": rel("A", "C", "need_medication"),
        "AD": rel("A", "D", "need_test", 0.5),
        "GB": rel("G", "B", "has_symptom"),
        "GE": rel("G", "E", "has_symptom"),
        "BD": rel("B", "D", "need_test"),
        "ED": rel("E", "D", "need_test"),
    }
    docs = {
        "A1": KnowledgeDoc(entity_id=ents["A"].id, text="A heart attack is a blockage of blood flow."),
        "A2": KnowledgeDoc(entity_id=ents["A"].id, text="Call emergency services."),
        "C1": KnowledgeDoc(entity_id=ents["C"].id, text="Aspirin thins the blood."),
    }
    return SmallKG(ents, rels, docs)


@pytest.fixture
def kg() -> SmallKG:
    """The small hand-made KG (models only)."""
    return make_small_kg()


@pytest.fixture
def loaded(store: GraphStore, kg: SmallKG) -> GraphStore:
    """The store of the backend under test with :class:`SmallKG` loaded."""
    store.bulk_load(kg.entities.values(), kg.relations.values(), kg.docs.values())
    return store
