"""An in-memory entity list with the read side of a GraphStore that NER, the index and the linker need."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from kgmind.models import Entity, normalize_name
from kgmind.relations import RelationSchema, schema_from_graph


class EntityListStore:
    """Entities only, no relations; ``version`` bumps the fingerprint (a changed KG).

    Attributes:
        iter_calls: How often :meth:`iter_entities` ran (index/gazetteer rebuilds).
    """

    def __init__(self, entities: Sequence[Entity], uri: str = "fake://kg") -> None:
        self.uri = uri
        self.entities = list(entities)
        self.iter_calls = 0
        self.version = 0

    def iter_entities(self) -> Iterator[Entity]:
        self.iter_calls += 1
        return iter(list(self.entities))

    def fingerprint(self) -> str:
        """Changes with the content, as a real store's does (caches are keyed by URI + fingerprint)."""
        ids = "|".join(sorted(e.id for e in self.entities))
        return f"{len(self.entities)}:{self.version}:{hash(ids)}"

    def weights_version(self) -> int:
        """No relations, so weights never move."""
        return 0

    def relation_schema(self) -> RelationSchema:
        """Roles inferred from the relations a subclass holds (none here), as a real store infers them."""
        return schema_from_graph(self.entities, list(getattr(self, "relations", [])))

    def get_entities(self, ids: Sequence[str]) -> list[Entity]:
        by_id = {e.id: e for e in self.entities}
        return [by_id[i] for i in ids if i in by_id]

    def find_entities(self, name: str) -> list[Entity]:
        key = normalize_name(name)
        return [e for e in self.entities if key in {normalize_name(n) for n in (e.name, *e.aliases)}]


class FeedbackLedgerStore(EntityListStore):
    """A store whose only feedback state is the set of applied feedback ids (for credit-rule tests)."""

    def __init__(self, entities: Sequence[Entity] = (), uri: str = "fake://kg") -> None:
        super().__init__(entities, uri)
        self.applied: set[str] = set()

    def weight_changes(self, feedback_id: str | None = None) -> list[str]:
        return [feedback_id] if feedback_id in self.applied else []
