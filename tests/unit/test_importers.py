"""Unit tests of the KG parsers on small hand-written fixture files (no store needed)."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from kgmind.importers import (
    FORMATS,
    INVERSE,
    RELATION_TYPES,
    ImportResult,
    get_parser,
    parse,
    parse_chatdoctor,
    parse_demo,
    parse_mindmap_tsv,
    parse_qasystem_json,
    parse_recrawl_json,
    parse_triples,
)
from kgmind.models import entity_id, normalize_name

FIX = Path(__file__).parents[1] / "fixtures" / "importers"


def triples(result: ImportResult) -> set[tuple[str, str, str]]:
    names = {e.id: e.name for e in result.entities}
    return {(names[r.head], r.type, names[r.tail]) for r in result.relations}


def keyed(result: ImportResult) -> set[tuple[str, str, str]]:
    return {(normalize_name(h), r, normalize_name(t)) for h, r, t in triples(result)}


def assert_both_ways(t: set[tuple[str, str, str]]) -> None:
    """Every triple's inverse is there too (the importers write each relation both ways)."""
    for h, r, tl in t:
        assert (tl, INVERSE[r], h) in t, (h, r, tl)


def by_name(result: ImportResult, name: str):
    eid = entity_id(name)
    return next(e for e in result.entities if e.id == eid)


def check_integrity(result: ImportResult) -> None:
    ids = {e.id for e in result.entities}
    assert len(ids) == len(result.entities)
    assert len({r.id for r in result.relations}) == len(result.relations)
    for r in result.relations:
        assert r.head in ids and r.tail in ids
        assert r.weight > 0
    doc_ids = {d.id for d in result.docs}
    for r in result.relations:
        assert r.source == "" or r.source in doc_ids
    assert result.skipped == len(result.errors)


# -- chatdoctor -------------------------------------------------------------------


def test_chatdoctor_full_rows_and_errors() -> None:
    res = parse_chatdoctor(FIX / "chatdoctor_full.csv")
    check_integrity(res)
    assert res.rows == 3
    lines = {e.line: e.reason for e in res.errors}
    # physical line numbers: row 1 spans lines 3-4 (CRLF inside a quoted cell)
    assert set(lines) == {5, 6, 7, 8}
    assert "literal" in lines[5]
    assert "columns" in lines[6]
    assert "blank" in lines[7]
    assert "not a list" in lines[8]
    assert all(e.file.endswith("chatdoctor_full.csv") for e in res.errors)


def test_chatdoctor_literals_commas_and_inverses() -> None:
    res = parse_chatdoctor(FIX / "chatdoctor_full.csv")
    t = triples(res)
    # commas inside a list item stay inside the name
    assert ("Panic disorder", "need_medication", "Insulin, aspart, human") in t
    assert ("Insulin, aspart, human", "possible_cure_disease", "Panic disorder") in t
    assert ("Panic disorder", "need_medical_test", "Depression screen (Depression screening)") in t
    assert ("Depression screen (Depression screening)", "can_check_disease", "Depression") in t
    assert_both_ways(t)
    # "Anxiety and nervousness" listed twice in one cell -> one edge each way
    panic = entity_id("Panic disorder")
    anx = entity_id("Anxiety and nervousness")
    assert sum(1 for r in res.relations if (r.head, r.type, r.tail) == (panic, "has_symptom", anx)) == 1
    # "runny  nose" and "Runny nose" normalise alike -> one entity, one edge
    cold = entity_id("Common_cold")
    assert sum(1 for r in res.relations if r.head == cold and r.type == "has_symptom") == 2


def test_chatdoctor_types_docs_and_sources() -> None:
    res = parse_chatdoctor(FIX / "chatdoctor_full.csv")
    # Depression is a symptom of Panic disorder and a disease row: disease wins
    assert by_name(res, "Depression").type == "disease"
    assert by_name(res, "Lorazepam").type == "medication"
    assert by_name(res, "Electrocardiogram").type == "test"
    assert by_name(res, "Fatigue").type == "symptom"
    depression = by_name(res, "Depression")
    assert depression.description.startswith("Low mood that lasts.")
    assert "second line" in depression.description
    doc = next(d for d in res.docs if d.entity_id == depression.id)
    assert doc.text == depression.description
    for r in res.relations:
        if r.head == depression.id and r.type == "has_symptom":
            assert r.source == doc.id
    assert len(res.docs) == 2  # Common_cold has an empty reason: no doc
    cold = entity_id("Common_cold")
    assert all(r.source == "" for r in res.relations if r.head == cold)


