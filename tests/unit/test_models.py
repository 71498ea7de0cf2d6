"""The KG data model: name normalisation, stable ids and validators."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from kgmind.models import (
    TYPE_PRIORITY,
    Entity,
    Evidence,
    KnowledgeDoc,
    Relation,
    WeightChange,
    doc_id,
    entity_id,
    evidence_entity_types,
    normalize_name,
    relation_id,
)


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("Heart_Attack", "heart attack"),
        ("  heart \t attack\n", "heart attack"),
        ("ＨＥＡＲＴ＿ＡＴＴＡＣＫ", "heart attack"),
        ("ＡＢＣ（test）", "abc(test)"),
        ("糖尿病", "糖尿病"),
        ("感冒　发烧", "感冒 发烧"),  # ideographic space
        ("Straße", "strasse"),
        ("", ""),
        ("   ", ""),
        ("a\x1fb", "a b"),
    ],
)
def test_normalize_name(raw: str, key: str) -> None:
    assert normalize_name(raw) == key


def test_normalize_name_is_idempotent() -> None:
    for raw in ["Heart_Attack", "ＡＢＣ  x", "Ⅷ型", "ﬁne"]:
        once = normalize_name(raw)
        assert normalize_name(once) == once


def test_entity_id_is_stable_across_spellings() -> None:
    assert entity_id("Heart_Attack") == entity_id("heart attack") == entity_id("ＨＥＡＲＴ ＡＴＴＡＣＫ")
    assert entity_id("Heart attack") != entity_id("Heart attacks")
    assert entity_id("x").startswith("e")
    with pytest.raises(ValueError):
        entity_id("  ")


def test_relation_and_doc_ids() -> None:
    a, b = entity_id("a"), entity_id("b")
    assert relation_id(a, "has_symptom", b) == relation_id(a, "has_symptom", b)
    assert relation_id(a, "has_symptom", b) != relation_id(b, "has_symptom", a)
    assert relation_id(a, "has_symptom", b) != relation_id(a, "need_test", b)
    # the separator keeps part boundaries: ("ab","c") differs from ("a","bc")
    assert relation_id("ab", "c", "d") != relation_id("a", "bc", "d")
    assert doc_id(a, "text").startswith("d")
    assert doc_id(a, "text") != doc_id(a, "text2")


def test_entity_defaults_and_validators() -> None:
    e = Entity(name="  Heart_Attack ", type=" Disease ")
    assert e.name == "Heart_Attack"
    assert e.type == "disease"
    assert e.id == entity_id("heart attack")
    assert e.key == "heart attack"
    assert (e.aliases, e.description) == ([], "")
    assert Entity(name="x", type="  ").type == "entity"
    assert Entity(name="x", id="custom").id == "custom"
    with pytest.raises(ValidationError):
        Entity(name=" _ ")


def test_relation_defaults_and_validators() -> None:
    r = Relation(head="e1", type="Has Symptom", tail="e2")
    assert r.type == "has_symptom"
    assert r.weight == 1.0
    assert r.id == relation_id("e1", "has_symptom", "e2")
    for bad_type in ["has-symptom", "1abc", ""]:
        with pytest.raises(ValidationError):
            Relation(head="e1", type=bad_type, tail="e2")
    for bad_weight in [0.0, -1.0, math.nan, math.inf]:
        with pytest.raises(ValidationError):
            Relation(head="e1", type="t", tail="e2", weight=bad_weight)
    assert Relation(head="e1", type="t", tail="e2", weight=2).weight == 2.0


def test_knowledge_doc_and_weight_change() -> None:
    d = KnowledgeDoc(entity_id="e1", text="hello")
    assert d.id == doc_id("e1", "hello")
    w = WeightChange(
        feedback_id="f", run_id="r", relation_id="x", old_weight=1, new_weight=2, rating="poor", at="t"
    )
    assert (w.old_weight, w.new_weight) == (1.0, 2.0)


def test_type_priority_order() -> None:
    assert TYPE_PRIORITY["disease"] < TYPE_PRIORITY["symptom"] < TYPE_PRIORITY["entity"]
    assert "gizmo" not in TYPE_PRIORITY


def test_evidence_carries_entity_types_and_loads_without_them() -> None:
    old = Evidence.model_validate(
        {"kind": "path", "entity_ids": ["e1"]}
    )  # a checkpoint from before the field
    assert old.entity_types == {}
    a = Evidence(kind="path", entity_ids=["e1", "e2"], entity_types={"Fever": "symptom", "Flu": "disease"})
    b = Evidence(kind="neighbor", entity_types={"Common_Cold": "disease"})
    assert Evidence.model_validate_json(a.model_dump_json()) == a
    assert evidence_entity_types([a, b, old]) == {
        "fever": "symptom",
        "flu": "disease",
        "common cold": "disease",
    }
