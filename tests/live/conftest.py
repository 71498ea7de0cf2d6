"""Fixtures for the live Neo4j suite: a cleared Neo4jStore, or a visible skip.

Set NEO4J_URI, NEO4J_USER and NEO4J_PASSWORD (and optionally NEO4J_DATABASE) to run it
against a Neo4j 5.26+ server whose database may be wiped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from kgmind.stores.neo4j import Neo4jStore

LIVE_SKIP_REASON = "NEO4J_URI not set"
_REQUIRED = ("NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD")


def live_settings() -> dict[str, str] | None:
    """The live server settings from the environment, or None when any is missing."""
    if not all(os.environ.get(name) for name in _REQUIRED):
        return None
    return {name: os.environ[name] for name in _REQUIRED}


@pytest.fixture
def neo4j_store() -> Iterator[Neo4jStore]:
    """An empty Neo4jStore on the live server (cleared before and after the test)."""
    settings = live_settings()
    if settings is None:
        pytest.skip(LIVE_SKIP_REASON)
    store = Neo4jStore(
        settings["NEO4J_URI"],
        user=settings["NEO4J_USER"],
        password=settings["NEO4J_PASSWORD"],
        database=os.environ.get("NEO4J_DATABASE") or None,
    )
    store.clear()
    try:
        yield store
    finally:
        store.clear()
        store.close()
