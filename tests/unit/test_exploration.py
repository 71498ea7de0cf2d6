"""Exploration over small hand-made graphs: exact MindMap paths/neighbor lines, HyKGE chains, KGCoT draws."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from kgmind.models import Entity, KnowledgeDoc, Relation, entity_id
from kgmind.retrievers.exploration import (
    hykge_chains,
    neighbor_evidence,
    path_evidence,
    rank_diseases,
    weighted_dfs_chains,
)
from kgmind.retrievers.graph_index import GraphIndex


def eid(name: str) -> str:
    return entity_id(name)


def ids(*names: str) -> list[str]:
    return [eid(n) for n in names]


def abstract(
    edges: list[tuple[str, str]], extra: Sequence[str] = (), typ: str = "r", *, both_ways: bool = False
) -> GraphIndex:
    """A graph of one relation type, walked in its stored direction only unless ``both_ways``."""
    names = list(dict.fromkeys([n for e in edges for n in e] + list(extra)))
    return GraphIndex(
        [Entity(name=n) for n in names],
        [Relation(head=eid(h), type=typ, tail=eid(t)) for h, t in edges],
        reverse_readings=both_ways,
    )


def medical(extra: Sequence[Relation] = ()) -> GraphIndex:
    """A chatdoctor-style KG with MindMap's inverse relations."""
    kg = {
        "Flu": (["Fever", "Cough"], ["Swab"], ["Oseltamivir"]),
        "Cold": (["Cough"], ["Swab"], ["Paracetamol"]),
        "Measles": (["Fever", "Rash"], [], ["Paracetamol"]),
    }
    ents: dict[str, Entity] = {}
    rels: list[Relation] = []
    for d, (syms, tests, meds) in kg.items():
        ents[d] = Entity(name=d, type="disease")
        for rtype, _inv, tails, typ in (
            ("has_symptom", "possible_disease", syms, "symptom"),
            ("need_medical_test", "can_check_disease", tests, "test"),
            ("need_medication", "possible_cure_disease", meds, "medication"),
        ):
            for t in tails:
                ents.setdefault(t, Entity(name=t, type=typ))
                rels.append(Relation(head=eid(d), type=rtype, tail=eid(t)))
    for r in list(rels):
        inv = {
            "has_symptom": "possible_disease",
            "need_medical_test": "can_check_disease",
            "need_medication": "possible_cure_disease",
        }[r.type]
        rels.append(Relation(head=r.tail, type=inv, tail=r.head))
    return GraphIndex(list(ents.values()), [*rels, *extra])


def test_every_tool_carries_the_types_of_the_entities_it_names() -> None:
    gi = medical()
    linked = ids("Fever", "Cough", "Flu")
    evs = [
        *path_evidence(gi, linked),
        *neighbor_evidence(gi, linked),
        *neighbor_evidence(gi, linked, ranked=True),
        *hykge_chains(gi, linked),
        *weighted_dfs_chains(gi, linked, n_chains=3),
    ]
    assert {ev.kind for ev in evs} == {"path", "neighbor", "chain", "kgcot"}
    for ev in evs:
        named = {gi.names[gi.index_of[e]] for e in ev.entity_ids}
        assert set(ev.entity_types) == named and {n for h, _r, t in ev.triples for n in (h, t)} <= named
        assert all(ev.entity_types[n] == gi.types[gi.index_of[eid(n)]] for n in named)
    assert evs[0].entity_types["Fever"] == "symptom" and evs[0].entity_types["Flu"] == "disease"


def line_view(evs: list) -> list[tuple[str, str, list[str]]]:
    return [(ev.triples[0][0], ev.triples[0][1], [t[2] for t in ev.triples]) for ev in evs]


def path_names(ev) -> list[str]:
    return [ev.triples[0][0]] + [t[2] for t in ev.triples]


def check_alignment(gi: GraphIndex, evs: list) -> None:
    for ev in evs:
        assert len(ev.relation_ids) == len(ev.triples)
        for rid, (h, typ, t) in zip(ev.relation_ids, ev.triples, strict=True):
            e = gi.edge(gi.edge_index_of[rid])
            assert (gi.name(e.head), e.type, gi.name(e.tail)) == (h, typ, t)


