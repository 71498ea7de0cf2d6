"""Caches keyed by what they depend on (URI + fingerprint, the live store object), never by ``id()``."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from entity_fakes import EntityListStore
from kgmind.models import Entity, Relation
from kgmind.retrievers import graph_index_cache
from kgmind.retrievers.linker import clear_linker_cache, get_linker
from kgmind.retrievers.ner import Gazetteer, clear_gazetteer_cache

ENTITIES = [Entity(name="Fever", type="symptom"), Entity(name="Influenza", type="disease")]


def test_a_reopened_store_gets_its_own_linker() -> None:
    clear_linker_cache()
    first = EntityListStore(ENTITIES, uri="fake://same")
    assert get_linker(first, "minilm") is get_linker(first, "minilm")
    reopened = EntityListStore(ENTITIES, uri="fake://same")  # a new object under the same URI
    linker = get_linker(reopened, "minilm")
    assert linker.store is reopened and linker is not get_linker(first, "minilm")
    clear_linker_cache()


def test_gazetteer_follows_the_fingerprint_not_the_object() -> None:
    clear_gazetteer_cache()
    store = EntityListStore(ENTITIES, uri="fake://gaz")
    gaz = Gazetteer.for_store(store, recheck_s=0)
    same = EntityListStore(ENTITIES, uri="fake://gaz")
    assert Gazetteer.for_store(same, recheck_s=0) is gaz  # same content, same URI
    store.entities.append(Entity(name="Oseltamivir", type="medication"))
    found = Gazetteer.for_store(store, recheck_s=0).find("take oseltamivir")
    assert [m.text for m in found] == ["oseltamivir"]
    clear_gazetteer_cache()


class _GatedGraph(EntityListStore):
    """A store whose relations wait for a gate: its index build is under way until the gate opens."""

    def __init__(self, uri: str, gate: threading.Event | None = None) -> None:
        super().__init__(ENTITIES, uri=uri)
        self.gate = gate
        self.entered = threading.Event()
        self.gate_opened: bool | None = None

    def iter_relations(self) -> Iterator[Relation]:
        self.entered.set()
        if self.gate is not None:
            self.gate_opened = self.gate.wait(timeout=10)
        return iter([Relation(head=ENTITIES[1].id, type="has_symptom", tail=ENTITIES[0].id)])


def test_one_store_building_its_index_does_not_block_another() -> None:
    graph_index_cache.clear_graph_index_cache()
    gate = threading.Event()
    slow, fast = _GatedGraph("fake://slow", gate), _GatedGraph("fake://fast")
    builder = threading.Thread(target=graph_index_cache.get_graph_index, args=(slow,))
    builder.start()
    assert slow.entered.wait(timeout=10)  # the slow build is under way, holding its own lock
    assert graph_index_cache.get_graph_index(fast).num_relations == 1  # served while the other build waits
    gate.set()
    builder.join()
    assert slow.gate_opened is True  # had the fast lookup queued behind it, the gate would have timed out
    graph_index_cache.clear_graph_index_cache()
