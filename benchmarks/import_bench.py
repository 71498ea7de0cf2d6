"""Benchmark KG import: EMCKG-full (chatdoctor) and the whole CMCKG recrawl (recrawl-json).

Each case runs in a fresh child process importing into a fresh temporary LadybugDB store,
so the peak RSS (``resource.getrusage``) is that import's own. Prints one JSON document and
one line of text per case. Goals: EMCKG-full <= 30 s, recrawl_full <= 5 min (wall, parse + load).

Usage::

    python benchmarks/import_bench.py [--case emckg-full|recrawl-full|all] [--data-dir DIR]
                                      [--json-out FILE] [--tracemalloc]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES: dict[str, tuple[str, str, float]] = {
    # case: (path under the data dir, format, goal in seconds)
    "emckg-full": ("emckg/format_dataset.csv", "chatdoctor", 30.0),
    "recrawl-full": ("cmckg/recrawl_full", "recrawl-json", 300.0),
}


def default_data_dir() -> Path:
    return Path(os.environ.get("KGMIND_DATA_DIR") or ROOT / ".." / "shared" / "data")


def child(case: str, data_dir: Path, store_dir: Path, use_tracemalloc: bool) -> dict[str, object]:
    """Run one import in this process and measure it."""
    import tracemalloc

    from kgmind.importers import ProgressTracker, get_parser, import_result
    from kgmind.stores.factory import close_all_stores, open_store

    rel, fmt, goal = CASES[case]
    if use_tracemalloc:
        tracemalloc.start()
    t0 = time.perf_counter()
    result = get_parser(fmt)(data_dir / rel, ProgressTracker(enabled=False))
    t1 = time.perf_counter()
    parse_rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    store = open_store(f"ladybug:{store_dir}", create=True)
    summary = import_result(result, store)
    t2 = time.perf_counter()
    stats = store.stats()
    close_all_stores()
    py_peak = tracemalloc.get_traced_memory()[1] if use_tracemalloc else None
    usage = resource.getrusage(resource.RUSAGE_SELF)
    rss_kib = usage.ru_maxrss  # KiB on Linux
    return {
        "case": case,
        "format": fmt,
        "path": str(data_dir / rel),
        "rows": summary.rows,
        "skipped": summary.skipped,
        "entities": stats.entities_total,
        "relations": stats.relations_total,
        "docs": stats.docs_total,
        "parse_s": round(t1 - t0, 2),
        "load_s": round(t2 - t1, 2),
        "wall_s": round(t2 - t0, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),  # whole process, incl. imports
        "parse_peak_rss_mib": round(parse_rss_kib / 1024, 1),
        "peak_rss_mib": round(rss_kib / 1024, 1),
        "python_peak_mib": round(py_peak / 2**20, 1) if py_peak is not None else None,
        "goal_s": goal,
        "within_goal": (t2 - t0) <= goal,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=[*CASES, "all"], default="all")
    ap.add_argument("--data-dir", type=Path, default=default_data_dir())
    ap.add_argument("--json-out", type=Path)
    ap.add_argument("--tracemalloc", action="store_true", help="also report Python's own peak (slower)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--store-dir", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child:
        print(json.dumps(child(args.child, args.data_dir, args.store_dir, args.tracemalloc)))
        return 0

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if p)
    results = []
    for case in CASES if args.case == "all" else [args.case]:
        rel = CASES[case][0]
        if not (args.data_dir / rel).exists():
            print(f"skip {case}: {args.data_dir / rel} is missing", file=sys.stderr)
            continue
        with tempfile.TemporaryDirectory(prefix=f"kgmind-bench-{case}-") as tmp:
            cmd = [sys.executable, __file__, "--child", case, "--data-dir", str(args.data_dir)]
            cmd += ["--store-dir", str(Path(tmp) / "kg")]
            if args.tracemalloc:
                cmd.append("--tracemalloc")
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return proc.returncode
            results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    report = {"python": sys.version.split()[0], "cpus": os.cpu_count(), "results": results}
    print(json.dumps(report, indent=2))
    for r in results:
        status = "OK" if r["within_goal"] else "OVER GOAL"
        print(
            f"{r['case']}: {r['rows']:,} rows -> {r['entities']:,} entities, {r['relations']:,} relations "
            f"in {r['wall_s']} s (parse {r['parse_s']} s, load {r['load_s']} s), "
            f"CPU {r['cpu_s']} s, peak RSS {r['peak_rss_mib']} MiB "
            f"(after parse {r['parse_peak_rss_mib']} MiB); goal <= {r['goal_s']:.0f} s: {status}"
        )
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if all(r["within_goal"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
