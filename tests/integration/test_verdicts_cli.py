"""Flag → disputed → restore through the CLI, on a run stored by `kgmind ask` (demo KG, fake LLM)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kgmind.cli import app
from kgmind.graphs.claims import claim_edges
from kgmind.stores.factory import close_all_stores, open_store
from kgmind.stores.protocol import GraphStore

pytestmark = pytest.mark.slow

runner = CliRunner()


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KGMIND_HOME", str(home))
        args = ["ask", "I have a fever and a cough", "--model", "fake:flag", "--json", "-q"]
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
        yield json.loads(res.stdout)
        close_all_stores()


def _store(run: dict[str, Any]) -> GraphStore:
    return open_store(None)  # the run was asked on the demo store of its KGMIND_HOME


def _state(store: GraphStore) -> tuple[Any, ...]:
    return (store.verdict_log(), store.weight_changes(), store.disputes_version(), store.weights_version())


def _edge_claims(run: dict[str, Any]) -> dict[str, list[str]]:
    return {c: ids for c, ids in claim_edges(run).items() if ids}


def test_show_prints_the_claim_ids(stored_run: dict[str, Any], tmp_path: Path) -> None:
    page = tmp_path / "run.html"
    res = runner.invoke(app, ["show", stored_run["run_id"], "--html", str(page)])
    assert res.exit_code == 0, res.output
    assert "S1 " in res.stdout and "M1 " in res.stdout and "--wrong ID" in res.stdout
    html = page.read_text(encoding="utf-8")
    assert '<b class="claim">S1</b>' in html and ">M1</text>" in html


def test_unknown_claims_are_one_error_and_write_nothing(stored_run: dict[str, Any]) -> None:
    store = _store(stored_run)
    before = _state(store)
    res = runner.invoke(app, ["feedback", stored_run["run_id"], "--wrong", "N1,X9", "--rating", "poor"])
    assert res.exit_code == 2
    assert "unknown claim id(s) X9; this run's ids: " in res.stderr and "S1" in res.stderr
    res = runner.invoke(app, ["feedback", stored_run["run_id"]])
    assert res.exit_code == 2 and "--wrong" in res.stderr
    assert _state(store) == before  # neither the rating nor N1 was applied


def test_flag_a_claim_once_then_already_applied(stored_run: dict[str, Any]) -> None:
    store = _store(stored_run)
    claim, edges = next((c, ids) for c, ids in _edge_claims(stored_run).items() if c.startswith("M"))
    res = runner.invoke(app, ["feedback", stored_run["run_id"], "--wrong", claim, "--rating", "poor"])
    assert res.exit_code == 0, res.output
    assert f"claim {claim} wrong: {len(edges)} edge(s)" in res.stdout and "rating poor" in res.stdout
    rows = [v for v in store.verdict_log() if v.feedback_id == f"{stored_run['run_id']}:{claim}:wrong"]
    twins = {t for ts in store.relation_twins(edges).values() for t in ts}
    assert sorted(v.relation_id for v in rows) == sorted({*edges, *twins})
    assert {v.source for v in rows} == {"cli"}
    before = _state(store)
    again = runner.invoke(app, ["feedback", stored_run["run_id"], "--wrong", claim.lower()])
    assert again.exit_code == 0 and "already applied" in again.stdout
    assert _state(store) == before


def _flag_line(head: str, rel: str, tail: str, source: str, verdict: str = "wrong") -> str:
    return json.dumps({"head": head, "relation": rel, "tail": tail, "verdict": verdict, "source": source})


def test_flag_file_disputed_and_restore(stored_run: dict[str, Any], tmp_path: Path) -> None:
    store = _store(stored_run)
    rel = store.get_relations([_edge_claims(stored_run)["N1"][0]])[0]
    head, tail = (e.name for e in store.get_entities([rel.head, rel.tail]))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        "\n".join([_flag_line(head, rel.type, tail, "a"), "{not", _flag_line(head, rel.type, "Nope", "b")]),
        encoding="utf-8",
    )
    before = _state(store)
    res = runner.invoke(app, ["kg", "flag", "--file", str(bad)])
    assert res.exit_code == 2
    assert f"{bad}:2: not JSON" in res.stderr and f"{bad}:3: no edge" in res.stderr
    assert "nothing written" in res.stderr
    assert _state(store) == before

    good = tmp_path / "good.jsonl"
    good.write_text(
        _flag_line(head, rel.type, tail, "ann") + "\n\n" + _flag_line(head, rel.type, tail, "bo") + "\n",
        encoding="utf-8",
    )
    res = runner.invoke(app, ["kg", "flag", "--file", str(good)])
    assert res.exit_code == 0, res.output
    after = _state(store)
    assert runner.invoke(app, ["kg", "flag", "--file", str(good)]).exit_code == 0
    assert _state(store) == after  # the same file again changes nothing

    listed = json.loads(runner.invoke(app, ["kg", "disputed", "--json"]).stdout)
    row = next(r for r in listed if r["relation_id"] == rel.id)
    assert (row["head"], row["relation"], row["tail"]) == (head, rel.type, tail)
    assert row["wrong"] >= 2 and {"flag:ann", "flag:bo"} <= set(row["runs"])

    res = runner.invoke(app, ["kg", "restore", head, rel.type, tail, "--source", "lead"])
    assert res.exit_code == 0 and "restored" in res.stdout
    assert rel.id not in store.disputed_relations()
    assert store.verdict_log([rel.id])[-1].verdict == "restore"
    res = runner.invoke(app, ["kg", "restore", head, rel.type, "Nope"])
    assert res.exit_code == 2 and "no edge" in res.stderr
