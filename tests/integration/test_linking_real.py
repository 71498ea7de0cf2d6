"""Integration tests of linking and mention extraction with the real MiniLM and e5 models on tiny KGs."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from entity_fakes import EntityListStore
from kgmind.models import Entity
from kgmind.retrievers import entity_index, entity_index_cache, linker, ner
from kgmind.retrievers.embeddings import get_embedder
from kgmind.retrievers.entity_index_cache import entity_index_dir, get_entity_index
from kgmind.retrievers.linker import EntityLinker
from kgmind.retrievers.ner import embedding_spans, extract_mentions, parse_entity_list
from kgmind.tuning import CONTEXT_SPAN_THRESHOLD, LINK_THRESHOLD, SPAN_THRESHOLD

pytestmark = pytest.mark.slow


class FakeStore(EntityListStore):
    def __init__(self, entities: Sequence[Entity], uri: str) -> None:
        super().__init__(entities, uri)


EN_KG = [
    Entity(name="Jaundice", type="symptom", aliases=["Yellowing of the skin or eyes"]),
    Entity(name="Headache", type="symptom"),
    Entity(name="Eye redness", type="symptom"),
    Entity(name="Fever", type="symptom"),
    Entity(name="Hepatitis", type="disease"),
    Entity(name="Cough", type="symptom"),
    Entity(name="Shortness of breath", type="symptom"),
    Entity(name="Liver function tests", type="test"),
]
ZH_KG = [Entity(name=n) for n in ("头痛", "黄疸", "咳嗽", "发热", "肝炎", "胸痛", "血常规", "眼睛红肿")]


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("KGMIND_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    entity_index_cache.clear_entity_index_cache()
    linker.clear_linker_cache()
    ner.clear_gazetteer_cache()
    yield
    entity_index_cache.clear_entity_index_cache()
    linker.clear_linker_cache()
    ner.clear_gazetteer_cache()


def names(linked) -> list[str]:
    return [le.name for le in linked]


def test_minilm_links_paraphrases_and_rejects_unrelated():
    store = FakeStore(EN_KG, "fake://en")
    lk = EntityLinker(store)
    assert lk.model == "minilm"
    assert names(lk.link(["yellow eyes"], top_k=1, threshold=0.7)) == ["Jaundice"]
    assert names(lk.link(["pain in my head"], top_k=1, threshold=0.5)) == ["Headache"]
    assert lk.link(["stock market prices"]) == []
    forced = lk.link(["stock market prices"], threshold=None)
    assert len(forced) == 1 and forced[0].score < LINK_THRESHOLD["minilm"]
    # Index persisted with the model name and the store fingerprint.
    meta = json.loads((entity_index_dir(store.uri, "minilm") / "meta.json").read_text())
    assert meta == {**meta, "model": "minilm", "fingerprint": store.fingerprint(), "vectors": len(EN_KG) + 1}


def test_minilm_vectors_are_normalised_float32():
    import numpy as np

    from kgmind.retrievers.embeddings import get_embedder

    vecs = get_embedder("minilm").embed_queries(["yellow eyes", "headache"])
    assert vecs.dtype == np.float32 and vecs.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-5)


def test_minilm_embedding_span_finds_yellow_eyes():
    store = FakeStore(EN_KG, "fake://en-spans")
    lk = EntityLinker(store, "minilm")
    spans = embedding_spans("Doctor, I have had yellow eyes since Monday.", lk, SPAN_THRESHOLD["minilm"])
    assert [m.entity_id for m in spans] == [Entity(name="Jaundice").id]
    assert "yellow eyes" in spans[0].text
    # "yellow eyes" is a shipped lay term of Jaundice (the gazetteer's now): a paraphrase tests the spans
    got = extract_mentions("I have yellowish eyes and a headache, what tests do I need?", store, linker=lk)
    by_source = {(m.source, m.text) for m in got}
    assert ("gazetteer", "headache") in by_source
    assert ("embedding", "yellowish eyes") in by_source


def test_minilm_contextual_spans_one_pass():
    import numpy as np

    from kgmind.retrievers.embeddings.minilm import MiniLMEmbedder
    from kgmind.retrievers.ner import span_threshold

    emb = MiniLMEmbedder()
    text = "Doctor, I have had yellow eyes since Monday."
    start = text.index("yellow eyes")
    sentence, spans, extra = emb.embed_in_context(
        text,
        [(start, start + 11), (start + 1, start + 3)],
        ["jaundice", "a much longer extra text than this"],
    )
    # the sentence vector is the model's own embedding of the text, and it is cached;
    # the extra texts get their standalone embeddings (padding in the batch changes nothing)
    ref = MiniLMEmbedder().embed_queries([text, "jaundice", "a much longer extra text than this"])
    assert float(sentence @ ref[0]) > 0.9999  # bf16 rounding
    assert (extra * ref[1:]).sum(axis=1).min() > 0.999
    assert text in emb._sentences
    assert float(np.linalg.norm(spans[0])) == pytest.approx(1.0, abs=1e-5)
    assert not spans[1].any()  # inside "yellow": no whole token, zero vector, never a match
    store = FakeStore(EN_KG, "fake://en-context")
    lk = EntityLinker(store, "minilm", embedder=emb)
    assert span_threshold(lk) == CONTEXT_SPAN_THRESHOLD["minilm"]
    assert span_threshold(lk, contextual=False) == SPAN_THRESHOLD["minilm"]
    got = embedding_spans(text, lk, span_threshold(lk), context=text, prefetch=["icterus"])
    assert [m.entity_id for m in got] == [Entity(name="Jaundice").id]
    assert lk.uncached(["icterus", "not seen"]) == ["not seen"]  # embedded in the question's batch
    assert "yellow" in got[0].text
    with pytest.raises(ValueError, match="as long as"):
        embedding_spans(text, lk, 0.6, context=text + "!")


def test_onnx_minilm_fp32_is_torch_and_int8_links_at_its_own_thresholds():
    import numpy as np

    from kgmind.retrievers.embeddings import get_embedder
    from kgmind.retrievers.embeddings.minilm import MiniLMEmbedder, OnnxMiniLMEmbedder
    from kgmind.retrievers.embeddings.onnx_export import onnx_minilm_path
    from kgmind.retrievers.ner import span_threshold

    texts = ["yellow eyes", "pain in my head", "a much longer text about liver function tests"]
    torch_vecs = MiniLMEmbedder().embed_queries(texts)
    onnx_fp32 = OnnxMiniLMEmbedder(quantized=False)
    assert onnx_fp32.name == "minilm"  # one model, one index, whichever backend runs it
    fp32 = onnx_fp32.embed_queries(texts)
    assert (fp32 * torch_vecs).sum(axis=1).min() > 0.999  # the same vectors (torch may run bf16)
    text = "Doctor, I have had yellow eyes since Monday."
    start = text.index("yellow eyes")
    a = MiniLMEmbedder().embed_in_context(text, [(start, start + 11)], texts[:1])
    b = onnx_fp32.embed_in_context(text, [(start, start + 11)], texts[:1])
    assert float(a.sentence @ b.sentence) > 0.999 and float(a.spans[0] @ b.spans[0]) > 0.999
    assert float(a.extra[0] @ b.extra[0]) > 0.999
    int8 = get_embedder("minilm-int8").embed_queries(texts)
    assert int8.dtype == np.float32 and int8.shape == (3, 384)
    assert 0.85 < (int8 * torch_vecs).sum(axis=1).min() < 1.0  # close, not equal: its own δ
    path = onnx_minilm_path(quantized=True)
    stamp = path.stat().st_mtime_ns
    assert onnx_minilm_path(quantized=True) == path and path.stat().st_mtime_ns == stamp  # exported once
    store = FakeStore(EN_KG, "fake://en-int8")
    lk = EntityLinker(store, "minilm-int8")
    assert lk.default_threshold == LINK_THRESHOLD["minilm-int8"]
    assert names(lk.link(["yellow eyes"], top_k=1, threshold=0.7)) == ["Jaundice"]
    assert lk.link(["stock market prices"]) == []
    assert span_threshold(lk) == CONTEXT_SPAN_THRESHOLD["minilm-int8"]
    got = extract_mentions("I have yellowish eyes and a headache, what tests do I need?", store, linker=lk)
    by_source = {(m.source, m.text) for m in got}
    assert ("gazetteer", "headache") in by_source
    assert any(src == "embedding" and "yellow" in text for src, text in by_source)
    # the extras ride in a batch of their own and get their standalone vectors
    _, _, extra = get_embedder("minilm-int8").embed_in_context("I have yellow eyes.", [(7, 18)], texts[:2])
    np.testing.assert_allclose(extra, int8[:2], atol=1e-4)


def test_minilm_tokenizer_gives_what_autotokenizer_gives():
    """The ONNX embedder's tokenizer (no transformers import) matches AutoTokenizer as it was called."""
    import numpy as np
    from transformers import AutoTokenizer

    from kgmind.retrievers.embeddings.minilm import MINILM_MAX_TOKENS, minilm_tokenizer
    from kgmind.retrievers.embeddings.onnx_export import minilm_dir

    hf = AutoTokenizer.from_pretrained(str(minilm_dir()), local_files_only=True)
    tok = minilm_tokenizer()
    texts = [
        "Doctor, I have had yellow eyes since Monday.",
        "Chest pain, SHORTNESS of breath & a café-au-lait spot 😀",
        "我最近一直咳嗽还发烧",
        "",
        "  tabs\tand\nnew lines  ",
        "fever " * 400,  # cut at the limit, not at the file's own 128
    ]
    for batch in ([t] for t in texts):
        want = hf(
            batch,
            return_offsets_mapping=True,
            return_tensors="np",
            padding=True,
            truncation=True,
            max_length=MINILM_MAX_TOKENS,
        )
        got = tok.encode_batch(batch)
        assert got[0].ids == want["input_ids"][0].tolist()
        assert [list(o) for o in got[0].offsets] == want["offset_mapping"][0].tolist()
    want = hf(texts, return_tensors="np", padding=True, truncation=True, max_length=MINILM_MAX_TOKENS)
    got = tok.encode_batch(texts)
    assert want["input_ids"].shape == (len(texts), MINILM_MAX_TOKENS)  # padded to the longest
    for key, field in (
        ("input_ids", "ids"),
        ("attention_mask", "attention_mask"),
        ("token_type_ids", "type_ids"),
    ):
        np.testing.assert_array_equal(np.array([getattr(e, field) for e in got]), want[key])


