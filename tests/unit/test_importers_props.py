"""Property tests: whatever names a file holds (commas, quotes, CJK, underscores), parsing keeps them."""

from __future__ import annotations

import csv
import io
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgmind.importers import parse_chatdoctor, parse_triples
from kgmind.models import normalize_name

names = st.text(
    alphabet=st.sampled_from(list("abcXYZ 12_,'\"()[]-感冒发热头痛\t")), min_size=1, max_size=12
).filter(lambda s: bool(normalize_name(s)) and "\t" not in s)
rels = st.sampled_from(["has_symptom", "need_medication", "treats", "related_to"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(names, rels, names), min_size=1, max_size=15))
def test_triples_csv_roundtrip(rows: list[tuple[str, str, str]]) -> None:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerows(rows)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.csv"
        path.write_text(buf.getvalue(), encoding="utf-8")
        res = parse_triples(path)
    expected = {(normalize_name(h.strip()), r, normalize_name(t.strip())) for h, r, t in rows}
    names_by_id = {e.id: e.name for e in res.entities}
    got = {
        (normalize_name(names_by_id[r.head]), r.type, normalize_name(names_by_id[r.tail]))
        for r in res.relations
    }
    assert not res.errors
    assert got == expected


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(names, st.lists(names, max_size=5)), min_size=1, max_size=6))
def test_chatdoctor_list_literals_roundtrip(rows: list[tuple[str, list[str]]]) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(["idx", "disease", "Symptom", "Medical Tests", "Medications"])
    for i, (disease, symptoms) in enumerate(rows):
        w.writerow([i, disease, repr(symptoms), "[]", "[]"])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "d.csv"
        path.write_text(buf.getvalue(), encoding="utf-8")
        res = parse_chatdoctor(path)
    expected = {(normalize_name(d), normalize_name(s)) for d, syms in rows for s in syms}
    names_by_id = {e.id: e.name for e in res.entities}
    got = {
        (normalize_name(names_by_id[r.head]), normalize_name(names_by_id[r.tail]))
        for r in res.relations
        if r.type == "has_symptom"
    }
    assert res.rows == len(rows) and not res.errors
    assert got == expected
