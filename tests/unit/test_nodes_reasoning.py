"""reason_mindmap, reason_kgcot, check_grounding, request_feedback and apply_feedback with fakes."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from langgraph.runtime import Runtime

from kgmind.graphs import services
from kgmind.graphs.apply_feedback import apply_feedback, apply_rating
from kgmind.graphs.check_grounding import check_grounding, cited_ids, grounding_report
from kgmind.graphs.context import Context
from kgmind.graphs.reason_kgcot import chain_text, knowledge_text, reason_kgcot
from kgmind.graphs.reason_mindmap import reason_mindmap
from kgmind.graphs.request_feedback import request_feedback
from kgmind.models import Evidence
from kgmind.prompts.schemas import InferenceStep, MindMapAnswer, MindMapNode


def _rt(**kw: Any) -> Runtime[Context]:
    return Runtime(context=Context(**kw))


EVIDENCE = [
    Evidence(
        id="P1",
        kind="path",
        text="Fever may be a sign of Influenza.",
        triples=[("Fever", "possible_disease", "Influenza")],
        relation_ids=["r1"],
    ),
    Evidence(
        id="N1",
        kind="neighbor",
        text="Influenza can be treated with Oseltamivir.",
        triples=[("Influenza", "need_medication", "Oseltamivir")],
        relation_ids=["r2"],
    ),
]

ANSWER = MindMapAnswer(
    summary="Influenza; take oseltamivir.",
    inference_chain=[InferenceStep(step="fever suggests flu", evidence_ids=["P1"])],
    mind_map=MindMapNode(
        label="patient",
        children=[
            MindMapNode(label="Influenza", evidence_ids=["P1"], children=[MindMapNode(label="Oseltamivir")])
        ],
    ),
)


def _capture(monkeypatch: pytest.MonkeyPatch, result: Any) -> list[Any]:
    seen: list[Any] = []

    def fake(messages: Any) -> Any:
        seen.append(messages)
        return result

    monkeypatch.setattr(services, "get_llm", lambda ctx, purpose="reason", **kw: RunnableLambda(fake))
    return seen


def test_reason_mindmap_prompt_and_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _capture(monkeypatch, ANSWER)
    state: Any = {"question": "I have a fever.", "language": "en", "selected_evidence": EVIDENCE}
    out = reason_mindmap(state, _rt())
    system, patient, knowledge, instruction = seen[0]
    assert system.content.startswith("You are an excellent AI doctor")
    assert patient.content == "Patient input: I have a fever."
    assert knowledge.type == "ai"
    assert '<evidence>\n"""\nP1: Fever may be a sign of Influenza.\nN1: ' in knowledge.content
    assert "own knowledge" in instruction.content and "mind_map" in instruction.content
    assert out["answer"] == "Influenza; take oseltamivir."
    assert out["inference_chain"] == [{"step": "fever suggests flu", "evidence_ids": ["P1"]}]
    assert out["mind_map"]["children"][0]["label"] == "Influenza"
    assert out["llm_calls"] == 1
    assert out["flags"] == {"fallback_parse": False, "no_kg_evidence": False}