# -- path_evidence -------------------------------------------------------------------
def test_path_segments_join_without_duplicating_the_junction() -> None:
    gi = abstract([("A", "B"), ("B", "C"), ("C", "E")])
    (ev,) = path_evidence(gi, ids("A", "C", "E"))
    assert path_names(ev) == ["A", "B", "C", "E"]
    assert ev.text == "A->r->B->r->C->r->E"  # MindMap would print C twice: ...->C->C->r->E
    assert ev.entity_ids == ids("A", "B", "C", "E")
    assert ev.kind == "path" and ev.meta["segments"] == 2
    check_alignment(gi, [ev])


def test_path_through_a_candidate_consumes_it() -> None:
    gi = abstract([("A", "B"), ("B", "C"), ("C", "D"), ("D", "F")])
    # A->D runs through C, so C is not searched again and D->F continues the same path
    (ev,) = path_evidence(gi, ids("A", "D", "C", "F"))
    assert path_names(ev) == ["A", "B", "C", "D", "F"]


def test_restart_from_next_candidate_when_no_path() -> None:
    gi = abstract([("A", "B"), ("C", "E")], extra=["Z"])
    (ev,) = path_evidence(gi, ids("A", "Z", "C", "E"))
    assert path_names(ev) == ["C", "E"]
    assert path_evidence(gi, ids("A", "Z")) == []
    assert path_evidence(gi, ids("A")) == []
    assert path_evidence(gi, ["unknown", eid("A")]) == []


def test_segment_alternatives_are_combined_in_product_order() -> None:
    gi = abstract(
        [
            ("A", "B1"),
            ("A", "B2"),
            ("B1", "T"),
            ("B2", "T"),
            ("T", "C1"),
            ("T", "C2"),
            ("C1", "U"),
            ("C2", "U"),
        ]
    )
    evs = path_evidence(gi, ids("A", "T", "U"))
    got = [path_names(ev) for ev in evs]
    assert sorted(got) == sorted([["A", b, "T", c, "U"] for b in ("B1", "B2") for c in ("C1", "C2")])
    assert len(got) == 4
    check_alignment(gi, evs)


def test_at_most_five_paths_per_segment_shortest_text_first() -> None:
    mids = ["M" + "x" * k for k in range(7)]  # rendered lengths differ
    gi = abstract([("A", m) for m in reversed(mids)] + [(m, "T") for m in reversed(mids)])
    evs = path_evidence(gi, ids("A", "T"), max_paths=10)
    assert sorted(path_names(ev)[1] for ev in evs) == mids[:5]


def test_weight_aware_keeps_most_probable_paths() -> None:
    mids = [f"M{k}" for k in range(7)]
    rels = [Relation(head=eid("A"), type="r", tail=eid(m), weight=1.0 + k) for k, m in enumerate(mids)]
    rels += [Relation(head=eid(m), type="r", tail=eid("T")) for m in mids]
    gi = GraphIndex([Entity(name=n) for n in ["A", "T", *mids]], rels)
    evs = path_evidence(gi, ids("A", "T"), max_paths=10, weight_aware=True)
    assert [path_names(ev)[1] for ev in evs] == ["M6", "M5", "M4", "M3", "M2"]


def test_head_diversity_refills_unused_shares() -> None:
    # run 1 (head A): four parallel paths A->Bi->T; T->Z fails; run 2 (head P): P->Q
    edges = [("A", f"B{i}") for i in range(4)] + [(f"B{i}", "T") for i in range(4)] + [("P", "Q")]
    gi = abstract(edges, extra=["Z"])
    evs = path_evidence(gi, ids("A", "T", "Z", "P", "Q"))
    heads = [ev.meta["head"] for ev in evs]
    assert heads == ["A", "A", "A", "A", "P"]
    assert path_names(evs[-1]) == ["P", "Q"]


def test_one_path_per_head_when_many_heads() -> None:
    # six runs Hi->Ti; Ti->Zi fails (Zi isolated), so the search restarts from H(i+1)
    edges = [(f"H{i}", f"T{i}") for i in range(6)]
    gi = abstract(edges, extra=[f"Z{i}" for i in range(6)])
    order = [n for i in range(6) for n in (f"H{i}", f"T{i}", f"Z{i}")]
    evs = path_evidence(gi, ids(*order), max_paths=5)
    assert [ev.meta["head"] for ev in evs] == ["H0", "H1", "H2", "H3", "H4"]
    assert all(len(ev.triples) == 1 for ev in evs)
    # a failed search drops its target: with no Zi the next Hi is skipped
    gi2 = abstract(edges)
    order2 = [n for i in range(6) for n in (f"H{i}", f"T{i}")]
    assert [ev.meta["head"] for ev in path_evidence(gi2, ids(*order2))] == ["H0"]


