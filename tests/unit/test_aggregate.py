"""Aggregation: chunking, token counts, rendering, rerank, dedupe/prune, budget, numbering."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pytest

from evidence_roles import FITTED_READINGS
from kgmind.models import Evidence
from kgmind.retrievers.aggregate import (
    ID_OVERHEAD,
    EmbeddingReranker,
    Reranker,
    ShownFacts,
    aggregate_evidence,
    chunk_text,
    count_tokens,
    dedupe_evidence,
    fit_budget,
    number_evidence,
    prune_redundant,
    render_evidence,
)


def line(head: str, rel: str, tails: Sequence[str], score: float = 1.0, rid: str = "") -> Evidence:
    return Evidence(
        readings=FITTED_READINGS,
        kind="neighbor",
        triples=[(head, rel, t) for t in tails],
        relation_ids=[f"{rid or head}-{rel}-{t}" for t in tails],
        entity_ids=[head, *tails],
        score=score,
    )


# -- chunking and tokens ---------------------------------------------------------------
def test_chunk_text_word_windows_overlap() -> None:
    words = [f"w{i}" for i in range(22)]
    chunks = chunk_text(" ".join(words))
    assert chunks[0] == " ".join(words[0:10])
    assert chunks[1] == " ".join(words[6:16])  # stride lc - oc = 6
    assert chunks[-1].split()[-1] == "w21"  # the last window reaches the end
    assert all(len(c.split()) == 10 for c in chunks)
    assert set(words) == {w for c in chunks for w in c.split()}
    for a, b in itertools.pairwise(chunks):
        assert len(set(a.split()) & set(b.split())) >= 4


def test_chunk_text_short_blank_and_params() -> None:
    assert chunk_text("just a few words") == ["just a few words"]
    assert chunk_text("   ") == []
    with pytest.raises(ValueError):
        chunk_text("a b c", lc=4, oc=4)
    assert chunk_text("a b c d e", lc=2, oc=0) == ["a b", "c d", "d e"]


def test_chunk_text_chinese_uses_characters() -> None:
    text = "我最近总是头痛 而且还有点发烧不知道是什么病"
    chunks = chunk_text(text)
    assert chunks[0] == "我最近总是头痛而且还"
    assert all(len(c) == 10 for c in chunks)
    assert chunks[-1].endswith("什么病")


def test_count_tokens_approximation_and_tokenizer() -> None:
    assert count_tokens("") == 0
    assert count_tokens("one two three four five six seven eight nine ten") == 13
    assert count_tokens("感冒发烧") == 4
    assert count_tokens("感冒 and fever") == 2 + 3
    assert count_tokens("anything at all", tokenizer=lambda s: list(s)) == len("anything at all")


# -- rendering -------------------------------------------------------------------------
def test_render_neighbor_line_lists_every_tail() -> None:
    text = render_evidence(line("Flu", "need_medication", ["Oseltamivir", "Zanamivir", "Rest"]))
    assert text == "Flu can be treated with Oseltamivir, Zanamivir and Rest."


def test_render_path_and_support_and_unknown_relation() -> None:
    path = Evidence(
        readings=FITTED_READINGS,
        kind="path",
        triples=[("Fever", "possible_disease", "Flu"), ("Flu", "has_symptom", "Cough")],
    )
    assert render_evidence(path) == "Fever may be a sign of Flu, and Flu may present with Cough."
    support = Evidence(
        readings=FITTED_READINGS,
        kind="neighbor",
        triples=[("Fever", "possible_disease", "Measles"), ("Rash", "possible_disease", "Measles")],
    )
    assert render_evidence(support) == "Fever and Rash may be a sign of Measles."
    odd = Evidence(
        readings=FITTED_READINGS,
        kind="kgcot",
        triples=[("x ray", "made_by_lab", "Lab A")],
        meta={"knowledge": ["From a study.", ""]},
    )
    assert render_evidence(odd) == "x ray made by lab Lab A. Source: From a study."


def test_render_chinese_and_descriptions() -> None:
    ev = Evidence(
        readings=FITTED_READINGS,
        kind="chain",
        triples=[("感冒", "has_symptom", "发烧"), ("感冒", "has_symptom", "咳嗽")],
        meta={"descriptions": {"感冒": "一种常见的上呼吸道感染。"}},
    )
    assert render_evidence(ev) == "感冒的症状包括发烧、咳嗽。感冒：一种常见的上呼吸道感染。"
    long_desc = Evidence(
        readings=FITTED_READINGS,
        kind="chain",
        triples=[("A", "r", "B")],
        meta={"descriptions": {"A": " ".join(["word"] * 100)}},
    )
    assert count_tokens(render_evidence(long_desc)) < 70  # cut to 40 words


def test_render_doc_keeps_text() -> None:
    assert render_evidence(Evidence(kind="doc", text="  Some document. ")) == "Some document."


# -- dedupe, prune, budget, numbering --------------------------------------------------
def test_dedupe_by_relation_ids_and_text() -> None:
    a = line("Flu", "need_medication", ["X", "Y"])
    b = a.model_copy(update={"text": "other"})  # same relation ids
    c = Evidence(readings=FITTED_READINGS, kind="path", text="Same   text", relation_ids=["r9"])
    d = Evidence(readings=FITTED_READINGS, kind="chain", text="same text", relation_ids=["r10"])
    got = dedupe_evidence([a, b, c, d])
    assert got == [a, c]


def test_prune_subset_of_kept_item() -> None:
    big = line("Flu", "need_medication", ["X", "Y", "Z"])
    sub = Evidence(
        readings=FITTED_READINGS,
        kind="chain",
        triples=[("Flu", "need_medication", "Y")],
        relation_ids=["Flu-need_medication-Y"],
    )
    other = line("Flu", "need_medical_test", ["T"])
    assert prune_redundant([big, sub, other]) == [big, other]
    assert prune_redundant([sub, big]) == [sub, big]  # a later superset adds facts: kept


def test_fit_budget_skips_and_truncates_lines() -> None:
    items = [line(f"D{i}", "need_medication", [f"drug{i}_{k}" for k in range(8)]) for i in range(6)]
    items = [ev.model_copy(update={"text": render_evidence(ev)}) for ev in items]
    cost = count_tokens(items[0].text) + ID_OVERHEAD
    budget = int(cost * 2.5)
    got = fit_budget(items, budget)
    assert [ev.triples[0][0] for ev in got] == ["D0", "D1", "D2"]
    assert got[2].meta["truncated_from"] == 8 and 0 < len(got[2].triples) < 8
    assert len(got[2].relation_ids) == len(got[2].triples) == len(got[2].entity_ids) - 1
    assert sum(count_tokens(ev.text) + ID_OVERHEAD for ev in got) <= budget
    no_cut = fit_budget(items, budget, truncate=False)
    assert [ev.triples[0][0] for ev in no_cut] == ["D0", "D1"]


def test_fit_budget_lets_later_short_items_in() -> None:
    long = Evidence(readings=FITTED_READINGS, kind="path", text=" ".join(["w"] * 50))
    short = Evidence(readings=FITTED_READINGS, kind="path", text="tiny")
    assert fit_budget([long, short], budget_tokens=10) == [short]


def test_fit_budget_leading_run_with_whitespace_tokens() -> None:
    """The evaluation's rule: stop at the first miss; a too-long first item is cut to whole words."""
    evs = [Evidence(kind="doc", text=t) for t in ("a b c", "d e", "f g h i", "j")]
    exact = {"tokenizer": str.split, "id_overhead": 0, "stop_at_first_miss": True}
    assert [e.text for e in fit_budget(evs, 6, **exact)] == ["a b c", "d e"]
    assert fit_budget(evs, 100, **exact) == evs
    (cut,) = fit_budget([Evidence(kind="doc", text="w1 w2 w3 w4 w5")], 3, **exact)
    assert cut.text == "w1 w2 w3" and cut.meta["truncated"] is True
    (zh,) = fit_budget([Evidence(kind="doc", text="感冒发烧咳嗽")], 4 + ID_OVERHEAD)
    assert zh.text == "感冒发烧" and zh.meta["truncated"] is True
    assert fit_budget([], 5, **exact) == []


