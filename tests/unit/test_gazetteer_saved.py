"""A big KG's gazetteer is saved beside its entity indexes and mapped by later processes (issue 42).

Building the generated 10M KG's gazetteer took 12-15 s in every worker and left its build's memory
behind; a saved one must match exactly as the built one does, and must never be used for another
store state or other key rules.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from entity_fakes import EntityListStore
from kgmind.importers.demo import parse_demo
from kgmind.models import Entity
from kgmind.retrievers.ner import Gazetteer, clear_gazetteer_cache
from kgmind.retrievers.ner import gazetteer as gz
from random_texts import FILLER, name_texts


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("KGMIND_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(gz, "GAZETTEER_SAVED_KEYS", 1)  # the demo KG is saved like a big one
    clear_gazetteer_cache()
    yield
    clear_gazetteer_cache()


@pytest.fixture
def store(tmp_path: Path) -> EntityListStore:
    """The demo KG's entities under a LadybugDB store's URI (only those are saved)."""
    return EntityListStore(parse_demo().entities, uri=f"ladybug:{tmp_path / 'kg'}")


def _texts() -> list[str]:
    """Random texts of the demo KG's names (both languages), pieces of them and other words."""
    names = [e.name for e in parse_demo().entities]
    cjk = "".join(n for n in names if any("\u4e00" <= c <= "\u9fff" for c in n))
    filler = [*FILLER, "发烧", "胸口疼", "throwing up"]
    return name_texts(random.Random(3), names, filler, cjk, run_on=True)


def _mapped(arr: np.ndarray) -> bool:
    """Whether ``arr`` is a view of a file mapping."""
    seen: np.ndarray | None = arr
    while seen is not None:
        if isinstance(seen, np.memmap):
            return True
        seen = seen.base
    return False


def _found(g: Gazetteer, texts: list[str]) -> list[list[tuple[int, int, str | None]]]:
    return [[(s, e, m.entity_id) for s, e, m in g.find_spans(t)] for t in texts]


def test_a_saved_gazetteer_is_mapped_by_the_next_process_and_matches_as_the_built_one(
    store: EntityListStore,
) -> None:
    built = Gazetteer.for_store(store, recheck_s=0)
    path = gz.gazetteer_file(store.uri)
    assert path.is_file() and store.iter_calls == 1
    clear_gazetteer_cache()  # another process: the file, no read of the store's entities
    saved = Gazetteer.for_store(store, recheck_s=0)
    assert saved is not built and store.iter_calls == 1
    reference = Gazetteer(parse_demo().entities)  # built directly, never saved
    assert _mapped(saved.keys.arrays["keys_hashes"]) and _mapped(built.keys.arrays["keys_hashes"])
    assert not _mapped(reference.keys.arrays["keys_hashes"])
    texts = _texts()
    assert any(_found(reference, texts)) and _found(saved, texts) == _found(reference, texts)
    assert dict(saved.keys.items()) == dict(reference.keys.items())
    assert saved.cut("我最近一直咳嗽、发烧，还胸口疼") == reference.cut("我最近一直咳嗽、发烧，还胸口疼")
    for prefix in {k[:2] for k in reference.keys} | {"zz", "不在"}:
        assert saved._lengths.get(prefix) == reference._lengths.get(prefix), prefix


def test_a_changed_kg_or_changed_key_rules_make_it_anew(
    store: EntityListStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    Gazetteer.for_store(store, recheck_s=0)
    store.entities.append(Entity(name="Vertigo"))  # the fingerprint moves
    clear_gazetteer_cache()
    g = Gazetteer.for_store(store, recheck_s=0)
    assert store.iter_calls == 2 and [m.text for m in g.find("vertigo")] == ["vertigo"]
    clear_gazetteer_cache()
    Gazetteer.for_store(store, recheck_s=0)
    assert store.iter_calls == 2  # the file made for the new state is used
    monkeypatch.setattr(gz, "_key_rules_digest", lambda: "other rules")
    clear_gazetteer_cache()
    Gazetteer.for_store(store, recheck_s=0)
    assert store.iter_calls == 3


def test_a_cut_or_foreign_file_is_not_used(store: EntityListStore, tmp_path: Path) -> None:
    Gazetteer.for_store(store, recheck_s=0)
    path = gz.gazetteer_file(store.uri)
    stamp = f"{store.fingerprint()}|{gz._key_rules_digest()}"
    assert Gazetteer.read(path, stamp) is not None and Gazetteer.read(path, stamp + "x") is None
    path.write_bytes(path.read_bytes()[:200])
    assert Gazetteer.read(path, stamp) is None
    clear_gazetteer_cache()
    g = Gazetteer.for_store(store, recheck_s=0)
    assert store.iter_calls == 2 and len(g) == len(Gazetteer(parse_demo().entities))
    assert Gazetteer.read(path, stamp) is not None  # made again


def test_a_folder_that_cannot_be_written_keeps_the_built_one(
    store: EntityListStore, caplog: pytest.LogCaptureFixture
) -> None:
    folder = gz.gazetteer_file(store.uri).parent
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text("a file where the index folder should be")
    with caplog.at_level(logging.INFO, logger="kgmind.retrievers.ner.gazetteer"):
        g = Gazetteer.for_store(store, recheck_s=0)
    assert "gazetteer not saved" in caplog.text
    assert _found(g, _texts()) == _found(Gazetteer(parse_demo().entities), _texts())


def test_a_small_kg_is_not_saved(store: EntityListStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gz, "GAZETTEER_SAVED_KEYS", 10**9)
    Gazetteer.for_store(store, recheck_s=0)
    assert not gz.gazetteer_file(store.uri).exists()


def test_another_backend_is_not_saved(tmp_path: Path) -> None:
    """A Neo4j fingerprint (a counter and two counts) can name two KGs over time: built, never saved."""
    store = EntityListStore(parse_demo().entities, uri="neo4j://kg.example:7687")
    Gazetteer.for_store(store, recheck_s=0)
    assert not gz.gazetteer_file(store.uri).exists()
