"""Graph stores: the ``GraphStore`` protocol, LadybugDB (embedded, the default), Neo4j, and the factory."""

from kgmind.stores import protocol as _protocol
from kgmind.stores.factory import open_store, parse_store_uri
from kgmind.stores.protocol import *  # noqa: F403 - the store protocol's public names, listed once in its __all__

__all__ = [*_protocol.__all__, "open_store", "parse_store_uri"]
