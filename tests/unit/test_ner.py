"""Unit tests of mention extraction: gazetteer, candidate and embedding spans, NER answer parsing, union."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from entity_fakes import EntityListStore
from kgmind.models import Entity
from kgmind.retrievers import entity_index_cache, linker, ner
from kgmind.retrievers.embeddings.hashing import HashEmbedder
from kgmind.retrievers.linker import EntityLinker
from kgmind.retrievers.ner import (
    Gazetteer,
    candidate_spans,
    clean_mention,
    embedding_spans,
    extract_mentions,
    parse_entity_list,
)
from kgmind.tuning import MAX_SPANS
from random_texts import FILLER, name_texts


class FakeStore(EntityListStore):
    def __init__(self, entities: Sequence[Entity], uri: str = "fake://ner") -> None:
        super().__init__(entities, uri)


EN = [
    ("Headache", "symptom", []),
    ("Pain", "symptom", []),
    ("Chest pain", "symptom", []),
    ("Sharp chest pain", "symptom", []),
    ("Jaundice", "symptom", []),
    ("Allergy", "disease", []),
    ("Panic_disorder", "disease", []),
    ("Electrocardiogram", "test", ["ECG"]),
    ("Air", "entity", []),
]
ZH = [
    ("感冒", "disease"),
    ("普通感冒", "disease"),
    ("咳嗽", "symptom"),
    ("血常规", "test"),
    ("小儿金翘颗粒", "medication"),
    ("发烧", "symptom"),
]


def en_store() -> FakeStore:
    return FakeStore([Entity(name=n, type=t, aliases=a) for n, t, a in EN])


def zh_store() -> FakeStore:
    return FakeStore([Entity(name=n, type=t) for n, t in ZH], uri="fake://zh")


def eid(name: str) -> str:
    return Entity(name=name).id


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("KGMIND_HOME", str(tmp_path / "home"))
    ner.clear_gazetteer_cache()
    entity_index_cache.clear_entity_index_cache()
    linker.clear_linker_cache()
    yield
    ner.clear_gazetteer_cache()
    linker.clear_linker_cache()
    entity_index_cache.clear_entity_index_cache()


# -- gazetteer -------------------------------------------------------------------------------------


def test_gazetteer_english_case_plural_alias_and_original_span():
    g = Gazetteer(en_store().entities)
    got = g.find("Doctor, I get HEADACHES, allergies and my ECG was odd; panic disorder runs in the family.")
    assert [(m.text, m.entity_id) for m in got] == [
        ("HEADACHES", eid("Headache")),
        ("allergies", eid("Allergy")),
        ("ECG", eid("Electrocardiogram")),
        ("panic disorder", eid("Panic_disorder")),
    ]
    assert all(m.source == "gazetteer" and m.score == 1.0 for m in got)


def test_gazetteer_respects_word_boundaries():
    g = Gazetteer(en_store().entities)
    assert g.find("It was painful and the airway felt tight; repair.") == []


def test_gazetteer_prefers_longest_non_overlapping_matches():
    g = Gazetteer(en_store().entities)
    got = g.find("sharp chest pain, then chest pain, then pain")
    assert [m.text for m in got] == ["sharp chest pain", "chest pain", "pain"]
    assert [m.entity_id for m in got] == [eid("Sharp chest pain"), eid("Chest pain"), eid("Pain")]


def test_gazetteer_handles_full_width_and_extra_spaces():
    g = Gazetteer(en_store().entities)
    got = g.find("ＣＨＥＳＴ   pain")
    assert [m.entity_id for m in got] == [eid("Chest pain")]
    assert got[0].text == "ＣＨＥＳＴ   pain"


def test_gazetteer_chinese_longest_match_on_jieba_boundaries():
    g = Gazetteer(zh_store().entities)
    text = "宝宝上周发烧，一直吃小儿金翘颗粒，咳嗽，做了血常规，医生说是普通感冒。"
    got = g.find(text)
    assert [m.text for m in got] == ["发烧", "小儿金翘颗粒", "咳嗽", "血常规", "普通感冒"]
    assert eid("感冒") not in {m.entity_id for m in got}


def test_gazetteer_uses_a_private_jieba_dictionary():
    import jieba

    g = Gazetteer(zh_store().entities)
    g.find("吃小儿金翘颗粒")
    assert "小儿金翘颗粒" in g.tokenizer.FREQ
    assert jieba.dt is not g.tokenizer
    assert "小儿金翘颗粒" not in jieba.dt.FREQ


def test_gazetteer_for_store_is_cached_until_the_store_changes():
    store = en_store()
    a = Gazetteer.for_store(store, recheck_s=0)
    assert Gazetteer.for_store(store, recheck_s=0) is a
    assert store.iter_calls == 1
    store.entities.append(Entity(name="Vertigo"))
    b = Gazetteer.for_store(store, recheck_s=0)
    assert b is not a
    assert [m.text for m in b.find("vertigo")] == ["vertigo"]


def test_gazetteer_reads_the_fingerprint_again_only_after_recheck_s(monkeypatch):
    """Per question NER reads no store query while the gazetteer was checked a moment ago."""
    from kgmind.retrievers.ner import gazetteer

    clock = [100.0]
    monkeypatch.setattr(gazetteer.time, "monotonic", lambda: clock[0])
    store = FakeStore([Entity(name="Fever")], uri="fake://gaz-recheck")
    reads = []
    real = store.fingerprint
    monkeypatch.setattr(store, "fingerprint", lambda: reads.append(1) or real())
    a = Gazetteer.for_store(store)
    assert len(reads) == 1
    store.entities.append(Entity(name="Vertigo"))
    clock[0] += 0.5  # within GAZETTEER_RECHECK_S: trusted, not read
    assert Gazetteer.for_store(store) is a and len(reads) == 1
    clock[0] += gazetteer.GAZETTEER_RECHECK_S  # past it: read, and the new entity is found
    b = Gazetteer.for_store(store)
    assert len(reads) == 2 and b is not a
    assert [m.text for m in b.find("vertigo")] == ["vertigo"]
    clock[0] += 5.0  # unchanged store: the same gazetteer, not rebuilt
    assert Gazetteer.for_store(store) is b and store.iter_calls == 2


def _automaton_spans(g: Gazetteer, auto: Any, text: str) -> list[tuple[int, int, str]]:
    """The matches an Aho-Corasick automaton over ``g``'s keys gives, filtered by the boundary rules.

    This is how the gazetteer matched before its key lookups (issue 42), kept here as the reference.
    """
    from kgmind.retrievers.ner.cleaning import is_word_char
    from kgmind.retrievers.ner.gazetteer import _normalize_with_offsets
    from kgmind.text import has_cjk

    norm, offsets = _normalize_with_offsets(text)
    if not norm.strip():
        return []
    bounds = None
    if any(has_cjk(c) for c in norm):
        bounds, pos = {0}, 0
        for tok in g.cut(norm):
            pos += len(tok)
            bounds.add(pos)

    def ok(start: int, end: int) -> bool:
        first, last = norm[start], norm[end - 1]
        if is_word_char(first) and start > 0 and is_word_char(norm[start - 1]):
            return False
        if is_word_char(last) and end < len(norm) and is_word_char(norm[end]):
            return False
        if bounds is not None and has_cjk(first) and start not in bounds:
            return False
        return not (bounds is not None and has_cjk(last) and end not in bounds)

    found = []
    for last, (key, ids) in auto.iter(norm):
        start, end = last - len(key) + 1, last + 1
        if ok(start, end):
            found.append((start, end, ids))
    found.sort(key=lambda m: (-(m[1] - m[0]), m[0]))
    taken = bytearray(len(norm))
    chosen = []
    for start, end, ids in found:
        if not any(taken[start:end]):
            taken[start:end] = b"\x01" * (end - start)
            chosen.append((start, end, ids))
    return [(offsets[start], offsets[end - 1] + 1, eid) for start, end, ids in sorted(chosen) for eid in ids]


def test_gazetteer_lookups_find_what_an_automaton_finds():
    """Random texts made of the demo KG's names (both languages), pieces of them and other words."""
    import random

    import ahocorasick

    from kgmind.importers.demo import parse_demo

    kg = parse_demo()
    g = Gazetteer(kg.entities)
    auto = ahocorasick.Automaton()
    for key, ids in g.keys.items():
        auto.add_word(key, (key, ids))
    auto.make_automaton()
    keys = sorted(g.keys, key=len)
    keyset = set(keys)
    names = [e.name for e in kg.entities] + keys[-20:]  # the longest keys too
    filler = [*FILLER, "-", "ing", "x1", "（", "发", "性"]
    cjk = "".join(n for n in names if any("\u4e00" <= c <= "\u9fff" for c in n))
    # jieba's own words holding a KG name inside (伤风感冒, 发烧友): a match there is not on a boundary
    inside = sorted(
        w
        for w in g.tokenizer.FREQ
        if 2 < len(w) <= 6
        and any(w[a:b] in keyset for a in range(len(w)) for b in range(a + 2, len(w) + 1))
        and w not in keyset
    )[:400]
    filler += inside
    rng = random.Random(7)
    texts = [f"{key} and {key}" for key in keys[-20:]]  # the longest keys, whole
    texts += name_texts(rng, names, filler, cjk, run_on=True)  # odd texts: words run on
    for text in texts:
        got = [(s, e, m.entity_id) for s, e, m in g.find_spans(text)]
        assert got == _automaton_spans(g, auto, text), text


