"""The shipped demo KG: open the default store and make sure it holds the demo knowledge graph.

The demo KG (``kgmind/data/demo_kg.json``, ~50 common conditions in English and Chinese
with symptoms, tests and medications) lets ``kgmind ask`` work out of the box without any
downloaded data. It is imported on first use into the default store
(``ladybug:$KGMIND_HOME/demo``).
"""

from __future__ import annotations

import functools
import threading
from collections import Counter

from kgmind.importers import ImportSummary, import_result, parse_demo
from kgmind.settings import default_store_uri
from kgmind.stores.factory import open_store
from kgmind.stores.protocol import GraphStore

__all__ = ["demo_conditions", "demo_entity_counts", "ensure_demo_store", "load_demo"]

_lock = threading.Lock()


def load_demo(store: GraphStore, *, reset: bool = False) -> ImportSummary:
    """(Re)load the demo KG into ``store`` with one ``bulk_load``.

    Loading is an upsert: entities and relations already there are merged and keep
    their current edge weights, so reloading is idempotent.

    Args:
        store: The store to write to.
        reset: Clear the store first (drops every entity, relation, doc and audit row).

    Returns:
        What was parsed and written.

    """
    result = parse_demo()
    if reset:
        store.clear()
    return import_result(result, store)


def ensure_demo_store(uri: str | None = None) -> GraphStore:
    """Open the store at ``uri`` (default: the demo store) and import the demo KG if it is empty.

    Args:
        uri: A store URI; ``None`` means :func:`kgmind.settings.default_store_uri`.

    Returns:
        The open store (cached per URI by :func:`kgmind.stores.factory.open_store`).

    Raises:
        StoreUnavailableError: The store cannot be opened.

    """
    store = open_store(uri or default_store_uri(), create=True)
    with _lock:
        if store.stats().entities_total == 0:
            load_demo(store)
    return store


@functools.cache
def demo_entity_counts() -> dict[str, int]:
    """Entities per type of the shipped demo KG (parsed once per process)."""
    return dict(Counter(entity.type for entity in parse_demo().entities))


def demo_conditions(store: GraphStore) -> int | None:
    """How many conditions ``store`` holds if it holds exactly the shipped demo KG, else ``None``.

    Compared by entities per type, not by URI: a KG imported into the default store makes
    it more than the demo, and the demo loaded into another store is still the demo.
    """
    counts = demo_entity_counts()
    if dict(store.stats().entities) != counts:
        return None
    return counts.get("disease", 0)
