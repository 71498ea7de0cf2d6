"""The entity index's float rows read from its saved file, and its 4-bit search graph."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np
import pytest

from kgmind.retrievers.entity_search import (
    CODED_HNSW_EF_SEARCH,
    CODED_HNSW_M,
    FileRows,
    build_graph,
    candidates_to_fetch,
    read_graph,
    rescore,
    save_graph,
)


@pytest.fixture
def saved(tmp_path):
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((300, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    flat = faiss.IndexFlatIP(16)
    flat.add(vectors)
    path = tmp_path / "vectors.faiss"
    faiss.write_index(flat, str(path))
    return path, vectors


def test_rows_come_back_in_the_order_asked_with_repeats(saved):
    path, vectors = saved
    rows = FileRows.open(path, len(vectors))
    assert rows is not None and (rows.ntotal, rows.d) == (300, 16)
    for asked in ([5, 3, 4, 299, 0, 4], [7, 9, 8, 8, 10, 30], [1], list(range(300))):
        got = rows.take(np.array(asked))
        assert np.array_equal(got, vectors[asked])
        got[0, 0] = 9.0  # the caller's copy, not the file's bytes
    assert rows.take(np.array([], dtype=np.int64)).shape == (0, 16)
    assert np.array_equal(rows.all(), vectors)
    with pytest.raises(IndexError):
        rows.take(np.array([300]))
    with pytest.raises(IndexError):
        rows.take(np.array([-1]))


def test_only_a_flat_index_of_the_expected_size_is_read(saved, tmp_path):
    path, vectors = saved
    assert FileRows.open(path, len(vectors) - 1) is None
    assert FileRows.open(path, 0) is None
    assert FileRows.open(tmp_path / "missing.faiss", len(vectors)) is None
    graph = build_graph(vectors, coded=True)
    save_graph(graph, tmp_path, coded=True)
    assert FileRows.open(tmp_path / "hnsw4.faiss", len(vectors)) is None  # not a flat index


def test_the_graph_finds_the_nearest_vectors_from_4_bit_codes(saved, tmp_path):
    _, vectors = saved
    graph = build_graph(vectors, coded=True)
    assert isinstance(graph, faiss.IndexHNSWSQ)
    assert faiss.downcast_index(graph.storage).sq.qtype == faiss.ScalarQuantizer.QT_4bit
    assert graph.hnsw.nb_neighbors(1) == CODED_HNSW_M and graph.hnsw.efSearch == CODED_HNSW_EF_SEARCH
    save_graph(graph, tmp_path, coded=True)
    (tmp_path / "hnsw.faiss").write_bytes(b"old float graph")
    (tmp_path / "hnsw8.faiss").write_bytes(b"8-bit graph of an earlier release")
    save_graph(graph, tmp_path, coded=True)
    assert not (tmp_path / "hnsw.faiss").exists()  # the old float copy goes
    assert not (tmp_path / "hnsw8.faiss").exists()  # and the earlier coded graph
    loaded = read_graph(tmp_path, len(vectors), coded=True)
    assert loaded is not None and read_graph(tmp_path, len(vectors) + 1, coded=True) is None
    assert read_graph(tmp_path, len(vectors), coded=False) is None  # a float graph is asked for: none
    _, found = loaded.search(vectors[:50], 1)
    assert (found[:, 0] == np.arange(50)).mean() >= 0.98  # each vector finds itself


def test_rescoring_orders_the_candidates_by_their_exact_cosine(saved):
    path, vectors = saved
    rows = FileRows.open(path, len(vectors))
    assert rows is not None
    q = vectors[[10, 20]]
    idx = np.array([[3, 10, -1, 7], [20, 20, 5, -1]])  # as a graph returns them: approximate order, gaps
    scores, order = rescore(rows, q, idx)
    assert order[0].tolist()[:1] == [10] and order[1].tolist()[:2] == [20, 20]
    assert order[0, -1] == -1 and scores[0, -1] == -np.inf and order[1, -1] == -1
    exact = vectors[order[0, :3]] @ q[0]
    assert np.allclose(scores[0, :3], exact, atol=1e-6)
    assert list(scores[0, :3]) == sorted(scores[0, :3], reverse=True)


def test_the_coded_graph_is_mapped_from_its_file_and_searches_as_one_read_whole(saved, tmp_path):
    """A mapped graph keeps its pages in the file cache (shared, droppable), not the worker's heap."""
    _, vectors = saved
    save_graph(build_graph(vectors, coded=True), tmp_path, coded=True)
    path = tmp_path / "hnsw4.faiss"
    maps = Path("/proc/self/maps")
    if not maps.exists() or not hasattr(faiss, "IO_FLAG_MMAP_IFC"):
        pytest.skip("needs Linux's /proc and a faiss that maps indexes")
    loaded = read_graph(tmp_path, len(vectors), coded=True)
    assert loaded is not None and str(path) in maps.read_text()
    whole = faiss.read_index(str(path))
    whole.hnsw.efSearch = loaded.hnsw.efSearch
    got, want = loaded.search(vectors[:40], 5), whole.search(vectors[:40], 5)
    assert np.array_equal(got[1], want[1]) and np.allclose(got[0], want[0])
    replaced = build_graph(vectors[::-1].copy(), coded=True)  # a rebuild replaces the file
    save_graph(replaced, tmp_path, coded=True)
    assert np.array_equal(loaded.search(vectors[:40], 5)[1], want[1])  # the mapped graph reads the old file


def test_a_float_graph_is_read_into_memory(saved, tmp_path):
    _, vectors = saved
    save_graph(build_graph(vectors, coded=False), tmp_path, coded=False)
    maps = Path("/proc/self/maps")
    if not maps.exists():
        pytest.skip("needs Linux's /proc")
    assert read_graph(tmp_path, len(vectors), coded=False) is not None
    assert str(tmp_path / "hnsw.faiss") not in maps.read_text()  # its storage becomes the index's vectors


def test_an_8_bit_graph_of_an_earlier_release_is_not_read(saved, tmp_path):
    """An index saved before gets the 4-bit graph (on first use, or ``kgmind index build``)."""
    _, vectors = saved
    old = faiss.IndexHNSWSQ(16, faiss.ScalarQuantizer.QT_8bit, 32, faiss.METRIC_INNER_PRODUCT)
    old.train(vectors)
    old.add(vectors)
    faiss.write_index(old, str(tmp_path / "hnsw8.faiss"))
    assert read_graph(tmp_path, len(vectors), coded=True) is None


def test_the_coded_graph_fetches_more_candidates_to_rescore():
    assert candidates_to_fetch(5, 10_000, coded=False) == 20
    assert candidates_to_fetch(5, 10_000, coded=True) == 40
    assert candidates_to_fetch(1, 10_000, coded=True) == 25
    assert candidates_to_fetch(5, 30, coded=True) == 30  # never more than the index holds