def test_names_with_underscores_and_spaces_share_one_id() -> None:
    # MindMap bug: KG names use "_", linked names spaces, so candidate checks failed.
    gi = GraphIndex(
        [Entity(name="Sharp_chest_pain"), Entity(name="Heart attack"), Entity(name="Shortness of breath")],
        [
            Relation(head=eid("Sharp_chest_pain"), type="possible_disease", tail=eid("Heart attack")),
            Relation(head=eid("Heart attack"), type="has_symptom", tail=eid("Shortness_of_breath")),
        ],
    )
    (ev,) = path_evidence(gi, [eid("sharp chest pain"), eid("shortness of breath")])
    assert path_names(ev) == ["Sharp_chest_pain", "Heart attack", "Shortness of breath"]


# -- neighbor_evidence ---------------------------------------------------------------
def test_neighbor_faithful_expands_reached_diseases() -> None:
    gi = medical()
    evs = neighbor_evidence(gi, ids("Fever"))
    assert line_view(evs) == [
        ("Flu", "need_medical_test", ["Swab"]),
        ("Flu", "need_medication", ["Oseltamivir"]),
        ("Measles", "need_medication", ["Paracetamol"]),
    ]
    assert all(ev.kind == "neighbor" and ev.meta["expansion"] for ev in evs)
    check_alignment(gi, evs)


def test_neighbor_prefers_linked_diseases_and_lists_entity_lines_first() -> None:
    gi = medical()
    evs = neighbor_evidence(gi, ids("Fever", "Measles"))
    assert line_view(evs) == [
        ("Measles", "has_symptom", ["Fever", "Rash"]),
        ("Measles", "need_medication", ["Paracetamol"]),
        ("Measles", "need_medication", ["Paracetamol"]),  # the expansion line, as MindMap
    ]
    assert evs[0].text == "Measles->has symptom->Fever,Rash"


def test_neighbor_line_cap_and_expansion_only_when_few_entity_lines() -> None:
    gi = medical()
    evs = neighbor_evidence(gi, ids("Flu", "Cold", "Measles"), max_lines=5)
    assert len(evs) == 5
    assert not any(ev.meta.get("expansion") for ev in evs)
    assert [(ev.triples[0][0], ev.meta["relation"]) for ev in evs] == [
        ("Flu", "has_symptom"),
        ("Flu", "need_medical_test"),
        ("Flu", "need_medication"),
        ("Cold", "has_symptom"),
        ("Cold", "need_medical_test"),
    ]
    small = neighbor_evidence(gi, ids("Flu"), max_lines=2)
    assert len(small) == 2


def test_neighbor_disease_symptom_loop_terminates() -> None:
    loop = [
        ("Depression", "has_symptom", "Insomnia"),
        ("Insomnia", "possible_disease", "Depression"),
        ("Depression", "need_medication", "Sertraline"),
        ("Depression", "possible_disease", "Anxiety"),  # depression is also a symptom of anxiety
        ("Anxiety", "has_symptom", "Depression"),
        ("Anxiety", "need_medication", "Buspirone"),
        ("Anxiety", "possible_disease", "Depression"),  # ... and anxiety a symptom of depression
    ]
    names = ["Depression", "Insomnia", "Sertraline", "Anxiety", "Buspirone"]
    gi = GraphIndex(
        [Entity(name=n) for n in names], [Relation(head=eid(h), type=t, tail=eid(x)) for h, t, x in loop]
    )
    evs = neighbor_evidence(gi, ids("Insomnia"), max_lines=10)
    assert line_view(evs) == [
        ("Depression", "need_medication", ["Sertraline"]),
        ("Anxiety", "need_medication", ["Buspirone"]),
    ]


def test_neighbor_max_tails_and_weight_order() -> None:
    extra = [Relation(head=eid("Flu"), type="need_medication", tail=eid("Zanamivir"), weight=3.0)]
    gi = medical(extra)
    (line,) = [
        ev
        for ev in neighbor_evidence(gi, ids("Flu"), weight_aware=True)
        if ev.meta["relation"] == "need_medication"
    ]
    assert [t[2] for t in line.triples] == [eid("Zanamivir"), "Oseltamivir"]  # Zanamivir: placeholder name
    (capped,) = [
        ev
        for ev in neighbor_evidence(gi, ids("Flu"), max_tails=1)
        if ev.meta["relation"] == "need_medication"
    ]
    assert len(capped.triples) == 1 and len(capped.relation_ids) == 1


