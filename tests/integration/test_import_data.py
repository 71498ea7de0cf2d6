"""Import the real public KG files through ``kgmind kg`` and check counts against independent counts.

The expected counts are computed here from the raw files with the test's own csv/ast/json
code (not the importers); only :func:`kgmind.models.normalize_name` (the id contract) is shared.
"""

from __future__ import annotations

import ast
import csv
import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgmind.cli import app
from kgmind.models import normalize_name
from kgmind.stores.factory import close_all_stores, open_store

DATA = Path(os.environ.get("KGMIND_DATA_DIR", Path(__file__).parents[2] / ".." / "shared" / "data"))

pytestmark = pytest.mark.data

runner = CliRunner()


def need(rel: str) -> Path:
    path = DATA / rel
    if not path.exists():
        pytest.skip(f"data file {path} is missing (set KGMIND_DATA_DIR to the shared data folder)")
    return path


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("KGMIND_HOME", str(tmp_path / "home"))
    yield
    close_all_stores()


def import_and_stats(path: Path, fmt: str, uri: str) -> dict:
    res = runner.invoke(app, ["kg", "import", str(path), "--format", fmt, "--store", uri, "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "0 malformed rows skipped" in res.stdout
    st = runner.invoke(app, ["kg", "stats", "--store", uri, "--json"])
    assert st.exit_code == 0, st.output
    return json.loads(st.stdout)


def counts(edges: set[tuple[str, str, str]]) -> dict[str, int]:
    return dict(Counter(rel for _, rel, _ in edges))


def test_emckg_full_chatdoctor(tmp_path: Path) -> None:
    path = need("emckg/format_dataset.csv")
    columns = {
        "Symptom": ("has_symptom", "possible_disease"),
        "TestsAndProcedures": ("need_medical_test", "can_check_disease"),
        "commonMedications": ("need_medication", "possible_cure_disease"),
    }
    edges: set[tuple[str, str, str]] = set()
    diseases: set[str] = set()
    with path.open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            d = normalize_name(row["disease"])
            diseases.add(d)
            for col, (rel, inv) in columns.items():
                for item in ast.literal_eval(row[col]):
                    t = normalize_name(item)
                    if t:
                        edges.add((d, rel, t))
                        edges.add((t, inv, d))
    assert len(diseases) == 796
    data = import_and_stats(path, "chatdoctor", f"ladybug:{tmp_path / 'emckg'}")
    assert data["entities"]["disease"] == 796
    assert data["relations"] == counts(edges)
    assert data["relations_total"] == len(edges)
    names = diseases | {h for h, _, _ in edges}
    assert data["entities_total"] == len(names)
    store = open_store(f"ladybug:{tmp_path / 'emckg'}", create=True)
    assert store.stats().docs_total == 796  # one `reason` document per disease


def test_mindmap_tsv(tmp_path: Path) -> None:
    path = need("emckg/mindmap_emckg_triples.tsv")
    lines = [
        ln.rstrip("\n").split("\t") for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()
    ]
    assert len(lines) == 5802
    edges = {(normalize_name(h), r, normalize_name(t)) for h, r, t in lines}
    data = import_and_stats(path, "mindmap-tsv", f"ladybug:{tmp_path / 'mm'}")
    assert data["relations"] == counts(edges)
    assert len(data["relations"]) == 6
    assert data["entities_total"] == len({h for h, _, _ in edges} | {t for _, _, t in edges})
    assert data["entities"]["disease"] == 100


def test_qasystem_sample(tmp_path: Path) -> None:
    path = need("cmckg/medical_sample100.jsonl")
    records = [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    assert len(records) == 100
    fields = {
        "symptom": ("has_symptom", "possible_disease"),
        "check": ("need_medical_test", "can_check_disease"),
        "common_drug": ("need_medication", "possible_cure_disease"),
        "recommand_drug": ("need_medication", "possible_cure_disease"),
        "do_eat": ("good_food", "food_good_for"),
        "not_eat": ("avoid_food", "food_avoided_by"),
        "recommand_eat": ("recommended_recipe", "recipe_recommended_for"),
        "acompany": ("has_complication", "has_complication"),
    }
    edges: set[tuple[str, str, str]] = set()
    for rec in records:
        d = normalize_name(rec["name"])
        for field, (rel, inv) in fields.items():
            for item in rec.get(field) or []:
                t = normalize_name(item)
                if t:
                    edges.add((d, rel, t))
                    edges.add((t, inv, d))
        if rec.get("cure_department"):
            dept = normalize_name(rec["cure_department"][-1])
            edges.add((d, "belongs_to_department", dept))
            edges.add((dept, "department_of_disease", d))
        for detail in rec.get("drug_detail") or []:
            if "(" in detail:
                producer, _, drug = detail.rpartition("(")
                drug = drug.rstrip(")")
                if normalize_name(producer) and normalize_name(drug):
                    edges.add((normalize_name(producer), "produces_drug", normalize_name(drug)))
    uri = f"ladybug:{tmp_path / 'qa'}"
    data = import_and_stats(path, "qasystem-json", uri)
    expected = counts(edges)
    for rel, n in expected.items():
        assert data["relations"][rel] == n, rel
    assert data["relations"]["produced_by"] == expected["produces_drug"]
    store = open_store(uri)
    for rec in records:  # every record is a disease entity with its description document
        (ent,) = store.find_entities(rec["name"])
        assert ent.type == "disease"
    assert store.stats().docs_total == len({(r["name"], r["desc"]) for r in records if r["desc"].strip()})
    assert data["entities"]["disease"] >= 100


@pytest.mark.slow
def test_recrawl_full_parse() -> None:
    """Parse (no store) the whole recrawl and compare with an independent count of its triples."""
    from kgmind.importers import parse

    root = need("cmckg/recrawl_full")
    fields = {
        ("symptom_data", "symptoms"): ("has_symptom", "possible_disease"),
        ("gaishu_info", "has_complication"): ("has_complication", "has_complication"),
        ("", "inspect_info"): ("need_medical_test", "can_check_disease"),
        ("gaishu_info", "common_drug"): ("need_medication", "possible_cure_disease"),
        ("food_info", "good_food"): ("good_food", "food_good_for"),
        ("food_info", "avoid_food"): ("avoid_food", "food_avoided_by"),
        ("food_info", "recommand_recipes"): ("recommended_recipe", "recipe_recommended_for"),
    }
    edges: set[tuple[str, str, str]] = set()
    n_records = 0
    for part in sorted(root.glob("medical_*.json")):
        for rec in json.loads(part.read_text(encoding="utf-8")).values():
            n_records += 1
            d = normalize_name(rec["gaishu_info"]["name"])
            for (section, field), (rel, inv) in fields.items():
                holder = rec.get(section, {}) if section else rec
                for item in holder.get(field) or []:
                    t = normalize_name(item)
                    if t:
                        edges.add((d, rel, t))
                        edges.add((t, inv, d))
            depts = rec["gaishu_info"].get("belongs_to_department") or []
            if depts:
                edges.add((d, "belongs_to_department", normalize_name(depts[-1])))
    result = parse(root, "recrawl-json")
    assert n_records == 8792
    assert result.rows == n_records and result.skipped == 0
    got = result.relation_counts()
    for rel, n in counts(edges).items():
        assert got[rel] == n, rel
    assert 20_000 < len(result.entities) < 30_000


def test_emckg_escapes_are_repaired_at_import(tmp_path: Path) -> None:
    """EMCKG's texts hold ``\\xe2\\x80\\x93`` and ``swimmer\\'s`` as literal text; none survive the import."""
    import re

    from kgmind.importers import parse_chatdoctor

    path = need("emckg/format_dataset.csv")
    raw = path.read_text(encoding="utf-8")
    assert len(re.findall(r"\\x[0-9a-f]{2}", raw)) > 1000 and raw.count("\\'") > 100  # the file is dirty
    result = parse_chatdoctor(path)
    texts = [e.name for e in result.entities] + [e.description for e in result.entities]
    texts += [d.text for d in result.docs]
    assert not [t for t in texts if re.search(r"\\x[0-9a-fA-F]{2}|\\['\"]", t)]
    assert any("Ullrich–Turner syndrome" in t for t in texts)
    assert "Otitis externa (swimmer's ear)" in {e.name for e in result.entities}
    assert result.repaired >= 200  # distinct names and texts (239 in the published file)
    # the CLI summary says how many were repaired (a slice of the real file, to keep the import small)
    rows = list(csv.reader(raw.splitlines()))
    dirty = [r for r in rows[1:] if "\\x" in "".join(r) or "\\'" in "".join(r)][:20]
    part = tmp_path / "slice.csv"
    with part.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows([rows[0], *dirty])
    uri = f"ladybug:{tmp_path / 'slice'}"
    res = runner.invoke(
        app, ["kg", "import", str(part), "--format", "chatdoctor", "--store", uri, "--no-progress"]
    )
    assert res.exit_code == 0, res.output
    n = parse_chatdoctor(part).repaired
    assert n >= 10 and f"repaired {n:,} names and texts" in res.stdout  # distinct ones: some repeat