def test_gazetteer_skips_stopword_and_short_names():
    g = Gazetteer([Entity(name="The"), Entity(name="ab"), Entity(name="气"), Entity(name="Fever")])
    assert [m.text for m in g.find("the ab fever 气")] == ["fever"]


# -- cleaning and parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "cleaned"),
    [
        ("  Chest pain. ", "Chest pain"),
        ("“头痛”，", "头痛"),
        ("the", None),
        ("38.6", None),
        ("x", None),
        ("药", None),
        ("a " * 20, None),
        ("one two three four five six seven eight nine", None),
        ("", None),
    ],
)
def test_clean_mention(raw, cleaned):
    assert clean_mention(raw) == cleaned


def test_parse_mindmap_format():
    text = (
        "<CLS>Doctor, I have panic attacks.<SEP>"
        "The extracted entities are Panic attacks, Frequent panic attacks<EOS>"
    )
    assert parse_entity_list(text) == ["Panic attacks", "Frequent panic attacks"]


def test_parse_entity_marker_and_duplicates():
    text = (
        "The extracted entities are Hoarse voice<EntityMarker>Duration: few weeks"
        "<EntityMarker>hoarse voice<EOS>"
    )
    assert parse_entity_list(text) == ["Hoarse voice", "Duration: few weeks"]


