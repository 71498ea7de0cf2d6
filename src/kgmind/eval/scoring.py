"""Scoring: one method's evidence and answer on one item (a result row), and a method's summary over its rows.

Evidence is scored by the gold entities it names (recall, disease hit, precision over
the vocabulary's entities); an answer by its gold entities, ROUGE-L, BLEU-4 and
BERTScore, its grounding report, or, for a choice item, accuracy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kgmind.eval import gold as gd
from kgmind.eval import metrics as mt
from kgmind.eval.config import EvalConfig
from kgmind.eval.items import EvalItem
from kgmind.eval.methods import MethodResult, evidence_text
from kgmind.eval.resources import Resources

__all__ = [
    "MEAN_KEYS",
    "llm_call_summary",
    "score_answer",
    "score_evidence",
    "scoring_vocabulary",
    "summarize",
]

#: Row scores averaged (with their counts) in a method's summary, in report order.
MEAN_KEYS: tuple[str, ...] = (
    "evidence_recall",
    "gold_disease_hit",
    "evidence_precision",
    "answer_entity_recall",
    "answer_precision",
    "rouge_l",
    "bleu4",
    "bertscore_f1",
    "grounded",
    "citation_rate",
    "citation_support",
    "unsupported_entities",
    "accuracy",
)


def scoring_vocabulary(cfg: EvalConfig) -> gd.Vocabulary | None:
    """The vocabulary whose entities count for precision (``None``: a data set without one)."""
    if cfg.dataset == "genmedgpt5k":
        return gd.load_emckg_vocabulary(cfg.vocab)
    if cfg.dataset == "cmcqa":
        try:
            return gd.load_cmckg_vocabulary(cfg.vocab)
        except FileNotFoundError:
            return None
    return None


def score_evidence(
    item: EvalItem, result: MethodResult, res: Resources, vocab: gd.Vocabulary | None
) -> dict[str, Any]:
    """The evidence scores of one result row (its rendered text kept under ``_text`` for the answer's)."""
    text = evidence_text(result.evidence, res)
    found = [e.name for e in vocab.matcher.find(text)] if vocab is not None else []
    return {
        "evidence_recall": mt.evidence_recall(text, item.gold),
        "gold_disease_hit": mt.gold_disease_hit(text, item.gold_diseases),
        "evidence_precision": mt.evidence_precision(found, item.gold_names) if item.gold_names else None,
        "evidence_tokens": res.count_tokens(text) if text else 0,
        "evidence_items": len(result.evidence),
        "_text": text,
    }


def score_answer(
    item: EvalItem,
    row: dict[str, Any],
    result: MethodResult,
    answer: str,
    vocab: gd.Vocabulary | None,
    bertscore: bool,
) -> None:
    """Add the answer's scores to ``row``: accuracy for a choice item, else entities, overlap, grounding."""
    if item.options is not None and item.answer_key is not None:
        pred = mt.extract_choice(answer)
        row["accuracy"] = 1.0 if pred == item.answer_key else 0.0
        return
    row["answer_entity_recall"] = mt.answer_entity_recall(answer, item.gold)
    ans_ents = [e.name for e in vocab.matcher.find(answer)] if vocab is not None else []
    if item.gold_names:
        row["answer_precision"] = mt.evidence_precision(ans_ents, item.gold_names)
    if item.reference:
        row["rouge_l"] = mt.rouge_l(answer, item.reference)
        row["bleu4"] = mt.bleu4(answer, item.reference)
        if bertscore:
            row["bertscore_f1"] = mt.bertscore_f1(answer, item.reference)
    report = result.grounding
    row["grounded"] = 1.0 if report.get("grounded") else 0.0
    row["citation_rate"] = report.get("citation_rate")
    row["citation_support"] = report.get("citation_support")
    row["unsupported_entities"] = float(len(mt.unsupported_entities(ans_ents, row["_text"], item.question)))


def llm_call_summary(calls: Sequence[dict[str, Any]], questions: int) -> dict[str, dict[str, float]]:
    """Where the LLM seconds went, per call name: calls per question, seconds, prompt and output tokens."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for c in calls:
        by_name.setdefault(str(c["name"]), []).append(c)
    return {
        name: {
            "calls_per_question": round(len(cs) / max(questions, 1), 3),
            "seconds_mean": round(mt.mean(c["seconds"] for c in cs) or 0.0, 3),
            "prompt_tokens_mean": round(mt.mean(c["prompt_tokens"] for c in cs) or 0.0, 1),
            "output_tokens_mean": round(mt.mean(c["output_tokens"] for c in cs) or 0.0, 1),
        }
        for name, cs in sorted(by_name.items())
    }


def summarize(rows: list[dict[str, Any]], lat: list[float], errors: int, first_error: str) -> dict[str, Any]:
    """A method's summary: mean scores, latency and wall-time percentiles, LLM calls, counts and errors."""
    if not rows:
        return {"errors": errors, "first_error": first_error, "scored": 0}
    out: dict[str, Any] = {}
    for key in MEAN_KEYS:
        if any(key in r for r in rows):
            out[key] = mt.summarize(rows, key)
    out["evidence_tokens_mean"] = mt.mean(r["evidence_tokens"] for r in rows)
    out["evidence_items_mean"] = mt.mean(r["evidence_items"] for r in rows)
    out["llm_calls_mean"] = mt.mean(r["llm_calls"] for r in rows)
    out["latency_ms_p50"] = mt.percentile(lat, 50)
    out["latency_ms_p95"] = mt.percentile(lat, 95)
    if any("answer" in r for r in rows):  # with an LLM: the whole question, LLM calls included
        walls = [r["wall_ms"] for r in rows]
        out["wall_ms_p50"] = mt.percentile(walls, 50)
        out["wall_ms_p95"] = mt.percentile(walls, 95)
    detail = llm_call_summary([c for r in rows for c in r.get("llm_detail") or []], len(rows))
    if detail:
        out["llm_detail"] = detail
    out["scored"] = len(rows)
    out["rows_with_gold"] = sum(1 for r in rows if r["evidence_recall"] is not None)
    out["rows_with_gold_disease"] = sum(1 for r in rows if r["gold_disease_hit"] is not None)
    out["errors"] = errors
    if first_error:
        out["first_error"] = first_error
    return out
