"""Evidence recall against evidence tokens: kgmind and faithful MindMap, English and Chinese.

For each data set and budget, one ``kgmind eval DATASET --methods kgmind,mindmap --budget B --llm none
--entities chatgpt --split test --limit N --seed S`` (each data set's ``test`` split: the evidence value
and its floor are fitted on ``calib``, the budgets are what is measured); the curve plots mean evidence
recall against mean evidence tokens, one point per budget, and is written as ``curve.png`` beside
``results.json``.

Usage::

    python benchmarks/budget_curve.py --budgets 150,250,400,500,650,800,1000,1200 \
        --limit 500 --limit-zh 200 --out benchmarks/results/2026-11-23-budget-curve
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

from _common import git_commit

os.environ.setdefault("HF_HUB_OFFLINE", "1")

METHODS = ("kgmind", "mindmap")


def _kgmind() -> list[str]:
    exe = shutil.which("kgmind")
    return [exe] if exe else [sys.executable, "-c", "from kgmind.cli import main; main()"]


def main(argv: list[str] | None = None) -> int:
    """Run the evaluations, write results.json / results.md / curve.png under ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budgets", default="150,250,400,500,650,800,1000,1200")
    ap.add_argument("--limit", type=int, default=500, help="GenMedGPT-5k test items")
    ap.add_argument("--limit-zh", type=int, default=200, help="CMCQA test items")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--datasets", default="genmedgpt5k,cmcqa")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]
    from kgmind.eval.environment import machine_info

    work = Path(tempfile.mkdtemp(prefix="kgmind-curve-"))
    points: list[dict[str, Any]] = []
    commands: list[dict[str, Any]] = []
    for dataset in args.datasets.split(","):
        limit = args.limit if dataset == "genmedgpt5k" else args.limit_zh
        for budget in budgets:
            cmd = ["eval", dataset, "--methods", ",".join(METHODS), "--llm", "none", "--entities", "chatgpt"]
            cmd += ["--budget", str(budget), "--limit", str(limit), "--seed", str(args.seed)]
            cmd += ["--memory-sample", "0", "--no-progress", "--split", "test"]
            d = work / f"{dataset}-{budget}"
            t0 = time.perf_counter()
            subprocess.run([*_kgmind(), *cmd, "--out", str(d)], check=True, stdout=subprocess.DEVNULL)
            seconds = round(time.perf_counter() - t0, 1)
            commands.append({"command": "kgmind " + shlex.join(cmd), "seconds": seconds})
            print(f"[{seconds:6.1f} s] kgmind {shlex.join(cmd)}", file=sys.stderr, flush=True)
            res = json.loads((d / "results.json").read_text(encoding="utf-8"))
            for m in METHODS:
                r = res["methods"].get(m) or {}
                points.append(
                    {
                        "dataset": dataset,
                        "method": m,
                        "budget": budget,
                        "n": res["n"],
                        "evidence_recall": r.get("evidence_recall"),
                        "evidence_tokens": r.get("evidence_tokens_mean"),
                        "gold_disease_hit": r.get("gold_disease_hit"),
                        "evidence_precision": r.get("evidence_precision"),
                    }
                )
    out = {
        "benchmark": "budget_curve",
        "date": date.today().isoformat(),
        "machine": machine_info(),
        "commit": git_commit(),
        "points": points,
        "commands": commands,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(out, indent=2) + "\n")
    (args.out / "results.md").write_text(markdown(out))
    plot(out, args.out / "curve.png")
    print(markdown(out))
    shutil.rmtree(work, ignore_errors=True)
    return 0


def markdown(out: dict[str, Any]) -> str:
    """One row per data set and budget: recall and tokens of both methods."""
    lines = [
        f"Budget curve, {out['date']}, commit {out['commit']}, {out['machine'].get('cpu', '')}",
        "",
        "| data set | budget | kgmind recall | kgmind tokens | MindMap recall | MindMap tokens |",
        "|---|---|---|---|---|---|",
    ]
    by = {(p["dataset"], p["budget"], p["method"]): p for p in out["points"]}
    for ds, budget in dict.fromkeys((p["dataset"], p["budget"]) for p in out["points"]):
        k, m = by.get((ds, budget, "kgmind"), {}), by.get((ds, budget, "mindmap"), {})

        def f(p: dict[str, Any], key: str, digits: int) -> str:
            v = p.get(key)
            return "–" if v is None else f"{v:.{digits}f}"

        lines.append(
            f"| {ds} | {budget} | {f(k, 'evidence_recall', 3)} | {f(k, 'evidence_tokens', 0)} | "
            f"{f(m, 'evidence_recall', 3)} | {f(m, 'evidence_tokens', 0)} |"
        )
    return "\n".join(lines) + "\n"


def plot(out: dict[str, Any], path: Path) -> None:
    """Recall against tokens, one panel per data set, one line per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = list(dict.fromkeys(p["dataset"] for p in out["points"]))
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.5 * len(datasets), 4.2), squeeze=False)
    for ax, ds in zip(axes[0], datasets, strict=True):
        for m, label in (("kgmind", "kgmind"), ("mindmap", "MindMap (faithful)")):
            pts = sorted(
                (p["evidence_tokens"], p["evidence_recall"], p["budget"])
                for p in out["points"]
                if p["dataset"] == ds and p["method"] == m and p["evidence_recall"] is not None
            )
            if not pts:
                continue
            ax.plot([x for x, _, _ in pts], [y for _, y, _ in pts], marker="o", label=label)
            for x, y, b in pts:
                ax.annotate(str(b), (x, y), textcoords="offset points", xytext=(3, -10), fontsize=7)
        n = next((p["n"] for p in out["points"] if p["dataset"] == ds), 0)
        ax.set_title(f"{ds} (n = {n}; labels: budget)")
        ax.set_xlabel("mean evidence tokens")
        ax.set_ylabel("evidence recall")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
