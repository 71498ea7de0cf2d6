"""Integration tests of ``kgmind kg import|stats|demo`` on a real LadybugDB store (fixture files)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgmind.cli import app
from kgmind.importers import demo_kg_path
from kgmind.importers.demo_store import ensure_demo_store
from kgmind.stores.factory import close_all_stores, open_store

FIX = Path(__file__).parents[1] / "fixtures" / "importers"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    monkeypatch.setenv("KGMIND_HOME", str(home))
    yield home
    close_all_stores()


def kg(*args: str) -> object:
    return runner.invoke(app, ["kg", *args])


def stats_json(*args: str) -> dict:
    res = runner.invoke(app, ["kg", "stats", "--json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_import_then_stats(tmp_path: Path) -> None:
    uri = f"ladybug:{tmp_path / 'kg'}"
    res = runner.invoke(
        app, ["kg", "import", str(FIX / "chatdoctor_full.csv"), "--format", "chatdoctor", "--store", uri]
    )
    assert res.exit_code == 0, res.output
    assert "4 malformed rows skipped" in res.stdout
    assert "chatdoctor_full.csv:5:" in res.stdout  # the skipped rows are listed with file:line
    data = stats_json("--store", uri)
    assert set(data) == {"entities", "relations", "entities_total", "relations_total", "conditions"}
    assert data["entities"]["disease"] == 3
    assert len(data["conditions"]) == 3  # a small KG's conditions are listed by name
    assert data["entities_total"] == sum(data["entities"].values())
    assert data["relations_total"] == sum(data["relations"].values())
    assert data["relations"]["has_symptom"] == data["relations"]["possible_disease"]
    # re-importing the same file is idempotent (stable ids, upsert)
    res2 = runner.invoke(
        app, ["kg", "import", str(FIX / "chatdoctor_full.csv"), "-f", "chatdoctor", "-s", uri]
    )
    assert res2.exit_code == 0, res2.output
    assert stats_json("--store", uri) == data
    text = runner.invoke(app, ["kg", "stats", "--store", uri])
    assert text.exit_code == 0 and "has_symptom" in text.stdout


def test_import_json_summary_matches_store(tmp_path: Path) -> None:
    uri = f"ladybug:{tmp_path / 'zh'}"
    res = runner.invoke(
        app, ["kg", "import", str(FIX / "recrawl"), "-f", "recrawl-json", "-s", uri, "--json"]
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["rows"] == 2 and summary["skipped"] == 2
    data = stats_json("--store", uri)
    assert data["relations"] == summary["relation_types"]
    assert data["entities"] == summary["entity_types"]
    assert data["relations"]["has_complication"] == 2  # symmetric: both directions


def test_name_selects_store_under_home(_home: Path, tmp_path: Path) -> None:
    res = runner.invoke(app, ["kg", "import", str(FIX / "mindmap.tsv"), "-f", "mindmap-tsv", "--name", "mm"])
    assert res.exit_code == 0, res.output
    assert (_home / "mm").exists()
    assert stats_json("--name", "mm")["relations_total"] == 7
    assert stats_json("--kg", "mm")["relations_total"] == 7  # --kg is --name's other spelling
    # --store and --name together are an error: nothing is imported anywhere
    uri = f"ladybug:{tmp_path / 'other'}"
    res = runner.invoke(
        app, ["kg", "import", str(FIX / "triples.csv"), "-f", "triples", "--name", "mm", "-s", uri]
    )
    assert res.exit_code == 2
    assert "not both" in one_line_error(res)
    assert not (tmp_path / "other").exists()
    assert stats_json("--name", "mm")["relations_total"] == 7
    bad = kg("stats", "--name", "../escape")
    assert bad.exit_code != 0


def test_demo_command_and_idempotence(tmp_path: Path) -> None:
    uri = f"ladybug:{tmp_path / 'demo'}"
    conditions = json.loads(demo_kg_path().read_text(encoding="utf-8"))["conditions"]
    res = kg("demo", "--store", uri)
    assert res.exit_code == 0, res.output
    first = stats_json("--store", uri)
    assert first["entities"]["disease"] == len({c["name"] for c in conditions})
    assert kg("demo", "--store", uri).exit_code == 0
    assert stats_json("--store", uri) == first
    assert kg("demo", "--store", uri, "--reset").exit_code == 0
    assert stats_json("--store", uri) == first


def test_ensure_demo_store(_home: Path, tmp_path: Path) -> None:
    store = ensure_demo_store()
    assert store.uri == f"ladybug:{(_home / 'demo').resolve()}"
    n = store.stats().entities_total
    assert n > 100
    assert store.find_entities("flu")  # alias of Influenza
    assert ensure_demo_store() is store and store.stats().entities_total == n
    # a store that already holds a KG is left alone
    uri = f"ladybug:{tmp_path / 'own'}"
    assert kg("import", str(FIX / "triples.csv"), "-f", "triples", "-s", uri).exit_code == 0
    own = ensure_demo_store(uri)
    assert own.stats().entities_total == len({"aspirin", "headache", "pain", "warfarin"})
    assert open_store(uri) is own


def one_line_error(res: object) -> str:
    """The error line (progress bars of a finished parse may precede it on stderr)."""
    out = res.output.strip()  # type: ignore[attr-defined]
    assert "Traceback" not in out, out
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, out
    assert out.endswith(errors[0]), out
    return errors[0]


def test_missing_file_error(tmp_path: Path) -> None:
    res = kg("import", str(tmp_path / "nope.csv"), "-f", "chatdoctor", "-s", f"ladybug:{tmp_path / 'kg'}")
    assert res.exit_code != 0
    assert "file not found" in one_line_error(res)
    assert not (tmp_path / "kg").exists()


def test_unknown_format_error(tmp_path: Path) -> None:
    res = kg("import", str(FIX / "triples.csv"), "-f", "rdf", "-s", f"ladybug:{tmp_path / 'kg'}")
    assert res.exit_code != 0
    msg = one_line_error(res)
    for fmt in ("chatdoctor", "mindmap-tsv", "qasystem-json", "recrawl-json", "triples"):
        assert fmt in msg


def test_unreachable_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    res = kg("stats", "--store", f"ladybug:{blocker / 'kg'}")
    assert res.exit_code != 0
    one_line_error(res)
    res = kg("import", str(FIX / "triples.csv"), "-f", "triples", "--store", f"ladybug:{blocker / 'kg'}")
    assert res.exit_code != 0
    one_line_error(res)
    res = kg("stats", "--store", "nosuch://x")
    assert res.exit_code != 0
    assert "unknown store URI" in one_line_error(res)


def test_no_valid_rows_error_writes_nothing(tmp_path: Path) -> None:
    res = kg("import", str(FIX / "triples_bad.csv"), "-f", "triples", "-s", f"ladybug:{tmp_path / 'kg'}")
    assert res.exit_code != 0
    assert "no valid rows" in one_line_error(res)
    assert not (tmp_path / "kg").exists()


def test_stats_default_store_gets_demo_and_missing_store_errors(_home: Path, tmp_path: Path) -> None:
    data = stats_json()
    assert (_home / "demo").exists()
    assert data["entities"]["disease"] > 40
    res = kg("stats", "--store", f"ladybug:{tmp_path / 'typo'}")
    assert res.exit_code == 2
    assert "no KG at" in one_line_error(res) and "kgmind kg import" in res.output
    assert not (tmp_path / "typo").exists()
