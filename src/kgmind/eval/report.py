"""Write evaluation results: ``results.json``, a Markdown table ``results.md``, a bar chart ``results.png``.

``results.json`` = ``{"dataset", "split", "n", "budget", "entities", "llm", "date",
"machine", "gold", "methods": {NAME: {"evidence_recall", "gold_disease_hit",
"evidence_precision", "evidence_tokens_mean", "llm_calls_mean", "latency_ms_p50",
"latency_ms_p95", "peak_mem_mb", …answer metrics when an LLM ran}}, "disabled": {NAME:
reason}}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["COLUMNS", "markdown_table", "plot_results", "to_json", "write_results"]

#: Table columns: (results key, header, format).
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("evidence_recall", "recall", "{:.3f}"),
    ("gold_disease_hit", "disease hit", "{:.3f}"),
    ("evidence_precision", "precision", "{:.3f}"),
    ("evidence_tokens_mean", "tokens", "{:.0f}"),
    ("llm_calls_mean", "LLM calls", "{:.2f}"),
    ("latency_ms_p50", "ms p50", "{:.1f}"),
    ("latency_ms_p95", "ms p95", "{:.1f}"),
    ("peak_mem_mb", "peak MiB", "{:.1f}"),
    ("answer_entity_recall", "answer recall", "{:.3f}"),
    ("answer_precision", "answer precision", "{:.3f}"),
    ("citation_rate", "citation rate", "{:.3f}"),
    ("citation_support", "citation support", "{:.3f}"),
    ("wall_ms_p50", "wall ms p50", "{:.0f}"),
    ("wall_ms_p95", "wall ms p95", "{:.0f}"),
    ("rouge_l", "ROUGE-L", "{:.3f}"),
    ("bleu4", "BLEU-4", "{:.3f}"),
    ("bertscore_f1", "BERTScore F1", "{:.4f}"),
    ("grounded", "grounded", "{:.3f}"),
    ("accuracy", "accuracy", "{:.3f}"),
    ("errors", "errors", "{}"),
)


def to_json(results: Mapping[str, Any]) -> str:
    """Return the results as indented JSON."""
    return json.dumps(results, indent=2, ensure_ascii=False, default=str)


def _fmt(value: Any, fmt: str) -> str:
    if value is None:
        return "–"
    try:
        return fmt.format(value)
    except (ValueError, TypeError):
        return str(value)


def markdown_table(results: Mapping[str, Any]) -> str:
    """Build the Markdown report: header facts, one table row per method, disabled methods."""
    methods: Mapping[str, Mapping[str, Any]] = results.get("methods", {})
    cols = [c for c in COLUMNS if any(c[0] in m for m in methods.values())]
    machine = results.get("machine", {})
    lines = [
        f"# kgmind eval: {results.get('dataset')} ({results.get('split', '')})",
        "",
        f"n = {results.get('n')}, budget = {results.get('budget')} tokens, "
        f"entities = {results.get('entities')}, "
        f"llm = {results.get('llm')}"
        + (f" (≤ {results['max_tokens']} tokens per call)" if results.get("max_tokens") else "")
        + f", seed = {results.get('seed')}, date = {results.get('date')}",
        f"machine: {machine.get('cpu')} ({machine.get('cores')} cores), python {machine.get('python')}",
        "",
        "| method | " + " | ".join(h for _, h, _ in cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    for name, m in methods.items():
        lines.append(f"| {name} | " + " | ".join(_fmt(m.get(k), f) for k, _, f in cols) + " |")
    if results.get("command"):
        lines += ["", f"Command: `{results['command']}`"]
    for remark in results.get("remarks") or []:
        lines += ["", f"Remark: {remark}"]
    disabled = results.get("disabled") or {}
    if disabled:
        lines += ["", "Disabled methods:", ""]
        lines += [f"- {n}: {why}" for n, why in disabled.items()]
    notes = {n: m["notes"] for n, m in methods.items() if m.get("notes")}
    errs = {n: m["first_error"] for n, m in methods.items() if m.get("first_error")}
    if notes or errs:
        lines += ["", "Notes:", ""]
        lines += [f"- {n}: {', '.join(v)}" for n, v in notes.items()]
        lines += [f"- {n}: first error: {v}" for n, v in errs.items()]
    gold = results.get("gold") or {}
    if gold:
        lines += ["", "Gold:", ""]
        if gold.get("split_rule"):
            lines.append(f"- split: {gold['split_rule']} ({gold.get('size')} items before sampling)")
        agr = gold.get("derived_vs_output_kg")
        if agr:
            lines.append(
                f"- derived gold vs annotated output_KG on {agr['rows']} rows: "
                f"precision {_fmt(agr['precision'], '{:.3f}')}, "
                f"recall {_fmt(agr['recall'], '{:.3f}')}, Jaccard {_fmt(agr['jaccard'], '{:.3f}')} (macro); "
                f"micro P/R {_fmt(agr['micro_precision'], '{:.3f}')}/{_fmt(agr['micro_recall'], '{:.3f}')}"
            )
        if gold.get("vocabulary"):
            voc = gold["vocabulary"]
            lines.append(f"- vocabulary: {voc.get('entities')} entities from {voc.get('source')}")
    if results.get("ner_ms_p50") is not None:
        lines.append(
            f"- own NER: {_fmt(results['ner_ms_p50'], '{:.1f}')} ms p50 / "
            f"{_fmt(results.get('ner_ms_p95'), '{:.1f}')}"
            " ms p95 per question (not in the method latencies)"
        )
    return "\n".join(lines) + "\n"


def plot_results(results: Mapping[str, Any], path: str | Path) -> Path:
    """Bar chart of recall / disease hit / precision (or answer metrics) per method (Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    methods: Mapping[str, Mapping[str, Any]] = results.get("methods", {})
    names = list(methods)
    keys = [
        k
        for k in (
            "evidence_recall",
            "gold_disease_hit",
            "evidence_precision",
            "answer_entity_recall",
            "rouge_l",
            "bertscore_f1",
            "accuracy",
        )
        if any(methods[n].get(k) is not None for n in names)
    ]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(names) + 2), 4.0))
    if names and keys:
        x = np.arange(len(names))
        width = 0.8 / len(keys)
        for j, key in enumerate(keys):
            vals = [float(methods[n].get(key) or 0.0) for n in names]
            ax.bar(x + j * width - 0.4 + width / 2, vals, width, label=key)
        ax.set_xticks(x)
        ax.set_xticklabels(names, rotation=20, ha="right")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=8)
    ax.set_title(f"{results.get('dataset')} · n={results.get('n')} · budget={results.get('budget')}")
    fig.tight_layout()
    p = Path(path)
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return p


def write_results(results: Mapping[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write ``results.json``, ``results.md`` and ``results.png`` into ``out_dir`` (created).

    Returns:
        The written paths by kind (``json``, ``md``, ``png``).

    """
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    paths = {"json": d / "results.json", "md": d / "results.md", "png": d / "results.png"}
    paths["json"].write_text(to_json(results) + "\n", encoding="utf-8")
    paths["md"].write_text(markdown_table(results), encoding="utf-8")
    plot_results(results, paths["png"])
    return paths
