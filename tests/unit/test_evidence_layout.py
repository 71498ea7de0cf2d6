"""The evidence subgraph of `show --html`: columns by entity type, and no label over a box or another label.

Measured on the evidence of two real demo-KG runs (`kgmind ask`, local model, recorded in
``tests/fixtures/show``: 17 English items with 45 edges, 6 Chinese items) and on hand-made
evidence with an edge inside one column and an entity of another type.
"""

from __future__ import annotations

import itertools
import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import pytest

from kgmind.graphs.evidence_svg import COLUMN_OF_TYPE, EvidenceLayout, evidence_svg, layout_evidence
from kgmind.models import Evidence

FIX = Path(__file__).parents[1] / "fixtures" / "show"
SVG = "{http://www.w3.org/2000/svg}"

Rect = tuple[float, float, float, float]


def _run(name: str) -> list[Evidence]:
    run = json.loads((FIX / name).read_text(encoding="utf-8"))
    return [Evidence.model_validate(e) for e in run["selected_evidence"]]


def _overlap(a: Rect, b: Rect) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def _boxes(layout: EvidenceLayout) -> dict[str, Rect]:
    return {n: (b.x, b.y, b.w, b.h) for n, b in layout.boxes.items()}


def _check_geometry(layout: EvidenceLayout) -> None:
    boxes = _boxes(layout)
    labels = [lane.label_box() for lane in layout.lanes]
    names = list(boxes)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not _overlap(boxes[a], boxes[b]), (a, b)
    for lane, label in zip(layout.lanes, labels, strict=True):
        for name, box in boxes.items():
            assert not _overlap(label, box), (lane.edge, name)
    for i, a in enumerate(labels):
        for b in labels[i + 1 :]:
            assert not _overlap(a, b), (a, b)
    for rect in [*boxes.values(), *labels]:  # everything inside the drawing
        assert rect[0] >= 0 and rect[1] >= 0
        assert rect[0] + rect[2] <= layout.width and rect[1] + rect[3] <= layout.height


def _columns_in_order(layout: EvidenceLayout) -> list[list[str]]:
    """The entities of each column, left to right, after checking the columns do not overlap sideways."""
    boxes = _boxes(layout)
    cols: dict[int, list[str]] = {}
    for name, c in layout.column.items():
        cols.setdefault(c, []).append(name)
    spans = [
        (min(boxes[n][0] for n in names), max(boxes[n][0] + boxes[n][2] for n in names))
        for _c, names in sorted(cols.items())
    ]
    for (_l0, r0), (l1, _r1) in itertools.pairwise(spans):
        assert r0 < l1  # column c ends before column c+1 starts
    return [cols[c] for c in sorted(cols)]


@pytest.mark.parametrize("run", ["en_demo_run.json", "zh_demo_run.json"])
def test_real_runs_no_label_crosses_a_box_and_columns_follow_the_types(run: str) -> None:
    evidence = _run(run)
    layout = layout_evidence(evidence)
    _check_geometry(layout)
    cols = _columns_in_order(layout)
    kinds = [{layout.types[n] for n in names} for names in cols]
    assert kinds == [{"symptom"}, {"disease"}, {"test", "medication"}]
    assert all(COLUMN_OF_TYPE[t] == c for c, ks in enumerate(kinds) for t in ks)
    # the diseases keep the evidence's order (the first item's disease is on top)
    first = next(
        n for ev in evidence for t in ev.triples for n in (t[0], t[2]) if layout.types[n] == "disease"
    )
    assert cols[1][0] == first
    # every edge once, and its label sits in the gap between its two columns
    edges = {(h, r, t) for ev in evidence for h, r, t in ev.triples}
    assert sorted(lane.edge for lane in layout.lanes) == sorted(edges)
    boxes = _boxes(layout)
    for lane in layout.lanes:
        x, _y, w, _h = lane.label_box()
        assert boxes[lane.left][0] + boxes[lane.left][2] < x and x + w < boxes[lane.right][0], lane.edge


