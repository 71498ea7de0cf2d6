"""Role inference (kgmind.relations) on hand-made schemas, English and Chinese, and schema files.

Each KG below is a few diseases' facts written the way a user might: names only (untyped
ends, as a triples file), types only (neutral names), one direction or the other, both
directions with one unreadable name, and a KG that is not medical at all.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from kgmind.relations import (
    RelationRole,
    RelationSchema,
    RelationStats,
    SchemaFileError,
    infer_schema,
    load_schema_file,
    role_from_name,
)

#: disease -> role -> the other ends, in English and in Chinese
FACTS_EN = {
    "Measles": {"symptom": ["Fever", "Rash", "Red eyes"], "test": ["IgM test"], "treatment": ["Vitamin A"]},
    "Influenza": {"symptom": ["Fever", "Cough"], "test": ["Rapid flu test"], "treatment": ["Oseltamivir"]},
    "Dengue": {"symptom": ["Fever", "Rash", "Joint pain"], "test": ["NS1 test"], "treatment": ["Fluids"]},
}
FACTS_ZH = {
    "麻疹": {"symptom": ["发热", "皮疹", "结膜充血"], "test": ["麻疹抗体检测"], "treatment": ["维生素A"]},
    "流感": {"symptom": ["发热", "咳嗽"], "test": ["流感快速检测"], "treatment": ["奥司他韦"]},
    "登革热": {"symptom": ["发热", "皮疹", "关节痛"], "test": ["NS1抗原检测"], "treatment": ["补液"]},
}


def edges(
    facts: dict[str, dict[str, list[str]]], names: dict[str, str], *, reverse: bool = False
) -> list[tuple[str, str, str]]:
    """``(head, relation, tail)`` of every fact, disease → X (or X → disease when ``reverse``)."""
    out = []
    for disease, by_role in facts.items():
        for role, others in by_role.items():
            for other in others:
                out.append((other, names[role], disease) if reverse else (disease, names[role], other))
    return out


def stats(
    rows: list[tuple[str, str, str]], types: dict[str, str] | None = None, *, pairs: bool = True
) -> list[RelationStats]:
    """What an import reads of ``rows``: untyped ends unless ``types`` names them."""
    types = types or {}
    return RelationStats.from_edges(
        ((h, r, t, types.get(h, "entity"), types.get(t, "entity")) for h, r, t in rows), keep_pairs=pairs
    )


def ends(schema: RelationSchema) -> dict[str, tuple[str, str | None]]:
    """``relation -> (role, disease end)``."""
    return {rel: (r.role, r.disease_end) for rel, r in schema.roles.items()}


# -- names only: a triples file with untyped ends ------------------------------------------------


@pytest.mark.parametrize(
    ("facts", "names"),
    [
        (FACTS_EN, {"symptom": "presents_with", "test": "diagnosed_by", "treatment": "treated_with"}),
        (FACTS_ZH, {"symptom": "症状", "test": "检查", "treatment": "药物"}),
    ],
    ids=["en", "zh"],
)
def test_names_give_roles_of_an_untyped_one_direction_kg(
    facts: dict[str, dict[str, list[str]]], names: dict[str, str]
) -> None:
    schema = infer_schema(stats(edges(facts, names)))
    assert ends(schema) == {names[role]: (role, "head") for role in ("symptom", "test", "treatment")}
    assert {r.how for r in schema.roles.values()} <= {"name", "name+structure"}
    # each medical role's far end gets the type the explorations expect
    assert schema.role(names["treatment"]).tail_type == "medication"


@pytest.mark.parametrize(
    ("facts", "names"),
    [
        # role words, no direction words: only the graph can say where the disease is
        (FACTS_EN, {"symptom": "symptom", "test": "exam", "treatment": "drug"}),
        (FACTS_ZH, {"symptom": "症状", "test": "检查", "treatment": "药物"}),
    ],
    ids=["en", "zh"],
)
@pytest.mark.parametrize("reverse", [False, True], ids=["disease-first", "disease-last"])
def test_structure_decides_the_disease_end_in_either_direction(
    facts: dict[str, dict[str, list[str]]], names: dict[str, str], reverse: bool
) -> None:
    schema = infer_schema(stats(edges(facts, names, reverse=reverse)))
    end = "tail" if reverse else "head"
    assert ends(schema) == {names[role]: (role, end) for role in ("symptom", "test", "treatment")}
    assert {r.how for r in schema.roles.values()} == {"name+structure"}
    sym = schema.role(names["symptom"])
    assert (sym.head_type, sym.tail_type) == (("symptom", "disease") if reverse else ("disease", "symptom"))


def test_without_name_sets_the_disease_end_falls_back_to_the_name_then_the_head() -> None:
    rows = edges(FACTS_EN, {"symptom": "symptom", "test": "exam", "treatment": "drug"}, reverse=True)
    no_names = RelationStats.from_edges(((h, r, t, "entity", "entity") for h, r, t in rows), keep_names=False)
    # a store's schema read has no names: the head is assumed (imports type the ends, so stores need not)
    assert ends(infer_schema(no_names))["symptom"] == ("symptom", "head")


def test_reverse_names_say_the_disease_is_at_the_tail() -> None:
    rows = edges(FACTS_EN, {"symptom": "symptom_of", "test": "test_for", "treatment": "treats"}, reverse=True)
    assert ends(infer_schema(stats(rows))) == {
        "symptom_of": ("symptom", "tail"),
        "test_for": ("test", "tail"),
        "treats": ("treatment", "tail"),
    }


# -- types only: neutral names, typed ends ------------------------------------------------------


def test_types_alone_give_roles_and_ends_in_any_language() -> None:
    types = {d: "disease" for d in (*FACTS_EN, *FACTS_ZH)}
    for facts in (FACTS_EN, FACTS_ZH):
        for by_role in facts.values():
            types |= {
                o: {"symptom": "symptom", "test": "test", "treatment": "medication"}[r]
                for r, os in by_role.items()
                for o in os
            }
    rows = edges(FACTS_EN, {"symptom": "r1", "test": "r2", "treatment": "r3"})
    rows += edges(FACTS_ZH, {"symptom": "关系甲", "test": "关系乙", "treatment": "关系丙"}, reverse=True)
    schema = infer_schema(stats(rows, types))
    assert ends(schema) == {
        "r1": ("symptom", "head"),
        "r2": ("test", "head"),
        "r3": ("treatment", "head"),
        "关系甲": ("symptom", "tail"),
        "关系乙": ("test", "tail"),
        "关系丙": ("treatment", "tail"),
    }
    assert {r.how for r in schema.roles.values()} == {"types"}


def test_types_beat_a_misleading_name() -> None:
    st = RelationStats("treated_with", 3, Counter(disease=3), Counter(symptom=3))
    assert ends(infer_schema([st])) == {"treated_with": ("symptom", "head")}


# -- the inverse-pair cue ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("facts", "forward", "unreadable"),
    [(FACTS_EN, "presents_with", "seen_in"), (FACTS_ZH, "症状", "关联")],
    ids=["en", "zh"],
)
def test_an_unreadable_relation_holding_anothers_pairs_reversed_is_its_inverse(
    facts: dict[str, dict[str, list[str]]], forward: str, unreadable: str
) -> None:
    names = {"symptom": forward, "test": "diagnosed_by" if facts is FACTS_EN else "检查", "treatment": "药物"}
    back = {**names, "symptom": unreadable}
    rows = edges(facts, names) + edges(facts, back, reverse=True)
    schema = infer_schema(stats(rows))
    inv = schema.role(unreadable)
    assert (inv.role, inv.disease_end, inv.how, inv.via) == ("symptom", "tail", "inverse", forward)
    assert (inv.head_type, inv.tail_type) == ("symptom", "disease")
    # without the pairs (a store's schema read) nothing reads it
    assert infer_schema(stats(rows, pairs=False)).role(unreadable).role == "other"


def test_partly_shared_pairs_are_not_an_inverse() -> None:
    names = {"symptom": "presents_with", "test": "diagnosed_by", "treatment": "treated_with"}
    rows = edges(FACTS_EN, names)
    # `linked_to` reverses one symptom fact out of eight, and adds seven facts of its own
    rows += [("Fever", "linked_to", "Measles")] + [(f"X{i}", "linked_to", f"Y{i}") for i in range(7)]
    role = infer_schema(stats(rows)).role("linked_to")
    assert (role.role, role.how) == ("other", "none")


def test_the_inverse_of_a_relation_the_user_gave_takes_the_given_role() -> None:
    names = {"symptom": "aaa", "test": "bbb", "treatment": "ccc"}
    rows = edges(FACTS_EN, names) + edges(FACTS_EN, {**names, "symptom": "zzz"}, reverse=True)
    given = {"aaa": {"role": "symptom", "disease_end": "head"}}
    schema = infer_schema(stats(rows), given)
    assert ends(schema)["aaa"] == ("symptom", "head") and schema.role("aaa").how == "schema"
    assert ends(schema)["zzz"] == ("symptom", "tail") and schema.role("zzz").via == "aaa"
    assert ends(schema)["bbb"] == ("other", None)  # nothing reads it, nothing reverses it


# -- other relations and KGs that are not medical ------------------------------------------------


def test_relations_that_are_not_medical_roles_stay_other() -> None:
    rows = [("Measles", "complication_of", "Pneumonia"), ("麻疹", "并发症", "肺炎"), ("Measles", "zz", "Q")]
    types = {"Measles": "disease", "麻疹": "disease", "Pneumonia": "disease", "肺炎": "disease"}
    rows += [("Measles", "belongs", "Paediatrics")]
    types["Paediatrics"] = "department"
    schema = infer_schema(stats(rows, types))
    assert {rel: r.role for rel, r in schema.roles.items()} == dict.fromkeys(
        ("complication_of", "并发症", "zz", "belongs"), "other"
    )
    assert schema.role("belongs").how == "types"  # disease–department: the types say so
    assert schema.role("zz").how == "none"  # nothing read it: the import report asks for --schema


@pytest.mark.parametrize("typed", [False, True])
def test_a_kg_that_is_not_medical_gets_no_medical_role(typed: bool) -> None:
    rows = [
        ("Alien", "directed_by", "Ridley Scott"),
        ("Blade Runner", "directed_by", "Ridley Scott"),
        ("Sigourney Weaver", "acted_in", "Alien"),
        ("Harrison Ford", "acted_in", "Blade Runner"),
        ("Ridley Scott", "born_in", "South Shields"),
        ("Alien", "released_in", "1979"),
        ("《英雄》", "导演", "张艺谋"),
        ("张艺谋", "出生于", "西安"),
    ]
    types = {"Alien": "film", "Blade Runner": "film", "Ridley Scott": "person", "South Shields": "place"}
    schema = infer_schema(stats(rows, types if typed else None))
    assert {r.role for r in schema.roles.values()} == {"other"}
    assert not any(schema.votes(name) for rel in schema.roles for name in (rel, "~" + rel))


def test_an_override_wins_over_every_cue() -> None:
    names = {"symptom": "presents_with", "test": "diagnosed_by", "treatment": "treated_with"}
    given = {
        "presents_with": {"role": "other", "disease_end": ""},
        "diagnosed_by": {"role": "treatment", "disease_end": "tail"},
    }
    schema = infer_schema(stats(edges(FACTS_EN, names)), given)
    assert ends(schema)["presents_with"] == ("other", None)
    assert ends(schema)["diagnosed_by"] == ("treatment", "tail")
    assert {schema.role(r).how for r in given} == {"schema"}


def test_relation_role_data_keeps_its_keys() -> None:
    role = RelationRole("seen_in", "symptom", "symptom", "disease", "inverse", via="presents_with")
    assert role.as_dict() == {
        "relation": "seen_in",
        "role": "symptom",
        "head_type": "symptom",
        "tail_type": "disease",
        "disease_end": "tail",
        "how": "inverse",
    }


# -- schema files ---------------------------------------------------------------------------------


def test_schema_file_as_json(tmp_path: Path) -> None:
    p = tmp_path / "roles.json"
    p.write_text(
        json.dumps(
            {
                "Presents With": {"role": "symptom", "disease_end": "head"},
                "症状": {"role": "symptom", "disease_end": "head"},
                "spread_via": {"role": "other"},
            },
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )
    assert load_schema_file(p) == {
        "presents_with": {"role": "symptom", "disease_end": "head"},
        "症状": {"role": "symptom", "disease_end": "head"},
        "spread_via": {"role": "other", "disease_end": ""},
    }


def test_schema_file_as_text_lines(tmp_path: Path) -> None:
    p = tmp_path / "roles.csv"
    p.write_text(
        "relation,role,disease_end\n"
        "# the user's own names\n"
        "seen_in,symptom,tail   # X seen_in disease\n"
        "\n"
        "检查项目\ttest\thead\n"
        "spread_via,OTHER\n",
        encoding="utf-8",
    )
    assert load_schema_file(p) == {
        "seen_in": {"role": "symptom", "disease_end": "tail"},
        "检查项目": {"role": "test", "disease_end": "head"},
        "spread_via": {"role": "other", "disease_end": ""},
    }


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        ("seen_in,symptom,tail\nfoo,sign,head\n", ":2:", "role must be one of"),
        ("seen_in,symptom\n", ":1:", "disease_end must be head or tail"),
        ("a,b,c,d\n", ":1:", "expected relation, role[, disease_end]"),
        ("ok,other\nbad`type,other\n", ":2:", "bad relation type"),
        ("ok,other\nx-y,symptom,head\n", ":2:", "letter or _"),
        (" ,other\n", ":1:", "blank relation name"),
        ('{"seen_in": {"role": "symptom", "disease_end": "middle"}}', "'seen_in'", "head or tail"),
        ('{"seen_in": "symptom"}', "'seen_in'", "expected an object"),
        ('{"seen_in": ', "not valid JSON", ""),
    ],
)
def test_a_bad_schema_file_names_the_line(tmp_path: Path, text: str, where: str, words: str) -> None:
    p = tmp_path / "roles.txt"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(SchemaFileError) as info:
        load_schema_file(p)
    assert str(p) in str(info.value) and where in str(info.value) and words in str(info.value)


def test_a_missing_schema_file_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_schema_file(tmp_path / "nope.csv")


def test_a_name_that_only_names_diseases_is_a_symptom_relation_only_if_it_shares_symptoms() -> None:
    zh = edges(FACTS_ZH, {"symptom": "症状", "test": "检查", "treatment": "药物"})
    # departments that treat diseases, named only by "disease": their far ends are no symptoms
    depts = [("儿科", "诊治疾病", "麻疹"), ("儿科", "诊治疾病", "流感"), ("感染科", "诊治疾病", "登革热")]
    schema = infer_schema(stats(zh + depts))
    assert (schema.role("诊治疾病").role, schema.role("诊治疾病").how) == ("other", "none")
    # a symptom → disease relation named the same way shares the symptoms: it keeps the role
    back = [(s, "可能疾病", d) for d, by_role in FACTS_ZH.items() for s in by_role["symptom"]]
    schema = infer_schema(stats(zh + back))
    assert ends(schema)["可能疾病"] == ("symptom", "tail")
    en = edges(FACTS_EN, {"symptom": "presents_with", "test": "diagnosed_by", "treatment": "treated_with"})
    back_en = [(s, "possible_disease", d) for d, by_role in FACTS_EN.items() for s in by_role["symptom"]]
    assert ends(infer_schema(stats(en + back_en)))["possible_disease"] == ("symptom", "tail")
    # alone (no other symptom relation to compare with) the name still reads as a symptom relation
    assert infer_schema(stats(depts)).role("诊治疾病").role == "symptom"


@pytest.mark.parametrize(
    ("name", "role", "end"),
    [
        ("hassymptom", "symptom", "head"),  # hasSymptom, stored lower-case without underscores
        ("symptomof", "symptom", "tail"),
        ("treatedby", "treatment", "head"),
        ("has_clinical_finding", "symptom", "head"),
        ("confirmed_by", "test", "head"),
        ("managed_with", "treatment", "head"),
        ("治疗方法", "treatment", None),  # disease 治疗方法 drug: a noun, the disease end left to the graph
        ("可用于治疗", "treatment", "tail"),
        ("department_for", None, None),
    ],
)
def test_name_words_beyond_snake_case(name: str, role: str | None, end: str | None) -> None:
    assert role_from_name(name) == (role, end)


def test_twin_types_are_the_inverse_readings_of_one_fact() -> None:
    """A flag on one stored reading of a fact must reach the other (issue 41): which types are twins."""
    names = {"symptom": "presents_with", "test": "diagnosed_by", "treatment": "treated_with"}
    back = {"symptom": "sign_of", "test": "finds", "treatment": "cures"}
    both = infer_schema(stats(edges(FACTS_EN, names) + edges(FACTS_EN, back, reverse=True)))
    assert {k: both.twin_types(k) for k in [*names.values(), *back.values()]} == {
        "presents_with": ["sign_of"],
        "diagnosed_by": ["finds"],
        "treated_with": ["cures"],
        "sign_of": ["presents_with"],
        "finds": ["diagnosed_by"],
        "cures": ["treated_with"],
    }
    one_way = infer_schema(stats(edges(FACTS_EN, names)))
    assert [one_way.twin_types(k) for k in names.values()] == [[], [], []]
    other = RelationSchema(
        {
            "parent_of": RelationRole("parent_of", "other", "entity", "entity"),
            "child_of": RelationRole("child_of", "other", "entity", "entity", how="inverse", via="parent_of"),
            "sibling_of": RelationRole("sibling_of", "other", "entity", "entity"),
        }
    )
    assert (other.twin_types("parent_of"), other.twin_types("child_of")) == (["child_of"], ["parent_of"])
    assert other.twin_types("sibling_of") == [] and other.twin_types("unknown") == []
