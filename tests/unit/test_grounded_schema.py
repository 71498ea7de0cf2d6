"""The per-question answer schema: enums of shown ids and entities, minimum citations, no-evidence shape."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kgmind.models import Evidence, normalize_name
from kgmind.prompts.grounded import (
    build_answer_schema,
    evidence_names,
    fill_schema,
    grounded_prompt,
    render_conclusions,
)
from kgmind.prompts.schemas import GroundedAnswer

EVIDENCE = [
    Evidence(
        id="P1",
        kind="path",
        text="Fever may be a sign of Influenza.",
        triples=[("Fever", "possible_disease", "Influenza")],
    ),
    Evidence(
        id="N1",
        kind="neighbor",
        text="Influenza can be treated with Oseltamivir and Zanamivir.",
        triples=[
            ("Influenza", "need_medication", "Oseltamivir"),
            ("Influenza", "need_medication", "Zanamivir"),
        ],
    ),
    Evidence(
        id="N2",
        kind="neighbor",
        text="Influenza can be checked with Rapid influenza test.",
        triples=[("Influenza", "need_medical_test", "Rapid influenza test")],
    ),
]
TYPES = {
    normalize_name(n): t
    for n, t in [
        ("Fever", "symptom"),
        ("Influenza", "disease"),
        ("Oseltamivir", "medication"),
        ("Zanamivir", "medication"),
        ("Rapid influenza test", "test"),
    ]
}


def _ids_of(schema: dict[str, Any], node: dict[str, Any]) -> set[str]:
    items = node["evidence_ids"]["items"]
    return {items["const"]} if "const" in items else set(items["enum"])


def test_steps_cite_exactly_one_shown_id_and_an_entity_of_that_item() -> None:
    schema = build_answer_schema(EVIDENCE, TYPES)
    chain = schema["properties"]["inference_chain"]
    assert chain["minItems"] == 1
    variants = chain["items"]["anyOf"]
    assert [_ids_of(schema, v["properties"]) for v in variants] == [{"P1"}, {"N1"}, {"N2"}]
    for v, ev in zip(variants, EVIDENCE, strict=True):
        props = v["properties"]
        assert props["evidence_ids"]["minItems"] == 1
        assert props["about"]["enum"] == evidence_names(ev)
        assert list(props) == ["evidence_ids", "about", "step"]  # the id first, the text last


def test_mind_map_nodes_cite_items_that_name_them() -> None:
    schema = build_answer_schema(EVIDENCE, TYPES)
    children = schema["properties"]["mind_map"]["properties"]["children"]
    assert children["minItems"] == 1 and children["items"] == {"$ref": "#/$defs/node"}
    nodes = {v["properties"]["label"]["const"]: v["properties"] for v in schema["$defs"]["node"]["anyOf"]}
    assert set(nodes) == {"Fever", "Influenza", "Oseltamivir", "Zanamivir", "Rapid influenza test"}
    assert set(nodes["Influenza"]["evidence_ids"]["items"]["enum"]) == {"P1", "N1", "N2"}
    assert nodes["Zanamivir"]["evidence_ids"]["items"]["enum"] == ["N1"]
    assert all(n["evidence_ids"]["minItems"] == 1 for n in nodes.values())


def test_medical_conclusions_are_evidence_entities_by_type_and_the_summary_comes_last() -> None:
    props = build_answer_schema(EVIDENCE, TYPES)["properties"]
    assert props["diagnoses"]["items"]["enum"] == ["Influenza"]
    assert props["tests"]["items"]["enum"] == ["Rapid influenza test"]
    assert props["medications"]["items"]["enum"] == ["Oseltamivir", "Zanamivir"]
    assert "conclusions" not in props
    assert list(props)[-2:] == ["own_knowledge", "summary"]
    assert props["own_knowledge"]["items"]["type"] == "string"  # own points: free text, never cited


def test_untyped_kg_gets_generic_conclusions() -> None:
    props = build_answer_schema(EVIDENCE, {})["properties"]
    assert "diagnoses" not in props
    assert set(props["conclusions"]["items"]["enum"]) == {
        "Fever",
        "Influenza",
        "Oseltamivir",
        "Zanamivir",
        "Rapid influenza test",
    }


def test_no_evidence_schema_has_no_id_fields() -> None:
    schema = build_answer_schema([], TYPES)
    assert "evidence_ids" not in json.dumps(schema) and "$defs" not in schema
    assert schema["properties"]["inference_chain"]["items"]["properties"] == {
        "step": {"type": "string", "minLength": 1, "maxLength": 120}
    }
    assert list(schema["properties"])[-1] == "summary"


@pytest.mark.parametrize("evidence", [EVIDENCE, []])
def test_filled_schema_is_valid_and_reads_as_a_grounded_answer(evidence: list[Evidence]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = build_answer_schema(evidence, TYPES)
    instance = fill_schema(schema)
    jsonschema.validate(instance, schema)
    answer = GroundedAnswer.model_validate(instance)
    assert answer.summary and answer.inference_chain
    shown = {e.id for e in evidence}
    assert all(set(s.evidence_ids) <= shown for s in answer.inference_chain)
    if evidence:
        with pytest.raises(jsonschema.ValidationError):  # an id that was not shown is rejected
            bad = json.loads(json.dumps(instance))
            bad["inference_chain"][0]["evidence_ids"] = ["P9"]
            jsonschema.validate(bad, schema)


def test_schema_converts_to_a_llama_cpp_grammar() -> None:
    grammar = pytest.importorskip("llama_cpp.llama_grammar")
    gbnf = grammar.json_schema_to_gbnf(json.dumps(build_answer_schema(EVIDENCE, TYPES)))
    assert '"\\"Oseltamivir\\""' in gbnf and '"\\"N2\\""' in gbnf


def test_chinese_prompt_and_conclusion_line() -> None:
    msgs = grounded_prompt("zh").format_messages(question="我发烧了", evidence="N1: 流感")
    assert (
        "患者输入：我发烧了" in msgs[1].content
        and '<evidence>\n"""\nN1: 流感\n"""\n</evidence>' in msgs[1].content
    )
    assert render_conclusions({"diagnoses": ["流感"], "medications": ["奥司他韦"]}, "zh") == (
        "可能的诊断：流感；药物：奥司他韦。"
    )
    assert render_conclusions({"diagnoses": ["Influenza"], "tests": []}) == "Likely diagnoses: Influenza."
    assert render_conclusions({}) == ""
