"""Fuzzing the files a user hands in: KG import files, ``--schema`` files and ``kg flag`` verdict files.

Each example writes one generated file (:mod:`fuzz_strategies`: truncated, mis-encoded,
huge fields, wrong types, repeated JSON keys, random bytes, empty, BOMs, CRLF, hostile
names) and runs the ``kgmind`` command on it in-process against a real LadybugDB store
holding the demo KG. The property: the command succeeds, or it fails with one ``error:``
message, exit code 1 or 2 and no traceback, and then the store is byte-identical
(:func:`rel_harness.full_dump`: content, weights, audit and verdict logs, dispute states,
schema overrides, fingerprint) and a store that did not exist was not created. A command
that succeeded wrote, so the store is copied back from the template before the next
example. Case counts: the ``ci`` profile (default) runs a seeded 25 per test (the import
test is one test per format), ``long`` 500 (``tests/conftest.py``); ``--fuzz-counts=FILE``
writes how many cases of each kind succeeded and how many failed with the store unchanged.
"""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fuzz_strategies import (
    chatdoctor_doc,
    count_outcome,
    damaged,
    qasystem_doc,
    recrawl_doc,
    schema_doc,
    triples_doc,
    verdict_doc,
)
from hypothesis import example, given
from hypothesis import strategies as st
from rel_harness import clear_caches, full_dump
from typer.testing import CliRunner

from kgmind.cli import app
from kgmind.stores.factory import open_store

runner = CliRunner()

#: Names of the demo KG that generated rows reuse, so some rows touch existing entities.
KNOWN = ["Fever", "Cough", "Influenza", "Headache", "Common cold", "Ibuprofen"]

DOCS = {
    "triples": triples_doc(KNOWN),
    "mindmap-tsv": triples_doc(KNOWN),
    "chatdoctor": chatdoctor_doc(KNOWN),
    "qasystem-json": qasystem_doc(KNOWN),
    "recrawl-json": recrawl_doc(KNOWN),
}


class FuzzStore:
    """The demo store of one test, its dump, and a way back to it after an example that wrote."""

    def __init__(self, template: Path, root: Path) -> None:
        self.template = template / "kg"
        self.root = root
        self.path = root / "kg"
        self.uri = f"ladybug:{self.path}"
        self._files = itertools.count()
        shutil.copytree(self.template, self.path)
        self.before = full_dump(open_store(self.uri))

    def file(self, data: bytes, name: str = "input") -> Path:
        """A new file holding ``data``."""
        path = self.root / f"{next(self._files)}-{name}"
        path.write_bytes(data)
        return path

    def restore(self) -> None:
        """Put the template back (an example wrote to the store)."""
        clear_caches()
        shutil.rmtree(self.path)
        shutil.copytree(self.template, self.path)

    def unchanged(self) -> bool:
        """Whether the store is byte-identical to the template."""
        return full_dump(open_store(self.uri)) == self.before


@pytest.fixture
def fuzz_store(demo_template: Path, tmp_path: Path) -> Iterator[FuzzStore]:
    yield FuzzStore(demo_template, tmp_path)
    clear_caches()


def check_outcome(
    res: Any, store: FuzzStore, kind: str, *, one_line: bool = True, tally: bool = True
) -> bool:
    """Assert the command succeeded or failed cleanly; on failure, that the store is unchanged.

    The case is tallied under ``kind`` (:func:`fuzz_strategies.count_outcome`) once its checks
    held, unless ``tally`` is off (the caller checks more and tallies the case itself).

    Returns:
        Whether the command succeeded (the store may have changed: restore it).
    """
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise AssertionError(f"uncaught {type(res.exception).__name__}: {res.exception}") from res.exception
    assert "Traceback" not in res.output
    if res.exit_code == 0:
        count_outcome(kind, "succeeded")
        return True
    assert res.exit_code in (1, 2), res.output
    assert res.output.startswith("error: "), res.output[:500]
    if one_line:
        assert len(res.output.strip().splitlines()) == 1, res.output[:500]
    assert store.unchanged(), "a failed command changed the store"
    if tally:
        count_outcome(kind, f"failed (exit {res.exit_code}), store unchanged")
    return False


