"""The runner with a fake LLM: answer metrics, choice accuracy, Chinese data sets (no model, no KG)."""

from pathlib import Path

import pytest

from kgmind.eval import metrics as mt
from kgmind.eval.llm_cache import CachedLLM
from kgmind.eval.runner import EvalConfig, answer_prompt, build_items, run_eval

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


def _oracle(items):
    """A fake LLM that answers each question with its reference answer."""
    refs = {it.question: it.reference for it in items}

    def answer(prompt):
        return next(ref for q, ref in refs.items() if q in prompt)

    return answer


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
        build_items(_genmed(split="test"))


def test_answer_metrics_with_oracle_llm():
    cfg = _genmed(methods="llm_only,bm25_doc", llm="fake")
    items, _ = build_items(cfg)
    llm = CachedLLM(_oracle(items), "fake")
    res = run_eval(cfg, llm=llm)
    only = res["methods"]["llm_only"]
    assert only["answer_entity_recall"] == pytest.approx(1.0)  # gold is derived from the reference
    assert only["rouge_l"] == pytest.approx(1.0)
    assert only["bleu4"] == pytest.approx(1.0)
    assert only["llm_calls_mean"] == 1.0  # the answer call
    assert only["grounded"] == 0.0  # no evidence to cite
    assert llm.calls == 2 * len(items)


def test_explaincpe_accuracy_with_fixed_llm():
    cfg = EvalConfig(
        dataset="explaincpe",
        qa=str(FIX / "explaincpe_test.json"),
        methods="llm_only",
        llm="fake",
        memory_sample=0,
    )
    res = run_eval(cfg, llm=CachedLLM(lambda p: "答案：D", "fake"))
    assert res["n"] == 2
    assert res["methods"]["llm_only"]["accuracy"] == pytest.approx(0.5)  # gold D, B


def test_medical_dialogue_zh_answer_metrics():
    cfg = EvalConfig(
        dataset="medical_dialogue_zh",
        qa=str(FIX / "medical_dialogue_zh"),
        methods="llm_only",
        llm="fake",
        memory_sample=0,
        bertscore=False,
    )
    items, _ = build_items(cfg)
    res = run_eval(cfg, llm=CachedLLM(_oracle(items), "fake"))
    assert res["methods"]["llm_only"]["rouge_l"] == pytest.approx(1.0)
    assert res["methods"]["llm_only"]["bleu4"] == pytest.approx(1.0)


def test_cmcqa_items_use_question_kg_and_chinese_gold():
    cfg = EvalConfig(dataset="cmcqa", qa=str(FIX / "qa_ner.jsonl"), vocab=str(FIX / "cmckg_entity_dict"))
    items, _ = build_items(cfg)
    assert items[0].entities[0] == "小儿金翘颗粒"
    assert items[0].gold_names == ["感冒", "血常规", "小儿金翘颗粒"]
    assert items[0].gold_diseases == [("感冒",)]
    assert items[1].gold_names == ["扁桃体结石", "清咽利喉颗粒"]


def test_answer_prompt_contains_evidence_and_options():
    p = answer_prompt("Which?", "N1: Gout may be treated with colchicine.", ["x", "y"])
    assert "N1: Gout" in p and "A. x" in p and "B. y" in p
    assert "Knowledge" not in answer_prompt("q", "")
    assert mt.extract_choice("答案：B") == "B"


def test_max_tokens_limits_the_model_and_keys_the_cache(tmp_path, monkeypatch):
    from kgmind.eval import runner

    seen = {}

    class Limited:
        def __init__(self, limit=None):
            self.limit = limit

        def invoke(self, prompt):
            return f"limit={self.limit}"

    monkeypatch.setattr("kgmind.llm.get_chat_model", lambda name: Limited())

    def fake_with_max_tokens(llm, n):
        seen["n"] = n
        return Limited(n)

    monkeypatch.setattr("kgmind.llm.with_max_tokens", fake_with_max_tokens)
    cache = str(tmp_path / "cache.sqlite")
    plain = runner._make_llm(_genmed(llm="local", llm_cache=cache))
    limited = runner._make_llm(_genmed(llm="local", llm_cache=cache, max_tokens=64))
    assert plain is not None and limited is not None
    assert plain.model == "local" and limited.model == "local@max_tokens=64"
    assert seen == {"n": 64}
    assert limited.invoke("q") == "limit=64"
    assert plain.invoke("q") == "limit=None"  # a different cache key: no stale hit from the limited run
    res = run_eval(
        _genmed(methods="llm_only", llm="fake", max_tokens=64), llm=CachedLLM(lambda p: "ok", "fake")
    )
    assert res["max_tokens"] == 64
