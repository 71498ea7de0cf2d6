"""reason_mindmap, reason_kgcot, check_grounding, request_feedback and apply_feedback with fakes."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from langgraph.runtime import Runtime

from entity_fakes import FeedbackLedgerStore
from evidence_fixtures import evidence_item, flu_case
from kgmind.graphs import services
from kgmind.graphs.apply_feedback import apply_feedback, apply_rating
from kgmind.graphs.check_grounding import check_grounding, cited_ids, grounding_report
from kgmind.graphs.context import Context
from kgmind.graphs.reason_kgcot import chain_text, knowledge_text, reason_kgcot
from kgmind.graphs.reason_mindmap import answer_schema, reason_mindmap, root_label
from kgmind.graphs.request_feedback import request_feedback
from kgmind.models import Evidence
from kgmind.prompts.schemas import GroundedAnswer, InferenceStep, MindMapAnswer, MindMapNode


def _rt(**kw: Any) -> Runtime[Context]:
    return Runtime(context=Context(**kw))


EVIDENCE = flu_case()

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
    out = reason_mindmap(state, _rt(answer_schema="free"))
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


@pytest.mark.parametrize("evidence", [EVIDENCE, []])
def test_a_grounded_answers_root_is_the_patients_input(
    monkeypatch: pytest.MonkeyPatch, evidence: list[Evidence]
) -> None:
    question = "I have had a fever and a cough for three days, and my whole body aches. What could it be?"
    written = GroundedAnswer.model_validate(
        {
            "inference_chain": [{"step": "fever suggests flu", "evidence_ids": ["P1"] if evidence else []}],
            "mind_map": {
                "label": "Patient's problem as the root",  # what the 0.5B model writes there
                "children": [{"label": "Influenza", "evidence_ids": ["P1"] if evidence else []}],
            },
            "summary": "Influenza.",
        }
    )
    _capture(monkeypatch, written)
    state: Any = {"question": question, "language": "en", "selected_evidence": evidence}
    out = reason_mindmap(state, _rt())
    assert out["mind_map"]["label"] == root_label(question)
    cut = "I have had a fever and a cough for three days, and my whole body aches. What…"
    assert out["mind_map"]["label"] == cut
    assert out["mind_map"]["children"][0]["label"] == "Influenza"


def test_texts_the_decoder_cut_end_where_a_reader_can_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    class ChatLlamaCpp(GenericFakeChatModel):  # read as the local model: its decoder reports cut strings
        pass

    summary = "Influenza fits the fever and aches best. Oseltamivir shortens it if taken early. Rest and dri"
    cut_step = "Fever may be a sign of Influenza, which spreads in win"
    written = {
        "inference_chain": [
            {"evidence_ids": ["P1"], "about": "Influenza", "step": cut_step},
            {"evidence_ids": ["N1"], "about": "Oseltamivir", "step": "Oseltamivir treats Influenza"},
        ],
        "mind_map": {"label": "x", "children": [{"label": "Influenza", "evidence_ids": ["P1"]}]},
        "diagnoses": [{"disease": "Influenza", "medications": ["Oseltamivir"]}],
        "own_knowledge": ["Fluids hel"],
        "summary": summary,
    }
    reply = AIMessage(
        content=json.dumps(written), response_metadata={"cut_strings": [summary, cut_step, "Fluids hel"]}
    )
    model = ChatLlamaCpp(messages=iter([reply]))
    monkeypatch.setattr(services, "get_llm", lambda ctx, purpose="reason", **kw: model)
    state: Any = {"question": "I have a fever.", "language": "en", "selected_evidence": EVIDENCE}
    out = reason_mindmap(state, _rt())
    said = "Influenza fits the fever and aches best. Oseltamivir shortens it if taken early."
    assert out["answer"].startswith(said + "\nLikely diagnoses: Influenza.")
    assert [s["step"] for s in out["inference_chain"]] == [
        "Fever may be a sign of Influenza, which spreads in…",
        "Oseltamivir treats Influenza",  # ended by the model: kept as written
    ]
    assert out["own_knowledge"] == ["Fluids…"]
    assert out["mind_map"]["children"][0]["label"] == "Influenza"


def test_root_label_cuts_at_a_word_boundary_or_inside_unbroken_text() -> None:
    assert root_label("  I have   a fever. ") == "I have a fever."
    assert root_label("word " * 30, max_chars=22) == "word word word word…"
    assert root_label("发烧" * 50, max_chars=10) == "发烧发烧发烧发烧发烧…"


def test_reason_mindmap_chinese_and_no_evidence(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _capture(monkeypatch, ANSWER)
    out = reason_mindmap(
        {"question": "我发烧了", "language": "zh", "selected_evidence": []}, _rt(answer_schema="free")
    )
    assert seen[0][0].content.startswith("你是一名优秀的AI医生")
    assert "没有可用的知识图谱证据" in seen[0][2].content
    assert out["flags"]["no_kg_evidence"] is True


def test_reason_mindmap_llm_only_ignores_evidence(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _capture(monkeypatch, ANSWER)
    state: Any = {"question": "q", "language": "en", "selected_evidence": EVIDENCE}
    reason_mindmap(state, _rt(mode="llm_only", answer_schema="free"))
    assert "P1:" not in seen[0][2].content


def test_reason_mindmap_tolerates_text_only_model(monkeypatch: pytest.MonkeyPatch) -> None:
    text = (
        "Output 1: You most likely have influenza.\n"
        "Output 2: Fever (P1) -> Influenza -> treated with Oseltamivir (N1)\n"
        "Output 3:\n- Influenza (P1)\n  - Oseltamivir (N1)\n"
    )
    model = GenericFakeChatModel(messages=iter([AIMessage(content=text)]))
    monkeypatch.setattr(services, "get_llm", lambda ctx, purpose="reason", **kw: model)
    out = reason_mindmap(
        {"question": "q", "language": "en", "selected_evidence": EVIDENCE}, _rt(answer_schema="free")
    )
    assert out["answer"] == "You most likely have influenza."
    assert set(cited_ids(out["inference_chain"], out["mind_map"])) == {"P1", "N1"}
    assert out["flags"]["fallback_parse"] is True


def test_kgcot_prompt_has_chain_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _capture(monkeypatch, ANSWER)
    ev = evidence_item(
        "K1",
        "Fever may be a sign of Influenza, treated with Oseltamivir.",
        ("Fever", "possible_disease", "Influenza"),
        ("Influenza", "need_medication", "Oseltamivir"),
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
        [{"step": "the fever suggests influenza", "evidence_ids": ["P1"]}],
        {"label": "q", "children": [{"label": "influenza", "evidence_ids": [], "children": []}]},
    )
    assert report["flagged"] == [] and report["grounded"] is True and report["cited_ids"] == ["P1"]
    assert report["citation_support"] == 1.0
    assert report["citation_rate"] == 0.5  # the mind-map node cites nothing


def test_citation_support_passes_when_the_cited_item_names_the_entity() -> None:
    chain = [
        {"step": "Oseltamivir is the drug to use", "evidence_ids": ["N1"]},  # N1 names Oseltamivir
        {"about": "Fever", "step": "it points to the flu", "evidence_ids": ["P1"]},  # about names Fever
    ]
    mind_map = {"label": "q", "children": [{"label": "Influenza", "evidence_ids": ["P1", "N1"]}]}
    report = grounding_report(EVIDENCE, chain, mind_map)
    assert report["unsupported_citations"] == [] and report["citation_support"] == 1.0
    assert report["citation_rate"] == 1.0 and report["grounded"] is True


def test_citation_support_fails_when_the_cited_item_names_nothing_the_step_names() -> None:
    chain = [
        {"step": "Oseltamivir is the drug to use", "evidence_ids": ["P1"]},  # P1 is about fever/influenza
        {"step": "rest and fluids help", "evidence_ids": ["N1"]},  # names no evidence entity
        {"step": "influenza is likely", "evidence_ids": ["P1"]},  # supported
    ]
    mind_map = {"label": "q", "children": [{"label": "Fever", "evidence_ids": ["N1"]}]}  # N1 lacks Fever
    report = grounding_report(EVIDENCE, chain, mind_map)
    assert [u.split(" ")[0] for u in report["unsupported_citations"]] == ["P1", "N1", "N1"]
    assert report["citation_support"] == 0.25 and report["citation_rate"] == 1.0
    assert report["grounded"] is False and len(report["flagged"]) == 3


def test_derived_structure_is_never_grounded() -> None:
    chain = [{"step": "influenza is likely", "evidence_ids": ["P1"]}]
    report = grounding_report(EVIDENCE, chain, {"label": "q", "children": []}, derived=True)
    assert report["flagged"] == [] and report["derived"] is True and report["grounded"] is False


def test_check_grounding_node() -> None:
    state: Any = {
        "selected_evidence": EVIDENCE,
        "inference_chain": [{"step": "s", "evidence_ids": ["C4"]}],
        "mind_map": {"label": "q", "children": []},
    }
    state["mind_map"] = {"label": "q", "children": [{"label": "Influenza", "evidence_ids": ["P1", "Z7"]}]}
    out = check_grounding(state, _rt())
    assert out["grounding"]["flagged"][:2] == ["C4", "Z7"]
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


def _ledger_apply(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Replace the store write by a ledger: record the call and the applied feedback id."""
    from kgmind.stores import feedback as fb

    calls: list[Any] = []

    def fake_apply(store: Any, run_id: str, rating: str, rel_ids: Any, feedback_id: str = "") -> list[Any]:
        calls.append((run_id, rating, list(rel_ids)))
        store.applied.add(feedback_id)
        return [SimpleNamespace(relation_id=rid) for rid in rel_ids]

    monkeypatch.setattr(fb, "apply_feedback", fake_apply)
    return calls


