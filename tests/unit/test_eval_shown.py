"""``kgmind eval … --rows``: each row says which KG facts its question was shown (issue 41).

``rows[method][i]["shown"]`` lists, per shown evidence item, the stored triples behind it,
with entity names and the stored relation type and direction, even where an exploration
walked the edge through a reverse reading.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from kg_forms import eid, kg
from kgmind.eval import methods as em
from kgmind.eval.config import EvalConfig
from kgmind.eval.runner import run_eval
from kgmind.eval.shown import shown_triples
from kgmind.models import Entity, Evidence, Relation
from kgmind.retrievers import aggregate
from kgmind.retrievers.exploration import neighbor_evidence, weighted_dfs_chains
from kgmind.retrievers.graph_index import GraphIndex
from kgmind.stores.factory import close_all_stores, open_store

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "eval"
SYMPTOMS = [eid("Fever"), eid("Rash"), eid("Red eyes")]


class _CountingStore:
    """The natural-form KG, counting the reads ``shown_triples`` makes."""

    def __init__(self) -> None:
        self.ents, self.rels = kg("natural")
        self.calls: list[str] = []

    def get_relations(self, ids: Sequence[str]) -> list[Relation]:
        self.calls.append("get_relations")
        by_id = {r.id: r for r in self.rels}
        return [by_id[i] for i in ids if i in by_id]

    def get_entities(self, ids: Sequence[str]) -> list[Entity]:
        self.calls.append("get_entities")
        return [e for e in self.ents if e.id in set(ids)]


def _shown(gi: GraphIndex) -> list[Evidence]:
    """A KGCoT chain walked from Red eyes through a reverse reading, then the ranked neighbour lines."""
    chains = weighted_dfs_chains(gi, [eid("Red eyes")], n_chains=1, max_depth=2)
    return aggregate.number_evidence([*chains, *neighbor_evidence(gi, SYMPTOMS, ranked=True, max_lines=4)])


def test_shown_items_give_the_stored_triples_behind_them() -> None:
    store = _CountingStore()
    gi = GraphIndex(store.ents, sorted(store.rels, key=lambda r: r.id))
    evidence = _shown(gi)
    chain, support = evidence[0], evidence[1]
    assert chain.triples[0] == ("Red eyes", "~presents_with", "Measles")  # walked against the stored edge
    assert support.meta["relation"] == "support"
    doc = Evidence(id="D1", kind="doc", text="a document")
    twice = support.model_copy(update={"id": "X9", "relation_ids": support.relation_ids * 2})
    shown = shown_triples([*evidence, doc, twice], store)
    assert store.calls == ["get_relations", "get_entities"]  # one read each for the whole row
    assert [s["id"] for s in shown] == [*(ev.id for ev in evidence), "D1", "X9"]
    assert shown[0]["triples"][0] == ["Measles", "presents_with", "Red eyes"]  # the stored edge's triple
    assert sorted(map(tuple, shown[1]["triples"])) == [
        ("Measles", "presents_with", "Fever"),  # as the file wrote them: disease first, its name
        ("Measles", "presents_with", "Rash"),
        ("Measles", "presents_with", "Red eyes"),
    ]
    assert shown[-2] == {"id": "D1", "triples": []}
    assert shown[-1]["triples"] == shown[1]["triples"]  # one triple per distinct edge
    for item, ev in zip(shown, evidence, strict=False):
        assert len(item["triples"]) == len(set(ev.relation_ids))
    assert shown_triples(evidence, None) == [{"id": ev.id, "triples": []} for ev in evidence]


@pytest.fixture
def natural_store(tmp_path: Path) -> Any:
    uri = f"ladybug:{tmp_path / 'kg'}"
    store = open_store(uri, create=True)
    store.bulk_load(*kg("natural"))
    yield store
    close_all_stores()


def test_eval_rows_say_what_each_question_was_shown(
    natural_store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gi = GraphIndex(natural_store.iter_entities(), natural_store.iter_relations())
    shown_by_method: list[list[Evidence]] = []

    def method(question: str, entities: Any, res: Any, budget: int) -> em.MethodResult:
        evidence = _shown(gi)
        shown_by_method.append(evidence)
        return em.MethodResult(evidence=evidence)

    monkeypatch.setitem(em.METHODS, "kg_shortest_path", em.MethodSpec("kg_shortest_path", method))
    cfg = EvalConfig(
        dataset="genmedgpt5k",
        dialogues=str(FIX / "dialogues.json"),
        ner=str(FIX / "ner_chatgpt.jsonl"),
        gold=str(FIX / "gold_kg_entities.jsonl"),
        vocab=str(FIX / "format_dataset.csv"),
        docs=str(FIX / "disease_documents"),
        store=natural_store.uri,
        methods="kg_shortest_path,bm25_doc",
        memory_sample=0,
        bertscore=False,
    )
    plain = run_eval(cfg)
    assert "rows" not in plain
    results = run_eval(cfg, keep_rows=True)
    rows = results["rows"]["kg_shortest_path"]
    assert len(rows) == results["n"] > 0
    for row in rows:
        assert {"evidence_recall", "evidence_tokens", "latency_ms", "id", "notes"} <= row.keys()
        assert [s["id"] for s in row["shown"]] == [ev.id for ev in shown_by_method[-1]]
        assert row["shown"][0]["triples"][0] == ["Measles", "presents_with", "Red eyes"]
        assert all(not r.startswith("~") for s in row["shown"] for _, r, _ in s["triples"])
    assert all(s["triples"] == [] for r in results["rows"]["bm25_doc"] for s in r["shown"])
    assert results["methods"].keys() == plain["methods"].keys()