def _import(path: Path, fmt: str, uri: str, *extra: str) -> Any:
    return runner.invoke(app, ["kg", "import", str(path), "-f", fmt, "--store", uri, "--no-progress", *extra])


# -- KG import files ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", sorted(DOCS))
@given(data=st.data())
@example(data=None).via("a field past the csv limit")
def test_fuzzed_import_file_succeeds_or_fails_cleanly(fmt: str, data: Any, fuzz_store: FuzzStore) -> None:
    if data is None:
        if fmt != "triples":
            return
        body = b"Flu,has_symptom," + b"x" * 200_000 + b"\n"
    else:
        body = data.draw(damaged(DOCS[fmt]), label="file")
    path = fuzz_store.file(body, "medical_1.json" if fmt == "recrawl-json" else "kg.csv")
    res = _import(path, fmt, fuzz_store.uri)
    if check_outcome(res, fuzz_store, f"import file ({fmt})", tally=False):
        assert open_store(fuzz_store.uri).stats().relations_total >= 1
        count_outcome(f"import file ({fmt})", "succeeded")
        fuzz_store.restore()
        return
    fresh = fuzz_store.root / "fresh"
    again = _import(path, fmt, f"ladybug:{fresh}")
    assert again.exit_code in (1, 2) and not fresh.exists(), "a bad file created a store"
    count_outcome(
        f"import file ({fmt})", f"failed (exit {res.exit_code}), store unchanged, no new store created"
    )


# -- --schema files ----------------------------------------------------------------------------

#: A small valid KG that every schema example imports: relations a schema may name.
SCHEMA_KG = b"Flu,presents_with,Fever\nFlu,treats_with,Rest\nCold,presents_with,Cough\n"


@given(data=damaged(schema_doc()))
def test_fuzzed_schema_file_succeeds_or_fails_cleanly(data: bytes, fuzz_store: FuzzStore) -> None:
    kg = fuzz_store.file(SCHEMA_KG, "kg.csv")
    schema = fuzz_store.file(data, "schema.txt")
    if check_outcome(
        _import(kg, "triples", fuzz_store.uri, "--schema", str(schema)), fuzz_store, "schema file"
    ):
        assert open_store(fuzz_store.uri).stats().relations_total > 0
        fuzz_store.restore()


# -- kg flag verdict files ---------------------------------------------------------------------


@pytest.fixture
def demo_edges(fuzz_store: FuzzStore) -> list[tuple[str, str, str]]:
    """A few (head name, relation, tail name) edges of the demo KG."""
    store = open_store(fuzz_store.uri)
    rels = sorted(store.iter_relations(), key=lambda r: r.id)[::97][:6]
    names = {e.id: e.name for e in store.get_entities([x for r in rels for x in (r.head, r.tail)])}
    return [(names[r.head], r.type, names[r.tail]) for r in rels]


def _bom_line(edge: tuple[str, str, str]) -> bytes:
    head, rel, tail = edge
    line = {"head": head, "relation": rel, "tail": tail, "verdict": "wrong", "source": "curator"}
    return b"\xef\xbb\xbf" + json.dumps(line).encode() + b"\r\n"


@given(data=st.data())
@example(data=None).via("a valid file saved with a BOM (was refused: line 1 not JSON)")
def test_fuzzed_verdict_file_succeeds_or_fails_cleanly(
    data: Any, fuzz_store: FuzzStore, demo_edges: list[tuple[str, str, str]]
) -> None:
    if data is None:
        body = _bom_line(demo_edges[0])
    else:
        body = data.draw(damaged(verdict_doc(demo_edges)), label="file")
    path = fuzz_store.file(body, "verdicts.jsonl")
    res = runner.invoke(app, ["kg", "flag", "--file", str(path), "--store", fuzz_store.uri, "--json"])
    # one error message that lists every bad line (``FILE:LINE: why``), so not one line
    succeeded = check_outcome(res, fuzz_store, "verdict file", one_line=False)
    if data is None:
        assert succeeded, res.output
    if succeeded:
        assert open_store(fuzz_store.uri).verdict_log()
        fuzz_store.restore()
