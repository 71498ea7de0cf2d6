"""Method registry, budget fitting and the document baselines on fixture documents."""

from pathlib import Path

import pytest

from kgmind.eval import methods as me

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "eval"


def test_resolve_and_check_methods():
    assert me.resolve_methods("all") == list(me.DEFAULT_METHODS)
    assert "kgmind" in me.DEFAULT_METHODS and "kgmind_mindmap" not in me.DEFAULT_METHODS
    assert me.resolve_methods("bm25_doc, llm_only") == ["bm25_doc", "llm_only"]
    with pytest.raises(ValueError, match="unknown method"):
        me.resolve_methods("bm25_doc,nope")
    ok, disabled = me.check_methods(["llm_only", "mindmap", "kgmind"], has_store=False)
    assert ok == ["llm_only"]
    assert disabled == {"mindmap": "no KG store", "kgmind": "no KG store"}


def test_bm25_doc_ranks_the_matching_disease_first():
    res = me.Resources(docs_dir=FIX / "disease_documents")
    out = me.bm25_doc("I have a hoarse voice and difficulty speaking", [], res, budget=10_000)
    assert out.llm_calls == 0
    assert "Vocal cord polyp" in out.evidence[0].text
    assert out.evidence[0].source == "doc:1"
    one = me.bm25_doc("hoarse voice", [], res, budget=res.count_tokens(out.evidence[0].text) + 2)
    assert len(one.evidence) == 1


def test_llm_only_has_no_evidence():
    assert me.METHODS["llm_only"].func("q", ["x"], me.Resources(), 800).evidence == []


def test_graph_methods_name_their_modes():
    assert {n: s.graph_mode for n, s in me.METHODS.items() if s.graph_mode} == me.GRAPH_MODES
    assert me.METHODS["mindmap"].graph_mode is None  # the faithful baseline is not the graph


def test_context_is_the_shipped_default_plus_the_run():
    from kgmind.graphs.context import Context

    res = me.Resources(store_uri="ladybug:/x", seed=3)
    ctx = res.context("full", 500)
    default = Context()
    assert (ctx.mode, ctx.store, ctx.budget_tokens, ctx.seed, ctx.hypothesis) == (
        "full",
        "ladybug:/x",
        500,
        3,
        False,
    )
    same = (
        "max_linked",
        "max_hops",
        "max_paths",
        "max_neighbors",
        "max_chains",
        "dfs_chains",
        "weight_aware",
    )
    assert all(getattr(ctx, k) == getattr(default, k) for k in same)
    with_llm = me.Resources(store_uri="ladybug:/x", model="fake:t", max_tokens=64).context("kgcot", 800)
    assert (with_llm.model, with_llm.max_tokens, with_llm.hypothesis) == ("fake:t", 64, True)
    ablation = me.Resources(context_overrides={"weight_aware": False}).context("full", 800)
    assert ablation.weight_aware is False


def test_hykge_hypothesis_recorded_without_llm():
    out = me.MethodResult()
    assert me._hykge_hypothesis("q?", me.Resources(), out) == ""
    assert out.notes == ["hypothesis=question (no LLM)"] and out.llm_calls == 0
