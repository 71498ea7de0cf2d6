"""``kgmind learn``: what gets credited, that learning moves the ranking, idempotence and resumption.

The credit rules run on hand-made graphs; the passes run the compiled graph (no LLM) on the
eval fixtures in a real embedded store.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgmind.cli import app
from kgmind.eval.config import EvalConfig
from kgmind.eval.items import build_items
from kgmind.eval.learn import LearnConfig, credit_edges, learning_order, run_learn
from kgmind.models import Entity, Evidence, Relation, entity_id
from kgmind.retrievers.exploration import rank_diseases
from kgmind.retrievers.graph_index import GraphIndex
from kgmind.retrievers.graph_index_cache import clear_graph_index_cache
from kgmind.stores.factory import close_all_stores, open_store
from kgmind.stores.feedback import apply_feedback
from toy_kg import disease_kg

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "eval"

#: Flu and Cold share Cough; Flu and Measles share Fever.
TOY = {
    "Flu": (["Fever", "Cough"], ["Swab"], ["Oseltamivir"]),
    "Cold": (["Cough", "Sneezing"], ["Swab", "Throat exam"], ["Paracetamol"]),
    "Measles": (["Fever", "Rash"], [], ["Paracetamol"]),
}


def eid(name: str) -> str:
    return entity_id(name)


def toy() -> tuple[list[Entity], list[Relation]]:
    ents, rels, _docs = disease_kg(TOY)
    return ents, rels


def names_of(gi: GraphIndex, rids: list[str]) -> set[tuple[str, str]]:
    out = set()
    for rid in rids:
        e = gi.edge(gi.edge_index_of[rid])
        out.add((gi.name(e.head), gi.name(e.tail)))
    return out


# -- credit rules ----------------------------------------------------------------------
def test_reference_credit_reaches_edges_the_evidence_never_showed() -> None:
    """The reference's disease toward what the patient reported and what the answer named."""
    gi = GraphIndex(*toy())
    credit = credit_edges(gi, [eid("Cough")], [], ["Cold", "Throat exam"])
    assert names_of(gi, credit.excellent) == {("Cold", "Cough"), ("Cold", "Throat exam")}
    assert credit.poor == [] and credit.gold_diseases == 1
    # the other direction: the question's entities toward the reference's
    question = credit_edges(gi, [eid("Cough")], [], ["Cold", "Throat exam"], credit="question")
    assert names_of(gi, question.excellent) == {("Cough", "Cold"), ("Cold", "Throat exam")}
    # KGCoT's own unit: only what was shown (nothing here)
    assert credit_edges(gi, [eid("Cough")], [], ["Cold"], credit="shown").excellent == []


def test_shown_credit_and_shown_poor_split_the_shown_edges_by_their_tail() -> None:
    gi = GraphIndex(*toy())
    shown = Evidence(kind="neighbor", text="x", relation_ids=[e.id for e in gi.out_edges(eid("Cough"))])
    credit = credit_edges(gi, [eid("Cough")], [shown], ["Flu"], credit="shown", poor="shown")
    assert names_of(gi, credit.excellent) == {("Cough", "Flu")}
    assert names_of(gi, credit.poor) == {("Cough", "Cold")}
    assert not set(credit.excellent) & set(credit.poor)


def test_outranked_poor_lowers_only_the_diseases_ranked_above_the_gold_one() -> None:
    gi = GraphIndex(*toy())
    ranking = [gi.name(d) for d, _, _ in rank_diseases(gi, [eid("Fever"), eid("Cough")], weight_aware=True)]
    assert ranking == ["Flu", "Measles", "Cold"]  # two votes, then a tie broken by first appearance
    credit = credit_edges(gi, [eid("Fever"), eid("Cough")], [], ["Cold"], poor="outranked")
    assert names_of(gi, credit.poor) == {("Fever", "Flu"), ("Cough", "Flu"), ("Fever", "Measles")}
    assert names_of(gi, credit.excellent) == {("Cold", "Cough")}
    # nothing is lowered when the gold disease already leads
    assert credit_edges(gi, [eid("Fever"), eid("Cough")], [], ["Flu"], poor="outranked").poor == []


def test_learning_moves_the_ranking_of_a_new_question_toward_the_rated_answer(tmp_path: Path) -> None:
    """Training patients with a cough had a cold; a new coughing patient now gets Cold first.

    Cough votes for Flu and Cold alike; what was learnt is that patients with a cold report
    a cough (p(Cough | Cold) rose), which breaks the tie.
    """
    close_all_stores()
    clear_graph_index_cache()
    store = open_store(f"ladybug:{tmp_path / 'kg'}", create=True)
    store.bulk_load(*toy())
    gi = GraphIndex(store.iter_entities(), store.iter_relations())

    def top(linked: list[str]) -> str:
        fresh = GraphIndex(store.iter_entities(), store.iter_relations())
        return fresh.name(rank_diseases(fresh, linked, weight_aware=True)[0][0])

    new_patient = [eid("Cough")]
    assert top(new_patient) == "Flu"  # a tie, broken by storage order
    for i in range(2):
        credit = credit_edges(gi, [eid("Cough")], [], ["Cold", "Paracetamol"])
        assert apply_feedback(store, f"train-{i}", "excellent", credit.excellent, feedback_id=f"fb-{i}")
    assert top(new_patient) == "Cold"
    # a patient with fever and cough still gets Flu: one learnt symptom does not outvote two
    assert top([eid("Fever"), eid("Cough")]) == "Flu"
    close_all_stores()