def test_rank_diseases_votes_then_specificity() -> None:
    gi = medical()
    ranking = rank_diseases(gi, ids("Fever", "Cough", "Rash"))
    assert [gi.name(d) for d, _, _ in ranking] == ["Measles", "Flu", "Cold"]
    support = {
        gi.name(d): sorted(gi.name(gi.edge(gi.edge_index_of[r]).head) for r in s) for d, _, s in ranking
    }
    assert support == {"Measles": ["Fever", "Rash"], "Flu": ["Cough", "Fever"], "Cold": ["Cough"]}
    # all weights 1: weight-aware ranks exactly the same
    assert [d for d, _, _ in rank_diseases(gi, ids("Fever", "Cough", "Rash"), weight_aware=True)] == [
        d for d, _, _ in ranking
    ]


def test_rank_diseases_weight_aware_follows_learnt_weights() -> None:
    gi = medical()
    fever_flu = next(e for e in gi.out_edges(eid("Fever")) if e.tail == eid("Flu"))
    gi.set_weights([(fever_flu.id, 4.0)])
    question = ids("Fever", "Cough", "Rash")

    def top(linked: list[str], **kw: object) -> str:
        return gi.name(rank_diseases(gi, linked, weight_aware=True, **kw)[0][0])  # type: ignore[arg-type]

    # scaled votes: one learnt edge outweighs Measles' more specific symptom
    assert top(question, votes="scale") == "Flu"
    # the default keeps votes and specificity first: Measles (Fever + Rash) stays ahead
    assert top(question) == "Measles"
    assert top(question, votes="lift_first") == "Flu"  # the lift before specificity
    assert gi.name(rank_diseases(gi, question)[0][0]) == "Measles"
    # ... and the learnt weight decides a tie the question leaves open: Fever alone
    assert top(ids("Fever")) == "Flu"
    assert gi.name(rank_diseases(gi, ids("Fever"))[0][0]) == "Flu"  # (first appearance without weights)
    cough_cold = next(e for e in gi.out_edges(eid("Cough")) if e.tail == eid("Cold"))
    gi.set_weights([(cough_cold.id, 3.0)])
    assert gi.name(rank_diseases(gi, ids("Cough"))[0][0]) == "Flu"
    assert top(ids("Cough")) == "Cold"
    with pytest.raises(ValueError, match="votes"):
        rank_diseases(gi, ids("Cough"), weight_aware=True, votes="count")


def test_rank_diseases_counts_a_linked_disease_as_its_own_vote() -> None:
    gi = medical()
    ranking = rank_diseases(gi, ids("Cough", "Cold"))
    assert gi.name(ranking[0][0]) == "Cold"


def test_rank_diseases_counts_one_vote_per_phrase() -> None:
    """Three entities linked from one word vote once: two findings the patient gave outvote them."""
    ents = [Entity(name="Eczema", type="disease"), Entity(name="Scabies", type="disease")]
    ents += [
        Entity(name=n, type="symptom") for n in ("Itchy skin", "Itchy scalp", "Itchy eyes", "Rash", "Burrows")
    ]
    rels = [
        Relation(head=eid(s), type="possible_disease", tail=eid("Eczema"))
        for s in ("Itchy skin", "Itchy scalp", "Itchy eyes")
    ]
    rels += [Relation(head=eid(s), type="possible_disease", tail=eid("Scabies")) for s in ("Rash", "Burrows")]
    gi = GraphIndex(ents, rels)
    linked = ids("Itchy skin", "Itchy scalp", "Itchy eyes", "Rash", "Burrows")
    phrases = ["itching", "itching", "Itching ", "rash", "burrows"]

    def tally(ranking: list[tuple[str, float, list[str]]]) -> dict[str, int]:
        return {gi.name(d): len(support) for d, _, support in ranking}

    assert tally(rank_diseases(gi, linked)) == {"Eczema": 3, "Scabies": 2}  # each entity its own phrase
    by_phrase = rank_diseases(gi, linked, phrases=phrases)
    assert tally(by_phrase) == {"Scabies": 2, "Eczema": 1}
    assert [gi.name(d) for d, _, _ in by_phrase] == ["Scabies", "Eczema"]
    lines = neighbor_evidence(gi, linked, ranked=True, max_lines=2, phrases=phrases)
    assert lines[0].meta["disease"] == "Scabies"
    with pytest.raises(ValueError, match="phrases"):
        rank_diseases(gi, linked, phrases=phrases[:2])


