"""Feedback through the real LadybugStore: rule in the transaction, rollback, idempotency, audit, CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from kgmind.cli.weights import register, weight_summary
from kgmind.models import Entity, Relation
from kgmind.stores.factory import close_all_stores, open_store
from kgmind.stores.feedback import apply_feedback, feedback_key
from kgmind.stores.protocol import GraphStore, StoreError
from kgmind.stores.weights import make_rule

NAMES = ["Flu", "Fever", "Cough", "Blood test", "Rest"]
E = {n: Entity(name=n, type="disease" if n == "Flu" else "symptom") for n in NAMES}


def _rel(h: str, t: str, typ: str) -> Relation:
    return Relation(head=E[h].id, type=typ, tail=E[t].id)


RELS = {
    "flu_fever": _rel("Flu", "Fever", "has_symptom"),
    "flu_cough": _rel("Flu", "Cough", "has_symptom"),
    "flu_test": _rel("Flu", "Blood test", "need_check"),
    "fever_cough": _rel("Fever", "Cough", "co_occurs"),
    "fever_test": _rel("Fever", "Blood test", "need_check"),
    "cough_rest": _rel("Cough", "Rest", "need_rest"),  # the only out-edge of Cough
}
R = {k: r.id for k, r in RELS.items()}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GraphStore]:
    close_all_stores()
    s = open_store(f"ladybug:{tmp_path / 'kg'}", create=True)
    s.bulk_load(E.values(), RELS.values())
    yield s
    close_all_stores()


def _weights(store: GraphStore) -> dict[str, float]:
    return {r.id: r.weight for r in store.iter_relations()}


def _siblings(store: GraphStore, head: str) -> dict[str, list[tuple[str, float]]]:
    return {head: [(r.id, r.weight) for r in store.out_edges(head)]}


def test_excellent_feedback_applies_rule_and_audits(store: GraphStore) -> None:
    before = _weights(store)
    expected = make_rule("excellent")(_siblings(store, E["Flu"].id), [R["flu_fever"]])
    changes = apply_feedback(store, "run-1", "excellent", [R["flu_fever"]])
    after = _weights(store)
    assert after[R["flu_fever"]] == pytest.approx(expected[R["flu_fever"]], rel=1e-12)
    assert after[R["flu_fever"]] > 1.0
    assert {k: v for k, v in after.items() if k != R["flu_fever"]} == {
        k: v for k, v in before.items() if k != R["flu_fever"]
    }
    fid = feedback_key("run-1", "excellent", [R["flu_fever"]])
    assert len(changes) == 1
    c = changes[0]
    assert (c.feedback_id, c.run_id, c.relation_id, c.rating) == (fid, "run-1", R["flu_fever"], "excellent")
    assert c.old_weight == 1.0 and c.new_weight == pytest.approx(after[R["flu_fever"]], rel=1e-12)
    assert datetime.fromisoformat(c.at).utcoffset() is not None
    assert store.weight_changes() == changes
    assert store.weight_changes(fid) == changes
    assert store.weight_changes("nope") == []


def test_poor_feedback_on_two_edges_of_one_head_is_sequential(store: GraphStore) -> None:
    ids = [R["flu_test"], R["flu_cough"]]
    expected = make_rule("poor")(_siblings(store, E["Flu"].id), ids)
    changes = apply_feedback(store, "run-2", "poor", ids)
    after = _weights(store)
    assert {c.relation_id for c in changes} == set(ids)
    for rid in ids:
        assert after[rid] == pytest.approx(expected[rid], rel=1e-12)
        assert 0 < after[rid] < 1.0
    assert after[R["flu_fever"]] == 1.0


def test_edges_under_different_heads_in_one_feedback(store: GraphStore) -> None:
    changes = apply_feedback(store, "run-3", "excellent", [R["flu_fever"], R["fever_test"]])
    assert {c.relation_id for c in changes} == {R["flu_fever"], R["fever_test"]}
    assert len({c.feedback_id for c in changes}) == 1


def test_single_out_edge_unchanged_and_not_audited(store: GraphStore) -> None:
    assert apply_feedback(store, "run", "poor", [R["cough_rest"]]) == []
    assert _weights(store)[R["cough_rest"]] == 1.0
    assert store.weight_changes() == []


def test_failing_rule_rolls_back(store: GraphStore) -> None:
    apply_feedback(store, "warm-up", "excellent", [R["flu_cough"]])
    before, audit = _weights(store), store.weight_changes()

    def failing(sib: Mapping[str, Sequence[tuple[str, float]]], ids: Sequence[str]) -> dict[str, float]:
        raise RuntimeError("rule exploded")

    with pytest.raises(StoreError):
        store.apply_weight_updates("fb-fail", "run", "poor", [R["flu_fever"]], failing)

    def negative(sib: Mapping[str, Sequence[tuple[str, float]]], ids: Sequence[str]) -> dict[str, float]:
        return {R["flu_fever"]: 0.5, R["flu_cough"]: -1.0}

    with pytest.raises(StoreError):
        store.apply_weight_updates("fb-neg", "run", "poor", [R["flu_fever"]], negative)
    assert _weights(store) == before
    assert store.weight_changes() == audit
    # a rolled-back feedback id is not consumed
    assert store.apply_weight_updates("fb-fail", "run", "poor", [R["flu_fever"]], make_rule("poor"))


def test_bad_relation_id_rolls_back_whole_feedback(store: GraphStore) -> None:
    before = _weights(store)
    with pytest.raises(StoreError):
        apply_feedback(store, "run-x", "poor", [R["flu_fever"], "r-does-not-exist"])
    assert _weights(store) == before
    assert store.weight_changes() == []


def test_repeated_feedback_is_idempotent(store: GraphStore) -> None:
    first = apply_feedback(store, "run-9", "poor", [R["flu_fever"], R["fever_cough"]])
    w, audit = _weights(store), store.weight_changes()
    assert first
    assert apply_feedback(store, "run-9", "poor", [R["fever_cough"], R["flu_fever"]]) == []
    assert apply_feedback(store, "other", "poor", [R["flu_cough"]], feedback_id=first[0].feedback_id) == []
    assert _weights(store) == w and store.weight_changes() == audit
    # a different run is a different feedback and compounds
    assert apply_feedback(store, "run-10", "poor", [R["flu_fever"]])
    assert _weights(store)[R["flu_fever"]] < w[R["flu_fever"]]


def test_commit_updates_the_cached_graph_index(store: GraphStore) -> None:
    import kgmind.retrievers.graph_index_cache as gi_mod

    gi = gi_mod.get_graph_index(store)
    assert gi.weight(R["flu_fever"]) == 1.0
    apply_feedback(store, "run-gi", "excellent", [R["flu_fever"]])
    assert gi_mod.get_graph_index(store) is gi
    assert gi.weight(R["flu_fever"]) == pytest.approx(_weights(store)[R["flu_fever"]], rel=1e-12)


# -- CLI ---------------------------------------------------------------------------
@pytest.fixture
def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def test_cli_weights_json_and_table(store: GraphStore, cli: typer.Typer) -> None:
    runner = CliRunner()
    empty = runner.invoke(cli, ["weights", "--store", store.uri, "--json"])
    assert empty.exit_code == 0, empty.output
    assert json.loads(empty.output) == []
    apply_feedback(store, "a", "excellent", [R["flu_fever"]])
    apply_feedback(store, "b", "excellent", [R["flu_fever"]])
    apply_feedback(store, "c", "poor", [R["fever_test"]])
    res = runner.invoke(cli, ["weights", "--store", store.uri, "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    by_id = {r["relation_id"]: r for r in rows}
    assert set(by_id) == {R["flu_fever"], R["fever_test"]}
    w = _weights(store)
    ff = by_id[R["flu_fever"]]
    assert (ff["head_name"], ff["type"], ff["tail_name"]) == ("Flu", "has_symptom", "Fever")
    assert ff["old_weight"] == 1.0 and ff["weight"] == pytest.approx(w[R["flu_fever"]])
    assert ff["delta"] == pytest.approx(w[R["flu_fever"]] - 1.0) and ff["feedbacks"] == 2
    assert by_id[R["fever_test"]]["delta"] < 0 and by_id[R["fever_test"]]["feedbacks"] == 1
    assert [abs(r["delta"]) for r in rows] == sorted((abs(r["delta"]) for r in rows), reverse=True)
    top1 = json.loads(runner.invoke(cli, ["weights", "--store", store.uri, "--json", "--top", "1"]).output)
    assert top1 == rows[:1]
    table = runner.invoke(cli, ["weights", "--store", store.uri], env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert "Flu -[has_symptom]-> Fever" in table.output
    assert "Fever -[need_check]-> Blood test" in table.output


def test_cli_reset_weights(store: GraphStore, cli: typer.Typer) -> None:
    runner = CliRunner()
    apply_feedback(store, "a", "excellent", [R["flu_fever"]])
    before = _weights(store)
    declined = runner.invoke(cli, ["reset-weights", "--store", store.uri], input="n\n")
    assert declined.exit_code != 0
    assert _weights(store) == before and store.weight_changes()
    ok = runner.invoke(cli, ["reset-weights", "--store", store.uri, "--yes"])
    assert ok.exit_code == 0, ok.output
    assert set(_weights(store).values()) == {1.0}
    assert store.weight_changes() == [] and weight_summary(store) == []


def test_cli_bad_top_is_rejected(store: GraphStore, cli: typer.Typer) -> None:
    res = CliRunner().invoke(cli, ["weights", "--store", store.uri, "--top", "0"])
    assert res.exit_code != 0


def test_rating_names_the_edges_it_could_not_move(store: GraphStore) -> None:
    """A run citing a sole out-edge beside a movable one: the user is told which kept its weight, and why."""
    from kgmind.cli.feedback import feedback_message
    from kgmind.graphs.apply_feedback import apply_rating
    from kgmind.models import Evidence

    cited = Evidence(
        id="P1",
        kind="path",
        text="Flu has Fever; Cough needs Rest.",
        triples=[("Flu", "has_symptom", "Fever"), ("Cough", "need_rest", "Rest")],
        relation_ids=[R["flu_fever"], R["cough_rest"]],
    )
    values = {
        "run_id": "run-sole",
        "selected_evidence": [cited],
        "inference_chain": [{"evidence_ids": ["P1"]}],
    }
    out = apply_rating(store, values, "excellent")
    assert out["applied"] is True and out["changes"] == 1
    assert out["unchanged_ids"] == [R["cough_rest"]]
    assert _weights(store)[R["cough_rest"]] == 1.0 and _weights(store)[R["flu_fever"]] > 1.0
    line = feedback_message(out)
    assert "1 weights changed; 1 unchanged (each is the only out-edge of its head node" in line
    movable = cited.model_copy(update={"triples": cited.triples[:1], "relation_ids": [R["flu_fever"]]})
    again = apply_rating(store, {**values, "run_id": "run-2", "selected_evidence": [movable]}, "excellent")
    assert again["changes"] == 1 and again["unchanged_ids"] == []
    assert "unchanged" not in feedback_message(again)
