"""Stores by name (``kg import --name`` → ``--kg NAME``, ``kg list``) and no silent empty stores (issue 44).

A store that does not exist is one ``error:`` line with exit 2 naming ``kgmind kg import``,
from every command that reads one, and from the library; nothing is created.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgmind.cli import app
from kgmind.cli._common import CliError, check_run_store, pick_store
from kgmind.stores.factory import close_all_stores, open_store, store_exists
from kgmind.stores.protocol import StoreNotFoundError

FIX = Path(__file__).parents[1] / "fixtures" / "importers"
runner = CliRunner()

#: Each reading command, with ``{opt}`` where the store option goes (eval's ``--kg`` is a KG file).
READERS = {
    "ask": ["ask", "I have a fever", "--model", "fake:x", "--quiet", "--mode", "llm_only"],
    "show": ["show", "no-such-run"],
    "feedback": ["feedback", "no-such-run", "--rating", "excellent"],
    "eval": ["eval", "genmedgpt5k", "--split", "test", "--limit", "1", "--no-progress"],
    "kg stats": ["kg", "stats"],
    "kg weights": ["kg", "weights"],
    "index build": ["index", "build", "--model", "hash"],
}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    monkeypatch.setenv("KGMIND_HOME", str(home))
    monkeypatch.setenv("KGMIND_CHECKPOINT_URI", f"sqlite:{tmp_path / 'runs.sqlite'}")
    yield home
    close_all_stores()


def error_line(res: object) -> str:
    out = res.output.strip()  # type: ignore[attr-defined]
    assert "Traceback" not in out, out
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, out
    return errors[0]


def import_named(name: str, fixture: str = "triples.csv", fmt: str = "triples") -> None:
    res = runner.invoke(app, ["kg", "import", str(FIX / fixture), "-f", fmt, "--name", name, "--no-progress"])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("command", sorted(READERS))
@pytest.mark.parametrize("by", ["store", "kg"])
def test_missing_store_is_one_error_and_creates_nothing(
    command: str, by: str, home: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "nonexistent" if by == "store" else home / "nonexistent"
    opt = ["--store", f"ladybug:{missing}"] if by == "store" else ["--kg", "nonexistent"]
    if command == "eval" and by == "kg":
        opt = ["--kg-name", "nonexistent"]
    res = runner.invoke(app, [*READERS[command], *opt])
    assert res.exit_code == 2, res.output
    line = error_line(res)
    assert f"no KG at ladybug:{missing}" in line
    assert "kgmind kg import FILE --name NAME" in line
    assert not missing.exists()


def test_kg_name_resolves_under_home_and_ask_uses_it(home: Path) -> None:
    import_named("mykg")
    assert pick_store(None, "mykg") == f"ladybug:{home / 'mykg'}"
    res = runner.invoke(app, ["ask", "I have a fever", "--kg", "mykg", "--model", "fake:x", "--json", "-q"])
    assert res.exit_code == 0, res.output
    run_id = json.loads(res.stdout)["run_id"]
    # show and feedback accept the run's own store by name, and refuse another one
    assert runner.invoke(app, ["show", run_id, "--kg", "mykg", "--json"]).exit_code == 0
    import_named("other")
    res = runner.invoke(app, ["show", run_id, "--kg", "other"])
    assert res.exit_code == 2
    assert f"was asked on ladybug:{home / 'mykg'}" in error_line(res)
    res = runner.invoke(app, ["feedback", run_id, "--rating", "excellent", "--kg", "other"])
    assert res.exit_code == 2 and "was asked on" in error_line(res)
    stats = runner.invoke(app, ["kg", "stats", "--kg", "mykg", "--json"])
    assert json.loads(stats.stdout)["relations_total"] == 3


def test_kg_and_store_together_are_an_error(home: Path, tmp_path: Path) -> None:
    import_named("mykg")
    for cmd in (READERS["ask"], READERS["kg stats"], READERS["index build"], READERS["kg weights"]):
        res = runner.invoke(app, [*cmd, "--kg", "mykg", "--store", f"ladybug:{home / 'mykg'}"])
        assert res.exit_code == 2, (cmd, res.output)
        assert "not both" in error_line(res)
    bad = runner.invoke(app, [*READERS["ask"], "--kg", "../escape"])
    assert bad.exit_code == 2 and "bad KG name" in error_line(bad)
    with pytest.raises(CliError, match="not both"):
        pick_store("ladybug:/x", "mykg")


def test_kg_list_shows_stores_with_counts(home: Path) -> None:
    res = runner.invoke(app, ["kg", "list"])
    assert res.exit_code == 0 and "no KGs under" in res.output and "kg import" in res.output
    import_named("mykg")
    import_named("mm", "mindmap.tsv", "mindmap-tsv")
    (home / "not-a-store").mkdir()  # a folder without a database is not listed
    res = runner.invoke(app, ["kg", "list", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [(r["name"], r["entities"], r["relations"], r["default"]) for r in rows] == [
        ("mm", rows[0]["entities"], 7, False),
        ("mykg", 4, 3, False),
    ]
    assert rows[1]["store"] == f"ladybug:{(home / 'mykg').resolve()}"
    assert runner.invoke(app, ["kg", "demo"]).exit_code == 0  # the default demo store
    text = runner.invoke(app, ["kg", "list"], terminal_width=200)
    assert text.exit_code == 0
    assert "demo (default)" in text.stdout and "mykg" in text.stdout and "not-a-store" not in text.stdout


def test_library_refuses_a_missing_store(tmp_path: Path) -> None:
    from kgmind.graphs.context import Context
    from kgmind.graphs.pipeline import graph
    from kgmind.graphs.retriever import KGMindRetriever

    missing = tmp_path / "nonexistent"
    uri = f"ladybug:{missing}"
    with pytest.raises(StoreNotFoundError, match="no KG at"):
        open_store(uri)
    with pytest.raises(StoreNotFoundError, match="kgmind kg import"):
        KGMindRetriever(context={"model": "fake:x", "store": uri}).invoke("I have a fever")
    with pytest.raises(StoreNotFoundError):
        graph.invoke({"question": "I have a fever"}, context=Context(model="fake:x", store=uri))
    assert not missing.exists() and not store_exists(uri)
    # importers create; a store made by one is then read as usual
    open_store(uri, create=True)
    assert store_exists(uri) and open_store(uri).stats().entities_total == 0
    # a Neo4j URI names a server: it is never checked for existence on disk
    assert store_exists("bolt://127.0.0.1:1")


def test_check_run_store() -> None:
    values = {"store_uri": "ladybug:/a"}
    check_run_store("r", values, None)
    check_run_store("r", values, "ladybug:/a")
    with pytest.raises(CliError, match="was asked on ladybug:/a, not on ladybug:/b"):
        check_run_store("r", values, "ladybug:/b")
