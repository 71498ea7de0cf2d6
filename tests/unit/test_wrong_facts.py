"""benchmarks/wrong_facts.py: the false edges it injects, the file it writes, and its simulated reviewer.

Only the pure parts are tested (no store, no eval): a small hand-made ChatDoctor KG whose diseases
either share symptoms or do not, read back by kgmind's own ChatDoctor importer.
"""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

import pytest

from kgmind.importers import parse

_REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(_REPO / "benchmarks"))  # as running the script does: it imports benchmarks/_common.py
_spec = importlib.util.spec_from_file_location("wrong_facts", _REPO / "benchmarks" / "wrong_facts.py")
assert _spec is not None and _spec.loader is not None
wf = importlib.util.module_from_spec(_spec)
sys.modules["wrong_facts"] = wf
_spec.loader.exec_module(wf)

#: Flu and Cold share "Cough"; Gout and Acne share nothing with anyone; each has tests and drugs.
DISEASES = {
    "Flu": (["Fever", "Cough"], ["Flu swab"], ["Oseltamivir"]),
    "Cold": (["Cough", "Sneezing"], ["Nasal exam"], ["Zinc, lozenges"]),
    "Gout": (["Joint pain"], ["Uric acid test"], ["Colchicine"]),
    "Acne": (["Pimples"], ["Skin exam"], ["Isotretinoin"]),
    "Migraine": (["Headache", "Nausea"], ["Brain MRI"], ["Sumatriptan"]),
}


def _write_kg(path: Path) -> Path:
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["idx", "disease", "Symptom", "reason", "TestsAndProcedures", "commonMedications"])
        for i, (d, (sym, tests, meds)) in enumerate(DISEASES.items()):
            w.writerow([i, d, repr(sym), f"{d}, a disease", repr(tests), repr(meds)])
    return path


def _symptoms() -> dict[str, set[str]]:
    return {wf.norm(d): {wf.norm(s) for s in v[0]} for d, v in DISEASES.items()}


def _items_of(disease: str) -> dict[str, set[str]]:
    sym, tests, meds = DISEASES[disease]
    return {"has_symptom": set(sym), "need_medical_test": set(tests), "need_medication": set(meds)}


def test_false_edges_are_seeded_and_link_unrelated_diseases(tmp_path: Path) -> None:
    _header, _rows, facts = wf.read_chatdoctor(_write_kg(tmp_path / "kg.csv"))
    assert len(facts) == 18 and ("Cold", "need_medication", "Zinc, lozenges") in facts  # comma kept
    first = wf.choose_false_edges(facts, 0.25, seed=3)
    assert first == wf.choose_false_edges(facts, 0.25, seed=3)
    assert first != wf.choose_false_edges(facts, 0.25, seed=4)
    assert len(first) == 4
    symptoms, linked = _symptoms(), wf.linked_names(facts)
    for fe in first:
        assert fe.disease != fe.donor
        assert not symptoms[wf.norm(fe.disease)] & symptoms[wf.norm(fe.donor)]  # unrelated
        assert {fe.disease, fe.donor} != {"Flu", "Cold"}
        assert fe.tail in _items_of(fe.donor)[fe.relation]  # a real name, in the relation it has there
        assert wf.norm(fe.tail) not in linked[wf.norm(fe.disease)]  # never a true fact
    assert len({wf.pair_key(fe.disease, fe.tail) for fe in first}) == len(first)


def test_too_many_false_edges_is_an_error(tmp_path: Path) -> None:
    _h, _r, facts = wf.read_chatdoctor(_write_kg(tmp_path / "kg.csv"))
    with pytest.raises(ValueError, match="found only"):
        wf.choose_false_edges(facts, 5.0, seed=0)


def test_corrupted_file_imports_with_the_false_edges_appended(tmp_path: Path) -> None:
    header, rows, facts = wf.read_chatdoctor(_write_kg(tmp_path / "kg.csv"))
    false = wf.choose_false_edges(facts, 0.25, seed=1)
    wf.write_chatdoctor(tmp_path / "bad.csv", header, rows, false)
    _h, _r, again = wf.read_chatdoctor(tmp_path / "bad.csv")
    assert again[: len(facts)] != [] and set(facts) <= set(again)
    assert set(again) - set(facts) == {(fe.disease, fe.relation, fe.tail) for fe in false}
    clean, bad = parse(tmp_path / "kg.csv", "chatdoctor"), parse(tmp_path / "bad.csv", "chatdoctor")
    assert not bad.errors
    assert len(bad.relations) == len(clean.relations) + 2 * len(false)  # each fact and its inverse
    names = {e.id: e.name for e in bad.entities}
    stored = {(names[r.head], r.type, names[r.tail]) for r in bad.relations}
    assert set(wf.false_triples(false)) <= stored  # the inverse readings the triples export writes


def _row(qid: str, items: list[list[list[str]]]) -> dict:
    return {"id": qid, "shown": [{"id": f"N{i + 1}", "triples": t} for i, t in enumerate(items)]}


