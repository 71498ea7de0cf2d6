"""The runner with a fake LLM: answer metrics, choice accuracy, Chinese data sets (no model, no KG).

The LLM methods run the compiled graph (``llm_only`` mode) with a scripted chat model
that the test puts behind ``kgmind.llm.get_chat_model``.
"""

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from kgmind.eval import metrics as mt
from kgmind.eval.config import EvalConfig
from kgmind.eval.items import build_items, in_calibration, question_text
from kgmind.eval.runner import run_eval

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "eval"


def _genmed(**kw):
    return EvalConfig(
        dataset="genmedgpt5k",
        dialogues=str(FIX / "dialogues.json"),
        ner=str(FIX / "ner_chatgpt.jsonl"),
        gold=str(FIX / "gold_kg_entities.jsonl"),
        vocab=str(FIX / "format_dataset.csv"),
        docs=str(FIX / "disease_documents"),
        memory_sample=0,
        bertscore=False,
        **kw,
    )


def _llm_only(dataset, qa, tmp_path, **kw):
    """An ``llm_only`` run of ``dataset`` (``qa`` under the fixtures) with the scripted LLM, a fresh cache."""
    return EvalConfig(
        dataset=dataset,
        qa=str(FIX / qa),
        methods="llm_only",
        llm="scripted",
        memory_sample=0,
        llm_cache=str(tmp_path / "c.sqlite"),
        **kw,
    )


class _Scripted(BaseChatModel):
    """A chat model whose answer summary is ``reply(prompt text)``; it counts the calls that ran."""

    reply: Any
    max_tokens: int | None = None
    calls: list[str] = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens}  # as ChatLlamaCpp and the API models report it

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        text = "\n".join(str(m.content) for m in messages)
        self.calls.append(text)
        body = json.dumps({"summary": self.reply(text), "inference_chain": [], "mind_map": {"label": "a"}})
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=body))])


def _use(monkeypatch, model):
    monkeypatch.setattr("kgmind.llm.get_chat_model", lambda name: model)
    return model


def _oracle(items):
    """A fake LLM that answers each question with its reference answer."""
    refs = {it.question: it.reference for it in items}

    def answer(prompt):
        return next(ref for q, ref in refs.items() if q in prompt)

    return _Scripted(reply=answer, calls=[])


def test_dev_and_gold203_items():
    dev, info = build_items(_genmed())
    assert [it.id for it in dev] == ["0", "1", "2", "4"]
    assert dev[0].entities == ["Panic attacks", "Frequent panic attacks"]
    assert dev[0].gold_diseases == [("panic disorder",)]
    assert info["derived_vs_output_kg"]["rows"] == 3
    g203, _ = build_items(_genmed(split="gold203"))
    assert [it.id for it in g203] == ["0#0", "1#1", "1#2"]
    assert g203[2].gold_names == ["Vocal cord polyp"]
    with pytest.raises(ValueError, match="split"):
        build_items(_genmed(split="holdout"))


def test_answer_metrics_with_oracle_llm(tmp_path, monkeypatch):
    cfg = _genmed(methods="llm_only,bm25_doc", llm="scripted", llm_cache=str(tmp_path / "c.sqlite"))
    items, _ = build_items(cfg)
    llm = _use(monkeypatch, _oracle(items))
    res = run_eval(cfg)
    only = res["methods"]["llm_only"]
    assert only["answer_entity_recall"] == pytest.approx(1.0)  # gold is derived from the reference
    assert only["rouge_l"] == pytest.approx(1.0)
    assert only["bleu4"] == pytest.approx(1.0)
    assert only["llm_calls_mean"] == 1.0  # the answer call
    assert only["grounded"] == 0.0  # no evidence to cite
    # one call per distinct prompt: warm-up and memory passes, and a question whose BM25
    # evidence is empty (the same prompt as llm_only), hit the cache
    ran = len(llm.calls)
    assert len(items) < ran <= 2 * len(items)
    assert all("Patient input" in c for c in llm.calls)  # the shipped MindMap prompt, for both methods
    run_eval(cfg)  # a rerun is answered from the cache
    assert len(llm.calls) == ran