def test_rank_diseases_counts_a_linked_disease_once_for_its_phrase() -> None:
    """A phrase linking a disease and one of its findings gives the disease one vote, not two."""
    gi = medical()
    assert {gi.name(d): s for d, s, _ in rank_diseases(gi, ids("Cough", "Cold"))}["Cold"] > 2
    ranking = rank_diseases(gi, ids("Cough", "Cold", "Fever"), phrases=["a cold", "a cold", "fever"])
    votes = {gi.name(d): s for d, s, _ in ranking}
    assert int(votes["Cold"]) == 1 and int(votes["Flu"]) == 2
    assert gi.name(ranking[0][0]) == "Flu"


def test_rank_diseases_gives_a_named_disease_its_set_votes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A disease the question names outvotes two findings only with more than two votes of its own;
    a disease that is also a finding of others (it votes) keeps one."""
    from dataclasses import replace

    from kgmind.retrievers.exploration import neighbors

    linked = ids("Fever", "Rash", "Cold")

    def ranking(gi: GraphIndex, named: list[str], votes: float) -> dict[str, float]:
        monkeypatch.setattr(neighbors, "PIPELINE", replace(neighbors.PIPELINE, named_disease_votes=votes))
        return {gi.name(d): score for d, score, _ in rank_diseases(gi, linked, named=named)}

    gi = medical()
    assert next(iter(ranking(gi, ids("Cold"), 1.0))) == "Measles"  # Fever + Rash: two votes
    assert next(iter(ranking(gi, [], 3.0))) == "Measles"  # named only when linked word for word
    named = ranking(gi, ids("Cold"), 3.0)
    assert next(iter(named)) == "Cold" and int(named["Cold"]) == 3  # the patient's own diagnosis
    # where Cold is also a finding of Flu, it is no diagnosis of the patient's: one vote
    gi_finding = medical([Relation(head=eid("Cold"), type="possible_disease", tail=eid("Flu"))])
    assert int(ranking(gi_finding, ids("Cold"), 3.0)["Cold"]) == 1


def test_ranked_neighbors_order_lines_by_disease_votes() -> None:
    gi = medical()
    evs = neighbor_evidence(gi, ids("Fever", "Cough", "Rash"), ranked=True, max_lines=6)
    assert [(ev.meta["disease"], ev.meta["relation"]) for ev in evs] == [
        ("Measles", "support"),
        ("Measles", "need_medication"),
        ("Flu", "support"),
        ("Flu", "need_medical_test"),
        ("Flu", "need_medication"),
        ("Measles", "has_symptom"),
    ]
    assert sorted(t[0] for t in evs[0].triples) == ["Fever", "Rash"]
    assert all(t[2] == "Measles" for t in evs[0].triples)
    assert [ev.score for ev in evs] == sorted((ev.score for ev in evs), reverse=True)
    check_alignment(gi, evs)


def test_ranked_neighbors_fix_storage_order_cut() -> None:
    # Hyperkalemia is the 6th disease in storage order of each symptom but the only one all share
    rels: list[Relation] = []
    symptoms = ["Weakness", "Fatigue", "Cramps", "Palpitations"]
    for k, s in enumerate(symptoms):
        for j in range(5):
            d = f"Other{k}_{j}"
            rels += [
                Relation(head=eid(s), type="possible_disease", tail=eid(d)),
                Relation(head=eid(d), type="need_medical_test", tail=eid(f"Test{k}_{j}")),
            ]
        rels.append(Relation(head=eid(s), type="possible_disease", tail=eid("Hyperkalemia")))
    rels.append(Relation(head=eid("Hyperkalemia"), type="need_medical_test", tail=eid("Potassium level")))
    names = list(dict.fromkeys([r.head for r in rels] + [r.tail for r in rels]))
    gi = GraphIndex([Entity(id=n, name=n) for n in names], rels)
    faithful = neighbor_evidence(gi, ids(*symptoms))
    assert all("Potassium level" not in [t[2] for t in ev.triples] for ev in faithful)
    ranked = neighbor_evidence(gi, ids(*symptoms), ranked=True, max_lines=2)
    assert ranked[0].meta["disease"] == eid("Hyperkalemia")
    assert [t[2] for t in ranked[1].triples] == [eid("Potassium level")]


# -- hykge_chains --------------------------------------------------------------------
def test_hykge_chain_types_and_descriptions() -> None:
    es = [
        Entity(name="A", description="Entity A."),
        Entity(name="B"),
        Entity(name="X"),
        Entity(name="Y"),
        Entity(name="M"),
    ]
    rels = [
        Relation(head=eid("A"), type="to", tail=eid("X")),
        Relation(head=eid("B"), type="to", tail=eid("X")),
        Relation(head=eid("Y"), type="of", tail=eid("A")),
        Relation(head=eid("Y"), type="of", tail=eid("B")),
        Relation(head=eid("A"), type="via", tail=eid("M")),
        Relation(head=eid("M"), type="via", tail=eid("B")),
    ]
    gi = GraphIndex(es, rels)
    evs = hykge_chains(gi, ids("A", "B"))
    by_type = {ev.meta["chain_type"]: ev for ev in evs}
    assert len(evs) == 3 and set(by_type) == {"path", "co_ancestor", "co_occurrence"}
    assert by_type["co_ancestor"].triples == [("A", "to", "X"), ("B", "to", "X")]
    assert by_type["co_occurrence"].triples == [("Y", "of", "A"), ("Y", "of", "B")]
    assert by_type["path"].triples == [("A", "via", "M"), ("M", "via", "B")]
    assert all(ev.meta["descriptions"] == {"A": "Entity A."} for ev in evs)
    assert all(ev.kind == "chain" for ev in evs)
    check_alignment(gi, evs)


def test_hykge_hops_cap_and_pairs() -> None:
    gi = abstract([("A", "B"), ("B", "C"), ("C", "D")])
    assert hykge_chains(gi, ids("A", "D")) == []  # 3 hops > max_hops=2
    (ev,) = hykge_chains(gi, ids("A", "D"), max_hops=3)
    assert ev.meta["chain_type"] == "path" and len(ev.triples) == 3
    evs = hykge_chains(gi, ids("A", "B", "C"))
    assert {tuple(ev.meta["pair"]) for ev in evs} == {
        tuple(ids("A", "B")),
        tuple(ids("A", "C")),
        tuple(ids("B", "C")),
    }
    assert hykge_chains(gi, ids("A")) == []


def test_hykge_max_chains_round_robin_over_pairs() -> None:
    edges = (
        [("A", f"X{i}") for i in range(10)] + [("B", f"X{i}") for i in range(10)] + [("C", "Q"), ("D", "Q")]
    )
    gi = abstract(edges)
    evs = hykge_chains(gi, ids("A", "B", "C", "D"), max_chains=4)
    assert len(evs) == 4
    assert tuple(ids("C", "D")) in {
        tuple(ev.meta["pair"]) for ev in evs
    }  # the busy pair did not fill the quota


# -- weighted_dfs_chains -------------------------------------------------------------
def test_dfs_deterministic_chain_and_visited_set() -> None:
    gi = abstract([("A", "B"), ("B", "A"), ("B", "C"), ("C", "D")])
    (ev,) = weighted_dfs_chains(gi, ids("A"), n_chains=3, max_depth=2)
    assert path_names(ev) == ["A", "B", "C"]  # B->A has p = 0: A was visited
    assert ev.meta["probabilities"] == [1.0, 1.0] and ev.meta["draws"] == 3
    assert ev.score == pytest.approx(1.0) and ev.kind == "kgcot"
    check_alignment(gi, [ev])


@pytest.mark.parametrize("seed", [0, 7, 123])
def test_dfs_draws_follow_the_seeded_generator(seed: int) -> None:
    rels = [
        Relation(head=eid("A"), type="r", tail=eid("B"), weight=1.0),
        Relation(head=eid("A"), type="r", tail=eid("C"), weight=3.0),
    ]
    gi = GraphIndex([Entity(name=n) for n in "ABC"], rels)
    n = 20
    u = np.random.default_rng(seed).random(n)
    expect_b = int((u < 0.25).sum())
    evs = weighted_dfs_chains(gi, ids("A"), n_chains=n, max_depth=1, seed=seed)
    draws = {ev.triples[0][2]: ev.meta["draws"] for ev in evs}
    assert draws.get("B", 0) == expect_b and draws.get("C", 0) == n - expect_b
    first = "B" if u[0] < 0.25 else "C"
    assert evs[0].triples[0][2] == first
    assert {ev.triples[0][2]: ev.meta["probabilities"][0] for ev in evs} == {
        k: {"B": 0.25, "C": 0.75}[k] for k in draws
    }
    assert weighted_dfs_chains(gi, ids("A"), n_chains=n, max_depth=1, seed=seed) == evs


def test_dfs_frequencies_match_weights_and_follow_updates() -> None:
    rels = [
        Relation(head=eid("A"), type="r", tail=eid("B"), weight=1.0),
        Relation(head=eid("A"), type="r", tail=eid("C"), weight=3.0),
    ]
    gi = GraphIndex([Entity(name=n) for n in "ABC"], rels)
    evs = weighted_dfs_chains(gi, ids("A"), n_chains=4000, max_depth=1, seed=1)
    share_b = {ev.triples[0][2]: ev.meta["draws"] for ev in evs}["B"] / 4000
    assert share_b == pytest.approx(0.25, abs=0.03)
    gi.set_weights([(rels[0].id, 1e6)])
    evs = weighted_dfs_chains(gi, ids("A"), n_chains=50, max_depth=1, seed=1)
    assert [ev.triples[0][2] for ev in evs] == ["B"]


class Docs:
    def __init__(self, docs: list[KnowledgeDoc]) -> None:
        self.docs = {d.id: d for d in docs}
        self.asked: list[list[str]] = []

    def get_docs(self, ids_: Sequence[str]) -> list[KnowledgeDoc]:
        self.asked.append(list(ids_))
        return [self.docs[i] for i in ids_ if i in self.docs]


def test_dfs_attaches_edge_knowledge_from_store() -> None:
    doc = KnowledgeDoc(entity_id=eid("A"), text="A is known to lead to B.")
    rels = [
        Relation(head=eid("A"), type="r", tail=eid("B"), source=doc.id),
        Relation(head=eid("B"), type="r", tail=eid("C"), source="Textbook p. 3"),
        Relation(head=eid("C"), type="r", tail=eid("D")),
    ]
    gi = GraphIndex([Entity(name=n) for n in "ABCD"], rels)
    store = Docs([doc])
    (ev,) = weighted_dfs_chains(gi, ids("A"), n_chains=1, max_depth=3, store=store)
    assert ev.meta["knowledge"] == ["A is known to lead to B.", "Textbook p. 3", ""]
    assert store.asked == [[doc.id, "Textbook p. 3"]]
    (plain,) = weighted_dfs_chains(gi, ids("A"), n_chains=1, max_depth=3)
    assert "knowledge" not in plain.meta


def test_dfs_dead_end_start_gives_nothing() -> None:
    gi = abstract([("A", "B")])
    assert weighted_dfs_chains(gi, ids("B")) == []
    assert weighted_dfs_chains(gi, ["unknown"]) == []
    # walked both ways (the default), B is no dead end: its chain reads the stored edge back
    (back,) = weighted_dfs_chains(abstract([("A", "B")], both_ways=True), ids("B"), n_chains=1)
    assert back.triples == [("B", "~r", "A")] and back.relation_ids == [
        Relation(head=eid("A"), type="r", tail=eid("B")).id
    ]


def test_ranked_neighbors_offer_only_lines_with_a_tail_of_the_wanted_types() -> None:
    gi = medical()
    every = neighbor_evidence(gi, ids("Fever", "Cough"), max_lines=30, ranked=True)
    answer = neighbor_evidence(
        gi, ids("Fever", "Cough"), max_lines=30, ranked=True, tail_types=frozenset({"test", "medication"})
    )
    relations = {ev.meta.get("relation") for ev in every}
    assert "has_symptom" in relations  # the unfiltered candidates list the diseases' symptoms too
    kept = [ev for ev in answer if ev.meta["relation"] != "support"]
    assert kept and {ev.meta["relation"] for ev in kept} <= {"need_medical_test", "need_medication"}
    # the support lines (the linked symptoms' edges to each disease) are always offered

    def support(evs: list) -> list:
        return [ev for ev in evs if ev.meta["relation"] == "support"]

    assert support(answer) and support(answer) == support(every)


def _sequential_chains(
    gi: GraphIndex, starts: Sequence[str], n_chains: int, max_depth: int, seed: int
) -> list:
    """KGCoT's draws one chain after another, as first written: the reference for the level-by-level walk."""
    rng = np.random.default_rng(seed)
    weights = gi.weight_snapshot()
    out = []
    for s in [gi.index_of[i] for i in starts if i in gi.index_of]:
        for _ in range(n_chains):
            visited, cur, nodes, edges = {s}, s, [s], []
            for _depth in range(max_depth):
                leaving = gi.out_array(cur)
                cand = (
                    leaving[~np.isin(gi.edge_tail_array[leaving], list(visited))] if len(leaving) else leaving
                )
                if not len(cand):
                    break
                p = weights.weights[cand] / weights.weights[cand].sum()
                k = min(int(np.searchsorted(np.cumsum(p), rng.random(), side="right")), len(cand) - 1)
                edges.append(int(cand[k]))
                cur = gi.edge_tail[edges[-1]]
                visited.add(cur)
                nodes.append(cur)
            out.append((s, tuple(nodes), tuple(edges)))
    return out