def test_chatdoctor_mini_variant() -> None:
    res = parse_chatdoctor(FIX / "chatdoctor_mini.csv")
    check_integrity(res)
    assert res.rows == 2 and not res.errors
    assert res.docs == []
    t = triples(res)
    assert ("Asthma", "need_medication", "Budesonide, formoterol") in t
    assert ("Spirometry", "can_check_disease", "Asthma") in t
    assert res.relation_counts() == {
        "can_check_disease": 1,
        "has_symptom": 3,
        "need_medical_test": 1,
        "need_medication": 2,
        "possible_cure_disease": 2,
        "possible_disease": 3,
    }


def test_chatdoctor_rejects_other_csv(tmp_path: Path) -> None:
    f = tmp_path / "x.csv"
    f.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="not a ChatDoctor CSV"):
        parse_chatdoctor(f)


# -- mindmap-tsv -------------------------------------------------------------------


def test_mindmap_tsv() -> None:
    res = parse_mindmap_tsv(FIX / "mindmap.tsv")
    check_integrity(res)
    names = {e.name for e in res.entities}
    assert "Panic disorder" in names and "Anxiety and nervousness" in names
    assert not any("_" in n for n in names)
    # 7 well-formed lines, one a case/underscore duplicate -> 6 edges, +1 unknown relation
    assert res.rows == 8
    assert len(res.relations) == 7
    assert {e.line for e in res.errors} == {8, 9, 10}
    assert by_name(res, "Panic disorder").type == "disease"
    assert by_name(res, "Lorazepam").type == "medication"
    assert by_name(res, "Electrocardiogram").type == "test"
    assert by_name(res, "Anxiety and nervousness").type == "symptom"
    assert by_name(res, "Fever").type == "entity"  # only seen with an unknown relation
    # no inverse is invented: the file's own triples only
    assert ("fever", "related_to", "cough") not in keyed(res)


# -- triples -----------------------------------------------------------------------


def test_triples_csv_header_weights_and_errors() -> None:
    res = parse_triples(FIX / "triples.csv")
    check_integrity(res)
    assert res.rows == 3
    assert {e.line for e in res.errors} == {4, 5, 6}
    reasons = " ".join(e.reason for e in res.errors)
    assert "bad weight" in reasons and "> 0" in reasons and "columns" in reasons
    w = {(r.type, r.tail): r.weight for r in res.relations}
    assert w[("treats", entity_id("Headache"))] == 2.5
    assert w[("has_symptom", entity_id("Pain"))] == 1.0
    assert ("interacts_with", entity_id("Warfarin")) in w  # spaces -> snake_case
    assert by_name(res, "Pain").type == "symptom"  # inferred from has_symptom


def test_triples_sniffed_tab_and_no_header() -> None:
    res = parse_triples(FIX / "triples.txt")
    assert res.rows == 2 and not res.errors
    assert sorted(r.weight for r in res.relations) == [0.5, 1.0]
    res2 = parse_triples(FIX / "triples_nohead.csv")
    assert res2.rows == 1
    assert ("flu", "has_symptom", "fever") in keyed(res2)


def test_triples_all_bad_rows() -> None:
    res = parse_triples(FIX / "triples_bad.csv")
    assert res.rows == 0 and res.skipped == 2


# -- qasystem-json -----------------------------------------------------------------