def test_explaincpe_accuracy_with_fixed_llm(tmp_path, monkeypatch):
    cfg = _llm_only("explaincpe", "explaincpe_test.json", tmp_path)
    llm = _use(monkeypatch, _Scripted(reply=lambda p: "答案：D", calls=[]))
    res = run_eval(cfg)
    assert all("A. " in c and "答案：X" in c for c in llm.calls)  # the options reach the prompt
    assert res["n"] == 2
    assert res["methods"]["llm_only"]["accuracy"] == pytest.approx(0.5)  # gold D, B


def test_medical_dialogue_zh_answer_metrics(tmp_path, monkeypatch):
    cfg = _llm_only("medical_dialogue_zh", "medical_dialogue_zh", tmp_path, bertscore=False)
    items, _ = build_items(cfg)
    _use(monkeypatch, _oracle(items))
    res = run_eval(cfg)
    assert res["methods"]["llm_only"]["rouge_l"] == pytest.approx(1.0)
    assert res["methods"]["llm_only"]["bleu4"] == pytest.approx(1.0)


def test_cmcqa_items_use_question_kg_and_chinese_gold():
    cfg = EvalConfig(dataset="cmcqa", qa=str(FIX / "qa_ner.jsonl"), vocab=str(FIX / "cmckg_entity_dict"))
    items, _ = build_items(cfg)
    assert items[0].entities[0] == "小儿金翘颗粒"
    assert items[0].gold_names == ["感冒", "血常规", "小儿金翘颗粒"]
    assert items[0].gold_diseases == [("感冒",)]
    assert items[1].gold_names == ["扁桃体结石", "清咽利喉颗粒"]


def test_cmcqa_calib_and_test_partition_every_row():
    base = {"dataset": "cmcqa", "qa": str(FIX / "qa_ner.jsonl"), "vocab": str(FIX / "cmckg_entity_dict")}
    every = [it.id for it in build_items(EvalConfig(**base))[0]]
    calib = [it.id for it in build_items(EvalConfig(**base, split="calib"))[0]]
    test, info = build_items(EvalConfig(**base, split="test"))
    assert sorted(calib + [it.id for it in test]) == sorted(every)
    assert not set(calib) & {it.id for it in test}
    assert all(in_calibration(i, set()) for i in calib)
    assert "outside calib" in info["split_rule"]


def test_question_text_appends_the_options():
    items, _ = build_items(EvalConfig(dataset="explaincpe", qa=str(FIX / "explaincpe_test.json")))
    q = question_text(items[0])
    assert q.startswith(items[0].question) and "A. " in q and "E. " in q
    plain, _ = build_items(_genmed())
    assert question_text(plain[0]) == plain[0].question
    assert mt.extract_choice("答案：B") == "B"


def test_max_tokens_limits_the_model_and_keys_the_cache(tmp_path, monkeypatch):
    base = _Scripted(reply=lambda p: "ok", calls=[])
    _use(monkeypatch, base)
    cache = str(tmp_path / "cache.sqlite")
    cfg = _genmed(methods="llm_only", llm="scripted", llm_cache=cache, max_tokens=64)
    res = run_eval(cfg)
    assert res["max_tokens"] == 64
    n = len(base.calls)
    assert n == res["n"]
    run_eval(cfg)
    assert len(base.calls) == n  # same limit: every answer from the cache
    run_eval(_genmed(methods="llm_only", llm="scripted", llm_cache=cache, max_tokens=32))
    assert len(base.calls) == 2 * n  # another limit is another cache key: no stale hit