def test_kgcot_chains_walked_level_by_level_are_the_chains_drawn_one_by_one() -> None:
    """The chains step together (one store read per level when pushed down), yet every draw is the one
    the sequential DFS makes with the same seed, dead ends (which use no random number) included."""
    early = 0
    for seed in range(12):
        rng = np.random.default_rng(100 + seed)
        names = [f"n{i}" for i in range(14)]
        rels = {
            (h, t): Relation(
                head=eid(h),
                type=str(rng.choice(["a", "b"])),
                tail=eid(t),
                weight=float(rng.choice([0.5, 1, 3])),
            )
            for h, t in zip(rng.choice(names, 30), rng.choice(names, 30), strict=True)
            if h != t
        }
        gi = GraphIndex([Entity(name=n) for n in names], list(rels.values()), reverse_readings=bool(seed % 2))
        starts = ids(*rng.choice(names, 3, replace=False))
        got = weighted_dfs_chains(gi, starts, n_chains=4, max_depth=3, seed=seed)
        want = _sequential_chains(gi, starts, 4, 3, seed)
        early += sum(
            len(edges) < 3 for _, _, edges in want[:-1]
        )  # a chain that stops before another is drawn
        drawn = [(s, nodes, edges) for s, nodes, edges in want if edges]
        firsts = list(dict.fromkeys(drawn))
        assert [e.meta["start"] for e in got] == [gi.names[s] for s, _, _ in firsts]
        assert [tuple(e.relation_ids) for e in got] == [
            tuple(gi.edge_id[x] for x in es) for _, _, es in firsts
        ]
        assert [e.meta["draws"] for e in got] == [drawn.count(f) for f in firsts]
    assert early > 5


