"""The same facts give the same evidence, whatever the direction and names of the relations (issue 44).

Three diseases, their symptoms, tests and drugs, written three ways:

* ``both``: MindMap's form, every fact stored both ways with EMCKG's names and typed entities
  (what ``kg import --format chatdoctor`` writes);
* ``natural``: one direction, disease → X, in a user's own words, untyped entities;
* ``reverse``: one direction, X → disease (``symptom_of``, ``test_for``, ``treats``), untyped.

Each of the four explorations must find from the symptoms what it finds on the ``both``
form, in memory and pushed down into a real embedded store.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kg_forms import FACTS, FORMS, eid, kg
from kgmind.models import Relation
from kgmind.relations import REVERSE_MARK
from kgmind.retrievers.aggregate import render_evidence
from kgmind.retrievers.exploration import (
    hykge_chains,
    neighbor_evidence,
    path_evidence,
    rank_diseases,
    weighted_dfs_chains,
)
from kgmind.retrievers.graph_index import GraphIndex
from kgmind.stores.factory import open_store


def index(form: str) -> GraphIndex:
    ents, rels = kg(form)
    return GraphIndex(ents, sorted(rels, key=lambda r: r.id))


def names_in(evidence: list[object]) -> set[str]:
    return {n for ev in evidence for h, _, t in ev.triples for n in (h, t)}  # type: ignore[attr-defined]


SYMPTOMS = [eid("Fever"), eid("Rash"), eid("Red eyes")]


@pytest.mark.parametrize("form", FORMS)
def test_symptoms_vote_for_the_disease_that_has_them_all(form: str) -> None:
    ranking = rank_diseases(index(form), SYMPTOMS)
    assert [d for d, _, _ in ranking] == [eid("Measles"), eid("Dengue"), eid("Influenza")]
    assert ranking == rank_diseases(index(form), SYMPTOMS)  # deterministic


@pytest.mark.parametrize("form", FORMS)
def test_ranked_neighbours_give_the_best_disease_workup(form: str) -> None:
    evs = neighbor_evidence(index(form), SYMPTOMS, ranked=True, max_lines=4)
    assert evs[0].meta["relation"] == "support" and evs[0].meta["disease"] == "Measles"
    shown = names_in(evs)
    assert {"Measles IgM test", "Vitamin A"} <= shown
    # the support line says the facts that tie the symptoms to the disease, by role, in every form
    assert render_evidence(evs[0]) in (
        "Fever, Rash and Red eyes may be a sign of Measles.",  # walked toward the disease
        "Measles may present with Fever, Rash and Red eyes.",  # the stored facts, disease first
    )


@pytest.mark.parametrize("form", FORMS)
def test_faithful_neighbours_expand_the_reached_diseases(form: str) -> None:
    evs = neighbor_evidence(index(form), [eid("Red eyes")], max_lines=5)
    assert {"Measles IgM test", "Vitamin A"} <= names_in(evs)


@pytest.mark.parametrize("form", FORMS)
def test_paths_join_two_symptoms_through_a_disease(form: str) -> None:
    evs = path_evidence(index(form), [eid("Red eyes"), eid("Joint pain")])
    assert evs, form
    assert {"Measles", "Dengue"} <= names_in(evs)  # Red eyes - Measles - Rash/Fever - Dengue - Joint pain


@pytest.mark.parametrize("form", FORMS)
def test_hykge_chains_meet_at_the_shared_disease(form: str) -> None:
    evs = hykge_chains(index(form), [eid("Red eyes"), eid("Rash")])
    assert any("Measles" in names_in([ev]) for ev in evs)


@pytest.mark.parametrize("form", FORMS)
def test_kgcot_walks_from_a_symptom_to_its_disease(form: str) -> None:
    evs = weighted_dfs_chains(index(form), [eid("Red eyes")], n_chains=3, max_depth=2)
    assert evs and all(ev.triples[0][2] == "Measles" for ev in evs)


def test_a_reverse_reading_carries_its_stored_edge_id_and_weight() -> None:
    gi = index("natural")
    stored = Relation(head=eid("Measles"), type="presents_with", tail=eid("Red eyes"))
    red_eyes = gi.idx(eid("Red eyes"))
    (back,) = [e for e in gi.out_adj[red_eyes]]
    assert gi.edge_type[back] == REVERSE_MARK + "presents_with" and gi.edge_id[back] == stored.id
    assert gi.edge_index_of[stored.id] != back  # the id finds the stored edge
    assert gi.set_weights([(stored.id, 3.0)]) == 1
    assert gi.weights[back] == gi.weights[gi.edge_index_of[stored.id]] == 3.0
    assert gi.out_weight_total[red_eyes] == 3.0  # KGCoT's normaliser sees the reading's new weight
    assert gi.num_relations == len(FACTS) and gi.num_edges == 2 * len(FACTS)
    # a KG stored both ways gets no readings: the fitted form is walked as it always was
    both = index("both")
    assert both.num_edges == both.num_relations == 2 * len(FACTS)


def test_stored_directions_only_when_asked() -> None:
    ents, rels = kg("natural")
    gi = GraphIndex(ents, rels, reverse_readings=False)
    assert rank_diseases(gi, SYMPTOMS) == []  # what a natural KG gave before: nothing from the symptoms


def test_readings_sentences_use_roles_not_names() -> None:
    evs = neighbor_evidence(index("reverse"), [eid("Measles")], max_lines=5)
    text = " ".join(render_evidence(ev) for ev in evs)
    assert "Measles can be checked with Measles IgM test" in text
    assert "Measles can be treated with Vitamin A" in text
    assert "test for" not in text and "treats" not in text and "~" not in text


# -- pushed down into a real embedded store ---------------------------------------------------------


def _key(evidence: list[object]) -> list[tuple[str, tuple[str, ...]]]:
    return [(ev.text, tuple(ev.relation_ids)) for ev in evidence]  # type: ignore[attr-defined]


@pytest.mark.parametrize("form", ["natural", "reverse"])
def test_pushdown_walks_both_ways_as_the_whole_index_does(form: str, tmp_path: Path) -> None:
    from kgmind.retrievers.graph_index_cache import (
        clear_graph_index_cache,
        get_graph_index,
        get_neighborhood_index,
    )

    store = open_store(f"ladybug:{tmp_path / form}", create=True)
    ents, rels = kg(form)
    store.bulk_load(ents, rels)
    clear_graph_index_cache()
    full = get_graph_index(store)
    part = get_neighborhood_index(store, SYMPTOMS)
    assert part.pushed_down and full.num_edges == 2 * len(FACTS)
    assert full.schema.votes(REVERSE_MARK + "presents_with") or full.schema.votes("symptom_of")
    assert rank_diseases(part, SYMPTOMS) == rank_diseases(full, SYMPTOMS)
    assert rank_diseases(full, SYMPTOMS)[0][0] == eid("Measles")
    for fn in (neighbor_evidence, hykge_chains, path_evidence, weighted_dfs_chains):
        assert _key(fn(part, SYMPTOMS)) == _key(fn(full, SYMPTOMS)), fn.__name__  # type: ignore[operator]
    ranked = neighbor_evidence(part, SYMPTOMS, ranked=True)
    assert _key(ranked) == _key(neighbor_evidence(full, SYMPTOMS, ranked=True))
    store.close()
    clear_graph_index_cache()
