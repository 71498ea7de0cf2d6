"""Method registry, budget fitting and the document baselines on fixture documents."""

from pathlib import Path

import pytest

from kgmind.eval import methods as me
from kgmind.models import Evidence

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "eval"


class _Res(me.Resources):
    """Whitespace tokens, plain rendering: budget arithmetic is exact."""

    def count_tokens(self, text):
        return len(text.split())

    def render(self, ev):
        return ev.text


def _ev(text):
    return Evidence(kind="doc", text=text)


def test_fit_budget_keeps_prefix_within_budget():
    res = _Res(docs_dir=FIX / "disease_documents")
    evs = [_ev("a b c"), _ev("d e"), _ev("f g h i"), _ev("j")]
    kept = me.fit_budget(evs, 6, res)
    assert [e.text for e in kept] == ["a b c", "d e"]  # stops at the first item that does not fit
    assert me.fit_budget(evs, 100, res) == evs
    cut = me.fit_budget([_ev("w1 w2 w3 w4 w5")], 3, res)
    assert cut[0].text == "w1 w2 w3" and cut[0].meta["truncated"] is True
    assert me.fit_budget([], 5, res) == []


def test_resolve_and_check_methods():
    assert me.resolve_methods("all") == list(me.METHODS)
    assert me.resolve_methods("bm25_doc, llm_only") == ["bm25_doc", "llm_only"]
    with pytest.raises(ValueError, match="unknown method"):
        me.resolve_methods("bm25_doc,nope")
    ok, disabled = me.check_methods(["llm_only", "mindmap", "kgmind"], has_store=False)
    assert ok == ["llm_only"]
    assert disabled == {"mindmap": "no KG store", "kgmind": "no KG store"}


def test_bm25_doc_ranks_the_matching_disease_first():
    res = _Res(docs_dir=FIX / "disease_documents")
    out = me.bm25_doc("I have a hoarse voice and difficulty speaking", [], res, budget=10_000)
    assert out.llm_calls == 0
    assert "Vocal cord polyp" in out.evidence[0].text
    assert out.evidence[0].source == "doc:1"
    one = me.bm25_doc("hoarse voice", [], res, budget=len(out.evidence[0].text.split()))
    assert len(one.evidence) == 1


def test_llm_only_has_no_evidence():
    assert me.llm_only("q", ["x"], _Res(), 800).evidence == []


class _FakeLLM:
    seconds = 0.0

    def __init__(self):
        self.prompts = []

    def invoke(self, prompt):
        self.prompts.append(prompt)
        return "Likely panic disorder."


def test_hypothesis_recorded_with_and_without_llm():
    out = me.MethodResult()
    assert me._hypothesis("q?", _Res(), out) == "" and out.notes == ["hypothesis=question (no LLM)"]
    out = me.MethodResult()
    llm = _FakeLLM()
    assert me._hypothesis("q?", _Res(llm=llm), out) == "Likely panic disorder."
    assert out.llm_calls == 1 and "q?" in llm.prompts[0]