def test_the_onnx_embedder_and_thread_settings_do_not_import_torch():
    """``kgmind`` commands start without torch (1.5 s): the ONNX MiniLM path never needs it."""
    import subprocess
    import sys

    code = """
import sys
from kgmind.retrievers.embeddings import runtime
from kgmind.retrievers.embeddings.minilm import MiniLMEmbedder, OnnxMiniLMEmbedder
runtime.configure_threads()  # what every kgmind command does first
assert "torch" not in sys.modules and runtime._torch_threads_wanted
emb = OnnxMiniLMEmbedder(quantized=False)
text = "Doctor, I have had yellow eyes since Monday."
vecs = emb.embed_in_context(text, [(19, 30)], ["icterus"])
assert vecs.spans.shape == (1, 384) and vecs.extra.shape == (1, 384)
assert "torch" not in sys.modules and "transformers" not in sys.modules, sorted(sys.modules)
import torch  # a torch model loads later: the count asked for before is applied then
torch.set_num_threads(2)
MiniLMEmbedder().embed_queries(["fever"])
assert torch.get_num_threads() == 1, torch.get_num_threads()
"""
    from kgmind.retrievers.embeddings.onnx_export import onnx_minilm_path

    onnx_minilm_path(quantized=False)  # the one-time export (torch) happens here, in this home
    env = {**os.environ, "KGMIND_TORCH_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]


def test_e5_links_chinese_paraphrases():
    store = FakeStore(ZH_KG, "fake://zh")
    lk = EntityLinker(store)
    assert lk.model == "e5"
    assert names(lk.link(["头疼"], top_k=1)) == ["头痛"]
    assert names(lk.link(["眼睛发黄"], top_k=1, threshold=None)) == ["黄疸"]
    assert names(lk.link(["咳嗽"])) == ["咳嗽"]  # exact
    vecs = lk.embedder.embed_documents(["头痛"])
    assert vecs.shape == (1, lk.embedder.dim)


def test_ladybug_store_index_lives_beside_the_store(tmp_path):
    import kgmind.stores.ladybug as lb

    store = lb.LadybugStore(str(tmp_path / "kg"))
    try:
        store.bulk_load(EN_KG, [])
        idx = get_entity_index(store, "minilm")
        assert (tmp_path / "kg.index" / "minilm" / "meta.json").exists()
        assert len(idx.entities) == len(EN_KG)
    finally:
        store.close()


def test_an_import_rebuilds_the_real_index_embedding_only_new_names(tmp_path):
    """MiniLM on a LadybugDB store: the names an import leaves alone keep their vectors, and
    the rebuilt index links as one built from scratch does."""
    import kgmind.stores.ladybug as lb
    from kgmind.retrievers.entity_index import build_and_save

    store = lb.LadybugStore(str(tmp_path / "kg"))
    try:
        store.bulk_load(EN_KG, [])
        get_entity_index(store, "minilm")
        store.bulk_load([Entity(name="Vertigo", type="symptom")], [])
        entity_index_cache.clear_entity_index_cache()
        rebuilt = get_entity_index(store, "minilm")
        assert rebuilt.reused == len(set(rebuilt.vector_texts)) - 1  # all but "Vertigo"
        assert not (tmp_path / "kg.index" / "minilm.partial").exists()
        scratch = build_and_save(
            store, "minilm", tmp_path / "scratch", fingerprint=store.fingerprint(), reuse=False
        )
        assert scratch.reused == 0 and scratch.vector_texts == rebuilt.vector_texts
        np.testing.assert_allclose(rebuilt.matrix, scratch.matrix, atol=1e-5)
        mentions = ["dizziness", "yellow skin", "head pain", "vertigo"]
        embedder = get_embedder("minilm")
        q = embedder.embed_queries(mentions)
        assert [[e for e, _ in hits] for hits in rebuilt.search(q, 2)] == [
            [e for e, _ in hits] for hits in scratch.search(q, 2)
        ]
    finally:
        store.close()


def test_cli_index_build(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import kgmind.stores.ladybug as lb
    from kgmind.cli import app
    from kgmind.stores.factory import close_all_stores, open_store

    uri = f"ladybug:{tmp_path / 'kg'}"
    try:
        store = open_store(uri, create=True)
        assert isinstance(store, lb.LadybugStore)
        store.bulk_load(EN_KG, [])
        runner = CliRunner()
        res = runner.invoke(app, ["index", "build", "--store", uri, "--model", "minilm"])
        assert res.exit_code == 0, res.output
        assert "built" in res.output
        assert (tmp_path / "kg.index" / "minilm" / "vectors.faiss").exists()
        entity_index_cache.clear_entity_index_cache()
        res = runner.invoke(app, ["index", "build", "--store", uri, "--model", "minilm"])
        assert res.exit_code == 0 and "up to date" in res.output and "graph" not in res.output
        # an index whose search graph is missing (or of an older kind) gets it, and says so
        monkeypatch.setattr(entity_index, "HNSW_MIN_VECTORS", 5)
        entity_index_cache.clear_entity_index_cache()
        res = runner.invoke(app, ["index", "build", "--store", uri, "--model", "minilm"])
        assert res.exit_code == 0 and "up to date, its search graph built" in res.output, res.output
        assert (tmp_path / "kg.index" / "minilm" / "hnsw.faiss").is_file()
        monkeypatch.undo()
        labels = json.loads((tmp_path / "kg.index" / "minilm" / "labels.json").read_text())
        store.bulk_load([Entity(name="Vertigo", type="symptom")], [])
        res = runner.invoke(app, ["index", "build", "--store", uri, "--model", "minilm"])
        reused = len(set(labels["vector_texts"]))
        assert res.exit_code == 0 and f"{reused} names reused" in res.output, res.output
        res = runner.invoke(app, ["index", "build", "--store", uri, "--model", "minilm", "--force"])
        assert res.exit_code == 0 and "built" in res.output and "reused" not in res.output, res.output
        res = runner.invoke(app, ["index", "build", "--store", uri, "--model", "bert"])
        assert res.exit_code == 2
    finally:
        close_all_stores()


# -- calibration sanity on real data ------------------------------------------------------------------------


def _data_dir() -> Path:
    return Path(
        os.environ.get("KGMIND_DATA_DIR") or Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
    )


@pytest.mark.data
def test_calibrated_threshold_trades_recall_for_precision_on_genmedgpt():
    root = _data_dir()
    tsv = root / "emckg" / "mindmap_emckg_triples.tsv"
    gold_path = root / "genmedgpt5k" / "gold_kg_entities.jsonl"
    ner_path = root / "genmedgpt5k" / "ner_chatgpt.jsonl"
    if not (tsv.exists() and gold_path.exists() and ner_path.exists()):
        pytest.skip(f"EMCKG / GenMedGPT-5k data not found under {root} (set KGMIND_DATA_DIR)")
    ents: dict[str, Entity] = {}
    for line in tsv.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) == 3:
            for n in (parts[0], parts[2]):
                e = Entity(name=n.replace("_", " "))
                ents.setdefault(e.id, e)
    store = FakeStore(list(ents.values()), "fake://emckg")
    questions = {}
    for line in ner_path.read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        questions[d["id"]] = d["qustion_output"]
    rows = [json.loads(x) for x in gold_path.read_text(encoding="utf-8").splitlines()][:40]
    lk = EntityLinker(store, "minilm")
    tp = {"cal": 0, "forced": 0}
    npred = {"cal": 0, "forced": 0}
    ngold = 0
    for row in rows:
        gold = {Entity(name=n.replace("_", " ")).id for n in row["input_KG"].split(",") if n}
        ngold += len(gold)
        mentions = parse_entity_list(questions[row["id"]])
        for key, thr in (("cal", "calibrated"), ("forced", None)):
            pred = {le.entity_id for le in lk.link(mentions, top_k=1, threshold=thr)}
            tp[key] += len(pred & gold)
            npred[key] += len(pred)
    precision = {k: tp[k] / max(1, npred[k]) for k in tp}
    assert precision["cal"] > precision["forced"]
    assert tp["cal"] / ngold >= 0.25


def test_entity_vector_reranker_with_minilm_prefers_relevant_tails():
    from kgmind.models import Evidence
    from kgmind.retrievers.aggregate import EntityVectorReranker, aggregate_evidence, chunk_text

    store = FakeStore(EN_KG, "fake://rerank-real")
    index = get_entity_index(store, "minilm")
    ids = {e.name: e.id for e in EN_KG}

    def line(head: str, tail: str) -> Evidence:
        return Evidence(
            kind="neighbor",
            triples=[(head, "has_symptom", tail)],
            relation_ids=[f"{head}>{tail}"],
            entity_ids=[ids[head], ids[tail]],
            score=1.0,
        )

    evs = [line("Hepatitis", "Cough"), line("Hepatitis", "Jaundice")]
    question = "My eyes and skin have turned yellow. What is wrong?"
    scores = EntityVectorReranker(index, question="embed").score_evidence([question], evs)
    assert scores[1] > scores[0]
    # anchors: the question is stood in for by the anchor (Hepatitis), plus hypothesis chunks
    anchored = EntityVectorReranker(index, question="anchors")
    hypothesis = "Yellow skin and eyes point to jaundice from hepatitis."
    both = anchored.score_evidence([question, *chunk_text(hypothesis)], evs)
    assert both[1] > both[0]
    # the default reranker of aggregate_evidence (hypothesis chunks only) finds the loaded index by itself
    default = EntityVectorReranker(index).score_evidence([question, *chunk_text(hypothesis)], evs)
    assert default[1] > default[0]
    out = aggregate_evidence(evs, question, hypothesis)
    assert out[0].triples[0][2] == "Jaundice" and out[0].meta["rerank_score"] == pytest.approx(default[1])
