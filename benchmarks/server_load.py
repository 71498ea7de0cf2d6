"""Serving under load (issue 45): ``langgraph dev``, many clients at once, feedback from a second process.

The driver is ``tests/server_load_driver.py`` (one copy; the CI test
``tests/reliability/test_server_load.py`` runs a short version of the same thing). This
script runs it at a chosen size and writes ``results.json`` and ``results.md`` under
``--out``: throughput and p50/p95 latency of the load against one client at a time, the
server's RSS after warm-up and after the load, and the checks (every run finished, each
answer equals a serial run's on the weights it may have read, weights, audit log, verdict
log and dispute states equal a serial replay in commit order, no error in the server log).
The second process alternates ratings and per-claim flags; ``--delete-threads`` deletes
each thread once its run is over, as a deployment with a thread TTL would (``langgraph
dev`` otherwise keeps every thread in memory).

Example (the long version; the real local model answers the last 20 runs)::

    python benchmarks/server_load.py --runs 2000 --concurrency 8 --local-llm-runs 20 --out DIR
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from _common import cpu_model, git_commit  # noqa: E402
from server_load_driver import LoadReport, load_test  # noqa: E402


def _markdown(summary: dict[str, Any], args: argparse.Namespace) -> str:
    serial = summary["phases"][0]
    rows = [
        "| phase | runs | concurrency | wall (s) | throughput (runs/s) | p50 (ms) | p95 (ms) | vs serial |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in summary["phases"]:
        speedup = p["throughput_per_s"] / serial["throughput_per_s"] if serial["throughput_per_s"] else 0.0
        rows.append(
            f"| {p['phase']} | {p['runs']} | {p['concurrency']} | {p['wall_s']} | {p['throughput_per_s']} "
            f"| {p['p50_ms']} | {p['p95_ms']} | {speedup:.2f}× |"
        )
    checks = [
        f"- unfinished runs: {len(summary['unfinished'])}",
        f"- answers unlike the serial run's: {len(summary['mismatched'])}",
        f"- ratings sent: {summary['ratings']} (weight commits: {summary['weight_commits']}); "
        f"per-claim flag payloads sent: {summary['flags']} (verdict commits: {summary['verdict_commits']}; "
        f"edges disputed at the end: {summary['disputed_edges']})",
        f"- equal to the serial replay: weights {summary['weights_equal']}, "
        f"audit log {summary['audit_equal']}, verdict log {summary['verdicts_equal']}, "
        f"dispute states {summary['disputes_equal']}",
        f"- errors in the server log: {len(summary['log_errors'])}",
        f"- server RSS: {summary['rss_warm_mib']} MiB after warm-up, {summary['rss_after_mib']} MiB after "
        f"the load ({summary['rss_ratio']}×; limit 1.2×; finished threads deleted: "
        f"{summary['threads_deleted']}); langgraph dev's own store of threads, runs and checkpoints "
        f"(`.langgraph_api/`, written when it stopped): {summary['langgraph_api_persisted_mib']} MiB",
    ]
    return "\n".join(
        [
            "# Server load (langgraph dev, fake: model unless a phase says otherwise)",
            "",
            f"`python benchmarks/server_load.py --runs {args.runs} --concurrency {args.concurrency} "
            f"--baseline-runs {args.baseline_runs} --rate-every {args.rate_every} "
            f"--local-llm-runs {args.local_llm_runs}{' --delete-threads' if args.delete_threads else ''}`",
            "",
            f"commit {summary['commit']}, {summary['cpu']}",
            "",
            *rows,
            "",
            *checks,
            "",
        ]
    )


def _ok(report: LoadReport) -> bool:
    return (
        not report.unfinished
        and not report.mismatched
        and report.replay_equal
        and not report.log_errors
        and report.rss_ratio <= 1.2
    )


def main() -> None:
    """Run the load test and write its results; exit 1 when a check failed."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200, help="questions in the load phase")
    ap.add_argument("--concurrency", type=int, default=8, help="questions at once in the load phase")
    ap.add_argument("--baseline-runs", type=int, default=20, help="questions asked one at a time first")
    ap.add_argument("--rate-every", type=int, default=3, help="rate every n-th run of the load (0 = none)")
    ap.add_argument(
        "--local-llm-runs", type=int, default=0, help="runs with the real local model after the load"
    )
    ap.add_argument(
        "--delete-threads",
        action="store_true",
        help="delete each thread once its run is over (as a thread TTL would)",
    )
    ap.add_argument("--out", type=Path, required=True, help="folder for results.json and results.md")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kgmind-server-load-") as tmp:
        report = load_test(
            Path(tmp),
            runs=args.runs,
            concurrency=args.concurrency,
            baseline_runs=args.baseline_runs,
            rate_every=args.rate_every,
            local_llm_runs=args.local_llm_runs,
            delete_threads=args.delete_threads,
        )
        (args.out / "server.log").write_text(report.server_log)
    summary = {"argv": sys.argv, "commit": git_commit(), "cpu": cpu_model(), **report.summary()}
    (args.out / "results.json").write_text(json.dumps(summary, ensure_ascii=False, indent=2) + "\n")
    (args.out / "results.md").write_text(_markdown(summary, args))
    print(_markdown(summary, args))
    sys.exit(0 if _ok(report) else 1)


if __name__ == "__main__":
    main()