def _hub_kg() -> GraphIndex:
    """Cough is a hub of four diseases; Pertussis, the one the question's Whoop also points to, has
    the most edges, so a bound of 2 keeps Cough's two most specific diseases and not it."""
    symptoms = {
        "Cold": ["Cough"],
        "Croup": ["Cough"],
        "Asthma": ["Cough", "Wheeze"],
        "Pertussis": ["Cough", "Whoop"],
    }
    ents = {d: Entity(name=d, type="disease") for d in symptoms}
    rels: list[Relation] = []
    for d, syms in symptoms.items():
        for s in syms:
            ents.setdefault(s, Entity(name=s, type="symptom"))
            rels.append(Relation(head=eid(d), type="has_symptom", tail=eid(s)))
    for t in ("Culture", "PCR"):
        ents[t] = Entity(name=t, type="test")
        rels.append(Relation(head=eid("Pertussis"), type="need_medical_test", tail=eid(t)))
    return GraphIndex(list(ents.values()), rels)


def test_a_hub_votes_for_a_disease_past_its_bound() -> None:
    question = ids("Cough", "Whoop")
    unbounded_first = rank_diseases(_hub_kg(), question)[0][0]
    gi = _hub_kg()
    gi.bound(2)
    hub_lists = {gi.edge_tail[e] for e in gi.out_adj[gi.index_of[eid("Cough")]]}
    assert gi.index_of[eid("Pertussis")] not in hub_lists  # the bound cut it from the hub's list
    ranking = rank_diseases(gi, question)
    # Cough's vote past its bound still counts: two votes, first, as on the unbounded index
    assert gi.name(ranking[0][0]) == "Pertussis" and ranking[0][1] >= 2.0  # the score: votes + spec / 2
    voters = {
        gi.name(n)
        for r in ranking[0][2]
        for n in (gi.edge(gi.edge_index_of[r]).head, gi.edge(gi.edge_index_of[r]).tail)
    }
    assert voters - {"Pertussis"} == {"Cough", "Whoop"}  # each vote cites its (stored) relation
    assert ranking[0][0] == unbounded_first
    for weighted in (False, True):  # the weight-aware ranks agree on uniform weights
        assert rank_diseases(gi, question, weight_aware=weighted)[0][0] == ranking[0][0]
