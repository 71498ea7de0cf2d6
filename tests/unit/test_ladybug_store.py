"""LadybugStore specifics beyond the contract suite: opening errors, threads, query hygiene."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kgmind.models import EDGE_ID, Entity, Relation
from kgmind.stores.ladybug import DB_FILE, LadybugStore
from kgmind.stores.ladybug import queries as q
from kgmind.stores.protocol import GraphStore, StoreError, StoreUnavailableError

LADYBUG_SRC = Path(__file__).resolve().parents[2] / "src" / "kgmind" / "stores" / "ladybug"
#: The modules that send the backend's statements: the store and its verdict log.
STORE_SRCS = tuple(
    LADYBUG_SRC / f
    for f in (
        "store.py",
        "verdicts.py",
        "weights.py",
        "degrees.py",
        "kept.py",
        "rows.py",
        "bulk.py",
        "load_plan.py",
        "profile.py",
    )
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LadybugStore]:
    s = LadybugStore(tmp_path / "kg")
    yield s
    s.close()


def _tiny(store: LadybugStore) -> tuple[Entity, Entity, Relation, Relation]:
    a = Entity(name="Alpha", type="disease")
    b = Entity(name="Beta", type="symptom")
    r1 = Relation(head=a.id, type="has_symptom", tail=b.id)
    r2 = Relation(head=a.id, type="related_to", tail=b.id, weight=0.5)
    store.bulk_load([a, b], [r1, r2])
    return a, b, r1, r2


# -- opening --------------------------------------------------------------------------------


def test_creates_directory_and_uri(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "kg"
    s = LadybugStore(str(path))
    try:
        assert (path / DB_FILE).exists()
        assert s.uri == f"ladybug:{path.resolve()}"
        assert isinstance(s, GraphStore)
    finally:
        s.close()


def test_file_instead_of_directory(tmp_path: Path) -> None:
    f = tmp_path / "afile"
    f.write_text("not a store")
    with pytest.raises(StoreUnavailableError) as err:
        LadybugStore(f)
    msg = str(err.value)
    assert str(f) in msg and "\n" not in msg


def test_directory_below_a_file(tmp_path: Path) -> None:
    f = tmp_path / "afile"
    f.write_text("x")
    with pytest.raises(StoreUnavailableError) as err:
        LadybugStore(f / "kg")
    assert str(f / "kg") in str(err.value)


def test_corrupt_database_file(tmp_path: Path) -> None:
    d = tmp_path / "kg"
    d.mkdir()
    (d / DB_FILE).write_bytes(b"garbage" * 100)
    with pytest.raises(StoreUnavailableError) as err:
        LadybugStore(d)
    assert str(d) in str(err.value) and "\n" not in str(err.value)


def test_locked_by_another_process(tmp_path: Path) -> None:
    path = tmp_path / "kg"
    src = Path(__file__).resolve().parents[2] / "src"
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(src)!r})
        from kgmind.stores.ladybug import LadybugStore
        s = LadybugStore({str(path)!r})
        print("ready", flush=True)
        sys.stdin.readline()
        s.close()
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        with pytest.raises(StoreUnavailableError) as err:
            LadybugStore(path)
        assert str(path) in str(err.value) and "\n" not in str(err.value)
    finally:
        assert proc.stdin is not None
        proc.stdin.write("\n")
        proc.stdin.flush()
        proc.wait(timeout=60)
    # released: it opens now
    LadybugStore(path).close()


def test_closed_store_raises(tmp_path: Path) -> None:
    s = LadybugStore(tmp_path / "kg")
    s.close()
    s.close()  # idempotent
    with pytest.raises(StoreError):
        s.stats()
    with pytest.raises(StoreError):
        s.clear()


# -- threads --------------------------------------------------------------------------------


def test_readers_see_committed_writes_across_threads(store: LadybugStore) -> None:
    a, _, r1, _ = _tiny(store)
    seen: list[float] = []
    th = threading.Thread(target=lambda: seen.append(store.get_relations([r1.id])[0].weight))
    th.start()
    th.join()
    assert seen == [1.0]  # the thread's first connection sees the loaded data
    store.apply_weight_updates("fb", "run", "excellent", [r1.id], lambda s, i: {r1.id: 4.0})
    th = threading.Thread(target=lambda: seen.append(store.out_edges(a.id)[0].weight))
    th.start()
    th.join()
    assert seen == [1.0, 4.0]


# -- behaviour specific to this backend ------------------------------------------------------


def test_parallel_edges_give_distinct_paths(store: LadybugStore) -> None:
    a, b, r1, r2 = _tiny(store)
    got = store.paths(a.id, b.id, max_hops=2)
    assert [[r.id for r in p.relations] for p in got] == sorted([[r1.id], [r2.id]])
    assert store.paths(b.id, a.id, max_hops=2) == []
    assert len(store.paths(b.id, a.id, max_hops=2, directed=False)) == 2


def test_path_to_self_is_the_empty_path(store: LadybugStore) -> None:
    a, *_ = _tiny(store)
    (p,) = store.paths(a.id, a.id, max_hops=3)
    assert (p.nodes, p.relations) == ([a.id], [])


def test_neighbors_rejects_bad_direction(store: LadybugStore) -> None:
    with pytest.raises(ValueError):
        store.neighbors(["x"], direction="sideways")  # type: ignore[arg-type]


def test_empty_load_changes_nothing(store: LadybugStore) -> None:
    fp = store.fingerprint()
    report = store.bulk_load([], [], [])
    assert (report.entities, report.relations, report.docs) == (0, 0, 0)
    assert store.fingerprint() == fp


def test_aliases_are_deduplicated_by_key(store: LadybugStore) -> None:
    e = Entity(name="Heart attack", aliases=["MI", "mi", "Heart_Attack", "ＭＩ", "Myocardial infarction"])
    store.bulk_load([e], [])
    (got,) = store.get_entities([e.id])
    assert got.aliases == ["MI", "Myocardial infarction"]


def test_rule_touching_a_non_sibling_is_rejected(store: LadybugStore) -> None:
    _, b, r1, _ = _tiny(store)
    c = Entity(name="Gamma")
    r3 = Relation(head=b.id, type="related_to", tail=c.id)
    store.bulk_load([c], [r3])
    with pytest.raises(StoreError, match="not a sibling"):
        store.apply_weight_updates("fb", "run", "poor", [r1.id], lambda s, i: {r3.id: 2.0})
    assert store.get_relations([r3.id])[0].weight == 1.0


def test_non_numeric_weight_is_rejected(store: LadybugStore) -> None:
    _, _, r1, _ = _tiny(store)
    with pytest.raises(StoreError):
        store.apply_weight_updates("fb", "run", "poor", [r1.id], lambda s, i: {r1.id: True})
    assert store.weight_changes() == []


def test_feedback_without_relations_is_a_no_op(store: LadybugStore) -> None:
    _tiny(store)
    assert store.apply_weight_updates("fb", "run", "poor", [], lambda s, i: {}) == []


def test_failed_transaction_leaves_writer_usable(store: LadybugStore) -> None:
    _, _, r1, _ = _tiny(store)
    with pytest.raises(StoreError):
        store.apply_weight_updates("fb1", "run", "poor", [r1.id], lambda s, i: 1 / 0)  # type: ignore[arg-type,return-value]
    assert len(store.apply_weight_updates("fb2", "run", "poor", [r1.id], lambda s, i: {r1.id: 0.5})) == 1
    store.bulk_load([Entity(name="Delta")], [])
    assert store.stats().entities_total == 3


# -- query hygiene ----------------------------------------------------------------------------


def test_query_constants_are_parameterised_strings() -> None:
    for name in q.__all__:
        value = getattr(q, name)
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            assert isinstance(item, str), name
            assert "{" not in item.replace("{id: ", "").replace("{key: ", "") or "$" in item, name


def _is_query_ref(expr: ast.expr) -> bool:
    """``q.NAME``, a plain variable (holding one), or a conditional between such."""
    if isinstance(expr, ast.IfExp):
        return _is_query_ref(expr.body) and _is_query_ref(expr.orelse)
    if isinstance(expr, ast.Attribute):
        return isinstance(expr.value, ast.Name) and expr.value.id == "q"
    return isinstance(expr, ast.Name)


@pytest.mark.parametrize("path", STORE_SRCS, ids=lambda p: p.name)
def test_store_sends_only_query_constants(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cypher = re.compile(r"^\W*(MATCH|COPY|CREATE|MERGE|UNWIND|RETURN|BEGIN|COMMIT|ROLLBACK)\b")
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            assert not cypher.match(node.value), node.value
        if isinstance(node, ast.JoinedStr):
            assert not cypher.match(ast.unparse(node)[2:]), ast.unparse(node)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("execute", "_rows", "_table", "_scalar")
        ):
            first = node.args[0] if node.args else None
            assert first is not None and _is_query_ref(first), ast.unparse(node)


def test_every_query_constant_is_used() -> None:
    src = "".join(p.read_text(encoding="utf-8") for p in STORE_SRCS)
    unused = [n for n in q.__all__ if f"q.{n}" not in src]
    assert unused == []


def test_failure_after_copy_rolls_back_the_whole_load(
    store: LadybugStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b, _, _ = _tiny(store)
    fp = store.fingerprint()
    c = Entity(name="Gamma", aliases=["G"])
    merged_a = Entity(name="alpha", description="now described")
    r3 = Relation(head=b.id, type="related_to", tail=c.id, source="src")

    def fail(conn: object) -> None:
        raise RuntimeError("disk full (simulated)")

    monkeypatch.setattr(store, "_bump_version", fail)
    with pytest.raises(StoreError, match="nothing written"):
        store.bulk_load([c, merged_a], [r3], [])
    monkeypatch.undo()
    # the COPYs and the merge UPDATE that ran inside the transaction are gone
    assert store.find_entities("gamma") == []
    assert store.get_entities([a.id])[0].description == ""
    assert store.get_relations([r3.id]) == []
    assert store.stats().relations_total == 2
    assert store.fingerprint() == fp
    # and the same load succeeds afterwards
    store.bulk_load([c, merged_a], [r3], [])
    assert store.get_relations([r3.id])[0].source == "src"
    assert store.get_entities([a.id])[0].description == "now described"


def test_reader_connections_are_pooled_not_one_per_thread(store: LadybugStore) -> None:
    """A server answers each question on fresh threads: readers must not pile up with them."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    a, b, _, _ = _tiny(store)
    for _ in range(20):  # twenty short-lived threads, one after another: one reader serves them all
        t = threading.Thread(target=store.get_entities, args=([a.id],))
        t.start()
        t.join()
    assert len(store._conns._all) == 2  # the writer and one reader
    with ThreadPoolExecutor(4) as ex:  # reads at once get a reader each, and the right rows
        got = list(ex.map(lambda i: store.get_entities([(a, b)[i % 2].id])[0].id, range(200)))
    assert got == [(a, b)[i % 2].id for i in range(200)]
    assert 2 <= len(store._conns._all) <= 5
    store.close()
    assert store._conns._all == [] and store._conns._idle == []


