"""Memory of the whole-KG index (``GraphIndex``): bytes per edge held after the build, and at its peak.

Each store is measured in two fresh child processes, so no figure includes another's:

* ``traced``: tracemalloc (Python's own allocations) around the build; entities are read
  before tracing starts, so the figures are the index's own plus what the store's relation
  iterator allocates while it is consumed (the peak);
* ``rss``: the process's resident memory (no tracemalloc): the peak growth during the build
  (``ru_maxrss`` after − resident before) and what stays resident after it, which include what
  Python does not trace (the store engine's result buffers, Arrow chunks, freed-but-kept pages).

Usage::

    python benchmarks/index_memory.py ladybug:$KGMIND_HOME/eval-emckg-full \\
        ladybug:$KGMIND_HOME/eval-cmckg-recrawl [--json-out FILE]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _resident() -> int:
    """Resident bytes of this process now."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measure(uri: str, mode: str) -> dict[str, Any]:
    """Build the index of ``uri`` once, measured by ``mode`` (``traced`` or ``rss``)."""
    from kgmind.retrievers.graph_index import GraphIndex
    from kgmind.stores.factory import open_store

    store = open_store(uri)
    entities = list(store.iter_entities())
    gc.collect()
    before = _resident()
    if mode == "traced":
        tracemalloc.start()
    t0 = time.perf_counter()
    gi = GraphIndex(entities, store.iter_relations())
    seconds = time.perf_counter() - t0
    gc.collect()
    n = max(gi.num_edges, 1)
    out: dict[str, Any] = {"store": uri, "edges": gi.num_edges, "nodes": gi.num_nodes}
    if mode == "traced":
        held, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out |= {
            "build_s_traced": round(seconds, 2),
            "held_bytes_per_edge": round(held / n, 1),
            "peak_bytes_per_edge": round(peak / n, 1),
        }
    else:
        peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        out |= {
            "build_s": round(seconds, 2),
            "rss_held_bytes_per_edge": round((_resident() - before) / n, 1),
            "rss_peak_bytes_per_edge": round((peak_rss - before) / n, 1),
            "rss_peak_mib": round(peak_rss / 2**20, 1),
        }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stores", nargs="+", help="store URIs")
    ap.add_argument("--json-out", type=Path)
    ap.add_argument("--child", choices=["traced", "rss"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args.stores[0], args.child)))
        return 0
    results = []
    for uri in args.stores:
        row: dict[str, Any] = {}
        for mode in ("rss", "traced"):
            cmd = [sys.executable, __file__, uri, "--child", mode]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return proc.returncode
            row |= json.loads(proc.stdout.strip().splitlines()[-1])
        results.append(row)
        print(json.dumps(row), file=sys.stderr)
    text = json.dumps(results, indent=2)
    print(text)
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
