import collections
import sys
import time

sys.path.insert(0, "/work/wt/bounded/benchmarks")
import pushdown as pd
from kgmind.eval.config import EvalConfig
from kgmind.eval.items import build_items
from kgmind.eval.kg import prepare_store
from kgmind.eval.resources import Resources
from kgmind.retrievers import graph_index_cache as gx
from kgmind.stores.factory import open_store
from kgmind.stores.ladybug import queries as q

gx.set_edges_per_group(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
cfg = EvalConfig(dataset="cmcqa", split="test", limit=3, seed=0)
uri = prepare_store(cfg)
store = open_store(uri)
items = [it for it in build_items(cfg)[0] if it.entities]
res = Resources(store_uri=uri, seed=0)
pd._run(items[0], "memory", res, store)
gx.clear_graph_index_cache()
names = {v: k for k, v in vars(q).items() if isinstance(v, str) and k.isupper()}
callers = collections.Counter()
stat = collections.defaultdict(lambda: [0, 0.0, 0])
orig = type(store)._rows


def timed(self, query, params=None, conn=None):
    t = time.perf_counter()
    r = orig(self, query, params, conn)
    import traceback

    if names.get(query) == "BOUNDED_OUT":
        fr = [f"{f.name}:{f.lineno}" for f in traceback.extract_stack()[-16:-1] if "kgmind" in f.filename]
        callers[" < ".join(reversed(fr[-10:]))] += 1
    s = stat[names.get(query, query[:60])]
    s[0] += 1
    s[1] += time.perf_counter() - t
    s[2] += len((params or {}).get("ids", []) or [])
    return r


type(store)._rows = timed
orig_t = type(store)._table


def timed_t(self, query, conn=None):
    t = time.perf_counter()
    r = orig_t(self, query, conn)
    s = stat["T:" + names.get(query, query[:60])]
    s[0] += 1
    s[1] += time.perf_counter() - t
    return r


type(store)._table = timed_t
row = pd._run(items[1], "pushdown", res, store)
print("ms", round(row["ms"]), "edges", row.get("edges"))
for k, (n, s, ids) in sorted(stat.items(), key=lambda kv: -kv[1][1]):
    print(f"{s:8.2f}s {n:5d} calls ids={ids:7d} {k}")

for k, v in callers.most_common(12):
    print(v, k)
