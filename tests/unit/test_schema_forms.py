"""benchmarks/schema_forms.py writes the same facts in every form, in the documented direction and names.

Only the form writing is tested (no import into a store, no eval): hand-made edges in the shape the
importers produce (each fact with its inverse, a symmetric complication stored both ways, a
department hierarchy), and one tiny ChatDoctor file parsed by kgmind's own importer.
"""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

import pytest

from kgmind.importers import RELATION_TYPES

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "schema_forms.py"
sys.path.insert(0, str(_PATH.parent))  # as running the script does: it imports benchmarks/_common.py
_spec = importlib.util.spec_from_file_location("schema_forms", _PATH)
assert _spec is not None and _spec.loader is not None
sf = importlib.util.module_from_spec(_spec)
sys.modules["schema_forms"] = sf
_spec.loader.exec_module(sf)

#: What an importer stores for two diseases: every fact and its inverse, the symmetric
#: complication both ways, and department → department edges (not disease facts).
EDGES = [
    ("Measles", "has_symptom", "Fever"),
    ("Fever", "possible_disease", "Measles"),
    ("Measles", "has_symptom", "Rash"),
    ("Rash", "possible_disease", "Measles"),
    ("Measles", "need_medical_test", "Serology"),
    ("Serology", "can_check_disease", "Measles"),
    ("Measles", "need_medication", "Vitamin A"),
    ("Vitamin A", "possible_cure_disease", "Measles"),
    ("Measles", "has_complication", "Pneumonia"),
    ("Pneumonia", "has_complication", "Measles"),
    ("Pneumonia", "has_symptom", "Fever"),
    ("Fever", "possible_disease", "Pneumonia"),
    ("Pneumonia", "belongs_to_department", "Respiratory medicine"),
    ("Respiratory medicine", "department_of_disease", "Pneumonia"),
    ("Respiratory medicine", "sub_department_of", "Internal medicine"),
    ("Internal medicine", "has_sub_department", "Respiratory medicine"),
    ("Pneumonia", "good_food", "Pear"),
    ("Pear", "food_good_for", "Pneumonia"),
    ("Pneumonia", "avoid_food", "Chili"),
    ("Chili", "food_avoided_by", "Pneumonia"),
    ("Pneumonia", "recommended_recipe", "Pear soup"),
    ("Pear soup", "recipe_recommended_for", "Pneumonia"),
]

FACTS = [
    ("Measles", "has_symptom", "Fever"),
    ("Measles", "has_symptom", "Rash"),
    ("Measles", "need_medical_test", "Serology"),
    ("Measles", "need_medication", "Vitamin A"),
    ("Measles", "has_complication", "Pneumonia"),
    ("Pneumonia", "has_symptom", "Fever"),
    ("Pneumonia", "belongs_to_department", "Respiratory medicine"),
    ("Pneumonia", "good_food", "Pear"),
    ("Pneumonia", "avoid_food", "Chili"),
    ("Pneumonia", "recommended_recipe", "Pear soup"),
]


def _pairs(rows):
    return sorted(frozenset((h, t)) for h, _, t in rows)


def test_disease_facts_keep_each_fact_once_in_the_disease_direction():
    assert sf.disease_facts(EDGES, RELATION_TYPES) == FACTS


def test_every_disease_relation_of_the_importers_has_a_forward_and_reverse_name():
    for lang in ("en", "zh"):
        assert sf.forward_types(RELATION_TYPES) <= set(sf.NAMES[lang])
        names = [n for pair in sf.NAMES[lang].values() for n in pair]
        assert len(set(names)) == len(names), f"{lang}: a name is used twice"
        assert not set(names) & set(RELATION_TYPES), f"{lang}: a native name reused"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_forms_hold_the_same_facts_with_documented_directions_and_names(lang):
    names = sf.NAMES[lang]
    facts = sf.disease_facts(EDGES, RELATION_TYPES)
    forms = {form: sf.form_rows(facts, form, names) for form in "bcde"}
    for form in "bcd":
        assert _pairs(forms[form]) == _pairs(FACTS), form
    assert _pairs(forms["e"]) == sorted(_pairs(FACTS) * 2)
    assert forms["b"] == FACTS
    assert forms["c"] == [(h, names[r][0], t) for h, r, t in FACTS]
    assert forms["d"] == [(t, names[r][1], h) for h, r, t in FACTS]
    assert forms["e"] == forms["c"] + forms["d"]
    diseases = {"Measles", "Pneumonia"}
    assert {h for h, _, _ in forms["c"]} <= diseases
    assert {t for _, r, t in forms["d"] if r != names["has_complication"][1]} <= diseases


def test_english_and_chinese_names_as_documented():
    assert sf.NAMES["en"]["has_symptom"] == ("presents_with", "symptom_of")
    assert sf.NAMES["en"]["need_medical_test"] == ("diagnosed_by", "test_for")
    assert sf.NAMES["en"]["need_medication"] == ("treated_with", "treats")
    assert [sf.NAMES["zh"][r][0] for r in ("has_symptom", "need_medical_test", "need_medication")] == [
        "症状",
        "检查",
        "药物",
    ]


def test_written_file_reads_back_with_a_header_and_quoted_names(tmp_path):
    rows = [("Disease, acute", "症状", 'A "quoted" name'), ("麻疹", "症状", "发热")]
    path = tmp_path / "t.csv"
    assert sf.write_triples(path, rows) == 2
    with path.open(encoding="utf-8", newline="") as fh:
        back = [tuple(r) for r in csv.reader(fh)]
    assert back == [("head", "relation", "tail"), *rows]


def test_facts_of_a_chatdoctor_file_come_from_kgmind_s_importer(tmp_path):
    src = tmp_path / "format_dataset.csv"
    src.write_text(
        "idx,disease,Symptom,reason,TestsAndProcedures,commonMedications\n"
        "0,Measles,\"['Fever', 'Rash']\",A viral disease.,\"['Serology']\",\"['Vitamin A']\"\n"
        '1,Flu,"[\'Fever\']",Influenza.,"[]","[\'Oseltamivir\']"\n',
        encoding="utf-8",
    )
    files = sf.write_forms("en", src, ["a", "b", "d"], tmp_path / "work")
    assert set(files) == {"b", "d"}
    with files["b"][0].open(encoding="utf-8", newline="") as fh:
        b = sorted(tuple(r) for r in list(csv.reader(fh))[1:])
    assert b == [
        ("Flu", "has_symptom", "Fever"),
        ("Flu", "need_medication", "Oseltamivir"),
        ("Measles", "has_symptom", "Fever"),
        ("Measles", "has_symptom", "Rash"),
        ("Measles", "need_medical_test", "Serology"),
        ("Measles", "need_medication", "Vitamin A"),
    ]
    assert files["d"][1] == len(b)
    # the control a0: the fitted import's own edges, both directions, native names
    control = sf.write_forms("en", src, ["a0"], tmp_path / "work0")
    with control["a0"][0].open(encoding="utf-8", newline="") as fh:
        a0 = {tuple(r) for r in list(csv.reader(fh))[1:]}
    assert set(b) <= a0 and ("Fever", "possible_disease", "Measles") in a0
    assert len(a0) == 2 * len(b)
