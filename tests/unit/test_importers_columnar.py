"""Triple files read as columns (issue 42): the same store as parsing to objects, and an atomic load.

Each case parses a file both ways (``parse`` → objects, ``parse_columns`` → columns), loads each
into its own real LadybugDB store, and compares what the stores hold: entities with their types,
relations with ids and weights, the relation schema, and the import summary.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kgmind.importers import columnar, import_kg, import_result, parse, parse_columns
from kgmind.models import Entity, Relation, entity_id
from kgmind.stores.columns import RelationColumns, load_columns
from kgmind.stores.factory import close_all_stores, open_store
from kgmind.stores.protocol import StoreError

FIX = Path(__file__).parents[1] / "fixtures" / "importers"

#: Relations outside the vocabulary (typed by their roles), a repeated row, a weight, a name repaired,
#: and the inverse of one relation written under another name.
OWN_WORDS = """head,relation,tail,weight
Measles,presents_with,Fever,
Measles,presents_with,Rash,2.5
Measles,presents_with,Fever,3
Measles,diagnosed_by,Measles IgM test,
Measles,treated_with,Vitamin A,
Influenza,presents_with,Fever,
Influenza,presents_with,Cough,
Influenza,diagnosed_by,Rapid flu test,
Influenza,treated_with,Oseltamivir,
Dengue,presents_with,Fever,
Dengue,presents_with,Joint pain,
Dengue,diagnosed_by,NS1 antigen test,
Dengue,treated_with,Oral fluids,
Fever,seen_in,Measles,
Fever,seen_in,Influenza,
Cough,seen_in,Influenza,
Caf\\xc3\\xa9 lung,presents_with,Cough,
Dengue,zz_link,Aedes mosquito,
,presents_with,Fever,
Dengue,bad type!,Fever,
"""


@pytest.fixture(autouse=True)
def _close() -> object:
    yield
    close_all_stores()


def _held(uri: str) -> tuple[list[str], list[str], object]:
    store = open_store(uri)
    ents = sorted(e.model_dump_json() for e in store.iter_entities())
    rels = [r.model_dump_json() for r in store.iter_relations()]
    return ents, rels, store.relation_schema()


def _cases(tmp_path: Path) -> list[tuple[Path, str]]:
    own = tmp_path / "own.csv"
    own.write_text(OWN_WORDS, encoding="utf-8")
    return [
        (FIX / "triples.csv", "triples"),
        (FIX / "triples.txt", "triples"),
        (FIX / "triples_nohead.csv", "triples"),
        (FIX / "mindmap.tsv", "mindmap-tsv"),
        (own, "triples"),
    ]


def test_columns_give_the_same_store_as_objects(tmp_path: Path) -> None:
    for i, (path, fmt) in enumerate(_cases(tmp_path)):
        by_objects, by_columns = f"ladybug:{tmp_path}/o{i}", f"ladybug:{tmp_path}/c{i}"
        so = import_result(parse(path, fmt), open_store(by_objects, create=True))
        sc = import_kg(path, fmt, open_store(by_columns, create=True), progress=False)
        assert _held(by_objects) == _held(by_columns), path.name
        keep = {"parse_seconds", "load_seconds", "store"}
        assert so.model_dump(exclude=keep) == sc.model_dump(exclude=keep), path.name


def test_own_words_are_typed_by_roles_and_deduplicated(tmp_path: Path) -> None:
    path = _cases(tmp_path)[-1][0]
    res = parse_columns(path, "triples")
    assert res.rows == 18 and res.skipped == 2 and res.repaired == 1
    assert len(res.relations) == 17  # Measles presents_with Fever twice: the first (weight 1) kept
    import_kg(path, "triples", open_store(f"ladybug:{tmp_path}/kg", create=True), progress=False)
    store = open_store(f"ladybug:{tmp_path}/kg")
    types = {e.name: e.type for e in store.iter_entities()}
    assert (
        types["Measles"] == "disease" and types["Fever"] == "symptom" and types["Vitamin A"] == "medication"
    )
    assert types["Café lung"] == "disease" and types["Aedes mosquito"] == "entity"
    fever = {r.tail: r.weight for r in store.iter_relations() if r.type == "presents_with"}
    assert fever[entity_id("Fever")] == 1.0 and fever[entity_id("Rash")] == 2.5


def test_columnar_load_into_a_store_keeps_stored_weights(tmp_path: Path) -> None:
    store = open_store(f"ladybug:{tmp_path}/kg", create=True)
    a, b, c = (Entity(name=n) for n in ("A", "B", "C"))
    stored = Relation(head=a.id, type="rel", tail=b.id, weight=4.0)
    store.bulk_load([a, b], [stored])
    cols = RelationColumns([a.id, b.id, c.id], *_ints([0, 1], [0, 0], [1, 2]), np.array([1.0, 2.0]), ["rel"])
    report = load_columns(store, [c], cols)
    assert report.relations == 2 and report.entities == 1
    got = {(r.head, r.tail): r.weight for r in store.iter_relations()}
    assert got == {(a.id, b.id): 4.0, (b.id, c.id): 2.0}


def test_columnar_load_with_an_unknown_endpoint_writes_nothing(tmp_path: Path) -> None:
    store = open_store(f"ladybug:{tmp_path}/kg", create=True)
    a = Entity(name="A")
    cols = RelationColumns([a.id, "e-missing"], *_ints([0], [0], [1]), np.array([1.0]), ["rel"])
    fp = store.fingerprint()
    with pytest.raises(StoreError, match="unknown entities: e-missing"):
        load_columns(store, [a], cols)
    assert store.fingerprint() == fp and not list(store.iter_entities())


def test_columnar_load_spans_batches_in_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgmind.stores.ladybug import bulk

    ents = [Entity(name=f"n{i}") for i in range(10)]
    n = len(ents)
    cols = RelationColumns(
        [e.id for e in ents],
        *_ints(list(range(n - 1)), [0] * (n - 1), list(range(1, n))),
        np.ones(n - 1),
        ["rel"],
    )
    copy = bulk.copy_relations
    monkeypatch.setattr(bulk, "copy_relations", lambda conn, r, s: copy(conn, r, s, 3))
    tables = bulk.relation_table
    seen: list[int] = []

    def third_fails(batch: object, stored: object = ()) -> object:
        seen.append(1)
        if len(seen) == 3:
            raise OSError("disk full")
        return tables(batch, stored)  # type: ignore[arg-type]

    store = open_store(f"ladybug:{tmp_path}/kg", create=True)
    monkeypatch.setattr(bulk, "relation_table", third_fails)
    with pytest.raises(StoreError, match="rolled back"):
        load_columns(store, ents, cols)
    assert store.stats().relations_total == 0 and store.stats().entities_total == 0  # two batches undone
    monkeypatch.setattr(bulk, "relation_table", tables)
    load_columns(store, ents, cols)
    assert len(seen) == 3 and store.stats().relations_total == 9


def test_pair_cue_sample_reads_both_directions_of_a_fact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(columnar, "PAIR_CUE_EDGES", 100)
    rng = np.random.default_rng(3)
    h = rng.integers(0, 500, 2000).astype(np.int32)
    t = rng.integers(0, 500, 2000).astype(np.int32)
    cols = RelationColumns(
        [str(i) for i in range(500)], np.r_[h, t], np.zeros(4000, np.int32), np.r_[t, h], np.ones(4000), ["r"]
    )
    pick = columnar._pair_sample(cols)
    assert 40 < pick.sum() < 400  # about PAIR_CUE_EDGES of 4,000
    assert (pick[:2000] == pick[2000:]).all()  # a fact and its flip are read together


def test_parse_columns_refuses_other_formats() -> None:
    with pytest.raises(ValueError, match="not read as columns"):
        parse_columns(FIX / "chatdoctor_mini.csv", "chatdoctor")


def _ints(*cols: list[int]) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(c, dtype=np.int32) for c in cols)
