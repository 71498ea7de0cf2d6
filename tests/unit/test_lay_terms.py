"""Lay-term linking: everyday words reach the clinical entity the KG has, and only that KG's."""

from __future__ import annotations

import collections

import pytest

from entity_fakes import EntityListStore
from kgmind.importers.demo import parse_demo
from kgmind.models import Entity, normalize_name
from kgmind.retrievers.embeddings.hashing import HashEmbedder
from kgmind.retrievers.lay_terms import (
    LANGUAGES,
    lay_synonyms,
    lay_term_split,
    load_lay_terms,
)
from kgmind.retrievers.linker import EntityLinker
from kgmind.retrievers.ner import Gazetteer, extract_mentions


def _store(names: list[str], uri: str) -> EntityListStore:
    return EntityListStore([Entity(name=n, type="symptom") for n in names], uri)


def _linked_names(store: EntityListStore, text: str) -> list[tuple[str, str]]:
    """``(mention, entity name)`` of every entity ``text`` links to, gazetteer only (no spans)."""
    lk = EntityLinker(store, "hash", embedder=HashEmbedder())
    mentions = extract_mentions(text, store, spans="never", linker=lk)
    return sorted((le.mention, le.name) for le in lk.link(mentions))


def test_shipped_lists_have_100_pairs_a_language_split_in_two_real_halves():
    for lang in LANGUAGES:
        terms = load_lay_terms(lang)
        assert len(terms) >= 100, lang
        halves = collections.Counter(t.split for t in terms)
        assert min(halves["calib"], halves["test"]) >= 40, (lang, halves)
        pairs = [(normalize_name(t.lay), normalize_name(t.clinical)) for t in terms]
        assert len(pairs) == len(set(pairs)), f"{lang}: a pair is listed twice"
        assert all(lay != clinical for lay, clinical in pairs)
        assert all(t.source for t in terms)
    assert len(load_lay_terms()) == sum(len(load_lay_terms(lang)) for lang in LANGUAGES)
    with pytest.raises(ValueError, match="no lay-term list"):
        load_lay_terms("fr")


def test_split_is_a_fixed_function_of_the_normalised_lay_term():
    # pinned values: a change of the rule would move pairs between the halves
    assert (lay_term_split("发烧"), lay_term_split("胸口疼")) == ("calib", "test")
    assert (lay_term_split("throwing up"), lay_term_split("stomach ache")) == ("calib", "test")
    assert lay_term_split("Throwing  UP") == lay_term_split("throwing up")
    assert {lay_term_split(t.lay) for t in load_lay_terms("en")} == {"calib", "test"}
    # every row of one lay term lies in the same half (the split is by lay term, not by row)
    by_lay: dict[str, set[str]] = collections.defaultdict(set)
    for t in load_lay_terms():
        by_lay[normalize_name(t.lay)].add(t.split)
    assert all(len(halves) == 1 for halves in by_lay.values())


def test_lay_term_links_to_the_clinical_entity_only_when_the_kg_has_it():
    with_vomiting = _store(["Vomiting", "Headache"], "fake://lay-en")
    assert _linked_names(with_vomiting, "I keep throwing up") == [("throwing up", "Vomiting")]
    without = _store(["Headache", "Fever"], "fake://lay-en-without")
    assert _linked_names(without, "I keep throwing up") == []
    assert "throwing up" not in Gazetteer(without.entities).keys


def test_the_kgs_own_name_wins_over_a_lay_term():
    # 发烧 is a symptom name of the CMCKG vocabulary itself: a KG that has it keeps it
    both = _store(["发烧", "发热"], "fake://lay-own")
    assert _linked_names(both, "我发烧") == [("发烧", "发烧")]
    only_clinical = _store(["发热"], "fake://lay-clinical")
    assert _linked_names(only_clinical, "我发烧") == [("发烧", "发热")]


def test_a_lay_term_given_by_a_model_links_through_the_linker():
    store = _store(["Vomiting", "Nausea"], "fake://lay-given")
    lk = EntityLinker(store, "hash", embedder=HashEmbedder())
    assert [le.name for le in lk.link(["throwing up"])] == ["Vomiting"]
    assert lk.exact_ids("Throwing up") == [Entity(name="Vomiting").id]
    # no clinical entity in the KG: the lay term is an ordinary unknown mention
    assert (
        EntityLinker(_store(["Nausea"], "fake://lay-none"), "hash", embedder=HashEmbedder()).exact_ids(
            "throwing up"
        )
        == []
    )


def test_the_chinese_example_links_all_three_symptoms_on_the_demo_kg():
    demo = EntityListStore(parse_demo().entities, "fake://lay-demo")
    linked = _linked_names(demo, "我最近一直咳嗽、发烧，还胸口疼")
    assert dict(linked) == {"咳嗽": "咳嗽", "发烧": "发热", "胸口疼": "胸痛"}


def test_english_lay_words_link_on_the_demo_kg():
    demo = EntityListStore(parse_demo().entities, "fake://lay-demo-en")
    linked = dict(_linked_names(demo, "I have a tummy ache, I keep throwing up and I'm short of breath"))
    assert linked == {
        "tummy ache": "Abdominal cramps",
        "throwing up": "Vomiting",
        "short of breath": "Shortness of breath",
    }


def test_synonyms_map_every_lay_term_to_its_clinical_names():
    syn = lay_synonyms()
    assert syn["发烧"] == ("发热",)
    assert set(syn["tummy ache"]) == {"sharp abdominal pain", "abdominal cramps"}
    assert all(syn.values())