def test_parse_chinese_and_bullets_and_bare_lists():
    assert parse_entity_list("抽取的实体是头痛，失眠、恶心<EOS>") == ["头痛", "失眠", "恶心"]
    assert parse_entity_list("- Fever\n- Cough\n1. Sore throat") == ["Fever", "Cough", "Sore throat"]
    assert parse_entity_list("fever, cough") == ["fever", "cough"]
    assert parse_entity_list("") == []


# -- candidate and embedding spans --------------------------------------------------------------------------


def test_candidate_spans_english():
    spans = candidate_spans("Doctor, I have been having yellow eyes and a headache for a few weeks.")
    texts = [s for _, _, s in spans]
    assert {"yellow eyes", "yellow", "eyes", "headache"} <= set(texts)
    assert all(not t.lower().startswith(("a ", "and ", "the ")) for t in texts)
    assert "Doctor" not in texts and "Doctor, I" not in texts
    for start, end, span in spans:
        assert "," not in span and "." not in span
        assert len(span.split()) <= 4
        assert span == "Doctor, I have been having yellow eyes and a headache for a few weeks."[start:end]


def test_candidate_spans_chinese_words_and_pairs():
    text = "我最近眼睛发黄，皮肤也黄"
    spans = candidate_spans(
        text, language="zh", cut=lambda t: ["我", "最近", "眼睛", "发黄", "，", "皮肤", "也", "黄"]
    )
    texts = [s for _, _, s in spans]
    assert "眼睛" in texts and "眼睛发黄" in texts and "发黄" in texts
    assert "最近" not in texts and "我" not in texts
    assert all("，" not in t for t in texts)


def test_candidate_spans_are_capped():
    text = " ".join(f"word{i}" for i in range(200))
    assert len(candidate_spans(text, max_candidates=10)) == 10


def test_embedding_spans_link_close_ngrams_without_overlap():
    store = en_store()
    lk = EntityLinker(store, "hash")
    got = embedding_spans("My skin shows jaundise and I feel electrocardiogramm issues", lk, 0.6)
    by_entity = {m.entity_id: m for m in got}
    assert eid("Jaundice") in by_entity and by_entity[eid("Jaundice")].text == "jaundise"
    assert all(m.source == "embedding" and 0.6 <= m.score <= 1.0 for m in got)
    assert embedding_spans("quantum chromodynamics", lk, 0.9) == []


# -- union ---------------------------------------------------------------------------------------


def test_extract_mentions_unions_gazetteer_spans_and_extra():
    store = en_store()
    lk = EntityLinker(store, "hash")
    got = extract_mentions(
        "I have chest pain and jaundise.",
        store,
        extra=["Chest pain", "Shortness of breath", "the", "42"],
        spans="always",
        linker=lk,
    )
    pairs = [(m.text, m.source) for m in got]
    assert pairs[0] == ("chest pain", "gazetteer")
    assert ("jaundise", "embedding") in pairs
    assert ("Shortness of breath", "given") in pairs
    # "Chest pain" duplicates the linked gazetteer mention; stop-words and numbers are filtered.
    assert all(t not in {"Chest pain", "the", "42"} for t, _ in pairs)
    # The gazetteer span is not re-scored as an embedding span.
    assert sum(1 for m in got if m.entity_id == eid("Chest pain")) == 1


def test_extract_mentions_without_embedding_spans_needs_no_model():
    store = en_store()
    got = extract_mentions("headaches and jaundise", store, spans="never", extra=["fever"])
    assert [(m.text, m.source) for m in got] == [("headaches", "gazetteer"), ("fever", "given")]


