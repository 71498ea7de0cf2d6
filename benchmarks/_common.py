"""What every benchmark records about how its figures were made: the commit and the CPU."""

from __future__ import annotations

import csv
import os
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kgmind.eval.environment import machine_info


def git_commit() -> str:
    """The short hash of HEAD, or ``unknown`` outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def cpu_model() -> str:
    """The CPU's model name and whether it has AVX-512 / AMX (they change the embedding speed)."""
    info = machine_info()
    isa = info["isa"]
    return f"{info['cpu']} ({', '.join(isa) if isa else 'no AVX-512/AMX'})"


def answer_eval_config(
    methods: str, model: str, split: str, limit: int, seed: int, dataset: str = "genmedgpt5k", **extra: Any
) -> Any:
    """The ``kgmind eval DATASET`` settings of the answer benchmarks (GenMedGPT-5k unless told; CMCQA is
    the Chinese one): a seeded sample, no BERTScore, no LLM cache, methods interleaved per question (so
    drift hits every method alike)."""
    from kgmind.eval.config import EvalConfig

    return EvalConfig(
        dataset=dataset,
        methods=methods,
        llm=model,
        split=split,
        limit=limit,
        seed=seed,
        memory_sample=0,
        bertscore=False,
        llm_cache="off",
        interleave=True,
        **extra,
    )


def write_triples(path: Path, rows: Iterable[tuple[str, str, str]]) -> int:
    """Write a ``head,relation,tail`` CSV with header for ``kg import --format triples``; return the rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(("head", "relation", "tail"))
        for row in rows:
            writer.writerow(row)
            n += 1
    return n


def parsed_edges(source: Path, fmt: str) -> list[tuple[str, str, str]]:
    """Every edge kgmind's own parser reads from ``source`` (inverses included), by display name."""
    from kgmind.importers import parse

    result = parse(source, fmt)
    names = {e.id: e.name for e in result.entities}
    return [(names[r.head], r.type, names[r.tail]) for r in result.relations]


def cli_env() -> tuple[Path, dict[str, str]]:
    """The data folder, resolved, and the environment ``kgmind`` subprocesses run in (offline)."""
    from kgmind.settings import get_settings

    data_dir = get_settings().data_dir.resolve()
    env = {
        **os.environ,
        "KGMIND_DATA_DIR": str(data_dir),
        "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1"),
    }
    return data_dir, env
