"""Does kgmind's own memory grow with runs? The server benchmark's load, in one process, without a server.

2,000 questions (the driver's six, EN+ZH, ``fake:`` model, demo KG), 8 threads, one run in three followed by a
rating or per-claim verdicts applied in-process (as the server's ``apply_feedback`` node does). RSS after the
warm-up, after the load, and after ``malloc_trim(0)`` (what the allocator could give back: fragmentation, not
live objects). Run with ``KGMIND_HOME`` set to an empty directory and ``PYTHONPATH=src:tests``.
"""

import ctypes
import gc
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main(runs: int = 2000, threads: int = 8) -> None:
    from kgmind.graphs.apply_feedback import apply_rating, apply_verdicts
    from kgmind.graphs.context import Context
    from kgmind.graphs.pipeline import graph
    from kgmind.graphs.services import get_store
    from server_load_driver import QUESTIONS, feedback_kind, feedback_payload, fingerprint

    ctx = Context(model="fake:load", seed=0)
    for q in QUESTIONS:  # warm-up, as the benchmark's
        graph.invoke({"question": q}, context=ctx)
    gc.collect()
    warm = rss_mib()
    store = get_store(None)

    def one(i: int) -> None:
        values = dict(graph.invoke({"question": QUESTIONS[i % len(QUESTIONS)]}, context=ctx))
        kind, turn = feedback_kind(i, 3)
        if kind == "rating":
            apply_rating(store, values, feedback_payload(kind, turn, values)["rating"])
        elif kind == "flags":
            p = feedback_payload(kind, turn, values)
            if p["wrong"] or p["right"]:
                apply_verdicts(store, values, p["wrong"], p["right"], source="human")
        fingerprint(values)

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(runs)))
    gc.collect()
    after = rss_mib()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    trimmed = rss_mib()
    out = {
        "runs": runs,
        "threads": threads,
        "rss_warm_mib": round(warm, 1),
        "rss_after_mib": round(after, 1),
        "rss_after_malloc_trim_mib": round(trimmed, 1),
        "ratio": round(after / warm, 3),
        "ratio_after_trim": round(trimmed / warm, 3),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