class _Counting(HashEmbedder):
    """Records every batch of texts it embeds (a fresh list per test: see ``_counting``)."""

    calls: list[list[str]] = []

    def embed_queries(self, texts):  # type: ignore[no-untyped-def]
        _Counting.calls.append(list(texts))
        return super().embed_queries(texts)


@pytest.fixture(autouse=True)
def _counting() -> None:
    _Counting.calls = []


def test_extract_mentions_unnamed_spans_only_when_nothing_was_named():
    store = en_store()
    lk = EntityLinker(store, "hash", embedder=_Counting())
    named = extract_mentions(
        "My skin shows jaundise lately", store, extra=["hedache"], spans="unnamed", linker=lk
    )
    assert _Counting.calls == []  # no n-gram scored: the named mention is embedded when it is linked
    assert [(m.text, m.source) for m in named] == [("hedache", "given")]
    # a named list that cleans to nothing counts as nothing named
    bare = extract_mentions(
        "My skin shows jaundise lately", store, extra=["the", "42"], spans="unnamed", linker=lk
    )
    assert ("jaundise", "embedding") in {(m.text, m.source) for m in bare}
    assert len(_Counting.calls) == 1
    with pytest.raises(ValueError, match="spans must be"):
        extract_mentions("jaundise", store, spans="sometimes", linker=lk)  # type: ignore[arg-type]


def test_extract_mentions_chinese():
    store = zh_store()
    got = extract_mentions("孩子发烧咳嗽，吃了小儿金翘颗粒", store, spans="never", extra=["流鼻涕"])
    assert [m.text for m in got] == ["发烧", "咳嗽", "小儿金翘颗粒", "流鼻涕"]


def test_candidate_spans_never_join_two_things():
    spans = [s for _, _, s in candidate_spans("yellow eyes and a headache or back pain")]
    assert all(" and " not in f" {s} " and " or " not in f" {s} " for s in spans)
    assert {"yellow eyes", "headache", "back pain"} <= set(spans)


def test_embedding_spans_are_capped_shortest_first_and_cached():
    class Counting(HashEmbedder):
        texts: list[str] = []

        def embed_queries(self, texts):  # type: ignore[no-untyped-def]
            Counting.texts.extend(texts)
            return super().embed_queries(texts)

    store = en_store()
    lk = EntityLinker(store, "hash", embedder=Counting())
    text = "My skin shows jaundise, my throat burns badly, my chest aches sharply at night"
    all_cands = [s for _, _, s in candidate_spans(text)]
    assert len(all_cands) > 6
    got = embedding_spans(text, lk, 0.6, max_candidates=6)
    assert len(Counting.texts) == 6
    assert all(
        len(t.split()) <= min(len(c.split()) for c in all_cands if c not in Counting.texts)
        for t in Counting.texts
    )  # shorter spans are scored first
    assert any(m.entity_id == eid("Jaundice") for m in got)
    n = len(Counting.texts)
    assert embedding_spans(text, lk, 0.6, max_candidates=6) == got and len(Counting.texts) == n  # cached
    assert MAX_SPANS["minilm"] <= 24 and MAX_SPANS["e5"] <= 24


def test_extract_mentions_embeds_spans_and_unmatched_extras_in_one_batch():
    store = en_store()
    lk = EntityLinker(store, "hash", embedder=_Counting())
    got = extract_mentions(
        "My skin shows jaundise lately",
        store,
        extra=["hedache", "Jaundice"],
        spans="always",
        linker=lk,
    )
    assert len(_Counting.calls) == 1 and "hedache" in _Counting.calls[0]
    assert "Jaundice" not in _Counting.calls[0]  # an exact name needs no vector
    lk.link(got)
    assert len(_Counting.calls) == 1  # linking found every vector in the cache


def test_without_spans_unmatched_extras_wait_for_the_linker_which_may_not_need_them(monkeypatch):
    # Chinese scores no spans by default: its unmatched mentions are embedded by the link, if at all
    store = zh_store()
    lk = EntityLinker(store, "hash", embedder=_Counting())
    monkeypatch.setitem(MAX_SPANS, "hash", 0)
    extra = ["感冒", "血常规", "咳嗽了很久"]
    got = extract_mentions("孩子咳嗽发烧", store, extra=extra, language="zh", linker=lk)
    assert _Counting.calls == []  # no span to score: nothing embedded yet
    capped = lk.link(got, max_entities=3)
    assert _Counting.calls == []  # four exact names fill the cap before the unmatched one
    assert len(capped) == 3 and all(le.score == 1.0 for le in capped)
    every = lk.link(got)
    assert _Counting.calls == [["咳嗽了很久"]]  # uncapped, the unmatched one is embedded, once
    assert every[:3] == capped
