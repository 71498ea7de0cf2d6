"""Relation roles at import: entity types from roles, ``kg import --schema``, the report, Unicode types.

Real LadybugDB stores in temp folders; the CLI runs in-process (``CliRunner``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kgmind.cli import app
from kgmind.importers import import_kg, parse, parse_chatdoctor, type_by_roles
from kgmind.importers.report import build_report
from kgmind.models import entity_id
from kgmind.relations import RelationRole, RelationSchema, RelationStats, infer_schema
from kgmind.stores.factory import close_all_stores, open_store

FIX = Path(__file__).parents[1] / "fixtures" / "importers"
runner = CliRunner()

NATURAL_EN = """head,relation,tail
Measles,presents_with,Fever
Measles,presents_with,Rash
Measles,presents_with,Red eyes
Measles,diagnosed_by,Measles IgM test
Measles,treated_with,Vitamin A
Influenza,presents_with,Fever
Influenza,presents_with,Cough
Influenza,diagnosed_by,Rapid flu test
Influenza,treated_with,Oseltamivir
Dengue,presents_with,Fever
Dengue,presents_with,Joint pain
Dengue,diagnosed_by,NS1 antigen test
Dengue,treated_with,Oral fluids
Dengue,zz_link,Aedes mosquito
"""
NATURAL_ZH = """head,relation,tail
麻疹,症状,发热
麻疹,症状,皮疹
麻疹,检查,麻疹抗体检测
麻疹,药物,维生素A
流感,症状,发热
流感,症状,咳嗽
流感,检查,流感快速检测
流感,药物,奥司他韦
登革热,症状,发热
登革热,症状,关节痛
登革热,检查,NS1抗原检测
登革热,药物,补液
"""


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    monkeypatch.setenv("KGMIND_HOME", str(home))
    yield home
    close_all_stores()


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def kg_import(*args: str) -> object:
    return runner.invoke(app, ["kg", "import", *args, "--no-progress"])


def types_of(uri: str) -> dict[str, str]:
    return {e.name: e.type for e in open_store(uri).iter_entities()}


# -- entity types from roles ---------------------------------------------------------------------


def given_roles(store: Any) -> dict[str, dict[str, str]]:
    """The roles a user gave (``--schema``), without the ones the imports inferred."""
    kept = store.schema_overrides().items()
    return {
        rel: {k: v for k, v in role.items() if k != "how"}
        for rel, role in kept
        if role.get("how") == "schema"
    }


def test_an_untyped_triples_file_gets_types_from_roles(tmp_path: Path) -> None:
    res = parse(write(tmp_path, "kg.csv", NATURAL_EN), "triples")
    types = {e.name: e.type for e in res.entities}
    assert {types[n] for n in ("Measles", "Influenza", "Dengue")} == {"disease"}
    assert types["Fever"] == types["Joint pain"] == "symptom"
    assert types["NS1 antigen test"] == "test" and types["Oseltamivir"] == "medication"
    assert types["Aedes mosquito"] == "entity"  # `zz_link` has no role: its far end stays untyped
    link = res.roles_schema.role("zz_link") if res.roles_schema else None
    assert link is not None and (link.head_type, link.tail_type) == ("disease", "entity")  # as typed now
    schema = res.roles_schema
    assert schema is not None and schema.role("presents_with").role == "symptom"


def test_a_reverse_direction_file_types_the_disease_at_the_tail(tmp_path: Path) -> None:
    rows = ["head,relation,tail"] + [
        f"{x},{rel},{d}"
        for d, xs in {"Measles": ["Fever", "Rash"], "Dengue": ["Fever", "Joint pain"]}.items()
        for x, rel in [(xs[0], "sign"), (xs[1], "sign"), (f"{d} test", "exam"), (f"{d} drug", "remedy")]
    ]
    res = parse(write(tmp_path, "rev.csv", "\n".join(rows) + "\n"), "triples")
    types = {e.name: e.type for e in res.entities}
    assert types["Measles"] == types["Dengue"] == "disease"
    assert (
        types["Fever"] == "symptom"
        and types["Dengue test"] == "test"
        and types["Measles drug"] == "medication"
    )


def test_a_disease_that_is_also_a_symptom_stays_a_disease(tmp_path: Path) -> None:
    text = NATURAL_EN + "Influenza,presents_with,Pneumonia\nPneumonia,presents_with,Cough\n"
    types = {e.name: e.type for e in parse(write(tmp_path, "kg.csv", text), "triples").entities}
    assert types["Pneumonia"] == "disease"  # the disease end ranks first (TYPE_PRIORITY)


def test_vocabulary_imports_keep_the_parsers_types() -> None:
    res = parse_chatdoctor(FIX / "chatdoctor_full.csv")
    before = {e.id: e.type for e in res.entities}
    schema = type_by_roles(res)
    assert {e.id: e.type for e in res.entities} == before
    assert schema.role("possible_disease").disease_end == "tail"


def test_an_unread_relation_takes_the_role_its_new_end_types_give(tmp_path: Path) -> None:
    # `qq_rel` is unreadable, but its ends are typed disease/symptom by `presents_with`: the store
    # will read it as a symptom relation, and the import says so
    text = NATURAL_EN + "Measles,qq_rel,Fever\nInfluenza,qq_rel,Cough\n"
    schema = parse(write(tmp_path, "kg.csv", text), "triples").roles_schema
    assert schema is not None
    assert (schema.role("qq_rel").role, schema.role("qq_rel").how) == ("symptom", "types")


def test_typing_twice_with_other_roles_is_refused(tmp_path: Path) -> None:
    res = parse(write(tmp_path, "kg.csv", NATURAL_EN), "triples")
    assert type_by_roles(res) is res.roles_schema  # the same roles: the same schema, no second pass
    with pytest.raises(ValueError, match="another schema"):
        type_by_roles(res, {"zz_link": {"role": "other", "disease_end": ""}})


# -- kg import --schema -------------------------------------------------------------------------


def test_schema_file_overrides_inference_end_to_end(tmp_path: Path) -> None:
    kg = write(tmp_path, "kg.csv", NATURAL_EN)
    roles = write(tmp_path, "roles.csv", "relation,role,disease_end\nzz_link,treatment,head\n")
    uri = f"ladybug:{tmp_path / 'kg'}"
    res = kg_import(str(kg), "-f", "triples", "-s", uri, "--schema", str(roles), "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)["report"]
    line = next(ln for ln in report["relations"] if ln["relation"] == "zz_link")
    assert (line["role"], line["disease_end"], line["how"]) == ("treatment", "head", "schema")
    store = open_store(uri)
    assert given_roles(store) == {"zz_link": {"role": "treatment", "disease_end": "head"}}
    # the import's own reading is kept too, so the store reads every relation as the import did
    assert store.schema_overrides()["presents_with"] == {
        "role": "symptom",
        "disease_end": "head",
        "how": "import",
    }
    assert store.relation_schema().role("zz_link").role == "treatment"  # the runtime schema agrees
    assert types_of(uri)["Aedes mosquito"] == "medication"
    assert not any("no inferred role" in w for w in report["warnings"])


def test_re_import_merges_the_stored_roles(tmp_path: Path) -> None:
    uri = f"ladybug:{tmp_path / 'kg'}"
    first = write(tmp_path, "a.csv", "head,relation,tail\nMeasles,aaa,Fever\nMeasles,bbb,IgM\n")
    second = write(tmp_path, "b.csv", "head,relation,tail\nDengue,aaa,Fever\nDengue,ccc,Fluids\n")
    r1 = write(tmp_path, "r1.csv", "aaa,symptom,head\nbbb,test,head\n")
    r2 = write(tmp_path, "r2.csv", "aaa,symptom,tail\nccc,treatment,head\n")
    assert kg_import(str(first), "-f", "triples", "-s", uri, "--schema", str(r1)).exit_code == 0
    res = kg_import(str(second), "-f", "triples", "-s", uri, "--schema", str(r2))
    assert res.exit_code == 0, res.output
    assert given_roles(open_store(uri)) == {
        "aaa": {"role": "symptom", "disease_end": "tail"},  # named again: the new role
        "bbb": {"role": "test", "disease_end": "head"},  # kept from the first import
        "ccc": {"role": "treatment", "disease_end": "head"},
    }
    # an import without --schema keeps the stored roles
    third = write(tmp_path, "c.csv", "head,relation,tail\nFlu,ddd,Cough\n")
    assert kg_import(str(third), "-f", "triples", "-s", uri).exit_code == 0
    assert set(given_roles(open_store(uri))) == {"aaa", "bbb", "ccc"}
    assert open_store(uri).schema_overrides()["ddd"]["how"] == "import"


@pytest.mark.parametrize("existing", [False, True], ids=["new-store", "existing-store"])
def test_a_bad_schema_file_is_one_error_and_changes_nothing(tmp_path: Path, existing: bool) -> None:
    kg = write(tmp_path, "kg.csv", NATURAL_EN)
    roles = write(tmp_path, "roles.csv", "zz_link,treatment,head\npresents_with,sign,head\n")
    uri = f"ladybug:{tmp_path / 'kg'}"
    before: tuple[object, ...] = ()
    if existing:
        good = write(tmp_path, "good.csv", "zz_link,other\n")
        assert kg_import(str(kg), "-f", "triples", "-s", uri, "--schema", str(good)).exit_code == 0
        store = open_store(uri)
        before = (store.fingerprint(), store.schema_overrides(), types_of(uri))
        close_all_stores()
    res = kg_import(str(kg), "-f", "triples", "-s", uri, "--schema", str(roles))
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert f"{roles}:2:" in lines[0] and "role must be one of" in lines[0]
    if existing:
        store = open_store(uri)
        assert (store.fingerprint(), store.schema_overrides(), types_of(uri)) == before
    else:
        assert not (tmp_path / "kg").exists()


# -- the import report -----------------------------------------------------------------------------


def test_report_text_names_roles_directions_and_what_to_fix(tmp_path: Path) -> None:
    res = kg_import(
        str(write(tmp_path, "kg.csv", NATURAL_EN)), "-f", "triples", "-s", f"ladybug:{tmp_path / 'kg'}"
    )
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "0 malformed rows skipped" in out  # the summary line is kept
    assert "entity types: disease 3, entity 1, medication 3, symptom 5, test 3" in out
    row = next(line for line in out.splitlines() if line.startswith("presents_with"))
    assert row.split()[:3] == ["presents_with", "7", "symptom"] and "disease → symptom" in row
    assert "symptoms, tests and treatments have no edges of their own" in out
    assert "they will be walked in reverse" in out
    assert "warning: relation `zz_link` has no inferred role: give it one with --schema" in out
    assert "no relation has a medical role" not in out


def test_report_json_is_the_same_report_as_data(tmp_path: Path) -> None:
    uri = f"ladybug:{tmp_path / 'kg'}"
    res = kg_import(str(write(tmp_path, "kg.csv", NATURAL_EN)), "-f", "triples", "-s", uri, "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)  # one JSON object: the summary, with the report inside
    assert data["entities"] == 15 and data["skipped"] == 0
    report = data["report"]
    assert report["medical"] is True
    assert report["entity_types"] == data["entity_types"]
    by_name = {ln["relation"]: ln for ln in report["relations"]}
    assert {k: by_name[k]["count"] for k in by_name} == data["relation_types"]
    assert by_name["diagnosed_by"] | {"count": 0} == {
        "relation": "diagnosed_by",
        "count": 0,
        "role": "test",
        "head_type": "disease",
        "tail_type": "test",
        "disease_end": "head",
        "how": "name+structure",
        "via": "",
        "store_role": "",
    }
    assert any("`zz_link` has no inferred role" in w for w in report["warnings"])


def test_report_of_both_directions_has_no_direction_warning(tmp_path: Path) -> None:
    back = "".join(
        f"{t},seen_in,{h}\n"
        for h, r, t in (ln.split(",") for ln in NATURAL_EN.splitlines()[1:])
        if r == "presents_with"
    )
    res = kg_import(
        str(write(tmp_path, "kg.csv", NATURAL_EN + back)),
        "-f",
        "triples",
        "-s",
        f"ladybug:{tmp_path / 'kg'}",
        "--json",
    )
    report = json.loads(res.stdout)["report"]
    seen = next(ln for ln in report["relations"] if ln["relation"] == "seen_in")
    assert (seen["role"], seen["disease_end"], seen["how"], seen["via"]) == (
        "symptom",
        "tail",
        "inverse",
        "presents_with",
    )
    assert not any(w.startswith("symptoms") for w in report["warnings"])
    assert any(w.startswith("tests and treatments have no edges") for w in report["warnings"])


def test_report_of_a_kg_that_is_not_medical_says_conclusions_are_generic(tmp_path: Path) -> None:
    text = "head,relation,tail\nAlien,directed_by,Ridley Scott\nSigourney Weaver,acted_in,Alien\n"
    res = kg_import(
        str(write(tmp_path, "films.csv", text)), "-f", "triples", "-s", f"ladybug:{tmp_path / 'kg'}"
    )
    assert res.exit_code == 0, res.output
    assert "note: no relation has a medical role" in res.stdout and "generic" in res.stdout


def test_report_warns_where_the_store_reads_a_relation_otherwise() -> None:
    schema = infer_schema([])
    store = RelationSchema({})
    report = build_report({"disease": 1}, {"aaa": 2}, schema, store_schema=store)
    assert report.relations[0].store_role == ""  # both read it as `other`: nothing to say
    store = RelationSchema({"aaa": RelationRole("aaa", "symptom", "disease", "symptom", "types")})
    report = build_report({"disease": 1}, {"aaa": 2}, schema, store_schema=store)
    assert report.relations[0].store_role == "symptom/head"
    assert any("the store reads it as symptom/head" in w for w in report.warnings)


def test_report_warns_of_a_reverse_only_kg_an_assumed_end_and_unused_schema_names() -> None:
    rows = [("Fever", "symptom_of", "Measles"), ("IgM", "test_for", "Measles"), ("Q", "symptomatic", "R")]
    schema = infer_schema(
        RelationStats.from_edges(((h, r, t, "entity", "entity") for h, r, t in rows), keep_names=False)
    )
    counts = {"symptom_of": 1, "test_for": 1, "symptomatic": 1}
    given = {"nosuch": {"role": "other", "disease_end": ""}}
    report = build_report({"entity": 6}, counts, schema, overrides=given)
    text = "\n".join(report.warnings)
    # symptom_of ends at the disease, symptomatic is assumed to start there: no one-side warning for
    # symptoms; tests are stored from the test side only
    assert "diseases have no test edges of their own" in text and "`test_for`" in text
    assert "relation `symptomatic` reads as a symptom relation by its name" in text
    assert "the head was assumed" in text and "`symptomatic,symptom,tail`" in text
    assert "--schema names relations this file does not have: `nosuch`" in text


def test_report_after_every_format(tmp_path: Path) -> None:
    res = kg_import(str(FIX / "chatdoctor_full.csv"), "-f", "chatdoctor", "-s", f"ladybug:{tmp_path / 'cd'}")
    assert res.exit_code == 0, res.output
    assert "4 malformed rows skipped" in res.stdout
    row = next(line for line in res.stdout.splitlines() if line.startswith("possible_disease"))
    assert "symptom → disease" in row and "entity types" in row
    assert "warning:" not in res.stdout  # the fitted form: both directions, typed


# -- Unicode relation types -------------------------------------------------------------------------


def test_a_chinese_triples_file_imports_end_to_end(tmp_path: Path) -> None:
    uri = f"ladybug:{tmp_path / 'zh'}"
    res = kg_import(str(write(tmp_path, "zh.csv", NATURAL_ZH)), "-f", "triples", "-s", uri)
    assert res.exit_code == 0, res.output
    assert "0 malformed rows skipped" in res.stdout
    stats = runner.invoke(app, ["kg", "stats", "--store", uri, "--json"])
    data = json.loads(stats.stdout)
    assert data["relations"] == {"症状": 6, "检查": 3, "药物": 3}
    assert data["entities"]["disease"] == 3 and data["entities"]["symptom"] == 4
    schema = open_store(uri).relation_schema()
    assert (schema.role("症状").role, schema.role("症状").disease_end) == ("symptom", "head")
    assert schema.role("药物").role == "treatment" and schema.votes("~症状")
    assert open_store(uri).out_edges(entity_id("麻疹"))[0].type in {"症状", "检查", "药物"}


@pytest.mark.parametrize(
    "bad",
    ["has`symptom", "has'symptom", 'has"symptom', "~症状", "has-symptom", "has.symptom", "症状😷", "r" * 65],
)
def test_a_relation_type_that_is_no_identifier_is_a_malformed_row(tmp_path: Path, bad: str) -> None:
    cell = '"' + bad.replace('"', '""') + '"'
    text = f"head,relation,tail\n麻疹,症状,发热\n麻疹,{cell},皮疹\n麻疹,有 症状,咳嗽\n"
    uri = f"ladybug:{tmp_path / 'kg'}"
    summary = import_kg(
        write(tmp_path, "kg.csv", text), "triples", open_store(uri, create=True), progress=False
    )
    assert summary.skipped == 1 and summary.errors[0].line == 3
    reason = summary.errors[0].reason
    assert reason.startswith("bad relation type") and "letter or _" in reason and "at most 64" in reason
    assert summary.relation_types == {"症状": 1, "有_症状": 1}  # a space inside becomes _
