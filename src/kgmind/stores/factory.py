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

from kgmind.settings import default_store_uri, get_settings, kgmind_home, uri_path
from kgmind.stores.protocol import GraphStore, StoreNotFoundError, StoreUnavailableError

__all__ = [
    "StoreURI",
    "close_all_stores",
    "named_stores",
    "open_store",
    "parse_store_uri",
    "require_store",
    "store_exists",
]

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


def store_exists(uri: str | None) -> bool:
    """Whether the store at ``uri`` exists, without creating it; a Neo4j server is assumed to.

    Raises:
        ValueError: Unknown URI scheme.
    """
    parsed = parse_store_uri(uri)
    if parsed.backend != "ladybug":
        return True
    from kgmind.stores.ladybug import LadybugStore

    return parsed.uri in _stores or LadybugStore.exists(parsed.location)


def require_store(uri: str | None) -> None:
    """Check, before any work, that a reader's store exists (the default demo store always may be made).

    Raises:
        ValueError: Unknown URI scheme.
        StoreNotFoundError: The embedded store at ``uri`` does not exist.
    """
    parsed = parse_store_uri(uri)
    if parsed.uri != parse_store_uri(None).uri and not store_exists(parsed.uri):
        raise StoreNotFoundError.for_uri(parsed.uri)


def named_stores() -> dict[str, str]:
    """The embedded stores under ``$KGMIND_HOME`` (``kg import --name NAME``): name → URI, sorted by name.

    Only directories that hold a LadybugDB database count; nothing is opened.
    """
    from kgmind.stores.ladybug import LadybugStore

    home = kgmind_home()
    if not home.is_dir():
        return {}
    dirs = sorted(d for d in home.iterdir() if d.is_dir() and LadybugStore.exists(d))
    return {d.name: f"ladybug:{d.resolve()}" for d in dirs}


_lock = threading.Lock()
_stores: dict[str, GraphStore] = {}


def open_store(uri: str | None = None, *, create: bool | None = None) -> GraphStore:
    """Open (once per process) the store at ``uri``.

    Readers get an existing store only: a mistyped ``ladybug:`` path raises
    :class:`StoreNotFoundError` and creates nothing. Importers pass ``create=True``.
    The default demo store (``ladybug:$KGMIND_HOME/demo``) may always be created: it is
    filled with the shipped KG on first use. A Neo4j URI names a server, which is never created.

    Neo4j credentials come from ``NEO4J_USER`` / ``NEO4J_PASSWORD`` (and the optional
    ``NEO4J_DATABASE``).

    Args:
        uri: A store URI; None or ``""``: the default demo store.
        create: Create a missing embedded store (default: only for the default demo store).

    Raises:
        ValueError: Unknown URI scheme.
        StoreNotFoundError: The embedded store does not exist and ``create`` is false.
        StoreUnavailableError: The store cannot be opened or reached.
    """
    parsed = parse_store_uri(uri)
    if create is None:
        create = parsed.uri == parse_store_uri(None).uri
    with _lock:
        store = _stores.get(parsed.uri)
        if store is not None:
            return store
        if parsed.backend == "ladybug":
            from kgmind.stores.ladybug import LadybugStore

            store = LadybugStore(parsed.location, create=create, buffer_mb=get_settings().store_buffer_mb)
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
