"""`kgmind show` on a run stored by `kgmind ask` (demo KG, real store and embeddings, fake LLM)."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kgmind import llm
from kgmind.cli import app

pytestmark = pytest.mark.slow

runner = CliRunner()
CHROMIUM = "/usr/bin/chromium"
SHOW_FIX = Path(__file__).parents[1] / "fixtures" / "show"
HEADLESS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KGMIND_HOME", str(home))
        res = runner.invoke(
            app, ["ask", "I have a fever and a cough", "--model", "fake:show", "--json", "-q"]
        )
        assert res.exit_code == 0, res.output
        yield json.loads(res.stdout)


def _no_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any model use fail: show must render the stored state, not run the graph again."""

    def refuse(name: str = "") -> Any:
        raise AssertionError("show called a model")

    monkeypatch.setattr(llm, "get_chat_model", refuse)


def test_show_json_is_the_stored_run(stored_run: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    _no_llm(monkeypatch)
    res = runner.invoke(app, ["show", stored_run["run_id"], "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == stored_run
    assert stored_run["selected_evidence"] and stored_run["mind_map"]


def test_show_text_prints_answer_and_mind_map(
    stored_run: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_llm(monkeypatch)
    res = runner.invoke(app, ["show", stored_run["run_id"]])
    assert res.exit_code == 0, res.output
    assert "Answer" in res.stdout and "Mind map" in res.stdout and stored_run["run_id"] in res.stdout
    assert stored_run["selected_evidence"][0]["id"] in res.stdout
    # the tree of the reasoning: a diagnosis with its tests (or findings, medications) under it
    diagnosis = stored_run["mind_map"]["children"][0]
    assert diagnosis["kind"] == "diagnosis" and diagnosis["children"]
    under = diagnosis["children"][0]
    assert f"diagnosis {diagnosis['label']}" in res.stdout
    assert f"{under['kind']} {under['label']}" in res.stdout


def test_show_writes_html_and_mermaid(
    stored_run: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _no_llm(monkeypatch)
    page, mm = tmp_path / "run.html", tmp_path / "run.md"
    res = runner.invoke(
        app, ["show", stored_run["run_id"], "--html", str(page), "--mermaid", str(mm), "--json"]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["run_id"] == stored_run["run_id"]  # stdout stays one JSON document
    assert f"wrote {page.resolve()}" in res.stderr and f"wrote {mm.resolve()}" in res.stderr
    assert mm.read_text(encoding="utf-8").count("```mermaid") == 2
    text = page.read_text(encoding="utf-8")
    svgs = [text[i : text.index("</svg>", i) + 6] for i in range(len(text)) if text.startswith("<svg", i)]
    assert len(svgs) == 2
    trees = [ET.fromstring(s) for s in svgs]
    labels = {"".join(t.itertext()) for t in trees[1].iter("{http://www.w3.org/2000/svg}text")}
    first = stored_run["selected_evidence"][0]
    assert any(first["id"] in label for label in labels)  # the evidence ids label the KG edges
    head = first["triples"][0][0]
    assert head in labels


def _chromium_dom(page: Path, flags: list[str]) -> str:
    """The DOM headless Chromium renders from ``page`` (scripts run)."""
    return subprocess.run(
        [CHROMIUM, *flags, "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="no /usr/bin/chromium for the headless check")
def test_html_renders_in_headless_chromium(stored_run: dict[str, Any], tmp_path: Path) -> None:
    page, shot = tmp_path / "run.html", tmp_path / "shot.png"
    res = runner.invoke(app, ["show", stored_run["run_id"], "--html", str(page)])
    assert res.exit_code == 0, res.output
    flags = [*HEADLESS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = _chromium_dom(page, flags)
    assert dom.count("<svg") == 2 and "Mind map" in dom
    subprocess.run(
        [CHROMIUM, *flags, f"--screenshot={shot}", "--window-size=1200,900", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    import matplotlib.image as mpimg
    import numpy as np

    pixels = mpimg.imread(shot)
    assert pixels.shape[:2] == (900, 1200)
    colours = np.unique((pixels[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 50  # text, boxes, purple ids: not a blank or single-colour page


#: Measures, with the browser's own fonts, every label and box of the evidence subgraph.
_MEASURE = """<script>
const svg = document.querySelector('svg'), box = e => e.getBBox();
const hit = (a, b) =>
  a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
const nodes = [...svg.querySelectorAll('g.node')];
const rects = nodes.map(g => box(g.querySelector('rect')));
const labels = [...svg.querySelectorAll('g.edge text')].map(box);
const bad = [];
labels.forEach((l, i) => {
  rects.forEach((r, j) => { if (hit(l, r)) bad.push(`label ${i} over box ${j}`); });
  labels.forEach((m, k) => { if (k > i && hit(l, m)) bad.push(`label ${i} over label ${k}`); });
});
nodes.forEach((g, j) => g.querySelectorAll('text').forEach(t => {
  const b = box(t), r = rects[j];
  if (b.x < r.x || b.x + b.width > r.x + r.width) bad.push(`text of box ${j} leaves it`);
}));
document.body.insertAdjacentHTML('beforeend',
  `<pre id="measured">${JSON.stringify({labels: labels.length, boxes: rects.length, bad})}</pre>`);
</script>"""


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="no /usr/bin/chromium for the headless check")
@pytest.mark.parametrize("run", ["en_demo_run.json", "zh_demo_run.json"])
def test_evidence_labels_clear_the_boxes_in_real_fonts(run: str, tmp_path: Path) -> None:
    """Headless Chromium lays out the text of two recorded demo runs (CJK fonts for the Chinese one):
    no edge label overlaps a box or another label, and each box holds its text."""
    import re

    from kgmind.graphs.evidence_svg import evidence_svg
    from kgmind.models import Evidence

    data = json.loads((SHOW_FIX / run).read_text(encoding="utf-8"))
    svg = evidence_svg([Evidence.model_validate(e) for e in data["selected_evidence"]])
    page = tmp_path / "measure.html"
    page.write_text(
        f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{svg}{_MEASURE}</body></html>'
    )
    flags = [*HEADLESS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = _chromium_dom(page, flags)
    found = re.findall(r'<pre id="measured">(\{.*?)</pre>', dom, re.S)  # not the script's own template
    assert found, dom[-2000:]
    measured = json.loads(found[-1].replace("&quot;", '"'))
    edges = {tuple(t) for e in data["selected_evidence"] for t in e["triples"]}
    assert measured["labels"] == len(edges) and measured["boxes"] > 0
    assert measured["bad"] == []