def test_tests_and_drugs_sit_by_their_disease() -> None:
    """In the real English run, influenza's tests and drugs come before pneumonia's, tests first."""
    layout = layout_evidence(_run("en_demo_run.json"))
    column = _columns_in_order(layout)[2]
    assert column[:6] == [
        "Rapid influenza diagnostic test",
        "Influenza PCR test",
        "Oseltamivir",
        "Paracetamol",
        "Ibuprofen",
        "Zanamivir",
    ]
    assert column.index("Chest X-ray") < column.index("Ceftriaxone")


def _typed(ev_id: str, triples: Sequence[tuple[str, str, str]], types: dict[str, str]) -> Evidence:
    names = {n for h, _r, t in triples for n in (h, t)}
    kind = "path" if ev_id.startswith("P") else "neighbor"
    return Evidence(id=ev_id, kind=kind, triples=list(triples), entity_types={n: types[n] for n in names})


def test_edges_inside_a_column_and_other_types_stay_clear_of_boxes() -> None:
    types = {
        "咳嗽": "symptom",
        "感冒": "disease",
        "肺炎": "disease",
        "胸部CT检查": "test",
        "呼吸内科": "department",
        "布洛芬片": "medication",
    }
    evidence = [
        _typed("P1", [("感冒", "症状", "咳嗽"), ("感冒", "并发症", "肺炎")], types),
        _typed("N1", [("肺炎", "检查", "胸部CT检查"), ("肺炎", "科室", "呼吸内科")], types),
        _typed("N2", [("感冒", "常用药", "布洛芬片"), ("肺炎", "并发症", "感冒")], types),
    ]
    layout = layout_evidence(evidence)
    _check_geometry(layout)
    cols = _columns_in_order(layout)
    assert cols == [["咳嗽"], ["感冒", "肺炎"], ["胸部CT检查", "布洛芬片"], ["呼吸内科"]]
    loops = [lane for lane in layout.lanes if lane.edge[1] == "并发症"]
    assert len(loops) == 2 and all(lane.gap == 1 for lane in loops)  # right of the disease column


def test_arrows_point_at_the_stored_tail_and_svg_matches_the_layout() -> None:
    evidence = _run("en_demo_run.json")
    layout = layout_evidence(evidence)
    svg = ET.fromstring(evidence_svg(evidence))
    groups = [g for g in svg.iter(f"{SVG}g") if g.get("class") == "edge"]
    assert len(groups) == len(layout.lanes)
    for g, lane in zip(groups, layout.lanes, strict=True):
        path = g.find(f"{SVG}path")
        assert path is not None
        stored_tail_right = lane.edge[2] == lane.right
        assert (path.get("marker-end") is not None) == stored_tail_right
        assert (path.get("marker-start") is not None) == (not stored_tail_right)
        label = g.find(f"{SVG}rect")
        assert label is not None
        assert float(label.get("x", "nan")) == pytest.approx(lane.label_box()[0], abs=0.06)
    nodes = {
        "".join(g.find(f"{SVG}title").itertext()): g.find(f"{SVG}rect")  # type: ignore[union-attr]
        for g in svg.iter(f"{SVG}g")
        if g.get("class") == "node"
    }
    for name, box in layout.boxes.items():
        rect = nodes[name]
        assert rect is not None and float(rect.get("x", "nan")) == pytest.approx(box.x, abs=0.06)


def test_a_kg_without_types_keeps_columns_by_edge_direction() -> None:
    evidence = [
        Evidence(id="P1", kind="path", triples=[("a", "r", "b"), ("b", "r", "c")]),
        Evidence(id="N1", kind="neighbor", triples=[("a", "s", "c")]),
    ]
    layout = layout_evidence(evidence)
    _check_geometry(layout)
    assert _columns_in_order(layout) == [["a"], ["b", "c"]]  # breadth first from the source
    loop = next(lane for lane in layout.lanes if lane.edge == ("b", "r", "c"))
    assert loop.gap == 1 and loop.left == "b" and loop.right == "c"  # drawn right of its column