def test_qasystem_json() -> None:
    res = parse_qasystem_json(FIX / "qasystem.jsonl")
    check_integrity(res)
    assert res.rows == 2
    assert {e.line for e in res.errors} == {3, 4, 5, 6}
    t = keyed(res)
    assert ("感冒", "has_symptom", "发热") in t and ("发热", "possible_disease", "感冒") in t
    # acompany is symmetric
    assert ("感冒", "has_complication", "肺炎") in t and ("肺炎", "has_complication", "感冒") in t
    assert ("感冒", "need_medication", "感冒灵颗粒") in t  # recommand_drug
    assert ("布洛芬片", "possible_cure_disease", "感冒") in t
    assert ("感冒", "good_food", "鸡蛋") in t and ("辣椒", "food_avoided_by", "感冒") in t
    assert ("感冒", "recommended_recipe", "小米粥") in t
    # departments: the most specific one, plus the hierarchy
    assert ("感冒", "belongs_to_department", "呼吸内科") in t
    assert ("感冒", "belongs_to_department", "内科") not in t
    assert ("呼吸内科", "sub_department_of", "内科") in t
    assert ("肺炎", "belongs_to_department", "内科") in t
    # drug_detail: producer -> drug; an item without brackets is ignored
    assert ("某某药业布洛芬片", "produces_drug", "布洛芬片") in t
    assert ("布洛芬片", "produced_by", "某某药业布洛芬片") in t
    assert not any("无括号药名" in h or "无括号药名" in tl for h, _, tl in t)
    types = {e.name: e.type for e in res.entities}
    assert types["感冒"] == "disease" and types["肺炎"] == "disease"
    assert types["发热"] == "symptom" and types["血常规"] == "test"
    assert types["鸡蛋"] == "food" and types["呼吸内科"] == "department"
    assert types["某某药业布洛芬片"] == "producer" and types["布洛芬片"] == "medication"
    # desc -> description + doc, the source of the disease's relations
    cold = by_name(res, "感冒")
    assert cold.description == "感冒是常见的上呼吸道感染。"
    (doc,) = res.docs
    assert doc.entity_id == cold.id
    assert all(r.source == doc.id for r in res.relations if r.head == cold.id and r.type == "has_symptom")
    # 发热 listed twice -> one edge
    assert Counter((r.head, r.type, r.tail) for r in res.relations).most_common(1)[0][1] == 1


# -- recrawl-json ------------------------------------------------------------------


def test_recrawl_directory_and_single_file() -> None:
    res = parse_recrawl_json(FIX / "recrawl")
    check_integrity(res)
    assert res.rows == 2
    assert {(Path(e.file).name, e.line) for e in res.errors} == {("medical_0.json", 2), ("medical_1.json", 2)}
    t = keyed(res)
    assert ("百日咳", "has_symptom", "痉挛性咳嗽") in t
    assert ("百日咳", "has_complication", "肺炎") in t and ("肺炎", "has_complication", "百日咳") in t
    assert ("百日咳", "belongs_to_department", "小儿内科") in t
    assert ("小儿内科", "sub_department_of", "儿科") in t
    assert ("百日咳", "need_medication", "红霉素片") in t
    assert ("百日咳", "need_medical_test", "血常规") in t
    assert ("南瓜子仁", "food_good_for", "百日咳") in t
    assert ("螃蟹", "food_avoided_by", "百日咳") in t
    assert ("排骨汤", "recipe_recommended_for", "百日咳") in t
    assert ("低热", "possible_disease", "肺炎") in t
    assert_both_ways(t)
    single = parse_recrawl_json(FIX / "recrawl" / "medical_1.json")
    assert single.rows == 1 and single.skipped == 1
    assert {e.name for e in single.entities} >= {"肺炎", "百日咳", "咳嗽"}


def test_recrawl_bad_json_part(tmp_path: Path) -> None:
    (tmp_path / "medical_0.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "medical_1.json").write_text(
        json.dumps({"a": {"gaishu_info": {"name": "X病"}, "symptom_data": {"symptoms": ["Y"]}}}),
        encoding="utf-8",
    )
    res = parse_recrawl_json(tmp_path)
    assert res.rows == 1 and res.skipped == 1
    assert res.errors[0].reason.startswith("bad JSON")


def test_recrawl_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        parse_recrawl_json(tmp_path)


# -- vocabulary, dispatch, demo ----------------------------------------------------


