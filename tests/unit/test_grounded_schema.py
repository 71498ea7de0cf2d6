"""The per-question answer schema: enums of shown ids and entities, minimum citations, no-evidence shape."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evidence_fixtures import evidence_item, fever_flu, flu_drugs, flu_test
from kgmind.llm.fake import fill_schema
from kgmind.models import Evidence, normalize_name
from kgmind.prompts import grounded
from kgmind.prompts.grounded import (
    STEP_CHARS,
    build_answer_schema,
    evidence_names,
    grounded_prompt,
    render_conclusions,
    workups,
)
from kgmind.prompts.schemas import GroundedAnswer

EVIDENCE = [fever_flu(relation_ids=()), flu_drugs("Oseltamivir", "Zanamivir"), flu_test()]
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
    assert all("children" not in n for n in nodes.values()) and "leaf" not in schema["$defs"]  # MAX_LEAVES 0


def test_mind_map_leaves_cite_items_too_when_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grounded, "MAX_LEAVES", 1)
    schema = build_answer_schema(EVIDENCE, TYPES)
    node = schema["$defs"]["node"]["anyOf"][0]["properties"]
    assert node["children"] == {"type": "array", "items": {"$ref": "#/$defs/leaf"}, "maxItems": 1}
    leaves = {v["properties"]["label"]["const"]: v["properties"] for v in schema["$defs"]["leaf"]["anyOf"]}
    assert set(leaves["Influenza"]["evidence_ids"]["items"]["enum"]) == {"P1", "N1", "N2"}
    assert all("children" not in leaf for leaf in leaves.values())


def test_medical_conclusions_are_workups_of_evidence_diseases_and_the_summary_comes_last() -> None:
    props = build_answer_schema(EVIDENCE, TYPES)["properties"]
    (variant,) = props["diagnoses"]["items"]["anyOf"]
    workup = variant["properties"]
    assert workup["disease"] == {"const": "Influenza"}
    assert workup["tests"]["items"]["enum"] == ["Rapid influenza test"]
    assert workup["tests"]["minItems"] == 1  # at least 3 for the first rank, but only one test is tied to it
    assert workup["medications"]["items"]["enum"] == ["Oseltamivir", "Zanamivir"]
    meds = workup["medications"]
    assert (meds["minItems"], meds["maxItems"]) == grounded.MEDICATIONS_BY_RANK[0]
    assert "tests" not in props and "medications" not in props and "conclusions" not in props
    assert list(props)[-2:] == ["own_knowledge", "summary"]
    assert props["own_knowledge"]["items"]["type"] == "string"  # own points: free text, never cited


def test_workups_tie_tests_and_drugs_to_their_own_disease_in_either_direction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(grounded, "TESTS_BY_RANK", ((3, 4), (1, 2)))  # the second disease gets lists too
    evidence = [
        *EVIDENCE,
        evidence_item(
            "N3",
            "Chest X-ray can check Pneumonia; Amoxicillin may cure Pneumonia.",
            ("Chest X-ray", "can_check_disease", "Pneumonia"),
            ("Amoxicillin", "possible_cure_disease", "Pneumonia"),
        ),
        evidence_item("P2", "Cough may be a sign of Asthma.", ("Cough", "x", "Asthma")),
    ]
    types = {
        **TYPES,
        **{normalize_name(n): t for n, t in [("Chest X-ray", "test"), ("Amoxicillin", "medication")]},
        **{normalize_name(n): t for n, t in [("Pneumonia", "disease"), ("Asthma", "disease")]},
    }
    assert workups(evidence, types) == {
        "Influenza": {"tests": ["Rapid influenza test"], "medications": ["Oseltamivir", "Zanamivir"]},
        "Pneumonia": {"tests": ["Chest X-ray"], "medications": ["Amoxicillin"]},
        "Asthma": {"tests": [], "medications": []},
    }
    variants = build_answer_schema(evidence, types)["properties"]["diagnoses"]["items"]["anyOf"]
    by_disease = {v["properties"]["disease"]["const"]: v["properties"] for v in variants}
    assert set(by_disease["Pneumonia"]["tests"]["items"]["enum"]) == {"Chest X-ray"}  # not Influenza's test
    assert "Asthma" not in by_disease  # nothing to do about it in the evidence: no workup to choose


def test_the_first_diseases_with_a_workup_are_offered_and_both_must_be_worked_up() -> None:
    """Offered: diseases with a workup, in evidence (rank) order, at most CANDIDATE_DIAGNOSES of them."""
    ranked = ["Influenza", "Asthma", "Pneumonia", "Bronchitis", "Sinusitis"]
    evidence = [
        Evidence(
            id=f"N{i}",
            kind="neighbor",
            text=f"{d} can be treated with Drug{i}.",
            triples=[(d, "need_medication", f"Drug{i}")] if d != "Asthma" else [("Cough", "x", d)],
        )
        for i, d in enumerate(ranked, start=1)
    ]
    types = {normalize_name(d): "disease" for d in ranked} | {
        normalize_name(f"Drug{i}"): "medication" for i in range(1, 6)
    }
    field = build_answer_schema(evidence, types)["properties"]["diagnoses"]
    offered = [v["properties"]["disease"]["const"] for v in field["items"]["anyOf"]]
    assert grounded.CANDIDATE_DIAGNOSES == 2 and grounded.MIN_DIAGNOSES == 2
    assert offered == ["Influenza", "Pneumonia"]  # Asthma has no workup; Bronchitis ranks third
    assert field["minItems"] == 2 == field["maxItems"]
    one = build_answer_schema(evidence[:2], types)["properties"]["diagnoses"]
    assert [v["properties"]["disease"]["const"] for v in one["items"]["anyOf"]] == ["Influenza"]
    assert one["minItems"] == 1  # fewer diseases with a workup than MIN_DIAGNOSES: as many as there are


def test_medical_kg_without_ties_gets_flat_conclusions_by_type() -> None:
    evidence = [
        EVIDENCE[0],
        Evidence(id="N9", kind="neighbor", text="x", triples=[("Fever", "r", "Zanamivir")]),
    ]
    props = build_answer_schema(evidence, TYPES)["properties"]
    assert props["diagnoses"]["items"]["enum"] == ["Influenza"]
    assert props["medications"]["items"]["enum"] == ["Zanamivir"]


def test_grounded_answer_reads_workups_into_flat_fields() -> None:
    answer = GroundedAnswer.model_validate(
        {
            "summary": "s",
            "diagnoses": [
                {"disease": "Influenza", "tests": ["Rapid influenza test"], "medications": ["Zanamivir"]},
                {"disease": "Pneumonia", "tests": ["Chest X-ray", "Rapid influenza test"]},
            ],
        }
    )
    assert answer.conclusion_map() == {
        "diagnoses": ["Influenza", "Pneumonia"],
        "tests": ["Rapid influenza test", "Chest X-ray"],
        "medications": ["Zanamivir"],
    }


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
        "step": {"type": "string", "minLength": 1, "maxLength": STEP_CHARS}
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


def _ranked_workups(ranked: list[str]) -> tuple[list[Evidence], dict[str, str]]:
    """One neighbor line per disease, in rank order, tying 5 tests and 3 drugs to it; and their types."""
    evidence = [
        Evidence(
            id=f"N{i}",
            kind="neighbor",
            text=f"{d} tests and drugs.",
            triples=[(d, "need_medical_test", f"Test{i}{k}") for k in range(5)]
            + [(d, "need_medication", f"Drug{i}{k}") for k in range(3)],
        )
        for i, d in enumerate(ranked)
    ]
    types = {normalize_name(d): "disease" for d in ranked}
    for i in range(len(ranked)):
        types |= {normalize_name(f"Test{i}{k}"): "test" for k in range(5)}
        types |= {normalize_name(f"Drug{i}{k}"): "medication" for k in range(3)}
    return evidence, types


def test_workup_list_bounds_follow_the_disease_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first-ranked disease gets the longer lists; later ranks take the last pair."""
    monkeypatch.setattr(grounded, "CANDIDATE_DIAGNOSES", 3)
    monkeypatch.setattr(grounded, "TESTS_BY_RANK", ((3, 4), (1, 2)))
    monkeypatch.setattr(grounded, "MEDICATIONS_BY_RANK", ((1, 1),))
    evidence, types = _ranked_workups(["Influenza", "Pneumonia", "Bronchitis"])
    variants = build_answer_schema(evidence, types)["properties"]["diagnoses"]["items"]["anyOf"]
    bounds = [
        (
            v["properties"]["disease"]["const"],
            (v["properties"]["tests"]["minItems"], v["properties"]["tests"]["maxItems"]),
            (v["properties"]["medications"]["minItems"], v["properties"]["medications"]["maxItems"]),
        )
        for v in variants
    ]
    assert bounds == [
        ("Influenza", (3, 4), (1, 1)),
        ("Pneumonia", (1, 2), (1, 1)),
        ("Bronchitis", (1, 2), (1, 1)),
    ]


def test_the_second_diagnosis_is_named_as_the_differential_without_its_own_lists() -> None:
    """By default only the first-ranked disease is worked up: a list whose max is 0 is left out."""
    evidence, types = _ranked_workups(["Influenza", "Pneumonia"])
    diagnoses = build_answer_schema(evidence, types)["properties"]["diagnoses"]
    first, second = (v["properties"] for v in diagnoses["items"]["anyOf"])
    assert (first["tests"]["minItems"], first["tests"]["maxItems"]) == (3, 4)
    assert (first["medications"]["minItems"], first["medications"]["maxItems"]) == (1, 1)
    assert second == {"disease": {"const": "Pneumonia"}}
    assert diagnoses["minItems"] == diagnoses["maxItems"] == 2
    answer = fill_schema(build_answer_schema(evidence, types))
    assert [set(d) for d in answer["diagnoses"]] == [{"disease", "tests", "medications"}, {"disease"}]
