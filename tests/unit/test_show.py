"""Inline SVG of a run (mind map tree, evidence subgraph) and `kgmind show` on an unknown run."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgmind.cli import app
from kgmind.graphs.render import evidence_svg, mind_map_svg, run_html, wrap_cells
from kgmind.models import Evidence

SVG = "{http://www.w3.org/2000/svg}"

MIND_MAP = {
    "label": 'Flu <likely> & "cold"',
    "evidence_ids": [],
    "children": [
        {"label": "Fever", "evidence_ids": ["P1"], "children": [{"label": "Rest", "evidence_ids": ["N2"]}]},
        {"label": "Moon\x00 dust", "evidence_ids": [], "children": []},
        {"label": "流行性感冒的典型症状包括高热头痛和全身肌肉酸痛以及乏力", "evidence_ids": ["P1"]},
    ],
}
EVIDENCE = [
    Evidence(id="P1", kind="path", triples=[("Fever", "possible_disease", "Flu")]),
    Evidence(
        id="N2",
        kind="neighbor",
        triples=[("Flu", "need_medication", "Rest"), ("Flu", "possible_disease", "Flu")],
    ),
    Evidence(id="N3", kind="neighbor", triples=[("Fever", "possible_disease", "Flu")]),
]


def _texts(svg: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in svg.iter(f"{SVG}text")]


def _label(g: ET.Element) -> str:
    """The first text line of a node group (its label, or its start when wrapped)."""
    first = g.find(f"{SVG}text")
    assert first is not None
    return "".join(first.itertext())


def test_mind_map_svg_is_a_labelled_tree_with_ids_and_flags() -> None:
    svg = ET.fromstring(mind_map_svg(MIND_MAP, {"flagged": ["Moon dust"], "ungrounded_nodes": ["Moon dust"]}))
    texts = _texts(svg)
    assert 'Flu <likely> & "cold"' in texts  # escaped in the source, intact once parsed
    assert "Fever" in texts and "Rest" in texts and "P1" in texts and "N2" in texts
    nodes = [g for g in svg.iter(f"{SVG}g") if "node" in (g.get("class") or "").split()]
    assert len(nodes) == 5
    flagged = [g for g in nodes if "flagged" in (g.get("class") or "")]
    assert [_label(g) for g in flagged] == ["Moon dust"]
    rect = flagged[0].find(f"{SVG}rect")
    assert rect is not None and rect.get("stroke-dasharray") and rect.get("stroke") == "#b00020"
    assert any("not grounded" in t for t in texts)  # the legend explains the dashed border
    assert len([p for p in svg.iter(f"{SVG}path") if p.get("class") == "edge"]) == 4  # one per child
    # the tree is layered: each child column lies right of its parent's
    xs = {_label(g): float(g.find(f"{SVG}rect").get("x")) for g in nodes}  # type: ignore[union-attr]
    assert xs['Flu <likely> & "cold"'] < xs["Fever"] < xs["Rest"]


def test_wrap_cells_wraps_cjk_like_english() -> None:
    zh = wrap_cells("流行性感冒的典型症状包括高热头痛和全身肌肉酸痛以及乏力", width=10, max_lines=0)
    assert len(zh) == 6 and "".join(zh) == "流行性感冒的典型症状包括高热头痛和全身肌肉酸痛以及乏力"
    en = wrap_cells("fever may be a sign of influenza", width=12, max_lines=0)
    assert en == ["fever may be", "a sign of", "influenza"]
    assert wrap_cells("a b c d e f", width=1, max_lines=2) == ["a", "…"]


def test_evidence_svg_draws_each_edge_once_with_its_ids() -> None:
    svg = ET.fromstring(evidence_svg(EVIDENCE))
    names = [_label(g) for g in svg.iter(f"{SVG}g") if g.get("class") == "node"]
    assert sorted(names) == ["Fever", "Flu", "Rest"]
    edges = [g for g in svg.iter(f"{SVG}g") if g.get("class") == "edge"]
    labels = sorted("".join(e.itertext()) for e in edges)
    assert labels == ["need_medication N2", "possible_disease N2", "possible_disease P1 N3"]
    assert "No KG edges" in evidence_svg([Evidence(id="D1", kind="doc", text="x")])


def test_run_html_has_two_svgs_no_scripts_and_escapes() -> None:
    page = run_html(
        {
            "run_id": "r1",
            "question": "<script>alert(1)</script>",
            "answer": "<b>x</b>",
            "mind_map": MIND_MAP,
            "selected_evidence": [e.model_dump() for e in EVIDENCE],
            "grounding": {"flagged": ["Moon dust"]},
        }
    )
    assert "<script>alert" not in page and "&lt;script&gt;" in page and "<pre" not in page
    assert "<script src" not in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    svgs = [page[i : page.index("</svg>", i) + 6] for i in range(len(page)) if page.startswith("<svg", i)]
    assert len(svgs) == 2
    for s in svgs:
        ET.fromstring(s)  # well-formed XML
    assert "Moon dust" in svgs[0] and "possible_disease" in svgs[1]


def test_show_unknown_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KGMIND_HOME", str(tmp_path))
    res = CliRunner().invoke(app, ["show", "nope"])
    assert res.exit_code == 1 and res.stderr.startswith("error: unknown run id 'nope'")
    assert "Traceback" not in res.output
