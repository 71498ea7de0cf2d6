"""LadybugDB (embedded Kùzu fork) backend of the GraphStore protocol: the default store."""

from kgmind.stores.ladybug.store import DB_FILE, LadybugStore

__all__ = ["DB_FILE", "LadybugStore"]