def test_fit_budget_counts_what_render_shows() -> None:
    evs = [
        Evidence(kind="doc", text="x"),
        Evidence(kind="doc", text="y"),
    ]
    got = fit_budget(evs, 6, render=lambda ev: ev.text * 3, tokenizer=list, id_overhead=0)
    assert got == evs
    assert fit_budget(evs, 5, render=lambda ev: ev.text * 3, tokenizer=list, id_overhead=0) == evs[:1]


def test_number_evidence_per_kind_in_order() -> None:
    kinds = ["neighbor", "path", "neighbor", "chain", "kgcot", "doc", "path"]
    got = number_evidence([Evidence(readings=FITTED_READINGS, kind=k) for k in kinds])  # type: ignore[arg-type]
    assert [ev.id for ev in got] == ["N1", "P1", "N2", "C1", "K1", "D1", "P2"]


# -- reranking and the composed pipeline -----------------------------------------------
class KeywordReranker:
    """Scores 1 per query word found in the text (a stand-in for a cross-encoder)."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    def score(self, queries: Sequence[str], texts: Sequence[str]) -> list[float]:
        self.queries = list(queries)
        words = {w.strip("?.,").lower() for q in queries for w in q.split()}
        return [float(sum(w.strip(".,").lower() in words for w in t.split())) for t in texts]


class HashEmbedder:
    """Bag-of-words vectors over a fixed vocabulary, L2-normalised."""

    vocab = ["fever", "cough", "rash", "flu", "measles", "drug", "test"]

    def _embed(self, texts: list[str]) -> np.ndarray:
        m = np.array([[t.lower().count(w) for w in self.vocab] for t in texts], dtype=np.float32) + 1e-6
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts)


def test_embedding_reranker_max_cosine() -> None:
    rr = EmbeddingReranker(HashEmbedder())
    assert isinstance(rr, Reranker)
    scores = rr.score(["fever", "rash"], ["fever fever", "rash", "cough"])
    assert scores[0] == pytest.approx(1.0, abs=1e-3) and scores[1] == pytest.approx(1.0, abs=1e-3)
    assert scores[2] < 0.1
    assert rr.score([""], ["x"]) == [0.0]
    assert rr.score(["q"], []) == []


def test_aggregate_orders_by_rerank_plus_prior_and_numbers() -> None:
    evs = [
        line("Flu", "need_medication", ["Oseltamivir"], score=1.0),
        line("Measles", "has_symptom", ["Rash", "Fever"], score=1.0),
        Evidence(
            readings=FITTED_READINGS,
            kind="path",
            triples=[("Rash", "possible_disease", "Measles")],
            relation_ids=["p1"],
            score=1.0,
        ),
    ]
    rr = KeywordReranker()
    out = aggregate_evidence(evs, "I have a rash.", "It may be measles with a rash today", reranker=rr)
    assert [ev.id for ev in out] == ["P1", "N1", "N2"]
    assert out[0].triples[0][0] == "Rash" and out[1].triples[0][0] == "Measles"
    # Measles–Rash is one fact, shown by P1: N1 keeps only what is new
    assert (
        out[1].triples == [("Measles", "has_symptom", "Fever")]
        and out[1].text == "Measles may present with Fever."
    )
    assert out[1].relation_ids == ["Measles-has_symptom-Fever"]
    assert out[0].text == "Rash may be a sign of Measles."
    assert rr.queries[0] == "I have a rash." and len(rr.queries) == 2  # question + 1 hypothesis chunk
    assert all(ev.relation_ids for ev in out)
    assert out[0].meta["prior_score"] == 1.0 and "rerank_score" in out[0].meta


def test_aggregate_without_reranker_keeps_prior_order_and_budget() -> None:
    evs = [line(f"D{i}", "need_medical_test", [f"T{i}"], score=1.0 - i / 10) for i in range(5)]
    evs.append(
        Evidence(
            readings=FITTED_READINGS, kind="path", triples=[("A", "r", "B")], relation_ids=["x"], score=0.2
        )
    )
    out = aggregate_evidence(evs, "q", budget_tokens=10_000)
    assert [ev.id for ev in out][:5] == ["N1", "P1", "N2", "N3", "N4"]  # path prior normalised per kind = 1.0
    small = aggregate_evidence(evs, "q", budget_tokens=20)
    assert sum(count_tokens(ev.text) + ID_OVERHEAD for ev in small) <= 20 and small
    assert len(aggregate_evidence(evs, "q", max_items=2)) == 2
    assert aggregate_evidence([], "q") == []


def test_embedding_reranker_caches_evidence_vectors() -> None:
    class Counting(HashEmbedder):
        docs = 0

        def embed_documents(self, texts: list[str]) -> np.ndarray:
            Counting.docs += len(texts)
            return super().embed_documents(texts)

    rr = EmbeddingReranker(Counting(), cache_size=2)
    first = rr.score(["fever"], ["fever", "rash", "fever"])
    assert Counting.docs == 2  # duplicates embedded once
    assert rr.score(["fever"], ["fever", "rash"]) == first[:2] and Counting.docs == 2
    rr.score(["fever"], ["cough"])  # evicts the least recently used
    rr.score(["fever"], ["fever"])
    assert Counting.docs == 4


# -- entity-vector reranker ------------------------------------------------------------
class _NameStore:
    """The read side of a store that building an entity index needs."""

    def __init__(self, names: Sequence[str], uri: str = "fake://rerank") -> None:
        from kgmind.models import Entity

        self.uri = uri
        self.entities = [Entity(name=n) for n in names]

    def iter_entities(self):  # type: ignore[no-untyped-def]
        return iter(self.entities)

    def fingerprint(self) -> str:
        return str(len(self.entities))


def _eid(name: str) -> str:
    from kgmind.models import entity_id

    return entity_id(name)


def _vector_index(names: Sequence[str]):  # type: ignore[no-untyped-def]
    from kgmind.retrievers.embeddings.hashing import HashEmbedder
    from kgmind.retrievers.entity_index import build_entity_index

    return build_entity_index(_NameStore(names), HashEmbedder())  # type: ignore[arg-type]


def _ent_line(head: str, tails: Sequence[str], score: float = 1.0) -> Evidence:
    return Evidence(
        readings=FITTED_READINGS,
        kind="neighbor",
        triples=[(head, "has_symptom", t) for t in tails],
        relation_ids=[f"{head}-{t}" for t in tails],
        entity_ids=[_eid(head), *(_eid(t) for t in tails)],
        score=score,
    )


def test_entity_index_exposes_stored_vectors_by_entity() -> None:
    from kgmind.retrievers.embeddings.hashing import HashEmbedder

    idx = _vector_index(["Fever", "Rash", "Cough"])
    vecs, groups = idx.entity_vectors([_eid("Rash"), "unknown", _eid("Fever")])
    assert groups[1] == [] and len(groups[0]) == 1 and len(groups[2]) == 1
    np.testing.assert_allclose(vecs[groups[0][0]], HashEmbedder().embed_documents(["Rash"])[0], atol=1e-6)
    assert idx.matrix.shape == (3, HashEmbedder().dim)


def _counting_embedder():  # type: ignore[no-untyped-def]
    """A HashEmbedder that records each query batch and refuses to embed documents (evidence)."""
    from kgmind.retrievers.embeddings.hashing import HashEmbedder

    class Counting(HashEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.calls: list[list[str]] = []

        def embed_queries(self, texts):  # type: ignore[no-untyped-def]
            self.calls.append(list(texts))
            return HashEmbedder.embed_documents(self, texts)

        def embed_documents(self, texts):  # type: ignore[no-untyped-def]
            raise AssertionError("evidence must not be embedded")

    return Counting()


def test_entity_vector_reranker_scores_by_tail_entities() -> None:
    from kgmind.retrievers.aggregate import EntityVectorReranker, EvidenceReranker
    from kgmind.retrievers.embeddings.hashing import HashEmbedder

    idx = _vector_index(["Measles", "Rash", "Fever", "Oseltamivir", "Flu"])
    counting = _counting_embedder()
    rr = EntityVectorReranker(idx, counting, question="embed")
    assert isinstance(rr, EvidenceReranker)
    evs = [_ent_line("Flu", ["Oseltamivir"]), _ent_line("Measles", ["Rash", "Fever"])]
    scores = rr.score_evidence(["rash", "", "fever"], evs)
    assert scores[1] > scores[0]
    assert scores[1] == pytest.approx(1.0, abs=1e-3)  # both tails equal a query exactly
    assert counting.calls == [["rash", "fever"]]  # one batch, blank query dropped
    rr.score_evidence(["fever", "rash"], evs)
    assert len(counting.calls) == 1  # query vectors cached
    assert rr.score_evidence([""], evs) == [0.0, 0.0]
    unknown = Evidence(kind="doc", text="free text", entity_ids=["nope"])
    assert rr.score_evidence(["rash"], [unknown]) == [0.0]
    only_max = EntityVectorReranker(idx, HashEmbedder(), tail_max_weight=1.0, question="embed")
    mixed = only_max.score_evidence(["rash"], [_ent_line("Measles", ["Rash", "Oseltamivir"])])[0]
    assert mixed == pytest.approx(1.0, abs=1e-3)  # max of the tails, the unrelated one ignored
    with pytest.raises(ValueError):
        EntityVectorReranker(idx, HashEmbedder(), tail_max_weight=1.5)
    with pytest.raises(ValueError, match="anchors"):
        EntityVectorReranker(idx, HashEmbedder(), question="auto")  # type: ignore[arg-type]


def test_entity_vector_reranker_question_modes() -> None:
    from kgmind.retrievers.aggregate import EntityVectorReranker

    idx = _vector_index(["Measles", "Rash", "Fever", "Feverish", "Oseltamivir", "Flu"])
    evs = [
        _ent_line("Fever", ["Oseltamivir"]),
        _ent_line("Flu", ["Fever"]),
        _ent_line("Fever", ["Feverish"]),
    ]
    # default: the question is ignored; only hypothesis chunks are embedded
    counting = _counting_embedder()
    rr = EntityVectorReranker(idx, counting)
    assert rr.question == "ignore"
    assert rr.score_evidence(["fever"], evs) == [0.0, 0.0, 0.0]  # no hypothesis: the prior order stands
    assert counting.calls == []
    hyp = rr.score_evidence(["fever", "oseltamivir tablets"], evs)
    assert counting.calls == [["oseltamivir tablets"]]
    assert hyp[0] == max(hyp)
    # anchors: the anchors (first entities) are Fever and Flu: a tail equal to an anchor
    # scores 1, a tail close to one ("Feverish") beats an unrelated one; nothing embedded
    counting = _counting_embedder()
    anchored = EntityVectorReranker(idx, counting, question="anchors")
    scores = anchored.score_evidence(["a question whose text is not embedded"], evs)
    assert counting.calls == []
    assert scores[1] == pytest.approx(1.0, abs=1e-3)
    assert scores[1] > scores[2] > scores[0]
    # no known anchor: the question text is embedded instead
    unknown = Evidence(kind="doc", text="t", entity_ids=["nope", _eid("Rash")])
    anchored.score_evidence(["rash"], [unknown])
    assert counting.calls[-1] == ["rash"]
    # embed: the question and the chunks, one batch
    counting = _counting_embedder()
    EntityVectorReranker(idx, counting, question="embed").score_evidence(["fever", "oseltamivir pills"], evs)
    assert counting.calls == [["fever", "oseltamivir pills"]]


def test_aggregate_default_reranker_uses_the_loaded_entity_index(monkeypatch) -> None:
    from kgmind.retrievers import entity_index_cache

    evs = [
        _ent_line("Flu", ["Oseltamivir"], score=1.0),
        _ent_line("Measles", ["Rash"], score=0.9),
    ]
    entity_index_cache.clear_entity_index_cache()
    try:
        # no index loaded: prior order
        assert [ev.triples[0][0] for ev in aggregate_evidence(evs, "I have a rash")] == ["Flu", "Measles"]
        idx = _vector_index(["Measles", "Rash", "Oseltamivir", "Flu"])
        monkeypatch.setitem(entity_index_cache._cache, ("fake://rerank", "hash", idx.fingerprint), idx)
        out = aggregate_evidence(evs, "I have a rash", "rash")  # the hypothesis chunk is embedded
        assert [ev.triples[0][0] for ev in out] == ["Measles", "Flu"]
        assert out[0].meta["rerank_score"] > out[1].meta["rerank_score"]
        prior = aggregate_evidence(evs, "rash", reranker="prior")
        assert [ev.triples[0][0] for ev in prior] == ["Flu", "Measles"]
        with pytest.raises(ValueError):
            aggregate_evidence(evs, "rash", reranker="bogus")  # type: ignore[arg-type]
    finally:
        entity_index_cache.clear_entity_index_cache()


def test_find_cached_index_needs_coverage() -> None:
    from kgmind.retrievers import entity_index_cache

    entity_index_cache.clear_entity_index_cache()
    idx = _vector_index(["Measles", "Rash"])
    entity_index_cache._cache[("fake://rerank", "hash", idx.fingerprint)] = idx
    try:
        assert entity_index_cache.find_cached_index([_eid("Measles"), _eid("Rash")]) is idx
        assert entity_index_cache.find_cached_index([_eid("Measles"), "x", "y"]) is None
        assert entity_index_cache.find_cached_index([]) is None
    finally:
        entity_index_cache.clear_entity_index_cache()


# -- each fact paid for once ---------------------------------------------------------
def _chain(triples: list[tuple[str, str, str]], **meta: object) -> Evidence:
    return Evidence(
        readings=FITTED_READINGS,
        kind="kgcot" if "knowledge" in meta else "chain",
        triples=triples,
        relation_ids=[f"{h}-{t}" for h, _r, t in triples],
        score=1.0,
        meta=dict(meta),
    )


def test_shown_facts_drop_repeated_triples_notes_and_empty_items() -> None:
    shown = ShownFacts()
    first = _chain(
        [("Cough", "possible_disease", "Flu"), ("Flu", "need_medication", "Oseltamivir")],
        descriptions={"Flu": "A viral infection."},
    )
    shown.add(first)
    # the inverse triple is the same fact; the description of Flu was shown
    again = _chain(
        [("Flu", "has_symptom", "Cough"), ("Flu", "need_medical_test", "Swab")],
        descriptions={"Flu": "A viral infection.", "Swab": "A sample."},
    )
    cut = shown.without_shown(again)
    assert cut is not None
    assert cut.triples == [("Flu", "need_medical_test", "Swab")] and cut.relation_ids == ["Flu-Swab"]
    assert cut.meta["descriptions"] == {"Swab": "A sample."} and cut.meta["facts_shown_before"] == 1
    assert "viral" not in cut.text and "Swab" in cut.text
    assert shown.without_shown(_chain([("Oseltamivir", "possible_cure_disease", "Flu")])) is None
    new = _chain([("Fever", "possible_disease", "Flu")])
    assert shown.without_shown(new) is new  # nothing shown before: the item itself
    doc = Evidence(kind="doc", text="free text", score=1.0)
    assert shown.without_shown(doc) is doc


def test_shown_facts_keep_kgcot_sources_aligned_with_kept_edges() -> None:
    shown = ShownFacts()
    shown.add(_chain([("Cough", "possible_disease", "Flu")]))
    k = _chain(
        [("Cough", "possible_disease", "Flu"), ("Flu", "need_medication", "Zanamivir")],
        knowledge=["flu doc", "zanamivir doc"],
    )
    cut = shown.without_shown(k)
    assert cut is not None and cut.meta["knowledge"] == ["zanamivir doc"]
    assert "zanamivir doc" in cut.text and "flu doc" not in cut.text


def test_fit_budget_shares_facts_only_when_asked() -> None:
    evs = [line("Flu", "has_symptom", ["Cough", "Fever"]), line("Cough", "possible_disease", ["Flu", "Cold"])]
    evs = [ev.model_copy(update={"text": render_evidence(ev)}) for ev in evs]
    plain = fit_budget(evs, 100)
    assert [len(ev.triples) for ev in plain] == [2, 2]
    shared = fit_budget(evs, 100, share_facts=True)
    assert [ev.triples for ev in shared] == [evs[0].triples, [("Cough", "possible_disease", "Cold")]]
    # a fact shown by an item that did not fit the budget is not counted as shown
    big = Evidence(
        readings=FITTED_READINGS,
        kind="path",
        triples=[("Flu", "has_symptom", "Cough")],
        relation_ids=["x"],
        text="x " * 200,
    )
    tight = fit_budget([big, evs[1]], 20, share_facts=True)
    assert [ev.triples for ev in tight] == [evs[1].triples]


def test_shared_lines_keep_their_entity_ids_and_can_still_be_cut_at_the_budget_edge() -> None:
    shown = ShownFacts()
    shown.add(line("Cough", "possible_disease", ["Flu"]))
    tests = line("Flu", "has_symptom", ["Cough", "Fever", "Chills", "Headache", "Myalgia", "Sore throat"])
    cut = shown.without_shown(tests)
    assert cut is not None and cut.entity_ids == [
        "Flu",
        "Fever",
        "Chills",
        "Headache",
        "Myalgia",
        "Sore throat",
    ]
    votes = Evidence(
        readings=FITTED_READINGS,
        kind="neighbor",
        triples=[("Cough", "possible_disease", "Flu"), ("Fever", "possible_disease", "Flu")],
        relation_ids=["a", "b"],
        entity_ids=["Cough", "Fever", "Flu"],
    )
    voted = shown.without_shown(votes)
    assert voted is not None and voted.entity_ids == ["Fever", "Flu"]  # one tail: the disease stays
    first = line("Cough", "possible_disease", ["Flu"])
    first = first.model_copy(update={"text": render_evidence(first)})
    tight = fit_budget(
        [first, tests.model_copy(update={"text": render_evidence(tests)})], 22, share_facts=True
    )
    assert len(tight) == 2 and tight[1].meta["truncated_from"] == 5
    assert tight[1].triples == [("Flu", "has_symptom", "Fever")] and tight[1].entity_ids == ["Flu", "Fever"]


def test_fit_budget_stops_at_the_first_miss_after_sharing() -> None:
    a, b, c = (line(h, "has_symptom", [t]) for h, t in [("Flu", "Cough"), ("Cough", "Flu"), ("Flu", "Fever")])
    evs = [ev.model_copy(update={"text": render_evidence(ev)}) for ev in (a, b, c)]
    assert [ev.triples for ev in fit_budget(evs, 100, share_facts=True, stop_at_first_miss=True)] == [
        a.triples,
        c.triples,
    ]  # b repeats a's fact: skipped, not a miss
    big = c.model_copy(update={"text": "x " * 100})
    assert len(fit_budget([evs[0], big, evs[1]], 20, share_facts=True, stop_at_first_miss=True)) == 1
