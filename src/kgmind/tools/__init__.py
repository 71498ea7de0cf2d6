"""Graph stores (LadybugDB embedded, Neo4j) and the exploration / feedback tools over them."""

from kgmind.tools.factory import open_store, parse_store_uri
from kgmind.tools.store import (
    GraphPath,
    GraphStore,
    LoadReport,
    StoreError,
    StoreStats,
    StoreUnavailableError,
    WeightRule,
)

__all__ = [
    "GraphPath",
    "GraphStore",
    "LoadReport",
    "StoreError",
    "StoreStats",
    "StoreUnavailableError",
    "WeightRule",
    "open_store",
    "parse_store_uri",
]