# -- passes ------------------------------------------------------------------------------
def _cfg(store: str, **kw: object) -> LearnConfig:
    return LearnConfig(
        dialogues=str(FIX / "dialogues.json"),
        ner=str(FIX / "ner_chatgpt.jsonl"),
        gold=str(FIX / "gold_kg_entities.jsonl"),
        vocab=str(FIX / "format_dataset.csv"),
        kg=str(FIX / "format_dataset.csv"),
        store=store,
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture
def fresh() -> Iterator[None]:
    close_all_stores()
    clear_graph_index_cache()
    yield
    close_all_stores()
    clear_graph_index_cache()


def _weights(uri: str) -> dict[str, float]:
    return {r.id: r.weight for r in open_store(uri).iter_relations()}


def test_a_second_pass_changes_nothing(tmp_path: Path, fresh: None) -> None:
    uri = f"ladybug:{tmp_path / 'kg'}"
    first = run_learn(_cfg(uri))
    assert first["questions"] == 4 and first["learnt"] >= 3 and first["edges_up"] > 0
    after_first = _weights(uri)
    version = open_store(uri).weights_version()
    second = run_learn(_cfg(uri))
    assert second["learnt"] == 0 and second["feedbacks"] == 0
    assert second["skipped_already_learnt"] == first["learnt"]
    assert _weights(uri) == after_first
    assert open_store(uri).weights_version() == version


def test_an_interrupted_pass_resumes_to_the_weights_of_one_whole_pass(tmp_path: Path, fresh: None) -> None:
    whole = f"ladybug:{tmp_path / 'whole'}"
    run_learn(_cfg(whole))
    expected = _weights(whole)

    resumed = f"ladybug:{tmp_path / 'resumed'}"
    seen: list[int] = []

    class Interrupt(Exception):
        pass

    def stop_after_two() -> None:
        seen.append(1)
        if len(seen) == 2:
            raise Interrupt

    with pytest.raises(Interrupt):
        run_learn(_cfg(resumed), on_advance=stop_after_two)
    out = run_learn(_cfg(resumed))
    assert out["skipped_already_learnt"] == 2
    assert _weights(resumed) == pytest.approx(expected)


def test_limits_nest_and_ids_files_set_the_order(tmp_path: Path, fresh: None) -> None:
    items, _ = build_items(_cfg("x").eval_config())
    order = [it.id for it in learning_order(items, 0)]
    assert sorted(order) == sorted(it.id for it in items)
    assert [it.id for it in learning_order(items[::-1], 0)] == order  # independent of file order
    ids = tmp_path / "ids.txt"
    ids.write_text("4\n# a comment\n1\n")
    cfg = EvalConfig(**{**_cfg("x").eval_config().__dict__, "ids": str(ids)})
    assert [it.id for it in build_items(cfg)[0]] == ["4", "1"]
    ids.write_text("1\nnot-an-item\n")
    with pytest.raises(ValueError, match="not items"):
        build_items(cfg)


def test_learn_cli_needs_a_store_and_rejects_bad_settings(tmp_path: Path, fresh: None) -> None:
    runner = CliRunner()
    r = runner.invoke(app, ["learn", "genmedgpt5k"])
    assert r.exit_code == 2 and "--store" in r.output
    store = f"ladybug:{tmp_path / 'kg'}"
    r = runner.invoke(app, ["learn", "genmedgpt5k", "--store", store, "--credit", "everything"])
    assert r.exit_code == 2 and "--credit" in r.output
    r = runner.invoke(app, ["learn", "explaincpe", "--store", store])
    assert r.exit_code == 2 and "genmedgpt5k" in r.output
    assert not (tmp_path / "kg").exists()  # nothing was created


def test_learn_cli_prints_what_the_pass_did(tmp_path: Path, fresh: None) -> None:
    store = f"ladybug:{tmp_path / 'kg'}"
    args = [
        "learn", "genmedgpt5k", "--store", store, "--no-progress",
        "--dialogues", str(FIX / "dialogues.json"), "--ner", str(FIX / "ner_chatgpt.jsonl"),
        "--vocab", str(FIX / "format_dataset.csv"), "--kg", str(FIX / "format_dataset.csv"),
    ]  # fmt: skip
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "4 questions:" in r.output and "edges up" in r.output
    r = CliRunner().invoke(app, args)
    assert "0 learnt" in r.output and "already learnt" in r.output
