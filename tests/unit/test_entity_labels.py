"""An entity index's labels packed into arrays and mapped from ``labels.bin`` (issue 42)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from entity_fakes import EntityListStore
from kgmind.models import Entity
from kgmind.retrievers.embeddings.hashing import HashEmbedder
from kgmind.retrievers.entity_index import EntityIndex, build_entity_index
from kgmind.retrievers.entity_labels import PACKED_LABELS_FILE, PackedLabels
from kgmind.retrievers.packed import StringColumn, read_arrays, write_arrays


def random_entities(seed: int, n: int = 300) -> list[Entity]:
    """Entities in no id order, whose names and aliases often normalise alike (one key, several ids)."""
    rng = random.Random(seed)
    words = [
        "fever",
        "Fever",
        "chest pain",
        "CHEST  pain",
        "发热",
        "发烧",
        "胸痛",
        "ECG",
        "e.c.g",
        "a_b",
        "Ⅱ型",
    ]
    types = ["symptom", "disease", "test", "", "药物"]
    out = []
    for i in range(n):
        name = f"{rng.choice(words)} {rng.randrange(40)}" if rng.random() < 0.7 else rng.choice(words)
        aliases = [rng.choice(words) for _ in range(rng.randrange(3))]
        out.append(
            Entity(id=f"id{rng.randrange(10**6)}-{i}", name=name, type=rng.choice(types), aliases=aliases)
        )
    return out


def saved_index(tmp_path: Path, entities: list[Entity]) -> tuple[EntityIndex, Path]:
    store = EntityListStore(entities)
    built = build_entity_index(store, HashEmbedder())
    folder = tmp_path / "index"
    built.save(folder)
    return built, folder


def load(folder: Path, built: EntityIndex) -> EntityIndex:
    loaded = EntityIndex.load(folder, model=built.model, fingerprint=built.fingerprint)
    assert loaded is not None
    return loaded


def assert_same_labels(loaded: EntityIndex, built: EntityIndex) -> None:
    assert list(loaded.vector_ids) == list(built.vector_ids)
    assert list(loaded.vector_texts) == list(built.vector_texts)
    assert dict(loaded.entities.items()) == dict(built.entities.items())
    assert list(loaded.entities) == list(built.entities)  # listing order kept
    assert dict(loaded.exact.items()) == dict(built.exact.items())
    assert {k: list(v) for k, v in loaded.entity_rows.items()} == {
        k: list(v) for k, v in built.entity_rows.items()
    }
    for key in built.exact:
        assert loaded.lookup(key) == built.lookup(key)
    for eid in built.entities:
        assert loaded.entities[eid] == built.entities[eid]
        assert eid in loaded.entities
    for absent in ("", "nope", "id", "fever 999", "\uffff"):
        assert absent not in loaded.entities and loaded.lookup(absent) == []
        assert loaded.entity_rows.get(absent) is None
    assert len(loaded.entities) == len(built.entities) and len(loaded.exact) == len(built.exact)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_loaded_labels_equal_the_built_ones(tmp_path, seed):
    built, folder = saved_index(tmp_path, random_entities(seed))
    assert (folder / PACKED_LABELS_FILE).is_file()  # written with the index
    loaded = load(folder, built)
    assert not isinstance(loaded.vector_ids, list)
    assert_same_labels(loaded, built)
    q = HashEmbedder().embed_queries(["fever 3", "胸痛"])
    assert loaded.search(q, 5) == built.search(q, 5)


def test_labels_are_mapped_from_their_file(tmp_path):
    built, folder = saved_index(tmp_path, random_entities(4))
    loaded = load(folder, built)
    maps = Path("/proc/self/maps").read_text()
    assert str((folder / PACKED_LABELS_FILE).resolve()) in maps
    assert loaded.entities[built.vector_ids[0]] == built.entities[built.vector_ids[0]]


def test_an_index_saved_without_packed_labels_gets_them_on_first_load(tmp_path):
    built, folder = saved_index(tmp_path, random_entities(5))
    (folder / PACKED_LABELS_FILE).unlink()  # as an index saved before labels were packed
    first = load(folder, built)
    assert (folder / PACKED_LABELS_FILE).is_file()
    assert_same_labels(first, built)
    written = (folder / PACKED_LABELS_FILE).stat().st_mtime_ns
    assert_same_labels(load(folder, built), built)
    assert (folder / PACKED_LABELS_FILE).stat().st_mtime_ns == written  # read, not packed again


def test_stale_or_broken_packed_labels_are_packed_again_from_the_json(tmp_path):
    built, folder = saved_index(tmp_path, random_entities(6))
    labels = json.loads((folder / "labels.json").read_text(encoding="utf-8"))
    first = labels["vector_ids"][0]
    labels["entities"][first] = ["Renamed", "symptom"]  # the JSON changed after the pack
    (folder / "labels.json").write_text(json.dumps(labels, ensure_ascii=False), encoding="utf-8")
    assert load(folder, built).entities[first] == ("Renamed", "symptom")
    whole = (folder / PACKED_LABELS_FILE).read_bytes()
    (folder / PACKED_LABELS_FILE).write_bytes(whole[: len(whole) // 2])  # cut short
    assert load(folder, built).entities[first] == ("Renamed", "symptom")
    (folder / PACKED_LABELS_FILE).write_bytes(b"not an array file at all")
    assert load(folder, built).entities[first] == ("Renamed", "symptom")
    assert PackedLabels.read(folder / PACKED_LABELS_FILE, folder / "labels.json") is not None


def test_a_folder_that_cannot_be_written_keeps_the_packed_labels_in_memory(tmp_path, monkeypatch):
    built, folder = saved_index(tmp_path, random_entities(7))
    (folder / PACKED_LABELS_FILE).unlink()

    def refuse(self, path, source):
        raise PermissionError(f"read-only: {path}")

    monkeypatch.setattr(PackedLabels, "write", refuse)
    loaded = load(folder, built)
    assert not (folder / PACKED_LABELS_FILE).exists()
    assert_same_labels(loaded, built)


def test_labels_whose_vector_names_no_entity_are_refused(tmp_path):
    built, folder = saved_index(tmp_path, random_entities(8, n=20))
    labels = json.loads((folder / "labels.json").read_text(encoding="utf-8"))
    labels["vector_ids"][3] = "nobody"
    (folder / "labels.json").write_text(json.dumps(labels), encoding="utf-8")
    assert EntityIndex.load(folder, model=built.model, fingerprint=built.fingerprint) is None
    with pytest.raises(ValueError, match="unknown entity 'nobody'"):
        PackedLabels.pack(labels["vector_ids"], labels["vector_texts"], labels["entities"])


def test_a_string_column_gives_back_every_string():
    strings = ["", "fever", "发热", "x\ud800y", "a" * 1000, "e\u0301"]
    column = StringColumn.of(strings)
    assert list(column) == strings and len(column) == len(strings)
    assert column[-1] == strings[-1] and column[1:3] == strings[1:3]
    with pytest.raises(IndexError):
        column[len(strings)]
    blob, ends = column.arrays
    assert list(StringColumn(blob.copy(), ends.copy())) == strings


def test_arrays_are_written_aligned_and_read_back_mapped(tmp_path):
    arrays = {
        "bytes": np.frombuffer(b"abc", dtype=np.uint8),
        "ints": np.arange(5, dtype=np.int32),
        "longs": np.array([2**40, -1], dtype=np.int64),
        "empty": np.zeros(0, dtype=np.int64),
    }
    path = tmp_path / "a.bin"
    write_arrays(path, arrays, {"note": "发热"})
    back, meta = read_arrays(path)
    assert meta == {"note": "发热"}
    for name, arr in arrays.items():
        assert back[name].dtype == arr.dtype and back[name].tolist() == arr.tolist()
        assert back[name].ctypes.data % 8 == 0
    with pytest.raises(ValueError):
        np.asarray(back["ints"])[0] = 1  # read-only
    path.write_bytes(path.read_bytes()[:-9])
    with pytest.raises(ValueError, match="cut short"):
        read_arrays(path)
    with pytest.raises(ValueError):
        write_arrays(path, {"m": np.zeros((2, 2))}, {})


def test_lookups_stay_exact_when_every_hash_is_alike(tmp_path, monkeypatch):
    from kgmind.retrievers import entity_labels

    monkeypatch.setattr(entity_labels, "stable_hash", lambda text: len(text) % 3)
    built, folder = saved_index(tmp_path, random_entities(9))
    assert_same_labels(load(folder, built), built)


def test_packed_labels_missing_an_array_are_packed_again(tmp_path):
    built, folder = saved_index(tmp_path, random_entities(10, n=30))
    path = folder / PACKED_LABELS_FILE
    arrays, meta = read_arrays(path)
    write_arrays(path, {k: v for k, v in arrays.items() if k != "id_hashes"}, meta)
    assert PackedLabels.read(path, folder / "labels.json") is None
    assert_same_labels(load(folder, built), built)
    assert PackedLabels.read(path, folder / "labels.json") is not None


def test_a_copied_index_keeps_its_packed_labels(tmp_path):
    import os
    import shutil

    built, folder = saved_index(tmp_path, random_entities(11, n=40))
    copy = tmp_path / "deployed"
    copy.mkdir()
    for f in folder.iterdir():
        shutil.copyfile(f, copy / f.name)  # new file times, as a deployment's copy has
    os.utime(copy / "labels.json", ns=(1, 1))
    packed = (copy / PACKED_LABELS_FILE).stat().st_mtime_ns
    assert_same_labels(load(copy, built), built)
    assert (copy / PACKED_LABELS_FILE).stat().st_mtime_ns == packed  # read as it is, not packed again


def test_an_entitys_rows_stay_in_index_order_name_first():
    """Many entities with many names, out of order: each entity's rows ascend (its name's row first)."""
    rng = random.Random(12)
    ids = [f"e{i}" for i in range(4000)]
    vector_ids = [rng.choice(ids) for _ in range(20000)]
    entities = {eid: (eid.upper(), "t") for eid in ids}
    packed = PackedLabels.pack(vector_ids, [f"{v} {i}" for i, v in enumerate(vector_ids)], entities)
    expected: dict[str, list[int]] = {}
    for row, eid in enumerate(vector_ids):
        expected.setdefault(eid, []).append(row)
    assert {eid: packed.entity_rows[eid] for eid in expected} == expected
    assert set(packed.entity_rows) == set(expected)
