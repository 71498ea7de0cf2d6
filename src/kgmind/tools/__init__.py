"""Graph stores (LadybugDB embedded, Neo4j) and the exploration / feedback tools over them."""

from kgmind.tools import store as _store
from kgmind.tools.factory import open_store, parse_store_uri
from kgmind.tools.store import *  # noqa: F403 - the store protocol's public names, listed once in its __all__

__all__ = [*_store.__all__, "open_store", "parse_store_uri"]
