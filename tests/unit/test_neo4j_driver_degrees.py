"""Driver-boundary tests of Neo4jStore's kept degrees and bounded reads (issue 42).

The same mocked driver as ``test_neo4j_driver.py``: the exact statements and parameters,
the degrees each write counts again inside its own transaction, reads routed to readers,
and a bounded pushed-down index read through the driver that gives the cut full index's
evidence.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any
from unittest.mock import MagicMock, call

import neo4j
import numpy as np
import pytest
from test_neo4j_driver import (
    COUGH,
    DB,
    FEVER,
    FLU,
    R_COUGH,
    R_FEVER,
    READ,
    Harness,
    _rules,
    _verdict_row,
    ent,
    ent_rec,
    feedback_harness,
    read_call,
)

from kgmind.models import Entity, Relation
from kgmind.stores.neo4j import queries as q

COLD = ent("Cold", "disease")


@pytest.fixture
def h() -> Harness:
    return Harness()


R_COLD = Relation(head=COLD.id, type="has_symptom", tail=COUGH.id)
EDGES = [R_FEVER, R_COUGH, R_COLD]


def _edge_rows(params: dict[str, Any]) -> list[dict[str, Any]]:
    ids = set(params["ids"])
    return [
        {"head": r.head, "type": r.type, "tail": r.tail, "id": r.id}
        for r in EDGES
        if r.head in ids or r.tail in ids
    ]


def _set_rows(h: Harness) -> dict[str, tuple[int, dict[str, list[int]]]]:
    rows = [r for c in h.tx.run.call_args_list if c.args[0] == q.SET_DEGREES for r in c.args[1]["rows"]]
    return {r["id"]: (r["degree"], json.loads(r["degrees"])) for r in rows}


def test_an_import_counts_its_ends_degrees_in_its_transaction(h: Harness) -> None:
    h.tx_answers[q.DEGREE_EDGES] = _edge_rows
    h.store.bulk_load([FLU, FEVER, COUGH, COLD], EDGES)
    queries = h.tx_queries()
    assert queries.index(q.MERGE_RELATIONS) < queries.index(q.DEGREE_EDGES) < queries.index(q.BUMP_VERSION)
    assert h.session.execute_write.call_count == 1  # one transaction: all of it or none
    assert call(q.VERDICTS, {"ids": None}) in h.tx.run.call_args_list
    assert _set_rows(h) == {
        FLU.id: (2, {"has_symptom": [2, 0]}),
        FEVER.id: (1, {"has_symptom": [0, 1]}),
        COUGH.id: (2, {"has_symptom": [0, 2]}),
        COLD.id: (1, {"has_symptom": [1, 0]}),
    }


def test_feedback_sends_no_degree_statement(h: Harness) -> None:
    feedback_harness(h)
    h.store.apply_weight_updates(
        "f1", "run1", "excellent", [R_FEVER.id], lambda sib, ids: dict.fromkeys(ids, 2.0)
    )
    assert not {q.DEGREE_EDGES, q.SET_DEGREES, q.GET_RELATIONS} & set(h.tx_queries())


def test_a_dispute_and_a_restore_count_the_edge_ends_again(h: Harness) -> None:
    feedback_harness(h)
    h.tx_answers[q.GET_RELATIONS] = lambda p: [
        {"id": r.id, "head": r.head, "type": r.type, "tail": r.tail, "weight": 1.0, "source": ""}
        for r in EDGES
        if r.id in p["ids"]
    ]
    h.tx_answers[q.DEGREE_EDGES] = _edge_rows
    # the log as the transaction reads it after writing: two runs called Flu-Fever wrong
    h.tx_answers[q.VERDICTS] = lambda p: [_verdict_row("a", "wrong", "1"), _verdict_row("b", "wrong", "2")]
    h.store.record_verdicts("b:N1:wrong", "b", [(R_FEVER.id, "wrong")], source="kg flag", rule=_rules([]))
    assert call(q.GET_RELATIONS, {"ids": [R_FEVER.id]}) in h.tx.run.call_args_list
    assert _set_rows(h) == {FLU.id: (1, {"has_symptom": [1, 0]}), FEVER.id: (0, {})}
    assert h.tx_queries()[-1] == q.BUMP_DISPUTES_VERSION
    h.tx.run.reset_mock()
    restored = [_verdict_row("a", "wrong", "1"), _verdict_row("b", "wrong", "2")]
    answers = iter([restored, [*restored, {**_verdict_row("c", "restore", "3"), "verdict": "restore"}]])
    h.tx_answers[q.VERDICTS] = lambda p: next(answers)
    assert h.store.restore(R_FEVER.id, source="curator") is True
    assert _set_rows(h) == {FLU.id: (2, {"has_symptom": [2, 0]}), FEVER.id: (1, {"has_symptom": [0, 1]})}


def test_degree_reads_go_to_readers(h: Harness) -> None:
    h.read_answers[q.GET_DEGREES] = [
        {"id": FLU.id, "degree": 2, "degrees": '{"has_symptom": [2, 0]}'},
        {"id": COLD.id, "degree": 0, "degrees": None},  # an entity no write counted yet
    ]
    h.read_answers[q.DEGREE_VALUES] = [{"degree": 2}, {"degree": 0}]
    assert h.store.degrees([FLU.id, COLD.id]) == {FLU.id: (2, {"has_symptom": (2, 0)}), COLD.id: (0, {})}
    assert h.store.degree_values() == [2, 0]
    assert h.read_calls() == [
        read_call(q.GET_DEGREES, {"ids": [FLU.id, COLD.id]}),
        read_call(q.DEGREE_VALUES, {}),
    ]


def _bounded_reads(ents: dict[str, Entity], rels: list[Relation]) -> Any:
    """A server answering a bounded pushed-down index: per node, type and direction the first k edges."""
    degree = Counter(x for r in rels for x in (r.head, r.tail))

    def bounded(p: dict[str, Any]) -> list[dict[str, Any]]:
        rows = []
        for node in p["ids"]:
            for rtype in p["types"]:
                for outgoing in (True, False):
                    group = [
                        r
                        for r in rels
                        if r.type == rtype
                        and (r.head if outgoing else r.tail) == node
                        and r.id not in p["hidden"]
                    ]
                    other = (lambda r: r.tail) if outgoing else (lambda r: r.head)
                    group.sort(key=lambda r: (-r.weight, degree[other(r)], r.id))
                    for r in group[: p["k"]]:
                        back = any(x.head == r.tail and x.tail == r.head for x in rels)
                        rows.append(
                            {
                                "node": node,
                                "outgoing": outgoing,
                                "id": r.id,
                                "head": r.head,
                                "type": r.type,
                                "tail": r.tail,
                                "weight": r.weight,
                                "source": r.source,
                                "degree": degree[other(r)],
                                "back": back,
                            }
                        )
        return rows

    def answer(query: str, params: Any = None, **kwargs: Any) -> neo4j.EagerResult:
        if query == q.RELATIONSHIP_TYPES:
            rows = [{"type": t} for t in sorted({r.type for r in rels})]
        elif query == q.BOUNDED_EDGES:
            rows = bounded(params)
        elif query == q.EDGES_BETWEEN:
            a, b = set(params["a"]), set(params["b"])
            rows = [
                {"id": r.id, "head": r.head, "type": r.type, "tail": r.tail, "weight": r.weight, "source": ""}
                for r in rels
                if (r.head in a and r.tail in b) or (r.tail in a and r.head in b)
            ]
        elif query == q.GET_ENTITIES:
            rows = [ent_rec(ents[i]) for i in params["ids"] if i in ents]
        elif query == q.GET_DEGREES:
            rows = [{"id": i, "degree": degree[i], "degrees": None} for i in params["ids"]]
        else:
            raise AssertionError(f"unexpected read: {query}")
        return neo4j.EagerResult(records=rows, summary=MagicMock(), keys=[])  # type: ignore[arg-type]

    return answer


def test_a_bounded_pushed_down_index_reads_k_edges_per_group_from_readers(h: Harness) -> None:
    from kgmind.retrievers.exploration import hykge_chains, neighbor_evidence, rank_diseases
    from kgmind.retrievers.graph_index import GraphIndex

    symptoms = [ent(f"Symptom {i}", "symptom") for i in range(5)]
    ents = {e.id: e for e in (FLU, COLD, *symptoms)}
    rels = [
        Relation(head=FLU.id, type="has_symptom", tail=s.id, weight=1.0 + (i == 3))
        for i, s in enumerate(symptoms)
    ]
    rels += [Relation(head=s.id, type="possible_disease", tail=FLU.id) for s in symptoms]
    rels += [Relation(head=COLD.id, type="has_symptom", tail=s.id) for s in symptoms[:2]]
    rels += [Relation(head=s.id, type="possible_disease", tail=COLD.id) for s in symptoms[:2]]
    full = GraphIndex(list(ents.values()), sorted(rels, key=lambda r: r.id))
    schema = full.schema
    full.bound(2)
    h.driver.execute_query.side_effect = _bounded_reads(ents, rels)
    degrees = np.asarray([len([r for r in rels if e in (r.head, r.tail)]) for e in ents])
    seeds = [symptoms[0].id, symptoms[1].id]
    part = GraphIndex.neighborhood(
        h.store, seeds, schema=schema, bound=2, degree_values=degrees, uniform=True
    )
    assert all(c.kwargs == {"database_": DB, "routing_": READ} for c in h.read_calls())
    assert part.hub_degree(90.0) == full.hub_degree(90.0)
    assert [d for d, _, _ in rank_diseases(part, seeds)] == [d for d, _, _ in rank_diseases(full, seeds)]
    for fn in (neighbor_evidence, hykge_chains):
        got = [(e.text, tuple(e.relation_ids)) for e in fn(part, seeds)]  # type: ignore[operator]
        assert got == [(e.text, tuple(e.relation_ids)) for e in fn(full, seeds)]  # type: ignore[operator]
    flu = part.idx(FLU.id)
    # Flu's five symptoms: two kept, the heavier (Symptom 3) first
    kept = [part.edge_id[e] for e in part.out_adj[flu] if part.edge_type[e] == "has_symptom"]
    assert (len(kept) == 2 and kept[0] == rels[3].id) or rels[3].id in kept
    bounded = [c for c in h.read_calls() if c.args[0] == q.BOUNDED_EDGES]
    assert bounded and all(c.args[1]["k"] == 2 and c.args[1]["hidden"] == [] for c in bounded)


def test_a_cut_hubs_votes_past_its_bound_are_read_from_readers_in_one_statement(h: Harness) -> None:
    """Pushed down, a symptom whose list the bound cut still votes for every candidate it reaches:
    one ``EDGES_BETWEEN`` read on a reader, the cut full index's ranking (issue 42)."""
    from kgmind.retrievers.exploration import rank_diseases
    from kgmind.retrievers.graph_index import GraphIndex

    diseases = [ent(f"Disease {i}", "disease") for i in range(4)]
    rare = ent("Rare sign", "symptom")
    ents = {e.id: e for e in (*diseases, COUGH, rare)}
    rels = [Relation(head=d.id, type="has_symptom", tail=COUGH.id) for d in diseases]
    rels += [Relation(head=diseases[3].id, type="has_symptom", tail=rare.id)]
    full = GraphIndex(list(ents.values()), sorted(rels, key=lambda r: r.id))
    full.bound(2)
    h.driver.execute_query.side_effect = _bounded_reads(ents, rels)
    degrees = np.asarray([len([r for r in rels if e in (r.head, r.tail)]) for e in ents])
    seeds = [COUGH.id, rare.id]
    part = GraphIndex.neighborhood(
        h.store, seeds, schema=full.schema, bound=2, degree_values=degrees, uniform=True
    )
    ranking = rank_diseases(part, seeds)
    assert ranking == rank_diseases(full, seeds)
    assert ranking[0][0] == diseases[3].id and len(ranking[0][2]) == 2  # Cough's vote counted past its bound
    between = [c for c in h.read_calls() if c.args[0] == q.EDGES_BETWEEN]
    assert len(between) == 1 and between[0].args[1]["a"] == [COUGH.id]
    assert diseases[3].id in between[0].args[1]["b"]
    assert all(c.kwargs == {"database_": DB, "routing_": READ} for c in h.read_calls())