def test_under_a_bounded_page_cache_readers_are_pooled_but_one_that_holds_pages_is_closed(tmp_path) -> None:
    """A reader's prepared ``EDGES_BETWEEN`` holds pages of the page cache: that read's reader is closed
    after it, while the other reads share pooled readers (preparing a statement again costs time)."""
    from concurrent.futures import ThreadPoolExecutor

    store = LadybugStore(tmp_path / "bounded", buffer_mb=64)
    a, b, r1, r2 = _tiny(store)
    opened = []
    connect = store._conns._connect
    store._conns._connect = lambda: opened.append(1) or connect()
    for _ in range(20):
        t = threading.Thread(target=store.get_entities, args=([a.id],))
        t.start()
        t.join()
    assert len(opened) <= 1 and len(store._conns._all) == 2  # the writer and one pooled reader
    with ThreadPoolExecutor(4) as ex:
        got = list(ex.map(lambda i: store.get_entities([(a, b)[i % 2].id])[0].id, range(200)))
    assert got == [(a, b)[i % 2].id for i in range(200)]
    pooled = len(store._conns._all)
    assert 2 <= pooled <= 5 and len(store._conns._idle) == pooled - 1
    before = len(opened)
    assert {e.id for e in store.edges_between([a.id], [b.id])} == {r1.id, r2.id}
    assert len(opened) == before + 1  # a reader of its own
    assert len(store._conns._all) == pooled and len(store._conns._idle) == pooled - 1  # and closed after
    store.close()
    assert store._conns._all == [] and store._conns._idle == []