KGCOT_CHAIN = evidence_item(
    "K1",
    "Fever may be a sign of Influenza, and Influenza can be treated with Oseltamivir.",
    ("Fever", "possible_disease", "Influenza"),
    ("Influenza", "need_medication", "Oseltamivir"),
    relation_ids=["r1", "r3"],
)


def test_rating_credits_the_cited_evidence(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _ledger_apply(monkeypatch)
    store = FeedbackLedgerStore()
    values = {
        "run_id": "run-1",
        "selected_evidence": EVIDENCE,
        "inference_chain": [{"step": "s", "evidence_ids": ["N1"]}],
        "mind_map": {"label": "q", "children": []},
    }
    out = apply_rating(store, values, "poor")
    assert calls == [("run-1", "poor", ["r2"])]
    assert out["credit"] == "cited" and out["credited_ids"] == ["N1"] and "N1" in out["reason"]
    assert out["relation_ids"] == ["r2"] and out["changes"] == 1 and out["applied"] is True
    again = apply_rating(store, values, "poor")  # the same feedback id: applied once
    assert again["already_applied"] is True and "already applied" in again["reason"] and len(calls) == 1
    out = apply_rating(store, values, None)  # no rating: nothing is written
    assert out["applied"] is False and len(calls) == 1


def test_rating_citing_nothing_credits_all_shown_evidence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _ledger_apply(monkeypatch)
    values = {"run_id": "run-2", "selected_evidence": EVIDENCE, "inference_chain": [], "mind_map": {}}
    out = apply_rating(FeedbackLedgerStore(), values, "excellent")
    assert out["credit"] == "shown" and "cited none" in out["reason"]
    assert calls == [("run-2", "excellent", ["r1", "r2"])] and out["changes"] == 2


def test_kgcot_rating_credits_the_k_chains(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _ledger_apply(monkeypatch)
    shown = [*EVIDENCE, KGCOT_CHAIN]
    cited_path = {"step": "s", "evidence_ids": ["P1"]}
    values = {"run_id": "k", "mode": "kgcot", "selected_evidence": shown, "inference_chain": [cited_path]}
    out = apply_rating(FeedbackLedgerStore(), values, "excellent")
    assert out["credit"] == "kgcot_shown" and out["credited_ids"] == ["K1"]  # P1 is no K chain
    assert calls[-1] == ("k", "excellent", ["r1", "r3"])
    values["inference_chain"] = [{"step": "s", "evidence_ids": ["K1"]}]
    values["run_id"] = "k2"
    out = apply_rating(FeedbackLedgerStore(), values, "poor")
    assert out["credit"] == "kgcot_cited" and calls[-1] == ("k2", "poor", ["r1", "r3"])


def test_rating_without_evidence_explains_why_nothing_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _ledger_apply(monkeypatch)
    out = apply_rating(FeedbackLedgerStore(), {"run_id": "n", "selected_evidence": []}, "excellent")
    assert out["applied"] is False and out["changes"] == 0 and calls == []
    assert "no KG evidence" in out["reason"]


def test_apply_feedback_node_records_result(monkeypatch: pytest.MonkeyPatch) -> None:
    _ledger_apply(monkeypatch)
    store = FeedbackLedgerStore()
    monkeypatch.setattr(services, "get_store", lambda uri: store)
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


def test_kgcot_chain_with_a_gap_is_written_as_segments() -> None:
    from kgmind.graphs.reason_kgcot import chain_text
    from kgmind.models import Evidence

    whole = Evidence(kind="kgcot", triples=[("A", "r1", "B"), ("B", "r2", "C")], relation_ids=["1", "2"])
    assert chain_text(whole) == "A -> r1 -> B -> r2 -> C"
    gap = Evidence(kind="kgcot", triples=[("X", "r1", "A"), ("B", "r3", "Y")], relation_ids=["1", "3"])
    assert chain_text(gap) == "X -> r1 -> A; B -> r3 -> Y"  # never "A -> r3 -> Y"


def test_answer_schema_reads_the_types_the_evidence_carries_without_the_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_store(uri: Any) -> Any:
        raise AssertionError("the evidence carries the types: no store lookup")

    monkeypatch.setattr(services, "get_store", no_store)
    typed = [
        ev.model_copy(
            update={
                "entity_ids": ["e-" + n for n in ev.triples[0][::2]],
                "entity_types": {"Fever": "symptom", "Influenza": "disease", "Oseltamivir": "medication"},
            }
        )
        for ev in EVIDENCE
    ]
    diagnoses = answer_schema(typed, Context())["properties"]["diagnoses"]["items"]["anyOf"]
    assert [v["properties"]["disease"]["const"] for v in diagnoses] == ["Influenza"]
    assert diagnoses[0]["properties"]["medications"]["items"]["enum"] == ["Oseltamivir"]


def test_answer_schema_asks_the_store_only_for_items_written_without_types(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[list[str]] = []

    class Store:
        def get_entities(self, ids: list[str]) -> list[Any]:
            asked.append(ids)
            return [SimpleNamespace(name="Oseltamivir", type="medication")]

    monkeypatch.setattr(services, "get_store", lambda uri: Store())
    typed = EVIDENCE[0].model_copy(
        update={
            "entity_ids": ["e-fever", "e-flu"],
            "entity_types": {"Fever": "symptom", "Influenza": "disease"},
        }
    )
    old = EVIDENCE[1].model_copy(update={"entity_ids": ["e-flu", "e-osel"]})  # a checkpoint from before
    diagnoses = answer_schema([typed, old], Context())["properties"]["diagnoses"]["items"]["anyOf"]
    assert asked == [["e-flu", "e-osel"]]
    assert diagnoses[0]["properties"]["medications"]["items"]["enum"] == ["Oseltamivir"]
