"""Hubs' bounded reads kept in the store (issue 42): after every kind of write they equal the engine's.

On the real LadybugStore, with the bound lowered to 2 so that a small seeded KG has many
hubs. The reference is the same read with the kept rows switched off (every hub cut by
the engine's ``BOUNDED_EDGES`` and ``END_IDS``), taken after each write: an import, an
append, feedback, a dispute, a restore, a weights reset, a clear.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kgmind.models import EDGE_HEAD, EDGE_ID, EDGE_SOURCE, EDGE_TAIL, EDGE_WEIGHT, Entity, Relation
from kgmind.stores.factory import close_all_stores
from kgmind.stores.feedback import apply_verdicts, restore_dispute
from kgmind.stores.ladybug import LadybugStore, kept
from kgmind.stores.ladybug import degrees as ld
from kgmind.stores.ladybug import queries as q
from kgmind.stores.weights import make_rule
from toy_kg import relation_columns

K = 2
TYPES = ("has_symptom", "treated_by", "tested_by")


def seeded_kg(seed: int, n_entities: int = 30, n_relations: int = 160) -> tuple[list[Entity], list[Relation]]:
    """Entities and distinct relations drawn with a skew, so a few nodes hold big groups."""
    rnd = random.Random(seed)
    ents = [Entity(name=f"E{i}", type="disease" if i % 3 else "symptom") for i in range(n_entities)]
    rels: dict[str, Relation] = {}
    while len(rels) < n_relations:
        h = ents[min(int(rnd.paretovariate(1.2)) - 1, n_entities - 1)]
        t = rnd.choice(ents)
        if h.id != t.id:
            r = Relation(head=h.id, type=rnd.choice(TYPES), tail=t.id)
            rels[r.id] = r
    return ents, list(rels.values())


def rows_of(store: LadybugStore, hidden: set[str]) -> list[tuple[Any, ...]]:
    ids = sorted(e.id for e in store.iter_entities())
    return [
        (n, r[EDGE_ID], r[EDGE_HEAD], r[EDGE_TAIL], r[EDGE_WEIGHT], r[EDGE_SOURCE], side, deg, back)
        for n, r, side, deg, back in ld.bounded_edges(store, ids, K, hidden)
    ]


def engine_rows(
    store: LadybugStore, hidden: set[str], monkeypatch: pytest.MonkeyPatch
) -> list[tuple[Any, ...]]:
    with monkeypatch.context() as m:
        m.setattr(ld, "read_kept", lambda _s, ids, _k, _h: ([], list(ids)))
        return rows_of(store, hidden)


def assert_same(store: LadybugStore, monkeypatch: pytest.MonkeyPatch, hidden: set[str] | None = None) -> None:
    hidden = set(store.disputed_relations()) if hidden is None else hidden
    assert rows_of(store, hidden) == engine_rows(store, hidden, monkeypatch)


def kept_nodes(store: LadybugStore) -> set[str]:
    return {str(n) for (n,) in store._rows("MATCH (k:Kept) RETURN k.node")}


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LadybugStore]:
    close_all_stores()
    monkeypatch.setattr(kept, "EDGES_PER_GROUP", K)
    ents, rels = seeded_kg(7)
    s = LadybugStore(tmp_path / "kg")
    s.bulk_load(ents, rels[:120])
    yield s
    s.close()


def test_every_hub_has_a_row_and_reads_equal_the_engines_after_an_import_and_an_append(
    store: LadybugStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    hubs = kept._hubs(store._rows(q.HUB_CANDIDATES, {"k": K}), K)
    assert len(hubs) >= 5
    assert kept_nodes(store) == set(hubs)
    assert_same(store, monkeypatch)
    _ents, rels = seeded_kg(7)
    store.bulk_load([], rels[120:])  # an append: the new edges' ends and the hubs next to them
    assert kept_nodes(store) == set(kept._hubs(store._rows(q.HUB_CANDIDATES, {"k": K}), K))
    assert_same(store, monkeypatch)


def test_hub_reads_come_from_the_rows_not_the_engine(store: LadybugStore) -> None:
    seen: list[str] = []
    real = store._rows

    def spy(query: str, params: Any = None, conn: Any = None) -> Any:
        seen.append(query)
        return real(query, params, conn)

    store._rows = spy  # type: ignore[method-assign]
    ld.bounded_edges(store, sorted(kept_nodes(store)), K, set(store.disputed_relations()))
    assert q.GET_KEPT in seen
    assert q.BOUNDED_EDGES not in seen and q.END_IDS not in seen


def test_reads_stay_equal_after_feedback_disputes_restores_and_a_reset(
    store: LadybugStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    rels = list(store.iter_relations())
    hub = sorted(kept_nodes(store))[0]
    on_hub = [r for r in rels if hub in (r.head, r.tail)]
    store.apply_weight_updates("fb1", "run1", "excellent", [on_hub[-1].id], make_rule("excellent"))
    store.apply_weight_updates("fb2", "run2", "poor", [on_hub[0].id], make_rule("poor"))
    assert_same(store, monkeypatch)
    for i, r in enumerate(on_hub[:3]):
        apply_verdicts(store, f"v{i}:N1:wrong", f"v{i}", [(r.id, "wrong")], source="kg flag")
    assert {r.id for r in on_hub[:3]} <= set(store.disputed_relations())
    assert_same(store, monkeypatch)
    assert restore_dispute(store, on_hub[1].id, source="curator") is True
    assert_same(store, monkeypatch)
    store.reset_weights()
    assert_same(store, monkeypatch)


def test_a_reader_hiding_another_set_than_the_store_gets_the_engines_read(
    store: LadybugStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = sorted(kept_nodes(store))[0]
    first = ld.bounded_edges(store, [hub], K, set())[0][1][EDGE_ID]
    assert_same(store, monkeypatch, hidden={first})  # a kept edge hidden by the reader only
    apply_verdicts(store, "v:N1:wrong", "v", [(first, "wrong")], source="kg flag")
    assert_same(store, monkeypatch, hidden=set())  # a store-disputed edge the reader still shows


def test_a_clear_drops_every_row_and_a_store_made_before_rows_gets_them_when_it_opens(
    store: LadybugStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = kept_nodes(store)
    conn = store._write_conn()
    conn.execute(q.DELETE_ALL_KEPT)
    conn.execute("MATCH (m:Meta {key: 'kept'}) DELETE m")
    store.close()
    again = LadybugStore(tmp_path / "kg", create=False)
    try:
        assert kept_nodes(again) == before
        assert_same(again, monkeypatch)
        again.clear()
        assert kept_nodes(again) == set()
    finally:
        again.close()


def test_columnar_loads_keep_the_rows_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kept, "EDGES_PER_GROUP", K)
    ents, rels = seeded_kg(11)
    s = LadybugStore(tmp_path / "cols")
    try:
        s.bulk_load_columns(ents, relation_columns(ents, rels[:100]))  # a fresh store: every hub's row
        assert kept_nodes(s) and kept_nodes(s) == set(kept._hubs(s._rows(q.HUB_CANDIDATES, {"k": K}), K))
        assert_same(s, monkeypatch)
        s.bulk_load_columns([], relation_columns(ents, rels[100:]))  # onto stored edges
        assert kept_nodes(s) == set(kept._hubs(s._rows(q.HUB_CANDIDATES, {"k": K}), K))
        assert_same(s, monkeypatch)
    finally:
        s.close()


def test_a_load_whose_row_rebuild_fails_is_kept_reads_pending_and_rebuilt_when_it_reopens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(kept, "EDGES_PER_GROUP", K)
    ents, rels = seeded_kg(7)
    s = LadybugStore(tmp_path / "kg")
    real = kept.rebuild

    def fail(*_a: Any) -> int:
        raise RuntimeError("disk full")

    monkeypatch.setattr(kept, "rebuild", fail)
    s.bulk_load(ents, rels)  # the load commits; its rows' rebuild, after it, fails
    assert "left to the engine" in caplog.text
    assert len(list(s.iter_relations())) == len(rels)
    assert kept_nodes(s) == set() and not s._read_meta(kept.META_KEPT)
    assert_same(s, monkeypatch)  # every hub cut by the engine meanwhile
    s.close()
    monkeypatch.setattr(kept, "rebuild", real)
    again = LadybugStore(tmp_path / "kg", create=False)
    try:
        assert kept_nodes(again) == set(kept._hubs(again._rows(q.HUB_CANDIDATES, {"k": K}), K)) != set()
        assert_same(again, monkeypatch)
    finally:
        again.close()


def test_rebuild_batches_hold_at_most_50_hubs_and_their_edge_bound() -> None:
    hubs = {f"h{i:03d}": d for i, d in enumerate([150_000, 60_000, 30_000] + [10] * 120)}
    batches = list(kept._batches(hubs))
    assert [n for b in batches for n in b] == sorted(hubs)
    assert all(len(b) <= kept._BATCH for b in batches)
    assert all(sum(hubs[n] for n in b) <= kept._BATCH_EDGES or len(b) == 1 for b in batches)
    assert len(batches[0]) == 1 and len(batches[1]) > 1  # 150k + 60k is over the bound
