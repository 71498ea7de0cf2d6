"""Fixtures of the reliability suite: isolated KGMIND_HOME, hash embeddings, hostile strings, store dumps.

Every test runs with ``KGMIND_HOME`` in a temp directory, fresh store/index/linker caches
and the deterministic hash embedder in place of MiniLM/e5 (the linker, entity index and
NER are real; only the vectors are cheap), so the whole suite stays fast on 2 cores.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from rel_harness import (  # noqa: E402
    clear_caches,
    install_hash_embeddings,
    load_demo,
)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write the fuzz tests' tally (``--fuzz-counts=FILE``) when any fuzz case ran."""
    from fuzz_strategies import outcome_table

    path = session.config.getoption("--fuzz-counts", default=None)
    if path and outcome_table():
        Path(path).write_text(json.dumps(outcome_table(), ensure_ascii=False, indent=2) + "\n")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private ``KGMIND_HOME`` plus fresh caches before and after each test."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("KGMIND_HOME", str(home))
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    monkeypatch.setenv("LANGCHAIN_TRACING_V2", "false")
    clear_caches()
    yield home
    clear_caches()


@pytest.fixture(autouse=True)
def hash_embeddings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Use the deterministic hash embedder for every embedding model name (no torch model load)."""
    install_hash_embeddings(monkeypatch.setattr)


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A closed LadybugDB store holding the shipped demo KG, with its (hash) entity index on disk."""
    from kgmind.retrievers.linker import get_linker

    root = tmp_path_factory.mktemp("demo_template")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KGMIND_HOME", str(root / "home"))
        install_hash_embeddings(mp.setattr)
        clear_caches()
        store = load_demo(f"ladybug:{root / 'kg'}")
        _ = get_linker(store).index  # build and persist the entity index beside the store
        clear_caches()
    return root


@pytest.fixture
def demo_uri(demo_template: Path, tmp_path: Path) -> str:
    """A private copy of the demo store (and its index): the URI to open."""
    for name in ("kg", "kg.index"):
        src = demo_template / name
        if src.exists():
            shutil.copytree(src, tmp_path / name)
    return f"ladybug:{tmp_path / 'kg'}"
