"""Learning from feedback, measured with the commands a user runs: ``kgmind learn`` then ``kgmind eval``.

One seeded run on GenMedGPT-5k (no LLM, stored ChatGPT entities, the shipped defaults):

* a held-out set: the first ``--test`` items of the ``test`` split in the seeded order
  (never used for tuning, never trained on);
* a training order: every other ``dev`` item with a gold, in the seeded order; stage N
  learns from its first N (``kgmind learn --ids train.txt --limit N``, so the stages nest
  and each one only adds questions);
* before learning and after each stage, ``kgmind eval --ids … --rows`` on the held-out
  set and on the first ``--repeat`` training questions.

Scenarios, per stage (from the evaluated rows, against the same items before learning):

* (a) repeat: the first ``--repeat`` training questions asked again;
* (b) same diseases, new patients: held-out items with a gold disease that occurs in the
  training questions learnt so far;
* (c) unseen diseases: held-out items none of whose gold diseases occurs in training.

Usage::

    python benchmarks/learning.py --train 300,1000,3000 --test 1000 --repeat 300 --seed 0 \\
        --out benchmarks/results/2026-11-23-learning
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
from statistics import mean
from typing import Any

from _common import git_commit

os.environ.setdefault("HF_HUB_OFFLINE", "1")

METRICS = ("evidence_recall", "evidence_precision", "gold_disease_hit", "evidence_tokens")


def _kgmind() -> list[str]:
    exe = shutil.which("kgmind")
    return [exe] if exe else [sys.executable, "-c", "from kgmind.cli import main; main()"]


def _run(args: list[str], log: list[dict[str, Any]]) -> float:
    """Run one ``kgmind`` command; record it (as a user would type it) and its seconds."""
    t0 = time.perf_counter()
    subprocess.run([*_kgmind(), *args], check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - t0
    log.append({"command": "kgmind " + shlex.join(args), "seconds": round(seconds, 1)})
    print(f"[{seconds:6.1f} s] kgmind {shlex.join(args)}", file=sys.stderr, flush=True)
    return seconds


def _rows(out_dir: Path) -> dict[str, dict[str, Any]]:
    results = json.loads((out_dir / "results.json").read_text(encoding="utf-8"))
    return {r["id"]: r for r in results["rows"]["kgmind"]}


def _mean(rows: list[dict[str, Any]], key: str) -> float | None:
    vals = [r[key] for r in rows if r.get(key) is not None]
    return round(mean(vals), 4) if vals else None


def _compare(
    ids: list[str], before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    b = [before[i] for i in ids if i in before and i in after]
    a = [after[i] for i in ids if i in before and i in after]
    out: dict[str, Any] = {"n": len(a)}
    for key in METRICS:
        out[key] = {"before": _mean(b, key), "after": _mean(a, key)}
    p0, p1 = out["evidence_precision"]["before"], out["evidence_precision"]["after"]
    out["precision_change_rel"] = round(p1 / p0 - 1.0, 4) if p0 and p1 is not None else None
    r0, r1 = out["evidence_recall"]["before"], out["evidence_recall"]["after"]
    out["recall_change_points"] = round(100 * (r1 - r0), 2) if r0 is not None and r1 is not None else None
    return out


def _diseases(item: Any) -> set[str]:
    return {forms[0].lower() for forms in item.gold_diseases}


def main(argv: list[str] | None = None) -> int:
    """Run the learning benchmark and write results.json / results.md under ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", default="300,1000,3000", help="training sizes, comma-separated, increasing")
    ap.add_argument("--test", type=int, default=1000, help="held-out items from the test split")
    ap.add_argument("--repeat", type=int, default=300, help="training questions asked again (scenario a)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--credit", default=None, help="passed to kgmind learn (default: its default)")
    ap.add_argument("--poor", default=None, help="passed to kgmind learn (default: its default)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    sizes = sorted({int(x) for x in args.train.split(",") if x.strip()})

    from kgmind.eval.config import EvalConfig
    from kgmind.eval.environment import machine_info
    from kgmind.eval.items import build_items
    from kgmind.eval.learn import learning_order

    dev, _ = build_items(EvalConfig(split="dev"))
    test, _ = build_items(EvalConfig(split="test"))
    held_out = learning_order([it for it in test if it.gold_names], args.seed)[: args.test]
    held_ids = {it.id for it in held_out}
    train = [
        it for it in learning_order([it for it in dev if it.gold_names], args.seed) if it.id not in held_ids
    ]
    if sizes and sizes[-1] > len(train):
        raise SystemExit(f"only {len(train)} training questions outside the held-out set; lower --train")
    repeat = train[: args.repeat]

    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="kgmind-learning-"))
    files = {"held_out": work / "held_out.txt", "train": work / "train.txt", "repeat": work / "repeat.txt"}
    files["held_out"].write_text("\n".join(it.id for it in held_out) + "\n")
    files["train"].write_text("\n".join(it.id for it in train) + "\n")
    files["repeat"].write_text("\n".join(it.id for it in repeat) + "\n")
    store = f"ladybug:{work / 'kg'}"
    from kgmind.eval.datasets import default_path

    log: list[dict[str, Any]] = []
    common = ["--methods", "kgmind", "--split", "dev", "--rows", "--no-progress", "--memory-sample", "0"]
    common += ["--store", store]

    def evaluate(stage: str) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        out = {}
        for name in ("held_out", "repeat"):
            d = work / f"{stage}-{name}"
            extra = ["--kg", str(default_path("emckg"))] if stage == "0" and name == "held_out" else []
            _run(["eval", "genmedgpt5k", *common, *extra, "--ids", str(files[name]), "--out", str(d)], log)
            out[name] = _rows(d)
        return out["held_out"], out["repeat"]

    t_start = time.perf_counter()
    before_held, before_repeat = evaluate("0")
    stages: list[dict[str, Any]] = []
    learn_opts = []
    if args.credit:
        learn_opts += ["--credit", args.credit]
    if args.poor:
        learn_opts += ["--poor", args.poor]
    for n in sizes:
        summary_path = work / f"learn-{n}.json"
        t0 = time.perf_counter()
        learn_cmd = [
            "learn",
            "genmedgpt5k",
            "--store",
            store,
            "--ids",
            str(files["train"]),
            "--limit",
            str(n),
        ]
        learn_cmd += learn_opts
        res = subprocess.run(
            [*_kgmind(), *learn_cmd, "--no-progress", "--json"], check=True, capture_output=True, text=True
        )
        summary_path.write_text(res.stdout)
        seconds = round(time.perf_counter() - t0, 1)
        log.append({"command": "kgmind " + shlex.join(learn_cmd), "seconds": seconds})
        print(f"[{seconds:6.1f} s] kgmind {shlex.join(learn_cmd)}", file=sys.stderr, flush=True)
        learnt = json.loads(res.stdout)
        after_held, after_repeat = evaluate(str(n))
        trained_diseases: set[str] = set()
        for it in train[:n]:
            trained_diseases |= _diseases(it)
        same = [it.id for it in held_out if _diseases(it) & trained_diseases]
        unseen = [it.id for it in held_out if _diseases(it) and not _diseases(it) & trained_diseases]
        stages.append(
            {
                "train": n,
                "learn": {k: v for k, v in learnt.items() if k not in ("config", "store")},
                "a_repeat": _compare([it.id for it in repeat[:n]], before_repeat, after_repeat),
                "b_same_diseases": _compare(same, before_held, after_held),
                "c_unseen_diseases": _compare(unseen, before_held, after_held),
                "held_out_all": _compare([it.id for it in held_out], before_held, after_held),
            }
        )
    out = {
        "benchmark": "learning",
        "date": date.today().isoformat(),
        "machine": machine_info(),
        "commit": git_commit(),
        "argv": sys.argv[1:] if argv is None else argv,
        "held_out": len(held_out),
        "train_pool": len(train),
        "seconds": round(time.perf_counter() - t_start, 1),
        "stages": stages,
        "commands": log,
    }
    (args.out / "results.json").write_text(json.dumps(out, indent=2) + "\n")
    (args.out / "results.md").write_text(markdown(out))
    print(markdown(out))
    shutil.rmtree(work, ignore_errors=True)
    return 0