_FULL = "Buffer manager exception: Unable to allocate memory! The buffer pool is full"


def test_under_a_page_cache_small_next_to_the_store_each_read_has_a_reader_closed_after_it(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pooled readers' statements would hold what little of the store fits: no reader outlives its read."""
    from concurrent.futures import ThreadPoolExecutor

    from kgmind.stores.ladybug import connections

    store = LadybugStore(tmp_path / "small-cache")
    a, b, _, _ = _tiny(store)
    store.close()
    monkeypatch.setattr(connections, "POOLED_READERS_MIN_CACHE_SHARE", 10_000.0)  # 64 MiB is small here
    store = LadybugStore(tmp_path / "small-cache", buffer_mb=64)  # the share of the file it has when opened
    with ThreadPoolExecutor(4) as ex:
        got = list(ex.map(lambda i: store.get_entities([(a, b)[i % 2].id])[0].id, range(200)))
    assert got == [(a, b)[i % 2].id for i in range(200)]
    assert len(store._conns._all) == 1 and store._conns._idle == []  # the writer
    with store._conns.reading() as reader:
        assert reader.execute("RETURN 1").get_all() == [[1]] and len(store._conns._all) == 2
    with pytest.raises(RuntimeError):
        reader.execute("RETURN 1")  # closed
    with store._conns.reading() as reader:  # the store closes while a read holds its reader
        store.close()
    assert store._conns._all == []


def test_readers_are_pooled_unless_a_bounded_cache_is_small_next_to_the_store() -> None:
    from kgmind.stores.ladybug.connections import pools_readers
    from kgmind.tuning import POOLED_READERS_MIN_CACHE_SHARE as share

    mib = 1024 * 1024
    assert pools_readers(None, 10**12)  # the engine's default cache
    assert pools_readers(256 * mib, 857_260_032) and not pools_readers(128 * mib, 857_260_032)
    assert pools_readers(int(share * 1000), 1000) and not pools_readers(int(share * 1000) - 1, 1000)


class _FailingReader:
    """A pooled reader whose every read fails with ``message`` (a fake: LadybugDB's full page cache)."""

    def __init__(self, message: str = _FULL) -> None:
        self.message = message
        self.closed = False

    def execute(self, query: str, params: dict[str, Any] | None = None) -> Any:
        raise RuntimeError(self.message)

    def close(self) -> None:
        self.closed = True


def test_a_read_that_finds_the_page_cache_full_closes_the_idle_readers_and_runs_again(tmp_path) -> None:
    """What idle readers' statements hold is what fills a small page cache: the read that meets a full
    one gets it back and is answered (wiring: the full cache is a fake reader)."""
    store = LadybugStore(tmp_path / "bounded", buffer_mb=64)
    a, _, r1, _ = _tiny(store)
    full, other = _FailingReader(), _FailingReader()
    store._conns._all += [other, full]
    store._conns._idle += [other, full]  # ``full`` is the one the next read takes
    assert [e.id for e in store.get_entities([a.id])] == [a.id]
    assert full.closed and other.closed and full not in store._conns._all and other not in store._conns._all
    assert not any(isinstance(c, _FailingReader) for c in store._conns._idle)
    broken = _FailingReader("Binder exception: no such table")
    store._conns._all.append(broken)
    store._conns._idle[:] = [broken]
    with pytest.raises(StoreError, match="no such table"):  # any other failure is not read again
        store.get_relations([r1.id])
    assert not broken.closed and store._conns._idle == [broken]
    store.close()


def test_reading_a_closed_store_says_it_is_closed(tmp_path) -> None:
    store = LadybugStore(tmp_path / "kg")
    a, _, _, _ = _tiny(store)
    store.close()
    with pytest.raises(StoreError, match="is closed"):
        store.get_entities([a.id])


def test_bounded_reads_find_nodes_by_key(store: LadybugStore) -> None:
    """Nodes are looked up one by one (UNWIND): an unknown id, a node without edges and a repeated id
    add nothing, and each kept edge comes once per side with its way back."""
    a, b, r1, r2 = _tiny(store)
    lone = Entity(name="Gamma", type="symptom")
    back = Relation(head=b.id, type="symptom_of", tail=a.id)
    store.bulk_load([lone], [back])
    rows = store.bounded_edges([lone.id, "no-such-id", a.id, a.id], 1)
    got = sorted((node, r[EDGE_ID], side, has_back) for node, r, side, _, has_back in rows)
    # per type and side one edge: a's two out-types and its one in-type; only a's edges are read
    assert got == sorted(
        [(a.id, r1.id, "out", True), (a.id, r2.id, "out", True), (a.id, back.id, "in", True)]
    )
    # a hidden edge is not read, but it is still the stored way back (as on the whole-KG index)
    kept = store.bounded_edges([b.id], 5, hidden={back.id})
    assert sorted((r[EDGE_ID], side, has_back) for _, r, side, _, has_back in kept) == sorted(
        [(r1.id, "in", True), (r2.id, "in", True)]
    )
    assert store.bounded_edges([lone.id], 5) == []


def test_bounded_rows_are_plain_tuples_the_collector_stops_tracking(store: LadybugStore) -> None:
    """A worker keeps ~10^5 read rows and a cold question lists ~10^4: as exact tuples of strings
    and numbers the cyclic GC untracks them at its first look, so full collections do not walk them
    (a ``StoredEdge`` row stays tracked for good: CPython untracks exact tuples only)."""
    import gc

    a, _b, r1, _r2 = _tiny(store)
    rows = store.bounded_edges([a.id], 5)
    assert rows and all(type(row) is tuple and type(row[1]) is tuple for row in rows)
    assert {row[1][EDGE_ID] for row in rows} >= {r1.id}
    gc.collect()  # the edges first, then (next time) the rows holding them
    gc.collect()
    assert not any(gc.is_tracked(row) or gc.is_tracked(row[1]) for row in rows)


def test_edges_between_reads_both_directions_once_disputed_ones_included(store: LadybugStore) -> None:
    """A cut hub's votes past its bound are read from these edges (issue 42): every stored edge
    between the two sets, whichever way it is stored, each once, with its weight and source."""
    from kgmind.stores.feedback import apply_verdicts

    a, b, r1, r2 = _tiny(store)
    c = Entity(name="Gamma", type="disease")
    back = Relation(head=b.id, type="symptom_of", tail=c.id, weight=2.0, source="s")
    away = Relation(head=c.id, type="related_to", tail=a.id)  # joins two nodes of the second set only
    store.bulk_load([c], [back, away])
    for run in ("x", "y"):
        apply_verdicts(store, f"{run}:between", run, [(r1.id, "wrong")], source="test")
    assert r1.id in store.disputed_relations()
    got = store.edges_between([b.id, "no-such-id"], [a.id, c.id])
    assert sorted(e.id for e in got) == sorted([r1.id, r2.id, back.id])  # the disputed r1 too
    assert {e.id: (e.head, e.type, e.tail, e.weight, e.source) for e in got}[back.id] == (
        b.id,
        "symptom_of",
        c.id,
        2.0,
        "s",
    )
    both = store.edges_between([a.id, b.id], [a.id, b.id])  # both ends in both sets: once each
    assert sorted(e.id for e in both) == sorted([r1.id, r2.id])
    assert store.edges_between([], [a.id]) == [] and store.edges_between([b.id], []) == []


def test_edges_between_keeps_only_the_asked_ends_whatever_an_offset_names(
    store: LadybugStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other ends are found by their offsets, read in a statement of their own: an offset that
    names another entity by the second read (one deleted and another written) adds no edge."""
    a, b, r1, r2 = _tiny(store)
    c = Entity(name="Gamma", type="disease")
    other = Relation(head=c.id, type="has_symptom", tail=b.id)
    store.bulk_load([c], [other])
    rows = store._rows

    def offsets_of_c_too(query: str, params: Any = None, conn: Any = None) -> Any:
        if query == q.ENTITY_OFFSETS:  # the offsets of the asked ids, and of Gamma, which was not asked
            return rows(query, {"ids": [*params["ids"], c.id]}, conn)
        return rows(query, params, conn)

    monkeypatch.setattr(store, "_rows", offsets_of_c_too)
    assert sorted(e.id for e in store.edges_between([b.id], [a.id])) == sorted([r1.id, r2.id])
    monkeypatch.undo()
    assert sorted(e.id for e in store.edges_between([b.id], [a.id, c.id])) == sorted([r1.id, r2.id, other.id])
    assert store.edges_between([b.id], ["no-such-id"]) == []


def test_fingerprint_counts_again_only_when_a_load_moved_the_version(
    store: LadybugStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, _, r1, _ = _tiny(store)
    first = store.fingerprint()
    counts: list[str] = []
    rows = store._rows

    def counting(
        query: str, params: dict[str, object] | None = None, conn: object = None
    ) -> list[list[object]]:
        if query in (q.COUNT_ENTITIES, q.COUNT_RELATIONS) and conn is None:  # once, not per connection
            counts.append(query)
        return rows(query, params, conn)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "_rows", counting)
    assert store.fingerprint() == first and counts == []  # nothing written: the version alone
    store.apply_weight_updates(
        "fb-1", "run-1", "excellent", [r1.id], lambda s, i: {r1.id: 4.0}
    )  # weights only
    assert store.fingerprint() == first and counts == []
    store.bulk_load([Entity(name="Gamma")], [])
    counts.clear()  # the load counts for itself
    after = store.fingerprint()
    assert after != first and after.endswith(":3:2") and len(counts) == 2
    store.clear()
    assert store.fingerprint().endswith(":0:0")


def _spy(store: LadybugStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement ``store`` sends from now on, in order."""
    sent: list[str] = []
    rows = store._rows

    def spying(
        query: str, params: dict[str, object] | None = None, conn: object = None
    ) -> list[list[object]]:
        sent.append(query)
        return rows(query, params, conn)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "_rows", spying)
    return sent


def test_whole_reads_of_small_nodes_equal_the_engine_cut(
    store: LadybugStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nodes with no group over k are read whole and ordered in Python (no BOUNDED_EDGES, no
    END_IDS); the rows equal the engine's cut exactly, hubs, ties, self-loops, ways back and
    hidden edges included, and stale degrees that call a hub small still give the cut."""
    import random

    from kgmind.stores.ladybug import degrees as ld

    rng = random.Random(7)
    huge = {"a": (10**9, 0)}  # a group too big for any k: every node cut by the engine
    ents = [Entity(name=f"E{i}", type="disease" if i % 3 else "symptom") for i in range(40)]
    rels = {}
    for _ in range(500):
        h, t = rng.choice(ents[:8]) if rng.random() < 0.5 else rng.choice(ents), rng.choice(ents)
        r = Relation(
            head=h.id, type=rng.choice(["a", "b", "c"]), tail=t.id, weight=rng.choice([0.5, 1.0, 2.0])
        )
        rels[r.id] = r
    store.bulk_load(ents, list(rels.values()))
    hidden = set(rng.sample(sorted(rels), 40))
    ids = [e.id for e in ents] + ["no-such-id"]
    sent = _spy(store, monkeypatch)
    for k in (2, 6, 1000):
        fast = store.bounded_edges(ids, k, hidden)
        if k == 1000:  # no group over k: every node read whole, nothing cut or asked again
            assert q.WHOLE_EDGES in sent and q.BOUNDED_EDGES not in sent and q.END_IDS not in sent
        degrees = ld.read_degrees
        monkeypatch.setattr(ld, "read_degrees", lambda s, i: {n: (10**9, huge) for n in i})  # all hubs
        sent.clear()
        engine = store.bounded_edges(ids, k, hidden)
        assert q.WHOLE_EDGES not in sent and q.BOUNDED_EDGES in sent
        # stale degrees: every node claims empty groups, so each is read whole, found over k and cut
        monkeypatch.setattr(ld, "read_degrees", lambda s, i: {n: (0, {}) for n in i})
        stale = store.bounded_edges(ids, k, hidden)
        monkeypatch.setattr(ld, "read_degrees", degrees)
        # nodes the caller calls small (their kept degree came with an earlier read) are read whole
        # without asking their degrees; one with a group over k after all still gets the engine's cut
        sent.clear()
        hinted = store.bounded_edges(ids, k, hidden, small=ids)
        assert q.GET_DEGREES not in sent
        assert fast == engine == stale == hinted
        assert any(has_back for *_, has_back in fast) and not all(has_back for *_, has_back in fast)
        sent.clear()
    assert len(engine) > 200


def test_meta_versions_are_read_once_until_a_write(
    store: LadybugStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The load, weights and disputes versions come from memory until a write; a write (committed
    or rolled back) forgets them, and a value read while a write finished is not kept."""
    _, _, r1, _ = _tiny(store)
    reads: list[object] = []
    rows = store._rows

    def counting(
        query: str, params: dict[str, object] | None = None, conn: object = None
    ) -> list[list[object]]:
        if query == q.GET_META and conn is None:
            reads.append(params)
        return rows(query, params, conn)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "_rows", counting)
    first = (store.fingerprint(), store.weights_version(), store.disputes_version())
    assert len(reads) == 3
    assert (store.fingerprint(), store.weights_version(), store.disputes_version()) == first
    assert len(reads) == 3  # from memory
    store.apply_weight_updates("fb-1", "run-1", "excellent", [r1.id], lambda s, i: {r1.id: 4.0})
    assert store.weights_version() == first[1] + 1 and store.fingerprint() == first[0]
    store.bulk_load([Entity(name="Gamma")], [])
    assert store.fingerprint() != first[0]
    with (
        pytest.raises(StoreError),
        store._transaction("a write that fails") as conn,
    ):  # rolled back: forgets too
        conn.execute(q.SET_META, {"key": "load", "version": "never-committed"})
        raise RuntimeError("boom")
    n = len(reads)
    store.fingerprint()
    assert len(reads) == n + 1

    def racing(
        query: str, params: dict[str, object] | None = None, conn: object = None
    ) -> list[list[object]]:
        got = rows(query, params, conn)  # type: ignore[arg-type]
        if query == q.GET_META and conn is None:
            store._meta_writes += 1  # a write finished while this read ran
        return got

    monkeypatch.setattr(store, "_rows", racing)
    store._meta.clear()
    store.weights_version()
    assert "weights" not in " ".join(store._meta) and store._meta == {}


def test_entities_looked_up_are_kept_until_a_write_moves_the_load_version(
    store: LadybugStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second lookup of the same entities sends no query and gives what the engine holds; an import
    that changes an entity moves the load version, and the new entity is read again."""
    a, b, _, _ = _tiny(store)
    c = Entity(name="Gamma", type="symptom")
    store.bulk_load([c], [Relation(head=a.id, type="has_symptom", tail=c.id)])
    first = store.get_entities([b.id, c.id, "no-such-id"])
    sent = _spy(store, monkeypatch)
    again = store.get_entities([c.id, b.id])
    assert q.GET_ENTITIES not in sent
    assert again == [c, b] == list(reversed(first)) == list(store._read_entities([c.id, b.id]))
    store.bulk_load([c.model_copy(update={"description": "a sign"})], [])  # an import fills it in
    assert store.get_entities([c.id])[0].description == "a sign"


def test_the_entity_cache_is_bounded_and_keyed_by_version() -> None:
    from kgmind.stores.ladybug.entity_cache import EntityCache

    cache = EntityCache(size=2)
    ents = [Entity(name=f"E{i}") for i in range(3)]
    asked: list[list[str]] = []

    def read(ids: list[str]) -> list[Entity]:
        asked.append(ids)
        return [e for e in ents if e.id in ids]

    cache.remember(ents, "v1")  # the oldest goes past the bound
    assert sorted(e.id for e in cache.fetch([e.id for e in ents], "v1", read)) == sorted(e.id for e in ents)
    assert asked == [[ents[0].id]]
    assert cache.fetch([ents[2].id], "v1", read) == [ents[2]] and len(asked) == 1  # kept: equal, not read
    import gc

    gc.collect()  # kept as plain tuples: the collector stops walking them
    assert not any(gc.is_tracked(kept) for kept in cache._kept.values())
    assert cache.fetch([ents[2].id], "v2", read) == [ents[2]] and asked[-1] == [ents[2].id]  # new version


def test_the_relation_profile_is_scanned_once_per_load_and_kept_for_every_process(
    store: LadybugStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The roles' whole-KG aggregate is the one read a worker with a bounded page cache could not
    afford at 10M (issue 42): the first read after a load keeps it, later reads and processes take it."""
    a, *_ = _tiny(store)
    sent = _spy(store, monkeypatch)
    first = store.relation_schema()
    scans = sent.count(q.RELATION_PROFILE)  # the spy sees a read and its call on a reader connection
    assert scans >= 1
    assert store.relation_schema() == first and sent.count(q.RELATION_PROFILE) == scans
    store.close()
    again = LadybugStore(tmp_path / "kg")  # another process: the kept rows, no scan
    try:
        sent_again = _spy(again, monkeypatch)
        assert again.relation_schema() == first and q.RELATION_PROFILE not in sent_again
        c = Entity(name="Gamma", type="test")
        again.bulk_load([c], [Relation(head=a.id, type="need_test", tail=c.id)])
        assert "need_test" not in first.roles
        after = again.relation_schema()  # a load moved the version: scanned again
        assert q.RELATION_PROFILE in sent_again and after.roles["need_test"].role == "test"
    finally:
        again.close()


def test_every_entity_is_read_once_in_id_order_one_range_of_ids_at_a_time(
    store: LadybugStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page cache bounded to 128 MiB could not sort every entity's columns in one read at 10M
    (issue 42), so the scan sorts ids only and reads ranges of them: across the ranges' ends it must
    still give each entity once, whole, in id order."""
    monkeypatch.setattr("kgmind.stores.ladybug.store.ENTITY_SCAN_ROWS", 3)
    ents = [
        Entity(name=f"Entity {i}", type="symptom", aliases=[f"alias {i}"], description=f"about {i}")
        for i in range(10)
    ]
    store.bulk_load(ents, [])
    ranges = store._entity_id_ranges()
    assert len(ranges) == 4 and all(first <= last for first, last in ranges)
    got = list(store.iter_entities())
    assert [e.id for e in got] == sorted(e.id for e in ents)
    assert {e.id: e for e in got} == {e.id: e for e in store.get_entities([e.id for e in ents])}
    assert [e.description for e in sorted(got, key=lambda e: e.name)] == [f"about {i}" for i in range(10)]
    store.clear()
    assert store._entity_id_ranges() == [] and list(store.iter_entities()) == []


def test_relation_counts_by_type_come_from_the_kept_profile_and_follow_loads(
    store: LadybugStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting every edge by type filled a 128 MiB page cache at 10M (issue 42); the counts are the
    kept profile's, summed over the ends' types, so they must equal the edges and move with a load."""
    a, b, *_ = _tiny(store)
    c = Entity(name="Gamma", type="test")
    store.bulk_load([c], [Relation(head=a.id, type="has_symptom", tail=c.id)])
    counted: dict[str, int] = {}
    for r in store.iter_relations():
        counted[r.type] = counted.get(r.type, 0) + 1
    stats = store.stats()
    assert stats.relations == counted == {"has_symptom": 2, "related_to": 1} and stats.relations_total == 3
    sent = _spy(store, monkeypatch)
    assert store.stats() == stats and q.RELATION_PROFILE not in sent  # kept: no scan of the edges
    store.bulk_load([], [Relation(head=b.id, type="treated_by", tail=c.id)])
    assert store.stats().relations == {"has_symptom": 2, "related_to": 1, "treated_by": 1}
