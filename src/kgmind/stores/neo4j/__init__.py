"""Neo4j (5.26+) GraphStore backend: :class:`Neo4jStore` and its Cypher statements."""

from kgmind.stores.neo4j.store import BATCH_SIZE, MAX_PATH_HOPS, Neo4jStore, type_label

__all__ = ["BATCH_SIZE", "MAX_PATH_HOPS", "Neo4jStore", "type_label"]
