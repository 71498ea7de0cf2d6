import gc
import sys
import tracemalloc

sys.path.insert(0, "/work/wt/bounded/benchmarks")
import pushdown as pd
from kgmind.eval.config import EvalConfig
from kgmind.eval.items import build_items
from kgmind.eval.kg import prepare_store
from kgmind.eval.resources import Resources
from kgmind.retrievers import graph_index_cache as gx
from kgmind.stores.factory import open_store

cfg = EvalConfig(dataset=sys.argv[1], split="test", limit=int(sys.argv[2]), seed=0)
uri = prepare_store(cfg)
store = open_store(uri)
items = [it for it in build_items(cfg)[0] if it.entities]
res = Resources(store_uri=uri, seed=0)
pd._run(items[0], "pushdown", res, store)
gc.collect()
r0 = pd._rss_mb()
tracemalloc.start()
for i, it in enumerate(items):
    pd._run(it, "pushdown", res, store)
    if i % 20 == 19:
        cur, peak = tracemalloc.get_traced_memory()
        print(
            i + 1,
            "rss",
            pd._rss_mb(),
            "py-traced MB",
            round(cur / 2**20, 1),
            "hood cache",
            gx._neighborhood.cache_info()
            if hasattr(gx._neighborhood, "cache_info")
            else len(getattr(gx._neighborhood, "cache", {})),
            flush=True,
        )
snap = tracemalloc.take_snapshot()
for st in snap.statistics("lineno")[:12]:
    print(st)
gx.clear_graph_index_cache()
gc.collect()
print(
    "after clearing caches rss", pd._rss_mb(), "traced", round(tracemalloc.get_traced_memory()[0] / 2**20, 1)
)
import ctypes  # noqa: E402

ctypes.CDLL("libc.so.6").malloc_trim(0)
print("after malloc_trim rss", pd._rss_mb())
