"""Store selection by URI: ``ladybug:PATH``, ``neo4j://…``, ``bolt://…``, ``neo4j+s://…``.

Stores are cached per URI (one open handle per process): LadybugDB allows a single
writer process per directory, and a Neo4j driver owns a connection pool.
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from kgmind.settings import default_store_uri, uri_path
from kgmind.stores.protocol import GraphStore, StoreUnavailableError

__all__ = ["StoreURI", "close_all_stores", "open_store", "parse_store_uri"]

_NEO4J_SCHEMES = ("neo4j://", "neo4j+s://", "neo4j+ssc://", "bolt://", "bolt+s://", "bolt+ssc://")


@dataclass(frozen=True)
class StoreURI:
    """A parsed store URI.

    Attributes:
        backend: ``ladybug`` or ``neo4j``.
        location: Directory path (LadybugDB) or server URL (Neo4j).
        uri: The canonical URI string.
    """

    backend: str
    location: str
    uri: str


def parse_store_uri(uri: str | None) -> StoreURI:
    """Parse a store URI; ``None`` or ``""`` means the default embedded demo store.

    Raises:
        ValueError: The URI has an unknown scheme or an empty location.
    """
    uri = (uri or "").strip() or default_store_uri()
    if uri.startswith("ladybug:"):
        path = uri_path(uri, "ladybug", "store", "ladybug:./kg")
        resolved = str(Path(path).expanduser().resolve())
        return StoreURI("ladybug", resolved, f"ladybug:{resolved}")
    if uri.startswith(_NEO4J_SCHEMES):
        return StoreURI("neo4j", uri, uri)
    raise ValueError(
        f"unknown store URI {uri!r}: use ladybug:PATH, neo4j://HOST, bolt://HOST or neo4j+s://HOST"
    )


_lock = threading.Lock()
_stores: dict[str, GraphStore] = {}


def open_store(uri: str | None = None) -> GraphStore:
    """Open (once per process) the store at ``uri``.

    Neo4j credentials come from ``NEO4J_USER`` / ``NEO4J_PASSWORD`` (and the optional
    ``NEO4J_DATABASE``).

    Raises:
        ValueError: Unknown URI scheme.
        StoreUnavailableError: The store cannot be opened or reached.
    """
    parsed = parse_store_uri(uri)
    with _lock:
        store = _stores.get(parsed.uri)
        if store is not None:
            return store
        if parsed.backend == "ladybug":
            from kgmind.stores.ladybug import LadybugStore

            store = LadybugStore(parsed.location)
        else:
            try:
                from kgmind.stores.neo4j import Neo4jStore
            except ImportError as exc:  # pragma: no cover - depends on extras
                raise StoreUnavailableError(
                    "the neo4j driver is not installed: pip install 'kgmind[neo4j]'"
                ) from exc
            store = Neo4jStore(
                parsed.location,
                user=os.environ.get("NEO4J_USER", "neo4j"),
                password=os.environ.get("NEO4J_PASSWORD", ""),
                database=os.environ.get("NEO4J_DATABASE") or None,
            )
        _stores[parsed.uri] = store
        return store


def close_all_stores() -> None:
    """Close and forget every store opened by :func:`open_store` (tests, shutdown)."""
    with _lock:
        for store in _stores.values():
            with contextlib.suppress(Exception):  # closing is best effort
                store.close()
        _stores.clear()
