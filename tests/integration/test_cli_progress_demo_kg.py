"""`kgmind ask` off a terminal on the real demo KG (fake model): a line per step and per first-use load,
the demo notice; `kgmind kg stats` lists the demo's conditions.

The store, NER, linking (MiniLM, exported to ONNX on this fresh ``KGMIND_HOME``) and
exploration are real; the ``fake:`` model only fills the answer schema (a wiring test of
what is said, not of the answer).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgmind.cli import app

FIX = Path(__file__).parents[1] / "fixtures" / "importers"
runner = CliRunner()


@pytest.fixture(scope="module")
def home(fresh_home: Path) -> Path:
    pytest.importorskip("sentence_transformers", reason="needs the local embedding model (kgmind[local])")
    return fresh_home


def _ask(*extra: str) -> list[str]:
    res = runner.invoke(app, ["ask", "I have a fever and a cough.", "--model", "fake:plain", *extra])
    assert res.exit_code == 0, res.output
    return res.stderr.splitlines()


def test_wiring_first_run_names_each_load_and_step_then_later_runs_only_the_steps(home: Path) -> None:
    first = _ask()
    notice = [line for line in first if line.startswith("note: this is the demo KG")]
    assert len(notice) == 1 and "54 common conditions" in notice[0] and "kgmind kg import" in notice[0]
    loads = [line for line in first if line.startswith("· ") and not line.endswith(" started")]
    assert any("exporting it to ONNX (first use only" in line for line in loads), first
    assert any(line.startswith("· building the entity index of ladybug:") for line in loads), first
    for load in loads:  # each load is said again when done, with its time
        what = load[2:].removesuffix(" …")
        assert any(line.startswith(f"✓ {what} ") and line.endswith(" s") for line in first), (what, first)
    for node in ("extract_entities", "link_entities", "aggregate_evidence", "reason_mindmap"):
        assert f"· {node} started" in first and any(line.startswith(f"✓ {node} ") for line in first), first
    assert "{" not in "\n".join(first)
    again = _ask()
    assert not [line for line in again if line.startswith("· ") and not line.endswith(" started")], again
    assert sum(line.startswith("note: this is the demo KG") for line in again) == 1  # said on every run
    assert "· reason_mindmap started" in again
    assert _ask("--quiet", "--json") == []  # quiet: nothing at all


def test_notice_is_for_the_demo_kg_only(home: Path, tmp_path: Path) -> None:
    uri = f"ladybug:{tmp_path / 'own'}"
    res = runner.invoke(app, ["kg", "import", str(FIX / "triples.csv"), "-f", "triples", "-s", uri])
    assert res.exit_code == 0, res.output
    lines = _ask("--store", uri)
    assert not [line for line in lines if "demo KG" in line], lines
    assert "· reason_mindmap started" in lines


def test_kg_stats_lists_the_demo_conditions(home: Path, tmp_path: Path) -> None:
    demo = json.loads(
        (Path(__file__).parents[2] / "src/kgmind/data/demo_kg.json").read_text(encoding="utf-8")
    )
    names = sorted((c["name"] for c in demo["conditions"]), key=str.casefold)
    res = runner.invoke(app, ["kg", "stats", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["conditions"] == names and len(names) == 54
    text = runner.invoke(app, ["kg", "stats"])
    assert text.exit_code == 0 and "conditions (54): " in text.stdout
    listed = " ".join(text.stdout.split())
    assert "Influenza" in listed and "感冒" in listed and "Acute bronchitis, Acute otitis media" in listed
    uri = f"ladybug:{tmp_path / 'triples'}"
    assert (
        runner.invoke(app, ["kg", "import", str(FIX / "triples.csv"), "-f", "triples", "-s", uri]).exit_code
        == 0
    )
    plain = runner.invoke(app, ["kg", "stats", "--store", uri])
    assert plain.exit_code == 0 and "conditions (1): Headache" in plain.stdout  # typed by its relations
