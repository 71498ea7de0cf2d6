"""Bad input: unusable questions and files get a clear message and a non-zero exit, and write nothing.

Usable-but-odd input (binary junk, 1 MB, mixed languages, nothing linkable, an empty KG)
gets an answer whose flags say what happened (``no_kg_evidence``, ``fallback_parse``).
The CLI runs in-process (``CliRunner``) with ``KGMIND_HOME`` in a temp dir and the
deterministic ``fake:`` model.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from rel_harness import canonical_dump
from typer.testing import CliRunner

from kgmind.cli import app
from kgmind.graphs.context import Context
from kgmind.graphs.pipeline import graph
from kgmind.stores.factory import close_all_stores, open_store

runner = CliRunner()


def _checkpoints(home: Path) -> int:
    db = home / "checkpoints.sqlite"
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        try:
            return int(conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0])
        except sqlite3.OperationalError:  # no table yet
            return 0


def _ask(question: str, uri: str) -> Any:
    return runner.invoke(app, ["ask", question, "--store", uri, "--model", "fake:bad", "--json", "--quiet"])


@pytest.mark.parametrize("question", ["", " ", "\t\n  \u3000"])
def test_blank_question_is_rejected_and_nothing_is_written(
    question: str, demo_uri: str, isolated_home: Path
) -> None:
    before = canonical_dump(open_store(demo_uri))
    res = _ask(question, demo_uri)
    assert res.exit_code == 2
    assert "empty" in res.output
    assert _checkpoints(isolated_home) == 0
    assert canonical_dump(open_store(demo_uri)) == before


def test_rejected_question_after_a_good_one_adds_no_checkpoint(demo_uri: str, isolated_home: Path) -> None:
    ok = _ask("I have a fever and a cough", demo_uri)
    assert ok.exit_code == 0, ok.output
    n = _checkpoints(isolated_home)
    assert n > 0
    assert _ask("   ", demo_uri).exit_code == 2
    assert _checkpoints(isolated_home) == n


@pytest.mark.parametrize(
    "question",
    [
        "\udcff\udcfe\x00 binary junk \ufffd",  # what Python makes of undecodable argv bytes
        "我发烧了，还咳嗽 and I have a headache",
        "What is the capital of France?",
        "x" * 1_000_000,
    ],
    ids=["binary", "mixed-language", "nothing-linkable", "1MB"],
)
def test_wiring_odd_questions_get_an_answer_and_the_right_flags(question: str, demo_uri: str) -> None:
    """Odd input still runs the whole graph, and ``no_kg_evidence`` says whether evidence was found.

    The fake model fills any schema with valid values: ``flagged == []`` proves the graph is
    wired, not that answers are grounded.
    """
    before = canonical_dump(open_store(demo_uri))
    res = _ask(question, demo_uri)
    assert res.exit_code == 0, res.output[-500:]
    out = json.loads(res.stdout)
    assert out["answer"]
    flags = out["flags"]
    if out["selected_evidence"]:
        assert flags["no_kg_evidence"] is False
        assert out["grounding"]["flagged"] == []
    else:
        assert flags["no_kg_evidence"] is True
    assert canonical_dump(open_store(demo_uri)) == before


def test_mixed_language_links_both_languages(demo_uri: str) -> None:
    out = graph.invoke(
        {"question": "我发烧了，还咳嗽 and I have a headache"},
        context=Context(model="fake:mix", store=demo_uri),
    )
    names = {le.name for le in out["linked_entities"]}
    assert "Headache" in names
    assert any(any("\u4e00" <= ch <= "\u9fff" for ch in n) for n in names)
    assert out["selected_evidence"] and out["flags"]["no_kg_evidence"] is False


def test_wiring_no_linkable_entity_is_flagged(demo_uri: str) -> None:
    """Nothing linked: ``no_kg_evidence``; a wiring test (the fake model fills any schema)."""
    out = graph.invoke(
        {"question": "What is the capital of France?"}, context=Context(model="fake:x", store=demo_uri)
    )
    assert out["linked_entities"] == [] and out["selected_evidence"] == []
    assert out["flags"]["no_kg_evidence"] is True
    assert out["answer"] and out["grounding"]["flagged"] == []


def test_empty_kg_is_flagged(tmp_path: Path) -> None:
    uri = f"ladybug:{tmp_path / 'empty'}"
    open_store(uri, create=True)
    out = graph.invoke({"question": "I have a fever"}, context=Context(model="fake:x", store=uri))
    assert out["flags"]["no_kg_evidence"] is True and out["selected_evidence"] == []
    assert open_store(uri).stats().entities_total == 0


# -- malformed import files -------------------------------------------------------------------


def _bad_files(d: Path) -> dict[str, tuple[Path, str]]:
    d.mkdir()
    (d / "binary.csv").write_bytes(os.urandom(64) + b"\xff\xfe\x81" + os.urandom(2000))
    (d / "truncated.json").write_text('{"name": "Flu", "symptom": ["fever"', encoding="utf-8")
    (d / "empty.csv").write_text("", encoding="utf-8")
    (d / "onlybad.csv").write_text("a,b\nc,,d,e,f\n,,\nFlu,bad'type,Fever\n", encoding="utf-8")
    return {
        "binary": (d / "binary.csv", "triples"),
        "binary-tsv": (d / "binary.csv", "mindmap-tsv"),
        "truncated-json": (d / "truncated.json", "qasystem-json"),
        "empty": (d / "empty.csv", "triples"),
        "only-bad-rows": (d / "onlybad.csv", "triples"),
        "missing": (d / "nope.csv", "triples"),
        "directory": (d, "triples"),
        "unknown-format": (d / "empty.csv", "nosuch"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "binary",
        "binary-tsv",
        "truncated-json",
        "empty",
        "only-bad-rows",
        "missing",
        "directory",
        "unknown-format",
    ],
)
def test_malformed_import_fails_cleanly_and_writes_nothing(case: str, tmp_path: Path, demo_uri: str) -> None:
    path, fmt = _bad_files(tmp_path / "files")[case]
    fresh = tmp_path / "fresh"
    res = runner.invoke(
        app, ["kg", "import", str(path), "-f", fmt, "--store", f"ladybug:{fresh}", "--no-progress"]
    )
    assert res.exit_code != 0
    assert res.output.startswith("error: ") and len(res.output.strip().splitlines()) == 1
    assert "Traceback" not in res.output
    assert not fresh.exists()  # a bad file never creates the store
    # and an existing store is left byte-identical
    before = canonical_dump(open_store(demo_uri))
    close_all_stores()
    res = runner.invoke(app, ["kg", "import", str(path), "-f", fmt, "--store", demo_uri, "--no-progress"])
    assert res.exit_code != 0
    assert canonical_dump(open_store(demo_uri)) == before