def test_vocabulary_inverses_are_consistent() -> None:
    for rel, (head, tail, inv) in RELATION_TYPES.items():
        assert INVERSE[inv] == rel
        ih, it, _ = RELATION_TYPES[inv]
        assert (ih, it) == (tail, head)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_missing_file(fmt: str, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        parse(tmp_path / "nope.csv", fmt)


def test_unknown_format_lists_formats() -> None:
    with pytest.raises(ValueError, match="chatdoctor, mindmap-tsv, qasystem-json, recrawl-json, triples"):
        get_parser("rdf")


def test_directory_for_single_file_format() -> None:
    with pytest.raises(ValueError, match="directory"):
        parse(FIX / "recrawl", "chatdoctor")


def test_demo_kg() -> None:
    res = parse_demo()
    check_integrity(res)
    assert not res.errors
    assert res.rows >= 45
    diseases = [e for e in res.entities if e.type == "disease"]
    assert len(diseases) == res.rows
    assert all(d.description for d in diseases)
    assert len(res.docs) == res.rows
    names = {e.name for e in res.entities}
    assert {"Influenza", "Type 2 diabetes", "感冒", "高血压", "偏头痛"} <= names
    t = keyed(res)
    assert_both_ways(t)
    assert set(res.relation_counts()) == {
        "has_symptom",
        "possible_disease",
        "need_medical_test",
        "can_check_disease",
        "need_medication",
        "possible_cure_disease",
    }
    flu = by_name(res, "Influenza")
    assert "flu" in flu.aliases
    for d in diseases:  # every condition has symptoms, tests and medications
        kinds = {r.type for r in res.relations if r.head == d.id}
        assert {"has_symptom", "need_medical_test", "need_medication"} <= kinds, d.name


# -- escaped bytes and stray backslashes left by earlier dumps ------------------------------------


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        (r"pronounced /hi\xcb\x90m/", "pronounced /hiːm/"),
        (r"Ullrich\xe2\x80\x93Turner syndrome", "Ullrich–Turner syndrome"),
        (r"\xce\xba\xcf\x81\xcf\x85\xcf\x80\xcf\x84\xcf\x8c\xcf\x82, kryptos", "κρυπτός, kryptos"),
        (r"swimmer\'s ear", "swimmer's ear"),
        (r"Devil\\'S Claw", "Devil'S Claw"),
        (r"the term \"normal\"", 'the term "normal"'),
        (r"a lone \xe9 is not UTF-8", r"a lone \xe9 is not UTF-8"),  # not guessed
        (r"C:\path\to", r"C:\path\to"),  # backslashes not before a quote stay
        ("plain text, 中文", "plain text, 中文"),
    ],
)
def test_repair_escapes(raw: str, clean: str) -> None:
    from kgmind.text import repair_escapes

    assert repair_escapes(raw) == clean


def test_builder_repairs_every_name_and_text_once(tmp_path: Path) -> None:
    from kgmind.importers.base import GraphBuilder

    b = GraphBuilder()
    eid = b.entity(r"Swimmer\'s ear", "disease", r"An infection /\xcb\x90/", aliases=[r"otitis \'externa\'"])
    assert eid == entity_id("Swimmer's ear") and b.entity(r"Swimmer\'s ear") == eid
    ent = b.entities[eid]
    assert ent.name == "Swimmer's ear" and ent.description == "An infection /ː/"
    assert ent.aliases == ["otitis 'externa'"]
    b.doc(eid, r"An infection /\xcb\x90/")
    assert [d.text for d in b.docs.values()] == ["An infection /ː/"]
    assert b.repaired == 3  # the name, the description (= the doc text) and the alias, each once
    assert b.result("x", tmp_path, [], 1).repaired == 3


def test_chatdoctor_import_repairs_and_counts(tmp_path: Path) -> None:
    csv_path = tmp_path / "escaped.csv"
    # as in EMCKG's format_dataset.csv: the escapes are literal text in the file
    row = [
        r"Otitis externa (swimmer\'s ear)",
        "['Ear pain']",
        r"Say /hi\xcb\x90m/.",
        "[]",
        '["Devil' + "\\\\'S Claw Preparation" + '"]',
    ]
    assert row[4] == '["Devil\\\\\'S Claw Preparation"]'  # two backslashes, as in the file
    with csv_path.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows(
            [["disease", "Symptom", "reason", "TestsAndProcedures", "commonMedications"], row]
        )
    result = parse_chatdoctor(csv_path)
    names = {e.name for e in result.entities}
    assert names == {"Otitis externa (swimmer's ear)", "Ear pain", "Devil'S Claw Preparation"}
    assert [d.text for d in result.docs] == ["Say /hiːm/."]
    assert result.repaired == 3
