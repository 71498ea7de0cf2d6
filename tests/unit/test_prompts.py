"""Prompt templates (English/Chinese twins) and the tolerant output parsers."""

from __future__ import annotations

import pytest

from kgmind.prompts.evidence import render_evidence_prompt
from kgmind.prompts.hypothesis import HYPOTHESIS_EN, HYPOTHESIS_ZH, hypothesis_prompt
from kgmind.prompts.kgcot import build_kgcot_messages
from kgmind.prompts.mindmap import MINDMAP_EN, MINDMAP_ZH, mindmap_prompt
from kgmind.prompts.parsing import extract_json, find_evidence_ids, parse_hypothesis, parse_mindmap_answer


def test_template_variables() -> None:
    assert set(HYPOTHESIS_EN.input_variables) == set(HYPOTHESIS_ZH.input_variables) == {"question"}
    assert set(MINDMAP_EN.input_variables) == set(MINDMAP_ZH.input_variables) == {"question", "evidence"}
    assert set(render_evidence_prompt("zh").input_variables) == {"evidence"}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_prompts_render_with_json_braces(lang: str) -> None:
    msgs = mindmap_prompt(lang).format_messages(question="Q?", evidence="P1: a -> b")
    assert [m.type for m in msgs] == ["system", "human", "ai", "human"]
    assert '"summary"' in msgs[-1].content and '"mind_map"' in msgs[-1].content
    assert "P1: a -> b" in msgs[2].content
    h = hypothesis_prompt(lang).format_messages(question="Q?")
    assert '"entities"' in h[0].content and "Q?" in h[1].content


def test_mindmap_prompt_fits_non_medical_kgs() -> None:
    system = MINDMAP_EN.format_messages(question="q", evidence="e")[0].content
    assert "AI doctor" in system and "not medical" in system


def test_kgcot_messages_structure() -> None:
    msgs = build_kgcot_messages("Q?", [("K1", "a -> r -> b", "know1"), ("K2", "c -> s -> d", "")], "en")
    assert [m.type for m in msgs] == ["system", "human", "ai", "human", "ai", "human", "ai", "human"]
    assert msgs[4].content == "Chain K1 is: a -> r -> b. The knowledge of chain K1 is: know1"
    assert "(no further knowledge)" in msgs[6].content
    zh = build_kgcot_messages("问?", [("K1", "a -> r -> b", "k")], "zh")
    assert str(zh[-1].content).startswith("问题：问?")


def test_find_evidence_ids() -> None:
    assert find_evidence_ids("use [P1], N12 and p3; not KP1 or P1x... C2") == ["P1", "N12", "C2"]


def test_extract_json_repairs() -> None:
    assert extract_json('noise {"a": [1, 2,], } tail') == {"a": [1, 2]}
    assert extract_json("```json\n{'a': 'b'}\n```") == {"a": "b"}
    assert extract_json('{"a": {"b": 1}') == {"a": {"b": 1}}  # truncated output closed
    assert extract_json("no json here") is None


def test_parse_hypothesis_variants() -> None:
    assert parse_hypothesis('{"hypothesis": "flu", "entities": "fever, cough"}').entities == [
        "fever",
        "cough",
    ]
    out = parse_hypothesis("Hypothesis: probably flu\nEntities: fever; flu")
    assert out.hypothesis == "probably flu" and out.entities == ["fever", "flu"]
    zh = parse_hypothesis("可能是感冒。\n实体：发烧、咳嗽")
    assert zh.entities == ["发烧", "咳嗽"]
    assert parse_hypothesis("").hypothesis == ""


def test_parse_mindmap_json_with_alternative_keys() -> None:
    text = (
        'Here: {"answer": "Flu", "inference": "Fever (P1) -> flu -> rest (N1)", '
        '"mind_map": {"name": "Flu", "evidence": "P1", '
        '"children": [{"label": "Rest", "evidence_ids": ["N1"]}]}}'
    )
    ans = parse_mindmap_answer(text)
    assert ans.summary == "Flu"
    assert [s.evidence_ids for s in ans.inference_chain] == [["P1"], [], ["N1"]]
    assert ans.mind_map.label == "Flu" and ans.mind_map.evidence_ids == ["P1"]
    assert ans.mind_map.children[0].evidence_ids == ["N1"]


def test_parse_mindmap_sectioned_text_tree() -> None:
    text = (
        "**Output 1:** Likely influenza.\n\n"
        "**Output 2:** Path-based Evidence P1 ('Fever'->'possible_disease'->'Influenza')->result\n"
        "**Output 3:**\nInfluenza (P1)\n├── Oseltamivir (N1)\n│   └── dose\n└── Rest\n"
    )
    ans = parse_mindmap_answer(text)
    assert ans.summary == "Likely influenza."
    assert ans.inference_chain and ans.inference_chain[0].evidence_ids == ["P1"]
    assert ans.mind_map.label == "Influenza (P1)" and ans.mind_map.evidence_ids == ["P1"]
    assert [c.label for c in ans.mind_map.children] == ["Oseltamivir (N1)", "Rest"]
    assert ans.mind_map.children[0].children[0].label == "dose"


def test_parse_mindmap_never_raises_on_garbage() -> None:
    for text in ["", "}}}{{", "just an answer without structure", "输出1：感冒\n输出3：\n- 感冒 (P2)"]:
        ans = parse_mindmap_answer(text)
        assert isinstance(ans.summary, str)
    zh = parse_mindmap_answer("输出1：感冒\n输出3：\n- 感冒 (P2)")
    assert zh.summary == "感冒" and zh.mind_map.evidence_ids == ["P2"]


def test_extract_json_drops_stray_closers_from_tiny_models() -> None:
    text = '{"summary": "flu", "inference_chain": [{"step": "s \\"q\\" ]", "evidence_ids": ["N2", "P3"]]}]}'
    data = extract_json(text)
    assert data == {"summary": "flu", "inference_chain": [{"step": 's "q" ]', "evidence_ids": ["N2", "P3"]}]}
    ans = parse_mindmap_answer(text)
    assert ans.inference_chain[0].evidence_ids == ["N2", "P3"]


def test_extract_json_closes_output_cut_off_at_max_tokens() -> None:
    cut = '{"summary": "Influenza", "inference_chain": [{"step": "fever suggests fl'
    assert extract_json(cut) == {"summary": "Influenza", "inference_chain": [{"step": "fever suggests fl"}]}
    cut2 = '{"summary": "Flu", "mind_map": {"label": "Flu", "evidence_ids": ["P1", '
    assert extract_json(cut2) == {"summary": "Flu", "mind_map": {"label": "Flu", "evidence_ids": ["P1"]}}
    assert parse_mindmap_answer(cut).summary == "Influenza"
