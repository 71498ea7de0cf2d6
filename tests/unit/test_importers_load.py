"""Unit tests of import_kg / load_demo against a fake store: one bulk_load, all or nothing."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from kgmind.importers import NoValidRowsError, import_kg
from kgmind.importers.demo_store import load_demo
from kgmind.models import Entity, KnowledgeDoc, Relation
from kgmind.relations import RelationSchema
from kgmind.stores.protocol import LoadReport, StoreError

FIX = Path(__file__).parents[1] / "fixtures" / "importers"


class FakeStore:
    """Records bulk_load calls; optionally fails."""

    uri = "fake:"

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple[list[Entity], list[Relation], list[KnowledgeDoc]]] = []
        self.cleared = 0
        self.fail = fail

    def bulk_load(
        self, entities: Iterable[Entity], relations: Iterable[Relation], docs: Iterable[KnowledgeDoc] = ()
    ) -> LoadReport:
        ents, rels, ds = list(entities), list(relations), list(docs)
        if self.fail:
            raise StoreError("disk full")
        self.calls.append((ents, rels, ds))
        return LoadReport(entities=len(ents), relations=len(rels), docs=len(ds))

    def clear(self) -> None:
        self.cleared += 1

    def relation_schema(self) -> RelationSchema:  # the import report compares the store's reading
        return RelationSchema()

    def schema_overrides(self) -> dict[str, dict[str, str]]:
        return {}

    def set_schema_overrides(self, roles: Any) -> None:
        self.roles = dict(roles)  # the import keeps its reading with the store


@pytest.mark.parametrize("progress", [True, False])
def test_import_kg_calls_bulk_load_once(progress: bool) -> None:
    store = FakeStore()
    summary = import_kg(FIX / "chatdoctor_full.csv", "chatdoctor", store, progress=progress)  # type: ignore[arg-type]
    assert len(store.calls) == 1
    ents, rels, docs = store.calls[0]
    assert summary.entities == len(ents) and summary.relations == len(rels) and summary.docs == len(docs)
    assert summary.rows == 3 and summary.skipped == 4 and len(summary.errors) == 4
    assert summary.store == "fake:" and summary.format == "chatdoctor"
    assert sum(summary.relation_types.values()) == len(rels)
    assert sum(summary.entity_types.values()) == len(ents)
    # every relation endpoint is in the same load
    ids = {e.id for e in ents}
    assert all(r.head in ids and r.tail in ids for r in rels)


def test_no_valid_rows_writes_nothing() -> None:
    store = FakeStore()
    with pytest.raises(NoValidRowsError, match="no valid rows"):
        import_kg(FIX / "triples_bad.csv", "triples", store, progress=False)  # type: ignore[arg-type]
    assert store.calls == []


def test_empty_file_writes_nothing(tmp_path: Path) -> None:
    f = tmp_path / "empty.tsv"
    f.write_text("")
    store = FakeStore()
    with pytest.raises(NoValidRowsError):
        import_kg(f, "mindmap-tsv", store, progress=False)  # type: ignore[arg-type]
    assert store.calls == []


def test_unknown_format_and_missing_file_write_nothing(tmp_path: Path) -> None:
    store = FakeStore()
    with pytest.raises(ValueError, match="unknown format"):
        import_kg(FIX / "triples.csv", "owl", store, progress=False)  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError):
        import_kg(tmp_path / "missing.csv", "triples", store, progress=False)  # type: ignore[arg-type]
    assert store.calls == []


def test_store_error_propagates() -> None:
    with pytest.raises(StoreError, match="disk full"):
        import_kg(FIX / "triples.csv", "triples", FakeStore(fail=True), progress=False)  # type: ignore[arg-type]


def test_load_demo_reset() -> None:
    store = FakeStore()
    s1 = load_demo(store)  # type: ignore[arg-type]
    assert store.cleared == 0 and len(store.calls) == 1 and s1.entities > 100
    load_demo(store, reset=True)  # type: ignore[arg-type]
    assert store.cleared == 1 and len(store.calls) == 2
    # parsing is deterministic: the same ids both times
    assert [r.id for r in store.calls[0][1]] == [r.id for r in store.calls[1][1]]