def test_reviewer_flags_false_triples_about_half_the_time_and_is_seeded() -> None:
    pairs = {wf.pair_key("Gout", "Sneezing")}
    false_item = [["Sneezing", "possible_disease", "Gout"], ["Gout", "has_symptom", "Joint pain"]]
    true_item = [["Flu", "has_symptom", "Fever"], ["Flu", "need_medication", "Oseltamivir"]]
    rows = [_row(str(q), [false_item, true_item, []]) for q in range(2000)]
    verdicts = wf.review(rows, pairs, seed=0)
    assert verdicts == wf.review(rows, pairs, seed=0)
    assert verdicts != wf.review(rows, pairs, seed=1)
    caught = [v for v in verdicts if wf.pair_key(v["head"], v["tail"]) in pairs]
    mistaken = [v for v in verdicts if wf.pair_key(v["head"], v["tail"]) not in pairs]
    assert 900 <= len(caught) <= 1100  # p = 0.5 of 2000 items
    assert 20 <= len(mistaken) <= 65  # p = 0.02 of 2000 items
    assert all(v["relation"] == "possible_disease" for v in caught)  # only the false triple, as shown
    assert {v["source"] for v in caught} <= {f"review-{q}" for q in range(2000)}
    assert all(v["verdict"] == "wrong" for v in verdicts)
    # one item's draw does not depend on the other questions reviewed
    assert [v for v in verdicts if v["source"] == "review-7"] == wf.review(rows[7:8], pairs, seed=0)


def test_shown_shares_disputes_and_rule_recount() -> None:
    pairs = {wf.pair_key("Gout", "Sneezing")}
    rows = [
        _row("1", [[["Sneezing", "possible_disease", "Gout"]], [["Flu", "has_symptom", "Fever"]]]),
        _row("2", [[["Gout", "has_symptom", "Sneezing"]], [["Flu", "has_symptom", "Cough"]]]),
    ]
    assert wf.shown_stats(rows, pairs) == {"items": 4, "false_items": 2, "false_item_share": 0.5}
    shown = wf.shown_edges(rows)
    verdicts = [
        {"head": "Sneezing", "relation": "possible_disease", "tail": "Gout", "source": "review-1"},
        {"head": "sneezing", "relation": "possible_disease", "tail": "gout", "source": "review-2"},
        {"head": "Flu", "relation": "has_symptom", "tail": "Fever", "source": "review-1"},
        {"head": "Flu", "relation": "has_symptom", "tail": "Fever", "source": "review-1"},  # same run
    ]
    counts = wf.wrong_counts(verdicts)
    assert counts[("sneezing", "possible_disease", "gout")] == 2
    assert counts[("flu", "has_symptom", "fever")] == 1
    one, two = wf.rule_outcomes(counts, shown, pairs, [(1, 1), (2, 1)])
    assert (one["false_disputed"], one["false_shown"]) == (1, 2)
    assert (one["true_disputed"], one["true_shown"]) == (1, 2)
    assert (two["false_disputed"], two["true_disputed"]) == (1, 0)
    disputed = [{"head": "Sneezing", "relation": "possible_disease", "tail": "Gout"}]
    summary = wf.disputed_summary(disputed, shown, pairs)
    assert summary["disputed_false"] == 1 and summary["true_disputed_share"] == 0.0
    assert summary["false_disputed_share"] == 0.5  # the other reading was shown and not disputed


def test_answers_naming_a_false_fact_need_both_ends() -> None:
    false = [wf.FalseEdge("Gout", "has_symptom", "Sneezing", "Cold")]
    rows = [
        {"id": "1", "answer": "Gout usually comes with sneezing."},
        {"id": "2", "answer": "Gout; take colchicine."},
        {"id": "3", "answer": "Sneezing points to a cold."},
    ]
    out = wf.answers_naming_false(rows, false)
    assert (out["answers"], out["naming_false"]) == (3, 1) and out["examples"][0]["id"] == "1"


def test_writers_touch_only_the_folder_given(tmp_path: Path) -> None:
    before = sorted(p for p in _REPO.rglob("*") if ".git" not in p.parts and "__pycache__" not in p.parts)
    header, rows, facts = wf.read_chatdoctor(_write_kg(tmp_path / "kg.csv"))
    false = wf.choose_false_edges(facts, 0.25, seed=0)
    wf.write_chatdoctor(tmp_path / "out" / "bad.csv", header, rows, false)
    wf.write_triples(tmp_path / "out" / "bad-triples.csv", wf.false_triples(false))
    after = sorted(p for p in _REPO.rglob("*") if ".git" not in p.parts and "__pycache__" not in p.parts)
    assert before == after
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["bad-triples.csv", "bad.csv"]


def test_fact_recount_pools_the_two_readings_of_a_fact() -> None:
    pairs = {wf.pair_key("Gout", "Sneezing")}
    shown = {("gout", "has_symptom", "sneezing"), ("sneezing", "possible_disease", "gout")}
    shown |= {("flu", "has_symptom", "fever")}
    verdicts = [
        {"head": "Gout", "relation": "has_symptom", "tail": "Sneezing", "source": "review-1"},
        {"head": "Sneezing", "relation": "possible_disease", "tail": "Gout", "source": "review-2"},
    ]
    per_edge = wf.rule_outcomes(wf.wrong_counts(verdicts), shown, pairs, [(2, 1)])[0]
    per_fact = wf.fact_outcomes(verdicts, shown, pairs, [(2, 1)])[0]
    assert (per_edge["false_disputed"], per_edge["false_shown"]) == (0, 2)  # one flag on each reading
    assert (per_fact["false_disputed"], per_fact["false_shown"]) == (1, 1)
    assert (per_fact["true_disputed"], per_fact["true_shown"]) == (0, 1)