def test_calib_and_test_partition_dev():
    dev, _ = build_items(_genmed())
    calib, info = build_items(_genmed(split="calib"))
    test, _ = build_items(_genmed(split="test"))
    assert sorted(it.id for it in calib + test) == sorted(it.id for it in dev)
    assert not {it.id for it in calib} & {it.id for it in test}
    annotated = {it.id.split("#")[0] for it in build_items(_genmed(split="gold203"))[0]}
    assert annotated and annotated <= {it.id for it in calib} | (annotated - {it.id for it in dev})
    assert "calibration" in info["split_rule"]


def test_calibration_membership_is_a_stable_hash():
    from kgmind.eval.items import CALIB_ONE_IN, in_calibration

    ids = [str(i) for i in range(5000)]
    share = sum(in_calibration(i, set()) for i in ids) / len(ids)
    assert abs(share - 1 / CALIB_ONE_IN) < 0.02
    assert in_calibration("17", {"17"})
    assert [in_calibration(i, set()) for i in ids[:50]] == [in_calibration(i, set()) for i in ids[:50]]


def test_interleaved_run_visits_every_method_per_item_and_scores_the_same(tmp_path, monkeypatch):
    items, _ = build_items(_genmed())
    llm = _use(monkeypatch, _oracle(items))
    by_method = run_eval(
        _genmed(methods="llm_only,bm25_doc", llm="scripted", llm_cache=str(tmp_path / "a.sqlite"))
    )
    llm.calls.clear()
    cfg = _genmed(methods="llm_only,bm25_doc", llm="scripted", llm_cache=str(tmp_path / "b.sqlite"))
    cfg.interleave = True
    interleaved = run_eval(cfg)
    for name in ("llm_only", "bm25_doc"):
        for key in ("answer_entity_recall", "rouge_l", "evidence_recall"):
            assert interleaved["methods"][name].get(key) == by_method["methods"][name].get(key)
    # each question is answered by both methods before the next one (cache hits make no call)
    asked = [next(i for i, it in enumerate(items) if it.question in c) for c in llm.calls[2:]]
    assert len(asked) > 2 and asked == sorted(asked)


@pytest.mark.parametrize(
    ("dataset", "kg", "fmt", "expected"),
    [
        ("cmcqa", None, None, ("eval-cmckg-recrawl", "cmckg/recrawl_full", "recrawl-json")),
        ("genmedgpt5k", None, None, ("eval-emckg-full", "emckg/format_dataset.csv", "chatdoctor")),
        ("cmcqa", "my.tsv", "triples", ("eval-cmckg-recrawl", "my.tsv", "triples")),
        ("genmedgpt5k", "my.csv", None, ("eval-emckg-full", "my.csv", "chatdoctor")),
    ],
)
def test_each_data_set_gets_its_own_default_kg(
    dataset: str,
    kg: str | None,
    fmt: str | None,
    expected: tuple[str, str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import kgmind.importers
    import kgmind.stores.factory
    from kgmind.eval.kg import prepare_store

    imported: list[tuple[str, str]] = []

    class EmptyStore:
        def __init__(self, uri: str, *, create: bool | None = None) -> None:
            self.uri = uri
            assert create is True  # prepare_store imports a KG here, so it may create the store

        def stats(self) -> Any:
            return type("Stats", (), {"entities_total": 0})()

    monkeypatch.setattr(kgmind.stores.factory, "open_store", EmptyStore)
    monkeypatch.setattr(
        kgmind.importers, "import_kg", lambda path, f, store, progress: imported.append((path, f))
    )
    uri = prepare_store(EvalConfig(dataset=dataset, kg=kg, kg_format=fmt))
    name, path, f = expected
    assert uri is not None and uri.endswith(name)
    assert len(imported) == 1 and imported[0][0].endswith(path) and imported[0][1] == f


def test_a_data_set_without_a_default_kg_needs_a_store() -> None:
    from kgmind.eval.kg import prepare_store

    assert prepare_store(EvalConfig(dataset="explaincpe")) is None
