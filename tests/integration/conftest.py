"""Shared fixtures of the integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


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