def test_reason_mindmap_chinese_and_no_evidence(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _capture(monkeypatch, ANSWER)
    out = reason_mindmap({"question": "我发烧了", "language": "zh", "selected_evidence": []}, _rt())
    assert seen[0][0].content.startswith("你是一名优秀的AI医生")
    assert "没有可用的知识图谱证据" in seen[0][2].content
    assert out["flags"]["no_kg_evidence"] is True


def test_reason_mindmap_llm_only_ignores_evidence(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _capture(monkeypatch, ANSWER)
    reason_mindmap({"question": "q", "language": "en", "selected_evidence": EVIDENCE}, _rt(mode="llm_only"))
    assert "P1:" not in seen[0][2].content


def test_reason_mindmap_tolerates_text_only_model(monkeypatch: pytest.MonkeyPatch) -> None:
    text = (
        "Output 1: You most likely have influenza.\n"
        "Output 2: Fever (P1) -> Influenza -> treated with Oseltamivir (N1)\n"
        "Output 3:\n- Influenza (P1)\n  - Oseltamivir (N1)\n"
    )
    model = GenericFakeChatModel(messages=iter([AIMessage(content=text)]))
    monkeypatch.setattr(services, "get_llm", lambda ctx, purpose="reason", **kw: model)
    out = reason_mindmap({"question": "q", "language": "en", "selected_evidence": EVIDENCE}, _rt())
    assert out["answer"] == "You most likely have influenza."
    assert set(cited_ids(out["inference_chain"], out["mind_map"])) == {"P1", "N1"}
    assert out["flags"]["fallback_parse"] is True


def test_kgcot_prompt_has_chain_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _capture(monkeypatch, ANSWER)
    ev = Evidence(
        id="K1",
        kind="kgcot",
        text="Fever may be a sign of Influenza, treated with Oseltamivir.",
        triples=[("Fever", "possible_disease", "Influenza"), ("Influenza", "need_medication", "Oseltamivir")],
        meta={"knowledge": ["Influenza is a viral infection."]},
    )
    out = reason_kgcot({"question": "fever?", "language": "en", "selected_evidence": [ev]}, _rt(mode="kgcot"))
    contents = [m.content for m in seen[0]]
    assert any("How to read a chain" in c for c in contents)
    assert (
        "Chain K1 is: Fever -> possible_disease -> Influenza -> need_medication -> Oseltamivir."
        in contents[4]
    )
    assert "The knowledge of chain K1 is: Influenza is a viral infection." in contents[4]
    assert contents[-1].startswith("Question: fever?")
    assert out["llm_calls"] == 1


def test_chain_and_knowledge_text_fallbacks() -> None:
    ev = Evidence(kind="kgcot", text="plain sentence")
    assert chain_text(ev) == "plain sentence"
    assert knowledge_text(ev) == "plain sentence"


def test_grounding_flags_unknown_ids_and_unsupported_labels() -> None:
    chain = [{"step": "s", "evidence_ids": ["P1", "P9"]}]
    mind_map = {
        "label": "root",
        "evidence_ids": [],
        "children": [
            {"label": "Influenza", "evidence_ids": [], "children": []},  # named in the evidence
            {"label": "Oseltamivir", "evidence_ids": ["N1"], "children": []},  # cited valid id
            {"label": "Malaria", "evidence_ids": [], "children": []},  # not in evidence
            {"label": "Zika", "evidence_ids": ["X3"], "children": []},  # invalid id, unknown label
        ],
    }
    report = grounding_report(EVIDENCE, chain, mind_map)
    assert report["unknown_ids"] == ["P9", "X3"]
    assert "Malaria" in report["ungrounded_nodes"] and "Zika" in report["ungrounded_nodes"]
    assert "Influenza" not in report["ungrounded_nodes"] and "Oseltamivir" not in report["ungrounded_nodes"]
    assert report["flagged"][0] == "P9"
    assert report["grounded"] is False


def test_grounding_clean_answer() -> None:
    report = grounding_report(
        EVIDENCE,
        [{"step": "s", "evidence_ids": ["P1"]}],
        {"label": "q", "children": [{"label": "influenza", "evidence_ids": [], "children": []}]},
    )
    assert report["flagged"] == [] and report["grounded"] is True and report["cited_ids"] == ["P1"]


def test_check_grounding_node() -> None:
    state: Any = {
        "selected_evidence": EVIDENCE,
        "inference_chain": [{"step": "s", "evidence_ids": ["C4"]}],
        "mind_map": {"label": "q", "children": []},
    }
    state["mind_map"] = {"label": "q", "children": [{"label": "Influenza", "evidence_ids": ["P1", "Z7"]}]}
    out = check_grounding(state, _rt())
    assert out["grounding"]["flagged"] == ["C4", "Z7"]
    assert out["flags"] == {"ungrounded": True}
    # The returned citations keep only real evidence ids; the report keeps what the model wrote.
    assert out["inference_chain"] == [{"step": "s", "evidence_ids": []}]
    assert out["mind_map"]["children"][0]["evidence_ids"] == ["P1"]


def test_request_feedback_off_and_auto() -> None:
    assert request_feedback({"answer": "a"}, _rt())["feedback"] == {"rating": None, "source": "off"}
    out = request_feedback({"answer": "influenza and oseltamivir", "reference": ""}, _rt(feedback="auto"))
    assert out["feedback"]["rating"] is None
    good = request_feedback(
        {"answer": "you have influenza take oseltamivir", "reference": "you have influenza take oseltamivir"},
        _rt(feedback="auto"),
    )
    assert good["feedback"]["rating"] == "excellent" and good["feedback"]["score"] == pytest.approx(1.0)


def test_apply_rating_uses_cited_edges_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from kgmind.tools import feedback as fb

    calls: list[Any] = []

    def fake_apply(store: Any, run_id: str, rating: str, rel_ids: Any) -> list[str]:
        calls.append((store, run_id, rating, list(rel_ids)))
        return ["c1", "c2"]

    monkeypatch.setattr(fb, "apply_feedback", fake_apply)
    values = {
        "run_id": "run-1",
        "selected_evidence": EVIDENCE,
        "inference_chain": [{"step": "s", "evidence_ids": ["N1"]}],
        "mind_map": {"label": "q", "children": []},
    }
    store: Any = "STORE"
    out = apply_rating(store, values, "poor")
    assert calls == [("STORE", "run-1", "poor", ["r2"])]
    assert out["relation_ids"] == ["r2"] and out["changes"] == 2 and out["applied"] is True
    # No rating: nothing is written.
    out = apply_rating(store, values, None)
    assert out["applied"] is False and len(calls) == 1


def test_apply_feedback_node_records_result(monkeypatch: pytest.MonkeyPatch) -> None:
    from kgmind.tools import feedback as fb

    monkeypatch.setattr(services, "get_store", lambda uri: "STORE")
    monkeypatch.setattr(fb, "apply_feedback", lambda store, run_id, rating, rel_ids: ["c"])
    state: Any = {
        "run_id": "r",
        "feedback": {"rating": "excellent", "source": "human"},
        "selected_evidence": EVIDENCE,
        "inference_chain": [{"step": "s", "evidence_ids": ["P1"]}],
        "mind_map": {},
    }
    out = apply_feedback(state, _rt())
    assert out["feedback"]["source"] == "human"
    assert out["feedback"]["relation_ids"] == ["r1"] and out["feedback"]["changes"] == 1


def test_prose_only_answer_gets_a_grounded_structure(monkeypatch: pytest.MonkeyPatch) -> None:
    prose = "You most likely have influenza. Oseltamivir can help. Drink water."
    model = GenericFakeChatModel(messages=iter([AIMessage(content=prose)]))
    monkeypatch.setattr(services, "get_llm", lambda ctx, purpose="reason", **kw: model)
    out = reason_mindmap(
        {"question": "I have a fever.", "language": "en", "selected_evidence": EVIDENCE}, _rt()
    )
    assert out["flags"]["fallback_parse"] is True
    mm = out["mind_map"]
    assert mm["label"] == "I have a fever."
    assert [(c["label"], c["evidence_ids"]) for c in mm["children"]] == [
        ("Influenza", ["P1", "N1"]),
        ("Oseltamivir", ["N1"]),
    ]
    steps = out["inference_chain"]
    assert [s["evidence_ids"] for s in steps] == [["N1", "P1"], ["N1"], []]
    report = grounding_report(EVIDENCE, steps, mm)
    assert report["flagged"] == []
