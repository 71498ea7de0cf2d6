"""Evidence packing by value: what an item is worth, greedy by value per token, the floor, group cuts.

Grouped lines (one head and relation, all its tails) keep their ids and relation ids
through packing; only the last kept group may be cut, at a tail boundary; English and
Chinese lines render by their templates.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from evidence_roles import FITTED_READINGS
from kgmind.models import Evidence
from kgmind.retrievers.aggregate import (
    ID_OVERHEAD,
    aggregate_evidence,
    count_tokens,
    render_evidence,
    select_evidence,
)
from kgmind.retrievers.packing import disease_ranks, item_value
from kgmind.tuning import EvidenceValue

VALUE = EvidenceValue(
    disease_by_rank=(0.5, 0.1, 0.02),
    tail_given_disease={"test": 0.2, "medication": 0.1},
    other={"test": 0.01, "disease": 0.005},
    min_density=0.0,
)
TYPES = {
    "pneumonia": "disease",
    "flu": "disease",
    "asthma": "disease",
    "cough": "symptom",
    "fever": "symptom",
    "chest x-ray": "test",
    "blood culture": "test",
    "sputum culture": "test",
    "spirometry": "test",
    "amoxicillin": "medication",
    "oseltamivir": "medication",
    "chicken soup": "food",
}


def line(head: str, rel: str, tails: Sequence[str], rank: int | None = None, relation: str = "") -> Evidence:
    meta = {"disease": head, "disease_rank": rank, "relation": relation or rel} if rank else {}
    ev = Evidence(
        readings=FITTED_READINGS,
        kind="neighbor",
        triples=[(head, rel, t) for t in tails],
        relation_ids=[f"{head}-{rel}-{t}" for t in tails],
        entity_ids=[head, *tails],
        meta=meta,
    )
    return ev.model_copy(update={"text": render_evidence(ev)})


def support(disease: str, symptoms: Sequence[str], rank: int) -> Evidence:
    ev = Evidence(
        readings=FITTED_READINGS,
        kind="neighbor",
        triples=[(s, "possible_disease", disease) for s in symptoms],
        relation_ids=[f"{s}-pd-{disease}" for s in symptoms],
        entity_ids=[*symptoms, disease],
        meta={"disease": disease, "disease_rank": rank, "relation": "support"},
    )
    return ev.model_copy(update={"text": render_evidence(ev)})


def pool() -> list[Evidence]:
    return [
        line("Pneumonia", "has_symptom", ["Cough", "Fever"], rank=1),
        line("Chicken soup", "food_good_for", ["Flu"]),
        support("Pneumonia", ["Cough", "Fever"], rank=1),
        line("Pneumonia", "need_medical_test", ["Chest x-ray", "Blood culture", "Sputum culture"], rank=1),
        line("Pneumonia", "need_medication", ["Amoxicillin"], rank=1),
        support("Flu", ["Fever"], rank=2),
        line("Flu", "need_medication", ["Oseltamivir"], rank=2),
        support("Asthma", ["Cough"], rank=3),
        line("Asthma", "need_medical_test", ["Spirometry"], rank=3),
    ]


def cost(ev: Evidence) -> int:
    return count_tokens(ev.text) + ID_OVERHEAD


def test_item_value_weights_each_new_answer_entity_by_its_disease() -> None:
    items = pool()
    ranks = disease_ranks(items)
    assert ranks == {"pneumonia": 1, "flu": 2, "asthma": 3}
    tests, _ = item_value(items[3], VALUE, TYPES, ranks)
    assert tests == pytest.approx(0.5 + 3 * 0.5 * 0.2)  # the disease itself, then its three tests
    assert item_value(items[0], VALUE, TYPES, ranks)[0] == 0.5  # symptoms add nothing; the disease does
    assert item_value(items[1], VALUE, TYPES, ranks)[0] == 0.1  # a food line: only the ranked Flu counts
    shown = {"pneumonia", "chest x-ray"}
    rest, new = item_value(items[3], VALUE, TYPES, ranks, shown)
    assert rest == pytest.approx(2 * 0.5 * 0.2) and new == {"blood culture", "sputum culture"}
    path = Evidence(
        readings=FITTED_READINGS,
        kind="path",
        triples=[("Cough", "possible_disease", "Pneumonia"), ("Pneumonia", "x", "Spirometry")],
    )
    assert item_value(path, VALUE, TYPES, ranks)[0] == pytest.approx(0.5 + 0.01)  # a test off a line: `other`


def test_packing_takes_the_best_value_per_token_first_and_never_symptom_lines() -> None:
    kept = select_evidence(pool(), 1000, value=VALUE, types=TYPES)
    assert kept[0].meta["disease"] == "Pneumonia"  # the best-voted disease first (its cheapest line)
    ranks = disease_ranks(pool())
    densities = [item_value(ev, VALUE, TYPES, ranks)[0] / cost(ev) for ev in pool()]
    assert item_value(kept[0], VALUE, TYPES, ranks)[0] / cost(kept[0]) == pytest.approx(max(densities))
    relations = [(ev.meta.get("disease"), ev.meta.get("relation")) for ev in kept]
    assert ("Pneumonia", "need_medical_test") in relations
    assert all(rel != "has_symptom" for _d, rel in relations)
    assert all(ev.triples[0][1] != "food_good_for" for ev in kept)
    # each kept group is whole, with its ids aligned to its triples
    for ev in kept:
        assert len(ev.relation_ids) == len(ev.triples)
        assert "truncated_from" not in ev.meta


def test_the_floor_stops_packing_when_what_is_left_is_worth_little() -> None:
    everything = select_evidence(pool(), 1000, value=VALUE, types=TYPES)
    floor = EvidenceValue(
        disease_by_rank=VALUE.disease_by_rank,
        tail_given_disease=VALUE.tail_given_disease,
        other=VALUE.other,
        min_density=0.02,
    )
    few = select_evidence(pool(), 1000, value=floor, types=TYPES)
    assert 0 < len(few) < len(everything)
    ranks = disease_ranks(pool())
    assert all(item_value(ev, VALUE, TYPES, ranks)[0] / cost(ev) >= 0.02 for ev in few)


def test_only_the_last_group_is_cut_at_a_tail_boundary() -> None:
    items = pool()
    whole = select_evidence(items, 1000, value=VALUE, types=TYPES)
    first_cost = cost(whole[0])
    budget = first_cost + cost(whole[1]) - 3  # the second group does not fit whole
    kept = select_evidence(items, budget, value=VALUE, types=TYPES)
    assert sum(cost(ev) for ev in kept) <= budget
    assert kept[0] == whole[0]
    assert len(kept) > 1  # the cut one is last, a prefix of its tails with their relation ids
    cut = kept[-1]
    original = next(ev for ev in items if ev.relation_ids[: len(cut.relation_ids)] == cut.relation_ids)
    assert cut.meta["truncated_from"] == len(original.triples) > len(cut.triples)
    assert cut.relation_ids == original.relation_ids[: len(cut.triples)]
    assert cut.entity_ids == original.entity_ids[: len(cut.triples) + 1]


def test_each_fact_is_paid_for_once_across_kinds() -> None:
    path = Evidence(
        readings=FITTED_READINGS,
        kind="path",
        triples=[
            ("Cough", "possible_disease", "Pneumonia"),
            ("Pneumonia", "need_medical_test", "Chest x-ray"),
        ],
        relation_ids=["c-p", "p-x"],
        entity_ids=["Cough", "Pneumonia", "Chest x-ray"],
    )
    path = path.model_copy(update={"text": render_evidence(path)})
    kept = select_evidence([path, *pool()], 1000, value=VALUE, types=TYPES)
    shown = [frozenset((h.casefold(), t.casefold())) for ev in kept for h, _r, t in ev.triples]
    assert len(shown) == len(set(shown))


def test_without_answer_types_packing_falls_back_to_rank_order() -> None:
    generic = {k: "entity" for k in TYPES}
    assert select_evidence(pool(), 60, value=VALUE, types=generic) == select_evidence(pool(), 60)


def test_aggregate_numbers_packed_groups_and_renders_both_languages() -> None:
    zh = line("肺炎", "need_medical_test", ["胸部X线", "血常规"], rank=1)
    zh_types = {"肺炎": "disease", "胸部x线": "test", "血常规": "test"}
    out = aggregate_evidence([zh], "咳嗽发烧", reranker="prior", value=VALUE, types=zh_types)
    assert [ev.id for ev in out] == ["N1"]
    assert out[0].text == "肺炎可做的检查包括胸部X线、血常规。"
    assert out[0].relation_ids == zh.relation_ids
    out = aggregate_evidence(pool(), "cough and fever", reranker="prior", value=VALUE, types=TYPES)
    assert [ev.id for ev in out][:2] == ["N1", "N2"]
    assert any(
        ev.text == "Pneumonia can be checked with Chest x-ray, Blood culture and Sputum culture."
        for ev in out
    )
