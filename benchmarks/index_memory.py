"""Memory of the whole-KG index (``GraphIndex``): bytes per edge held after the build, and at its peak.

One process per call; entities are read before tracing starts, so the figures are the
index's own plus what the store's relation iterator allocates while it is consumed
(the peak). Usage::

    python benchmarks/index_memory.py ladybug:$KGMIND_HOME/eval-emckg-full \\
        ladybug:$KGMIND_HOME/eval-cmckg-recrawl
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
import tracemalloc

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def measure(uri: str) -> dict[str, object]:
    """Build the index of ``uri`` under tracemalloc: edges, build seconds, held and peak bytes per edge."""
    from kgmind.retrievers.graph_index import GraphIndex
    from kgmind.stores.factory import open_store

    store = open_store(uri)
    entities = list(store.iter_entities())
    gc.collect()
    tracemalloc.start()
    t0 = time.perf_counter()
    gi = GraphIndex(entities, store.iter_relations())
    seconds = time.perf_counter() - t0
    gc.collect()
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    n = max(gi.num_edges, 1)
    return {
        "store": uri,
        "edges": gi.num_edges,
        "nodes": gi.num_nodes,
        "build_s_traced": round(seconds, 2),
        "held_bytes_per_edge": round(held / n, 1),
        "peak_bytes_per_edge": round(peak / n, 1),
    }


if __name__ == "__main__":
    print(json.dumps([measure(u) for u in sys.argv[1:]], indent=2))