def markdown(out: dict[str, Any]) -> str:
    """The stages as one table: scenario, n, recall / precision / hit / tokens before → after."""

    def pair(m: dict[str, Any], key: str, digits: int = 3) -> str:
        b, a = m[key]["before"], m[key]["after"]
        fmt = f"{{:.{digits}f}}"
        return f"{fmt.format(b)} → {fmt.format(a)}" if b is not None and a is not None else "–"

    lines = [
        f"Learning benchmark, {out['date']}, commit {out['commit']}, {out['machine'].get('cpu', '')}; "
        f"held-out n = {out['held_out']}",
        "",
        "| trained | scenario | n | evidence recall | precision (rel. change) | gold-disease hit | tokens |",
        "|---|---|---|---|---|---|---|",
    ]
    names = {
        "a_repeat": "(a) repeat",
        "b_same_diseases": "(b) same diseases, new patients",
        "c_unseen_diseases": "(c) unseen diseases",
        "held_out_all": "held-out, all",
    }
    for st in out["stages"]:
        for key, label in names.items():
            m = st[key]
            rel = m["precision_change_rel"]
            rel_s = f" ({100 * rel:+.1f} %)" if rel is not None else ""
            lines.append(
                f"| {st['train']} | {label} | {m['n']} | {pair(m, 'evidence_recall')} | "
                f"{pair(m, 'evidence_precision')}{rel_s} | {pair(m, 'gold_disease_hit')} | "
                f"{pair(m, 'evidence_tokens', 0)} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
