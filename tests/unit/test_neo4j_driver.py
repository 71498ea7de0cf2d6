"""Driver-boundary tests of Neo4jStore: the exact statements and parameters it sends.

The driver is a ``MagicMock(spec=neo4j.Driver)``; sessions and managed transactions
are mocks whose ``run`` answers from a per-statement table. No server is needed.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock, call

import neo4j
import pytest
from neo4j.exceptions import AuthError, CypherSyntaxError, ServiceUnavailable

from kgmind.models import Entity, KnowledgeDoc, Relation, entity_id
from kgmind.stores.base import NO_LIMIT
from kgmind.stores.cypher import HOPS
from kgmind.stores.neo4j import queries as q
from kgmind.stores.neo4j import store as store_mod
from kgmind.stores.neo4j.store import MAX_PATH_HOPS, Neo4jStore, type_label
from kgmind.stores.protocol import GraphPath, GraphStore, StoreError, StoreUnavailableError

READ = neo4j.RoutingControl.READ
DB = "kgdb"


class FakeResult:
    """Just enough of neo4j.Result: iteration, single(), consume()."""

    def __init__(self, rows: list[dict[str, Any]] | None = None) -> None:
        self.rows = rows or []

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def single(self) -> dict[str, Any] | None:
        return self.rows[0] if self.rows else None

    def consume(self) -> None:
        return None


class Harness:
    """A mocked driver with one session and one managed transaction."""

    def __init__(self) -> None:
        self.driver = MagicMock(spec=neo4j.Driver)
        self.session = MagicMock(spec=neo4j.Session)
        self.session.__enter__.return_value = self.session
        self.session.__exit__.return_value = None
        self.driver.session.return_value = self.session
        self.tx = MagicMock(spec=neo4j.ManagedTransaction)
        self.session.execute_write.side_effect = lambda fn, *a, **k: fn(self.tx, *a, **k)
        self.tx_answers: dict[str, Callable[[dict[str, Any]], list[dict[str, Any]]]] = {}
        self.tx.run.side_effect = self._tx_run
        self.read_answers: dict[str, list[dict[str, Any]]] = {}
        self.driver.execute_query.side_effect = self._execute_query
        self.store = Neo4jStore("neo4j://example:7687", database=DB, driver=self.driver)
        self.store._schema_ready = True  # schema statements are tested on their own

    def _tx_run(self, query: str, params: dict[str, Any] | None = None) -> FakeResult:
        answer = self.tx_answers.get(query)
        return FakeResult(answer(params or {}) if answer else [])

    def _execute_query(self, query: str, params: Any = None, **kwargs: Any) -> neo4j.EagerResult:
        records: Any = self.read_answers.get(query, [])  # dicts stand in for neo4j.Record
        return neo4j.EagerResult(records=records, summary=MagicMock(), keys=[])

    def tx_queries(self) -> list[str]:
        return [c.args[0] for c in self.tx.run.call_args_list]

    def read_calls(self) -> list[Any]:
        return self.driver.execute_query.call_args_list


@pytest.fixture
def h() -> Harness:
    return Harness()


def read_call(query: str, params: dict[str, Any]) -> Any:
    return call(query, params, database_=DB, routing_=READ)


def ent(name: str, etype: str = "disease", aliases: tuple[str, ...] = (), description: str = "") -> Entity:
    return Entity(name=name, type=etype, aliases=list(aliases), description=description)


def ent_rec(e: Entity) -> dict[str, Any]:
    return {"id": e.id, "name": e.name, "type": e.type, "aliases": e.aliases, "description": e.description}


def rel_rec(r: Relation) -> dict[str, Any]:
    return {
        "id": r.id,
        "head": r.head,
        "type": r.type,
        "tail": r.tail,
        "weight": r.weight,
        "source": r.source,
    }


FLU = ent("Flu", "disease", ("influenza",), "A viral infection.")
FEVER = ent("Fever", "symptom")
COUGH = ent("Cough", "symptom")
R_FEVER = Relation(head=FLU.id, type="has_symptom", tail=FEVER.id, source="doc1")
R_COUGH = Relation(head=FLU.id, type="has_symptom", tail=COUGH.id, weight=2.0)


# -- construction and errors ---------------------------------------------------------------


def test_store_satisfies_the_protocol(h: Harness) -> None:
    assert isinstance(h.store, GraphStore)
    assert h.store.uri == "neo4j://example:7687"


def test_bad_uri_is_store_unavailable() -> None:
    with pytest.raises(StoreUnavailableError, match="foo://nowhere"):
        Neo4jStore("foo://nowhere")


def test_close_closes_only_an_owned_driver(h: Harness) -> None:
    h.store.close()
    h.driver.close.assert_not_called()
    owned = Neo4jStore("bolt://127.0.0.1:7687", user="u", password="p")
    fake = MagicMock(spec=neo4j.Driver)
    owned._driver = fake
    owned.close()
    fake.close.assert_called_once_with()


def test_unreachable_real_driver_fails_fast_with_store_unavailable() -> None:
    store = Neo4jStore("bolt://127.0.0.1:1", user="u", password="p")
    try:
        with pytest.raises(StoreUnavailableError) as info:
            store.get_entities(["x"])
        assert "\n" not in str(info.value)
        assert "bolt://127.0.0.1:1" in str(info.value)
    finally:
        store.close()


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (ServiceUnavailable("Couldn't connect to example:7687\nsecond line"), StoreUnavailableError),
        (AuthError("The client is unauthorized\ndue to authentication failure."), StoreUnavailableError),
        (CypherSyntaxError("Invalid input 'X'\n  at line 1"), StoreError),
    ],
)
def test_driver_errors_are_wrapped_in_one_line(h: Harness, exc: Exception, expected: type) -> None:
    h.driver.execute_query.side_effect = exc
    with pytest.raises(expected) as info:
        h.store.stats()
    assert "\n" not in str(info.value)
    assert "stats" in str(info.value)
    assert info.value.__cause__ is exc
    if expected is StoreError:
        assert not isinstance(info.value, StoreUnavailableError)


def test_write_errors_are_wrapped(h: Harness) -> None:
    h.session.execute_write.side_effect = ServiceUnavailable("down")
    with pytest.raises(StoreUnavailableError, match="bulk_load"):
        h.store.bulk_load([FLU], [])


def test_connectivity_is_checked_once(h: Harness) -> None:
    h.store.get_entities(["a"])
    h.store.get_entities(["b"])
    h.driver.verify_connectivity.assert_called_once_with()


def test_ensure_schema_runs_every_statement_once_in_order() -> None:
    hh = Harness()
    hh.store._schema_ready = False
    hh.store.ensure_schema()
    hh.store.ensure_schema()
    assert hh.read_calls() == [call(stmt, None, database_=DB) for stmt in q.SCHEMA_STATEMENTS]
    assert all("IF NOT EXISTS" in stmt for stmt in q.SCHEMA_STATEMENTS)


def test_first_write_ensures_the_schema() -> None:
    hh = Harness()
    hh.store._schema_ready = False
    hh.store.bulk_load([FLU], [])
    assert [c.args[0] for c in hh.read_calls()] == list(q.SCHEMA_STATEMENTS)


# -- labels --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("etype", "label"),
    [
        ("disease", "Disease"),
        ("side_effect", "SideEffect"),
        ("entity", "Entity"),
        ("", "Entity"),
        ("doc", "DocType"),
        ("alias", "AliasType"),
        ("疾病", "疾病"),
    ],
)
def test_type_label(etype: str, label: str) -> None:
    assert type_label(etype) == label


# -- bulk load -----------------------------------------------------------------------------


def test_bulk_load_sends_batches_in_one_transaction(h: Harness) -> None:
    stored_fever = ent("Fever", "disease", ("pyrexia",), "")
    h.tx_answers[q.ENTITIES_FOR_MERGE] = lambda p: [ent_rec(stored_fever)] if FEVER.id in p["ids"] else []
    outside = entity_id("Headache")
    r_out = Relation(head=FLU.id, type="may_cause", tail=outside)
    h.tx_answers[q.EXISTING_ENTITY_IDS] = lambda p: [{"id": i} for i in p["ids"]]
    doc = KnowledgeDoc(entity_id=FLU.id, text="Flu spreads in winter.")
    fever_in = ent("fever", "symptom", ("High_temperature", "PYREXIA"), "Raised temperature.")

    report = h.store.bulk_load([FLU, fever_in], [R_FEVER, r_out, R_FEVER], [doc])

    assert (report.entities, report.relations, report.docs) == (2, 2, 1)
    h.driver.session.assert_called_with(database=DB)
    assert h.session.execute_write.call_count == 1
    assert h.tx.run.call_args_list == [
        call(q.ENTITIES_FOR_MERGE, {"ids": [FLU.id, FEVER.id]}),
        call(
            q.MERGE_ENTITIES,
            {
                "rows": [
                    {
                        "id": FLU.id,
                        "name": "Flu",
                        "key": "flu",
                        "type": "disease",
                        "aliases": ["influenza"],
                        "alias_keys": ["influenza"],
                        "description": "A viral infection.",
                        "label": "Disease",
                        "remove_labels": [],
                    },
                    {
                        # stored name kept, type by priority (disease beats symptom),
                        # aliases unioned by key, empty description filled
                        "id": FEVER.id,
                        "name": "Fever",
                        "key": "fever",
                        "type": "disease",
                        "aliases": ["pyrexia", "High_temperature"],
                        "alias_keys": ["high temperature", "pyrexia"],
                        "description": "Raised temperature.",
                        "label": "Disease",
                        "remove_labels": [],
                    },
                ]
            },
        ),
        call(q.EXISTING_ENTITY_IDS, {"ids": [outside]}),
        call(
            q.MERGE_RELATIONS,
            {
                "rows": [
                    {
                        "id": R_FEVER.id,
                        "head": FLU.id,
                        "tail": FEVER.id,
                        "rel_type": "HAS_SYMPTOM",
                        "weight": 1.0,
                        "source": "doc1",
                    },
                    {
                        "id": r_out.id,
                        "head": FLU.id,
                        "tail": outside,
                        "rel_type": "MAY_CAUSE",
                        "weight": 1.0,
                        "source": "",
                    },
                ]
            },
        ),
        call(q.MERGE_DOCS, {"rows": [{"id": doc.id, "entity_id": FLU.id, "text": "Flu spreads in winter."}]}),
        # the ends of the loaded relations get their degrees counted again (the fake holds no edges)
        call(q.VERDICTS, {"ids": None}),
        call(q.DEGREE_EDGES, {"ids": sorted([FLU.id, FEVER.id, outside])}),
        call(
            q.SET_DEGREES,
            {"rows": [{"id": i, "degree": 0, "degrees": "{}"} for i in sorted([FLU.id, FEVER.id, outside])]},
        ),
        call(q.BUMP_VERSION, {"meta_id": store_mod.META_ID}),
    ]


def test_bulk_load_type_downgrade_keeps_label_and_upgrade_swaps_it(h: Harness) -> None:
    stored = {FEVER.id: ent("Fever", "symptom"), COUGH.id: ent("Cough", "disease")}
    h.tx_answers[q.ENTITIES_FOR_MERGE] = lambda p: [ent_rec(stored[i]) for i in p["ids"] if i in stored]
    h.store.bulk_load([ent("Fever", "disease"), ent("Cough", "symptom")], [])
    rows = h.tx.run.call_args_list[1].args[1]["rows"]
    assert [(r["type"], r["label"], r["remove_labels"]) for r in rows] == [
        ("disease", "Disease", ["Symptom"]),
        ("disease", "Disease", []),
    ]


def test_bulk_load_never_removes_the_common_entity_label(h: Harness) -> None:
    stored = ent("Thing", "entity")
    h.tx_answers[q.ENTITIES_FOR_MERGE] = lambda p: [ent_rec(stored)]
    h.store.bulk_load([ent("Thing", "food")], [])
    row = h.tx.run.call_args_list[1].args[1]["rows"][0]
    assert (row["label"], row["remove_labels"]) == ("Food", [])


def test_bulk_load_batches_by_batch_size(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_mod, "BATCH_SIZE", 2)
    ents = [ent(f"E{i}") for i in range(5)]
    rels = [Relation(head=ents[i].id, type="r", tail=ents[i + 1].id) for i in range(4)]
    h.store.bulk_load(ents, rels)
    assert h.session.execute_write.call_count == 1
    assert h.tx_queries() == [
        q.ENTITIES_FOR_MERGE, q.MERGE_ENTITIES,
        q.ENTITIES_FOR_MERGE, q.MERGE_ENTITIES,
        q.ENTITIES_FOR_MERGE, q.MERGE_ENTITIES,
        q.MERGE_RELATIONS, q.MERGE_RELATIONS,
        q.VERDICTS, q.DEGREE_EDGES, q.SET_DEGREES,  # the loaded edges' ends: degrees counted again
        q.BUMP_VERSION,
    ]  # fmt: skip
    sent = [c.args[1]["rows"] for c in h.tx.run.call_args_list if c.args[0] == q.MERGE_RELATIONS]
    assert [len(b) for b in sent] == [2, 2]
    assert [r["id"] for b in sent for r in b] == [r.id for r in rels]


def test_bulk_load_unknown_endpoint_raises_before_writing_relations(h: Harness) -> None:
    ghost = entity_id("Ghost")
    h.tx_answers[q.EXISTING_ENTITY_IDS] = lambda p: []
    with pytest.raises(StoreError, match=ghost):
        h.store.bulk_load([FLU], [Relation(head=FLU.id, type="r", tail=ghost)])
    assert q.MERGE_RELATIONS not in h.tx_queries()
    assert q.BUMP_VERSION not in h.tx_queries()


def test_bulk_load_sends_a_chinese_relation_type_only_as_a_parameter(h: Harness) -> None:
    measles, fever = ent("麻疹", "disease"), ent("发热", "symptom")
    rel = Relation(head=measles.id, type="症状", tail=fever.id)
    h.store.bulk_load([measles, fever], [rel])
    sent = [c for c in h.tx.run.call_args_list if c.args[0] == q.MERGE_RELATIONS]
    assert len(sent) == 1 and h.session.execute_write.call_count == 1
    assert [r["rel_type"] for r in sent[0].args[1]["rows"]] == ["症状"]
    assert "$(row.rel_type)" in q.MERGE_RELATIONS
    assert all("症状" not in c.args[0] for c in h.tx.run.call_args_list)  # never in query text


def test_set_schema_overrides_runs_set_schema_in_one_write_transaction(h: Harness) -> None:
    h.store.set_schema_overrides({"症状": {"role": "symptom", "disease_end": "head"}, "a": {"role": "other"}})
    assert h.session.execute_write.call_count == 1
    text = '{"a": {"role": "other"}, "症状": {"role": "symptom", "disease_end": "head"}}'
    assert h.tx.run.call_args_list == [call(q.SET_SCHEMA, {"meta_id": store_mod.META_ID, "schema": text})]
    h.read_answers[q.GET_SCHEMA] = [{"schema": text}]
    assert h.store.schema_overrides()["症状"] == {"role": "symptom", "disease_end": "head"}
    assert h.read_calls()[-1] == read_call(q.GET_SCHEMA, {"meta_id": store_mod.META_ID})


def test_bulk_load_of_nothing_sends_nothing(h: Harness) -> None:
    report = h.store.bulk_load([], [], [])
    assert report.entities == report.relations == report.docs == 0
    h.session.execute_write.assert_not_called()


def test_clear_deletes_in_auto_commit_batches_then_bumps_version(h: Harness) -> None:
    h.session.run.return_value = FakeResult()
    h.store.clear()
    h.session.run.assert_called_once_with(q.CLEAR_ALL)
    assert h.tx.run.call_args_list == [
        call(q.BUMP_VERSION, {"meta_id": store_mod.META_ID}),
        call(q.BUMP_DISPUTES_VERSION, {"meta_id": store_mod.META_ID}),  # the verdicts went too
    ]
    assert "n:Verdict" in q.CLEAR_ALL


# -- reads -------------------------------------------------------------------------------


def test_get_entities_in_asked_order(h: Harness) -> None:
    h.read_answers[q.GET_ENTITIES] = [ent_rec(FEVER), ent_rec(FLU)]
    got = h.store.get_entities([FLU.id, "nope", FEVER.id])
    assert h.read_calls() == [read_call(q.GET_ENTITIES, {"ids": [FLU.id, "nope", FEVER.id]})]
    assert got == [FLU, FEVER]


def test_get_entities_empty_sends_nothing(h: Harness) -> None:
    assert h.store.get_entities([]) == []
    h.driver.execute_query.assert_not_called()


def test_find_entities_sends_the_normalised_key(h: Harness) -> None:
    a, b = ent("High fever", "symptom"), ent("Fever", "symptom", ("high_fever",))
    first, second = sorted([a, b], key=lambda e: e.id, reverse=True)
    h.read_answers[q.FIND_ENTITIES] = [ent_rec(first), ent_rec(second)]
    got = h.store.find_entities("  ＨＩＧＨ_Fever ")
    assert h.read_calls() == [read_call(q.FIND_ENTITIES, {"key": "high fever"})]
    assert [e.id for e in got] == sorted([a.id, b.id])
    assert h.store.find_entities(" _ ") == []
    assert len(h.read_calls()) == 1


def test_iter_entities_and_relations_stream_from_a_read_session(h: Harness) -> None:
    h.session.run.side_effect = lambda query: FakeResult(
        [ent_rec(FLU), ent_rec(FEVER)] if query == q.ITER_ENTITIES else [rel_rec(R_FEVER)]
    )
    assert list(h.store.iter_entities()) == [FLU, FEVER]
    assert list(h.store.iter_relations()) == [R_FEVER]
    assert h.session.run.call_args_list == [call(q.ITER_ENTITIES), call(q.ITER_RELATIONS)]
    h.driver.session.assert_called_with(database=DB, default_access_mode=neo4j.READ_ACCESS)


@pytest.mark.parametrize(
    ("direction", "query"),
    [("out", q.NEIGHBORS_OUT), ("in", q.NEIGHBORS_IN), ("both", q.NEIGHBORS_BOTH)],
)
def test_neighbors_query_and_params(h: Harness, direction: Any, query: str) -> None:
    h.read_answers[query] = [rel_rec(R_COUGH), rel_rec(R_FEVER)]
    got = h.store.neighbors([FLU.id], direction, ["Has Symptom"], limit=7)
    assert h.read_calls() == [read_call(query, {"ids": [FLU.id], "types": ["has_symptom"], "limit": 7})]
    assert got == [R_COUGH, R_FEVER]


def test_neighbors_defaults_and_edge_cases(h: Harness) -> None:
    h.store.neighbors([FLU.id])
    assert h.read_calls() == [read_call(q.NEIGHBORS_OUT, {"ids": [FLU.id], "types": None, "limit": NO_LIMIT})]
    assert h.store.neighbors([FLU.id], limit=0) == []
    assert h.store.neighbors([]) == []
    assert len(h.read_calls()) == 1
    with pytest.raises(ValueError, match="direction"):
        h.store.neighbors([FLU.id], "sideways")  # type: ignore[arg-type]


@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("hops", [1, 2, 3, 4, 5, 6])
def test_paths_fills_the_template_with_the_hop_bound(h: Harness, hops: int, directed: bool) -> None:
    h.read_answers[q.GET_ENTITIES] = [ent_rec(FLU)]
    h.store.paths(FLU.id, FEVER.id, hops, directed=directed, limit=3)
    query = _paths_query(hops, directed)
    assert h.read_calls()[-1] == read_call(query, {"source": FLU.id, "target": FEVER.id, "limit": 3})
    assert f"*..{hops}]" in query and HOPS not in query
    assert ("]->(b:Entity" in query) is directed


def _paths_query(hops: int, directed: bool) -> str:
    template = q.PATHS_DIRECTED if directed else q.PATHS_UNDIRECTED
    return template.replace(HOPS, str(hops))


def test_paths_maps_records_and_clamps_hops(h: Harness) -> None:
    h.read_answers[q.GET_ENTITIES] = [ent_rec(COUGH)]
    back = Relation(head=COUGH.id, type="sign_of", tail=FLU.id)
    h.read_answers[_paths_query(MAX_PATH_HOPS, False)] = [
        {"nodes": [COUGH.id, FLU.id, FEVER.id], "relations": [rel_rec(back), rel_rec(R_FEVER)]}
    ]
    got = h.store.paths(COUGH.id, FEVER.id, 50, directed=False)
    assert h.read_calls() == [
        read_call(q.GET_ENTITIES, {"ids": [COUGH.id]}),
        read_call(_paths_query(MAX_PATH_HOPS, False), {"source": COUGH.id, "target": FEVER.id, "limit": 10}),
    ]
    assert got == [GraphPath(nodes=[COUGH.id, FLU.id, FEVER.id], relations=[back, R_FEVER])]


def test_paths_trivial_cases_send_no_path_query(h: Harness) -> None:
    assert h.store.paths(FLU.id, FEVER.id, 3) == []  # unknown source
    h.read_answers[q.GET_ENTITIES] = [ent_rec(FLU)]
    assert h.store.paths(FLU.id, FLU.id, 3) == [GraphPath(nodes=[FLU.id], relations=[])]
    assert h.store.paths(FLU.id, FEVER.id, 0) == []
    assert h.store.paths(FLU.id, FEVER.id, 3, limit=0) == []
    assert {c.args[0] for c in h.read_calls()} == {q.GET_ENTITIES}


def test_get_relations_out_edges_docs(h: Harness) -> None:
    doc1 = KnowledgeDoc(entity_id=FLU.id, text="one")
    doc2 = KnowledgeDoc(entity_id=FLU.id, text="two")
    h.read_answers[q.GET_RELATIONS] = [rel_rec(R_FEVER), rel_rec(R_COUGH)]
    h.read_answers[q.OUT_EDGES] = [rel_rec(R_COUGH), rel_rec(R_FEVER)]
    docs = [{"id": d.id, "entity_id": d.entity_id, "text": d.text} for d in (doc1, doc2)]
    h.read_answers[q.DOCS_FOR] = docs
    h.read_answers[q.GET_DOCS] = docs

    assert h.store.get_relations([R_COUGH.id, "rx", R_FEVER.id]) == [R_COUGH, R_FEVER]
    assert h.store.out_edges(FLU.id) == [R_COUGH, R_FEVER]
    assert h.store.docs_for([FLU.id]) == [doc1, doc2]
    assert h.store.get_docs([doc2.id, doc1.id]) == [doc2, doc1]
    assert h.read_calls() == [
        read_call(q.GET_RELATIONS, {"ids": [R_COUGH.id, "rx", R_FEVER.id]}),
        read_call(q.OUT_EDGES, {"id": FLU.id}),
        read_call(q.DOCS_FOR, {"ids": [FLU.id]}),
        read_call(q.GET_DOCS, {"ids": [doc2.id, doc1.id]}),
    ]
    assert h.store.get_relations([]) == h.store.docs_for([]) == h.store.get_docs([]) == []
    assert len(h.read_calls()) == 4


def test_stats_and_fingerprint(h: Harness) -> None:
    h.read_answers[q.STATS_ENTITIES] = [{"type": "disease", "count": 2}, {"type": "symptom", "count": 3}]
    h.read_answers[q.STATS_RELATIONS] = [{"type": "has_symptom", "count": 4}]
    h.read_answers[q.STATS_DOCS] = [{"count": 1}]
    h.read_answers[q.FINGERPRINT] = [{"version": 3, "entities": 5, "relations": 4}]
    stats = h.store.stats()
    assert stats.entities == {"disease": 2, "symptom": 3}
    assert (stats.entities_total, stats.relations_total, stats.docs_total) == (5, 4, 1)
    assert h.store.fingerprint() == "3:5:4"
    assert h.read_calls() == [
        read_call(q.STATS_ENTITIES, {}),
        read_call(q.STATS_RELATIONS, {}),
        read_call(q.STATS_DOCS, {}),
        read_call(q.FINGERPRINT, {"meta_id": store_mod.META_ID}),
    ]


# -- feedback ------------------------------------------------------------------------------


def feedback_harness(h: Harness, *, created: bool = True) -> None:
    h.tx_answers[q.CLAIM_FEEDBACK] = lambda p: [{"created": created}]
    heads = {R_FEVER.id: FLU.id, R_COUGH.id: FLU.id}
    h.tx_answers[q.LOCK_HEADS] = lambda p: (
        [{"head": FLU.id, "rel_ids": [r for r in p["relation_ids"] if r in heads]}]
        if any(r in heads for r in p["relation_ids"])
        else []
    )
    h.tx_answers[q.SIBLING_WEIGHTS] = lambda p: [
        {"head": FLU.id, "id": R_COUGH.id, "weight": 2.0},
        {"head": FLU.id, "id": R_FEVER.id, "weight": 1.0},
    ]


def test_apply_weight_updates_locks_reads_writes_in_one_transaction(h: Harness) -> None:
    feedback_harness(h)
    seen: list[Any] = []

    def rule(siblings: Any, rel_ids: Any) -> dict[str, float]:
        seen.append((siblings, list(rel_ids)))
        return {R_FEVER.id: 1.5, R_COUGH.id: 2.0}  # R_COUGH unchanged: no audit row

    changes = h.store.apply_weight_updates("fb1", "run1", "excellent", [R_FEVER.id, R_FEVER.id], rule)

    assert h.session.execute_write.call_count == 1
    assert seen == [({FLU.id: [(R_COUGH.id, 2.0), (R_FEVER.id, 1.0)]}, [R_FEVER.id])]
    runs = h.tx.run.call_args_list
    assert h.tx_queries() == [
        q.CLAIM_FEEDBACK,
        q.LOCK_HEADS,
        q.SIBLING_WEIGHTS,
        q.WRITE_WEIGHTS,
        q.BUMP_WEIGHTS_VERSION,  # in the same transaction: other processes see the weights moved
    ]
    assert runs[4] == call(q.BUMP_WEIGHTS_VERSION, {"meta_id": store_mod.META_ID})
    claimed_at = runs[0].args[1]["at"]
    at = runs[3].args[1]["at"]
    assert claimed_at <= at
    assert runs[0] == call(
        q.CLAIM_FEEDBACK, {"feedback_id": "fb1", "run_id": "run1", "rating": "excellent", "at": claimed_at}
    )
    assert runs[1] == call(q.LOCK_HEADS, {"relation_ids": [R_FEVER.id]})
    assert runs[2] == call(q.SIBLING_WEIGHTS, {"heads": [FLU.id]})
    assert runs[3] == call(
        q.WRITE_WEIGHTS,
        {
            "feedback_id": "fb1",
            "run_id": "run1",
            "rating": "excellent",
            "at": at,
            "rows": [{"head": FLU.id, "id": R_FEVER.id, "old_weight": 1.0, "new_weight": 1.5, "seq": 0}],
        },
    )
    assert [(c.relation_id, c.old_weight, c.new_weight, c.at) for c in changes] == [
        (R_FEVER.id, 1.0, 1.5, at)
    ]


def test_apply_weight_updates_is_idempotent(h: Harness) -> None:
    feedback_harness(h, created=False)
    rule = MagicMock(return_value={R_FEVER.id: 9.0})
    assert h.store.apply_weight_updates("fb1", "run1", "poor", [R_FEVER.id], rule) == []
    assert h.tx_queries() == [q.CLAIM_FEEDBACK]
    rule.assert_not_called()


def test_apply_weight_updates_unknown_relation_changes_nothing(h: Harness) -> None:
    feedback_harness(h)
    rule = MagicMock(return_value={})
    with pytest.raises(StoreError, match="unknown relation ids: r-missing"):
        h.store.apply_weight_updates("fb1", "run1", "poor", [R_FEVER.id, "r-missing"], rule)
    assert h.tx_queries() == [q.CLAIM_FEEDBACK, q.LOCK_HEADS]
    rule.assert_not_called()


@pytest.mark.parametrize(
    "result",
    [
        {R_FEVER.id: 0.0},
        {R_FEVER.id: float("nan")},
        {R_FEVER.id: float("inf")},
        {R_FEVER.id: True},
        {"r-not-a-sibling": 1.0},
    ],
)
def test_apply_weight_updates_rejects_bad_rule_output(h: Harness, result: dict[str, Any]) -> None:
    feedback_harness(h)
    with pytest.raises(StoreError):
        h.store.apply_weight_updates("fb1", "run1", "poor", [R_FEVER.id], lambda s, r: result)
    assert q.WRITE_WEIGHTS not in h.tx_queries() and q.BUMP_WEIGHTS_VERSION not in h.tx_queries()


def test_apply_weight_updates_wraps_a_failing_rule(h: Harness) -> None:
    feedback_harness(h)

    def boom(siblings: Any, rel_ids: Any) -> dict[str, float]:
        raise ZeroDivisionError("p = 1")

    with pytest.raises(StoreError, match="rule failed: p = 1"):
        h.store.apply_weight_updates("fb1", "run1", "poor", [R_FEVER.id], boom)
    assert q.WRITE_WEIGHTS not in h.tx_queries()


def test_weight_changes_and_reset(h: Harness) -> None:
    row = {
        "feedback_id": "fb1",
        "run_id": "run1",
        "relation_id": R_FEVER.id,
        "old_weight": 1.0,
        "new_weight": 1.5,
        "rating": "excellent",
        "at": "2025-01-01T00:00:00+00:00",
    }
    h.read_answers[q.WEIGHT_CHANGES] = [row]
    assert [c.model_dump() for c in h.store.weight_changes()] == [row]
    h.store.weight_changes("fb1")
    assert h.read_calls() == [
        read_call(q.WEIGHT_CHANGES, {"feedback_id": None}),
        read_call(q.WEIGHT_CHANGES, {"feedback_id": "fb1"}),
    ]
    h.tx_answers[q.RESET_WEIGHTS] = lambda p: [{"reset": 4}]
    assert h.store.reset_weights() == 4
    assert h.tx.run.call_args_list == [
        call(q.RESET_WEIGHTS),
        call(q.DROP_AUDIT),
        call(q.BUMP_WEIGHTS_VERSION, {"meta_id": store_mod.META_ID}),
    ]
    assert h.session.execute_write.call_count == 1  # one transaction


def test_weights_version(h: Harness) -> None:
    assert h.store.weights_version() == 0  # no meta node yet
    h.read_answers[q.WEIGHTS_VERSION] = [{"weights_version": 7}]
    assert h.store.weights_version() == 7
    assert h.read_calls()[-1] == read_call(q.WEIGHTS_VERSION, {"meta_id": store_mod.META_ID})


# -- per-claim verdicts ------------------------------------------------------------------------


def _rules(seen: list[str]) -> Callable[[str], Any]:
    """A RatingRules that records which rating it was asked for and moves each rated edge to 0.5."""

    def rules(rating: str) -> Any:
        seen.append(rating)
        return lambda siblings, ids: dict.fromkeys(ids, 0.5)

    return rules


def test_record_verdicts_claims_locks_writes_rows_and_weights_in_one_transaction(h: Harness) -> None:
    feedback_harness(h)
    ratings: list[str] = []
    rules = _rules(ratings)
    result = h.store.record_verdicts(
        "run1:N1:wrong", "run1", [(R_FEVER.id, "wrong"), (R_COUGH.id, "right")], source="cli", rule=rules
    )
    assert h.session.execute_write.call_count == 1
    assert ratings == ["poor", "excellent"]  # wrong edges get the poor update, right ones the excellent
    assert h.tx_queries() == [
        q.CLAIM_FEEDBACK,
        q.LOCK_HEADS,  # every judged edge's head, before the clock is read
        q.WRITE_VERDICTS,
        q.LOCK_HEADS,
        q.SIBLING_WEIGHTS,
        q.WRITE_WEIGHTS,
        q.LOCK_HEADS,
        q.SIBLING_WEIGHTS,
        q.WRITE_WEIGHTS,
        q.GET_RELATIONS,  # the judged edges' ends: their degrees are counted again (none here)
        q.BUMP_WEIGHTS_VERSION,
        q.BUMP_DISPUTES_VERSION,
    ]
    runs = h.tx.run.call_args_list
    claim = runs[0].args[1]
    assert claim == {**claim, "feedback_id": "run1:N1:wrong", "run_id": "run1", "rating": "verdicts"}
    assert set(claim) == {"feedback_id", "run_id", "rating", "at"}
    assert runs[1] == call(q.LOCK_HEADS, {"relation_ids": [R_FEVER.id, R_COUGH.id]})
    verdicts = runs[2].args[1]
    assert verdicts == {
        "feedback_id": "run1:N1:wrong",
        "run_id": "run1",
        "source": "cli",
        "at": verdicts["at"],
        "rows": [
            {"relation_id": R_FEVER.id, "verdict": "wrong", "seq": 0},
            {"relation_id": R_COUGH.id, "verdict": "right", "seq": 1},
        ],
    }
    poor, excellent = runs[5].args[1], runs[8].args[1]
    assert (poor["rating"], [r["id"] for r in poor["rows"]]) == ("poor", [R_FEVER.id])
    assert poor["rows"][0]["seq"] == 0
    assert (excellent["rating"], [r["id"] for r in excellent["rows"]]) == ("excellent", [R_COUGH.id])
    assert excellent["rows"][0]["seq"] == 1  # audit rows of one feedback stay ordered
    assert runs[-1] == call(q.BUMP_DISPUTES_VERSION, {"meta_id": store_mod.META_ID})
    moved = [(c.relation_id, c.rating) for c in result.changes]
    assert moved == [(R_FEVER.id, "poor"), (R_COUGH.id, "excellent")]


def test_record_verdicts_is_idempotent(h: Harness) -> None:
    feedback_harness(h, created=False)
    ratings: list[str] = []
    rules = _rules(ratings)
    result = h.store.record_verdicts("f1", "run1", [(R_FEVER.id, "wrong")], source="cli", rule=rules)
    assert result.already_applied and result.changes == [] and ratings == []
    assert h.tx_queries() == [q.CLAIM_FEEDBACK]  # nothing written, no version bumped


def test_record_verdicts_unknown_relation_writes_nothing(h: Harness) -> None:
    feedback_harness(h)
    with pytest.raises(StoreError, match="unknown relation ids: r-missing"):
        h.store.record_verdicts(
            "f1", "run1", [(R_FEVER.id, "wrong"), ("r-missing", "wrong")], source="cli", rule=_rules([])
        )
    assert h.tx_queries() == [q.CLAIM_FEEDBACK, q.LOCK_HEADS]  # the transaction then rolls back


def test_record_verdicts_bad_input_sends_nothing(h: Harness) -> None:
    with pytest.raises(ValueError, match="both wrong and right"):
        both = [(R_FEVER.id, "wrong"), (R_FEVER.id, "right")]
        h.store.record_verdicts("f1", "r", both, source="s", rule=_rules([]))
    with pytest.raises(ValueError, match="source must be"):
        h.store.record_verdicts("f1", "r", [(R_FEVER.id, "wrong")], source=" ", rule=_rules([]))
    assert h.tx.run.call_count == 0 and h.session.execute_write.call_count == 0


def _verdict_row(run: str, verdict: str, at: str) -> dict[str, Any]:
    return {
        "feedback_id": f"{run}:{verdict}",
        "run_id": run,
        "relation_id": R_FEVER.id,
        "verdict": verdict,
        "source": "cli",
        "at": at,
    }


def test_dispute_reads_and_versions(h: Harness) -> None:
    rows = [_verdict_row("a", "wrong", "1"), _verdict_row("b", "wrong", "2"), _verdict_row("c", "right", "3")]
    h.read_answers[q.VERDICTS] = rows
    assert list(h.store.disputed_relations()) == [R_FEVER.id]
    states = h.store.dispute_states([R_FEVER.id])
    assert (states[R_FEVER.id].wrong, states[R_FEVER.id].right) == (2, 1)
    assert [v.run_id for v in h.store.verdict_log()] == ["a", "b", "c"]
    h.read_answers[q.DISPUTES_VERSION] = [{"disputes_version": 4}]
    assert h.store.disputes_version() == 4
    assert h.read_calls() == [
        read_call(q.VERDICTS, {"ids": None}),
        read_call(q.VERDICTS, {"ids": [R_FEVER.id]}),
        read_call(q.VERDICTS, {"ids": None}),
        read_call(q.DISPUTES_VERSION, {"meta_id": store_mod.META_ID}),
    ]


def test_restore_locks_reads_and_writes_only_a_disputed_edge(h: Harness) -> None:
    feedback_harness(h)
    h.tx_answers[q.VERDICTS] = lambda p: [_verdict_row("a", "wrong", "1"), _verdict_row("b", "wrong", "2")]
    assert h.store.restore(R_FEVER.id, source="curator") is True
    assert h.tx_queries() == [
        q.LOCK_HEADS,
        q.VERDICTS,
        q.WRITE_RESTORE,
        q.GET_RELATIONS,
        q.BUMP_DISPUTES_VERSION,
    ]
    runs = h.tx.run.call_args_list
    assert runs[1] == call(q.VERDICTS, {"ids": [R_FEVER.id]})
    restore = runs[2].args[1]
    assert restore["feedback_id"].startswith("restore:")
    assert {k: restore[k] for k in ("run_id", "relation_id", "verdict", "source")} == {
        "run_id": "",
        "relation_id": R_FEVER.id,
        "verdict": "restore",
        "source": "curator",
    }
    h.tx.run.reset_mock()
    h.tx_answers[q.VERDICTS] = lambda p: [_verdict_row("a", "wrong", "1"), _verdict_row("b", "right", "2")]
    assert h.store.restore(R_FEVER.id, source="curator") is False
    assert h.tx_queries() == [q.LOCK_HEADS, q.VERDICTS]


def test_reset_weights_keeps_the_verdict_log() -> None:
    assert "n:WeightAudit" in q.DROP_AUDIT and "NOT (n)-[:JUDGED]->(:Verdict)" in q.DROP_AUDIT
    assert "Verdict" in store_mod._RESERVED_LABELS  # an entity type "verdict" cannot become one
    assert q.SCHEMA_VERDICT_RELATION in q.SCHEMA_STATEMENTS


# -- query hygiene ---------------------------------------------------------------------------

QUERIES_PATH = Path(inspect.getfile(q))
STORE_PATH = Path(inspect.getfile(store_mod))
#: The modules that send the backend's statements: the store and its verdict log.
STORE_PATHS = (STORE_PATH, STORE_PATH.with_name("verdicts.py"), STORE_PATH.with_name("degrees.py"))
_DRIVER_CALLS = {"run", "execute_query", "_read", "_stream"}


def _query_constants() -> dict[str, str]:
    """Every public statement; shortest-path templates with a hop bound filled in.

    Private constants (``_PATHS_RETURN``) are fragments of the statements, not statements.
    """
    return {
        k: v.replace(HOPS, "3")
        for k, v in vars(q).items()
        if k.isupper() and not k.startswith("_") and isinstance(v, str)
    }


def test_queries_module_holds_only_literal_constants() -> None:
    tree = ast.parse(QUERIES_PATH.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Expr | ast.ImportFrom):
            continue
        assert isinstance(node, ast.Assign | ast.AnnAssign), ast.dump(node)
        value = node.value
        assert value is not None
        if isinstance(value, ast.Constant):
            assert isinstance(value.value, str)
        elif isinstance(value, ast.Tuple):
            assert all(isinstance(e, ast.Name) for e in value.elts)
        elif isinstance(value, ast.BinOp):  # "literal" + _SHARED_TAIL
            assert isinstance(value.op, ast.Add)
            assert all(isinstance(x, ast.Constant | ast.Name) for x in (value.left, value.right))
        else:
            pytest.fail(f"queries.py line {node.lineno}: not a literal constant: {ast.dump(value)[:80]}")


def test_every_query_constant_is_used_by_the_store() -> None:
    source = "".join(p.read_text(encoding="utf-8") for p in STORE_PATHS)
    grouped = {name for name in dir(q) if name.isupper() and not isinstance(getattr(q, name), str)}
    members = set()
    for name in grouped:
        value = getattr(q, name)
        members |= set(value.values() if isinstance(value, dict) else value)
    for name, text in _query_constants().items():
        assert f"q.{name}" in source or text in members, f"queries.{name} is never used"


def test_store_sends_only_query_constants() -> None:
    tree = ast.Module(
        body=[n for p in STORE_PATHS for n in ast.parse(p.read_text(encoding="utf-8")).body], type_ignores=[]
    )
    checked = 0
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in _DRIVER_CALLS or not node.args:
            continue
        first = node.args[0]
        checked += 1
        target = first.value if isinstance(first, ast.Subscript) else first
        if isinstance(target, ast.Attribute):
            assert isinstance(target.value, ast.Name) and target.value.id == "q", ast.unparse(first)
        else:
            # helpers pass their own `query` parameter through; loops run q.SCHEMA_STATEMENTS
            assert isinstance(target, ast.Name) and target.id in {"query", "stmt"}, ast.unparse(first)
    assert checked >= 15
    assert "for stmt in q.SCHEMA_STATEMENTS" in STORE_PATH.read_text(encoding="utf-8")


def test_query_text_is_parameterised() -> None:
    for name, text in _query_constants().items():
        assert "{0}" not in text and "%s" not in text, name
        assert "'" not in text.replace("''", ""), f"{name} has a non-empty string literal"
    assert "SET n:$(row.label)" in q.MERGE_ENTITIES
    assert "MERGE (h)-[r:$(row.rel_type) {id: row.id}]->(t)" in q.MERGE_RELATIONS


# -- the real Cypher front end (parser + semantic analysis) ----------------------------------
# KGMIND_CYPHER_LINT_DIR names a folder where `npm install @neo4j-cypher/language-support`
# was run (.ci/run sets it up in .ci/node/, so CI always runs this test); every statement is
# then checked by Neo4j's own Cypher parser and semantic analysis (compiled to JavaScript),
# which catches syntax and scoping errors without a server. Unset: skipped (local runs).

#: A statement the linter must reject: proves the linter ran and reports what it finds.
_LINT_SELF_CHECK = "__KGMIND_SELF_CHECK__"

_LINT_JS = """
import { lintCypherQuery } from '@neo4j-cypher/language-support';
import { readFileSync } from 'fs';
const qs = JSON.parse(readFileSync(0, 'utf8'));
const out = {};
for (const [name, text] of Object.entries(qs)) {
  const diags = (lintCypherQuery(text, {}).diagnostics || [])
    .filter(d => !/Parameter \\$\\w+ is not defined/.test(d.message));
  if (diags.length) out[name] = diags.map(d => d.message);
}
console.log(JSON.stringify(out));
"""


def test_queries_pass_the_cypher_linter(tmp_path: Path) -> None:
    lint_dir = os.environ.get("KGMIND_CYPHER_LINT_DIR")
    if not lint_dir:
        pytest.skip("KGMIND_CYPHER_LINT_DIR not set (needs node + @neo4j-cypher/language-support)")
    if shutil.which("node") is None:  # asked for (CI) but cannot run: a failure, not a skip
        pytest.fail(f"KGMIND_CYPHER_LINT_DIR={lint_dir} is set but `node` is not on PATH")
    script = Path(lint_dir) / "kgmind_lint.mjs"
    script.write_text(_LINT_JS, encoding="utf-8")
    statements = _query_constants()
    assert _LINT_SELF_CHECK not in statements
    proc = subprocess.run(
        ["node", str(script)],
        input=json.dumps({**statements, _LINT_SELF_CHECK: "MATCH (n:Entity RETURN m"}),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    rejected = json.loads(proc.stdout.strip().splitlines()[-1])
    assert rejected.pop(_LINT_SELF_CHECK, None), "the linter accepted a broken statement: is it working?"
    assert rejected == {}


def test_labels_of(h: Harness) -> None:
    h.read_answers[q.ENTITY_LABELS] = [{"labels": ["Entity", "Disease"]}]
    assert h.store.labels_of(FLU.id) == ["Disease", "Entity"]
    assert h.read_calls() == [read_call(q.ENTITY_LABELS, {"id": FLU.id})]


# -- pushed-down exploration -----------------------------------------------------------------


def test_pushed_down_index_reads_neighbourhoods_from_readers_only(h: Harness) -> None:
    """A per-question index on Neo4j: id-keyed neighbour and entity reads, routed to readers.

    The fake server answers NEIGHBORS_BOTH and GET_ENTITIES from a small graph, by the ids
    asked; the index must never stream the whole graph and must see what a full index sees.
    """
    from kgmind.retrievers.exploration import neighbor_evidence, rank_diseases
    from kgmind.retrievers.graph_index import GraphIndex

    cold = ent("Cold", "disease")
    rash = ent("Rash", "symptom")
    ents = {e.id: e for e in (FLU, FEVER, COUGH, cold, rash)}
    rels = [
        R_FEVER,
        R_COUGH,
        Relation(head=FEVER.id, type="possible_disease", tail=FLU.id),
        Relation(head=COUGH.id, type="possible_disease", tail=FLU.id),
        Relation(head=COUGH.id, type="possible_disease", tail=cold.id),
        Relation(head=cold.id, type="has_symptom", tail=COUGH.id),
        Relation(head=cold.id, type="has_symptom", tail=rash.id),
    ]

    h.driver.execute_query.side_effect = _pushdown_reads(ents, rels)
    part = GraphIndex.neighborhood(h.store, [COUGH.id])
    assert part.schema.votes("possible_disease") and part.schema.lists_symptoms("has_symptom")
    for c in h.read_calls():
        assert c.args[0] in (q.NEIGHBORS_BOTH, q.GET_ENTITIES, q.RELATION_PROFILE, q.GET_SCHEMA)
        assert c.kwargs == {"database_": DB, "routing_": READ}
    # Cough and its neighbours (Flu, Cold) are complete; Fever and Rash are loaded, not yet complete
    assert {part.ids[n] for n in part._complete or ()} == {COUGH.id, FLU.id, cold.id}
    full = GraphIndex(list(ents.values()), sorted(rels, key=lambda r: r.id))
    assert [d for d, _, _ in rank_diseases(part, [COUGH.id], weight_aware=True)] == [
        d for d, _, _ in rank_diseases(full, [COUGH.id], weight_aware=True)
    ]
    key = [(e.text, tuple(e.relation_ids)) for e in neighbor_evidence(full, [COUGH.id], ranked=True)]
    assert [(e.text, tuple(e.relation_ids)) for e in neighbor_evidence(part, [COUGH.id], ranked=True)] == key
    before = len(h.read_calls())
    part.out_adj[part.idx(rash.id)]  # reading an incomplete node's edges completes it: one more query
    assert len(h.read_calls()) == before + 1 and h.read_calls()[-1].args[0] == q.NEIGHBORS_BOTH


def test_pushed_down_one_way_kg_is_walked_both_ways_through_the_driver(h: Harness) -> None:
    """A KG stored disease → symptom only, read through the driver: symptoms still vote (reverse readings)."""
    from kg_forms import eid, kg
    from kgmind.retrievers.exploration import neighbor_evidence, rank_diseases
    from kgmind.retrievers.graph_index import GraphIndex

    ents_list, rels = kg("natural")
    ents = {e.id: e for e in ents_list}

    h.driver.execute_query.side_effect = _pushdown_reads(ents, rels)
    seeds = [eid("Fever"), eid("Rash"), eid("Red eyes")]
    part = GraphIndex.neighborhood(h.store, seeds)
    assert all(c.kwargs == {"database_": DB, "routing_": READ} for c in h.read_calls())
    full = GraphIndex(ents_list, sorted(rels, key=lambda r: r.id))
    ranking = rank_diseases(part, seeds)
    assert ranking and ranking[0][0] == eid("Measles")
    assert ranking == rank_diseases(full, seeds)
    key = [(e.text, tuple(e.relation_ids)) for e in neighbor_evidence(full, seeds, ranked=True)]
    assert [(e.text, tuple(e.relation_ids)) for e in neighbor_evidence(part, seeds, ranked=True)] == key


def _pushdown_reads(ents: dict[str, Entity], rels: list[Relation]) -> Any:
    """A driver answering a pushed-down index's reads over ``rels``: roles, neighbourhoods, entities."""

    def answer(query: str, params: Any = None, **kwargs: Any) -> neo4j.EagerResult:
        if query == q.RELATION_PROFILE:  # role inference: type x end types, one aggregate read
            profile = Counter((r.type, ents[r.head].type, ents[r.tail].type) for r in rels)
            rows = [
                {"type": t, "head_type": ht, "tail_type": tt, "count": n}
                for (t, ht, tt), n in sorted(profile.items())
            ]
        elif query == q.GET_SCHEMA:
            rows = [{"schema": ""}]
        elif query == q.NEIGHBORS_BOTH:
            ids = set(params["ids"])
            rows = [rel_rec(r) for r in sorted(rels, key=lambda r: r.id) if r.head in ids or r.tail in ids]
        elif query == q.GET_ENTITIES:
            rows = [ent_rec(ents[i]) for i in params["ids"] if i in ents]
        else:
            raise AssertionError(f"unexpected read: {query}")
        return neo4j.EagerResult(records=rows, summary=MagicMock(), keys=[])  # type: ignore[arg-type]

    return answer
