"""The evaluation loop: run every method on each item of a data set, then aggregate the metrics.

One :class:`~kgmind.eval.config.EvalConfig` describes a run; :func:`run_eval` returns the
results dict that :mod:`kgmind.eval.report` writes (``results.json``). The kgmind methods
run the compiled graph (see :mod:`kgmind.eval.methods`); every answer comes from the
shipped reasoning prompt, and LLM outputs are cached by LangChain's LLM cache (SQLite),
so a rerun costs nothing. Each method gets a warm-up call on the first item (lazy models
and indexes are built then, outside the timings); latency is the method's wall time
minus the time spent inside LLM calls. Peak memory is the ``tracemalloc`` peak of Python
allocations during one method call, maximised over the first ``memory_sample`` items in
a separate pass (tracemalloc slows code down, so it is kept out of the latency pass;
native allocations of torch/faiss are not traced). The process's max RSS is reported once.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import resource
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kgmind.eval import gold as gd
from kgmind.eval import metrics as mt
from kgmind.eval.config import EvalConfig
from kgmind.eval.environment import machine_info, set_torch_threads, torch_threads
from kgmind.eval.items import EvalItem, build_items, question_text
from kgmind.eval.kg import documents_kg, prepare_store
from kgmind.eval.methods import METHODS, MethodResult, check_methods, resolve_methods
from kgmind.eval.resources import EntityInput, Resources
from kgmind.eval.scoring import score_answer, score_evidence, scoring_vocabulary, summarize
from kgmind.eval.shown import shown_triples
from kgmind.graphs.check_grounding import grounding_report
from kgmind.settings import kgmind_home

__all__ = ["default_llm_cache_path", "run_eval"]


def default_llm_cache_path() -> Path:
    """``$KGMIND_HOME/llm_cache/langchain.sqlite``: where evaluations cache LLM outputs."""
    return kgmind_home() / "llm_cache" / "langchain.sqlite"


def _sqlite_llm_cache(cfg: EvalConfig) -> Any:
    """LangChain's SQLite LLM cache for this run (keyed by prompt and model settings, max_tokens included)."""
    import warnings

    with warnings.catch_warnings():
        # langchain-community as a whole is being sunset; its SQLite LLM cache (like ChatLlamaCpp) has no
        # standalone successor package yet, so this import is the one way to LangChain's persistent cache
        warnings.filterwarnings(
            "ignore", message="`langchain-community` is being sunset", category=DeprecationWarning
        )
        from langchain_community.cache import SQLiteCache

    # its lookups warn on every hit that a default will change; the cache holds only our own outputs
    warnings.filterwarnings("ignore", message="The default value of `allowed_objects`", module="langchain")
    path = Path(cfg.llm_cache) if cfg.llm_cache else default_llm_cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    return SQLiteCache(database_path=str(path))


@contextlib.contextmanager
def _llm_cache(cfg: EvalConfig, model: str | None) -> Iterator[None]:
    """Set the run's global LangChain LLM cache (SQLite; none for ``--llm-cache off``), restored after."""
    from langchain_core.globals import get_llm_cache, set_llm_cache

    previous = get_llm_cache()
    if model is not None and cfg.llm_cache != "off":
        set_llm_cache(_sqlite_llm_cache(cfg))
    elif model is not None:  # every call runs: timings of the whole product
        set_llm_cache(None)
    try:
        yield
    finally:
        set_llm_cache(previous)


def _llama_token_counter(model: str) -> Callable[[str], int] | None:
    """The local model's own token count, for the LLM call log (``None`` for other models)."""
    from kgmind.llm import local_tokenizer

    tokenize = local_tokenizer(model)
    return None if tokenize is None else (lambda text: len(tokenize(text)))


@dataclass
class _Run:
    """One evaluation's items, their entities, the shared resources and the methods that can run."""

    cfg: EvalConfig
    items: list[EvalItem]
    info: dict[str, Any]
    res: Resources
    runnable: list[str]
    disabled: dict[str, str]
    vocab: gd.Vocabulary | None
    entity_lists: list[Sequence[EntityInput]] = field(default_factory=list)
    ner_ms: list[float] = field(default_factory=list)
    keep_rows: bool = False  # rows go into results.json: each row also says what it showed


def _prepare(cfg: EvalConfig) -> _Run:
    """Check the settings, build the items, open the KG and gather each item's question entities."""
    names = resolve_methods(cfg.methods)
    if cfg.entities not in ("chatgpt", "own"):
        raise ValueError("--entities must be 'chatgpt' or 'own'")
    set_torch_threads(cfg.threads)
    items, info = build_items(cfg)
    if not items:
        raise ValueError(f"no items to evaluate in {cfg.dataset} ({cfg.split})")
    needs_kg = any(METHODS[n].uses_kg for n in names) or cfg.entities == "own"
    store_uri = prepare_store(cfg) if needs_kg else None
    runnable, disabled = check_methods(names, has_store=store_uri is not None)
    model = None if cfg.llm in ("", "none") else cfg.llm
    res = Resources(
        store_uri=store_uri,
        docs_dir=cfg.docs,
        docs_kg=documents_kg(cfg),
        model=model,
        max_tokens=cfg.max_tokens,
        seed=cfg.seed,
        context_overrides=cfg.context,
    )
    if model is not None:
        res.llm_log.tokenize = _llama_token_counter(model)
    run = _Run(cfg, items, info, res, runnable, disabled, scoring_vocabulary(cfg))
    if cfg.entities == "own":
        _own_entities(run)
    else:
        run.entity_lists = [list(item.entities) for item in items]
    return run


def _own_entities(run: _Run) -> None:
    """Each item's mentions by kgmind's own NER (``--entities own``), timed."""
    from kgmind.retrievers.ner import extract_mentions

    for item in run.items:
        t0 = time.perf_counter()
        run.entity_lists.append(list(extract_mentions(item.question, run.res.store())))
        run.ner_ms.append((time.perf_counter() - t0) * 1000)


def _run_one(
    name: str, item: EvalItem, ents: Sequence[EntityInput], res: Resources, budget: int
) -> tuple[MethodResult, float, float]:
    """Run one method on one item: ``(result, non-LLM ms, wall ms)``."""
    t0 = time.perf_counter()
    result = METHODS[name].func(question_text(item), ents, res, budget)
    wall_ms = (time.perf_counter() - t0) * 1000.0
    return result, max(0.0, wall_ms - result.llm_ms), wall_ms


def _answer_baseline(item: EvalItem, result: MethodResult, res: Resources, row: dict[str, Any]) -> str:
    """Answer a baseline's evidence with the shipped prompt; its time and call join ``row``."""
    t0 = time.perf_counter()
    answered = res.answer(question_text(item), result.evidence)
    row["wall_ms"] += (time.perf_counter() - t0) * 1000.0
    row["llm_calls"] += 1
    result.grounding = grounding_report(
        result.evidence,
        answered.get("inference_chain") or [],
        answered.get("mind_map"),
        derived=bool((answered.get("flags") or {}).get("fallback_parse")),
    )
    return str(answered.get("answer") or "")


def _eval_item(name: str, i: int, run: _Run) -> dict[str, Any]:
    """Run method ``name`` on item ``i`` (and, with an LLM, answer it) and score it: one result row."""
    item, res, cfg = run.items[i], run.res, run.cfg
    result, ms, wall_ms = _run_one(name, item, run.entity_lists[i], res, cfg.budget)
    row = score_evidence(item, result, res, run.vocab)
    row["llm_calls"] = result.llm_calls
    row["latency_ms"] = ms
    row["wall_ms"] = wall_ms
    if res.model is not None:
        # a baseline has no answer yet: its evidence is answered by the shipped prompt
        answer = result.answer if result.answer is not None else _answer_baseline(item, result, res, row)
        row["answer"] = answer
        score_answer(item, row, result, answer, run.vocab, cfg.bertscore)
    row["id"] = item.id
    row["notes"] = result.notes
    if run.keep_rows:  # which facts reached this question (outside the timings)
        row["shown"] = shown_triples(result.evidence, res.store() if res.store_uri else None)
    row["llm_detail"] = res.llm_log.take()
    return row


def _error_text(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


def _latency_pass(
    run: _Run, on_start: Callable[[str, int], None] | None, on_advance: Callable[[str], None] | None
) -> tuple[dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """Warm every method up, then run and score it on every item: ``(summaries, rows)`` by method."""
    items, runnable = run.items, run.runnable
    rows_of: dict[str, list[dict[str, Any]]] = {name: [] for name in runnable}
    errors_of: dict[str, int] = dict.fromkeys(runnable, 0)
    first_error_of: dict[str, str] = dict.fromkeys(runnable, "")
    for name in runnable:
        if on_start:
            on_start(name, len(items))
        try:  # warm-up: builds lazy indexes and models outside the timings
            _run_one(name, items[0], run.entity_lists[0], run.res, run.cfg.budget)
        except Exception as exc:  # noqa: BLE001 - reported per method
            first_error_of[name] = _error_text(exc)
        run.res.llm_log.take()
    order = (
        [(name, i) for i in range(len(items)) for name in runnable]
        if run.cfg.interleave
        else [(name, i) for name in runnable for i in range(len(items))]
    )
    for name, i in order:
        try:
            rows_of[name].append(_eval_item(name, i, run))
        except Exception as exc:  # noqa: BLE001 - one failing item must not stop the run
            errors_of[name] += 1
            first_error_of[name] = first_error_of[name] or _error_text(exc)
            run.res.llm_log.take()
        if on_advance:
            on_advance(name)
    results: dict[str, dict[str, Any]] = {}
    for name in runnable:
        rows = rows_of[name]
        lat = [r["latency_ms"] for r in rows]
        results[name] = summarize(rows, lat, errors_of[name], first_error_of[name])
        notes = sorted({n for r in rows for n in r["notes"]})
        if notes:
            results[name]["notes"] = notes
    return results, rows_of


def _memory_pass(run: _Run, results: dict[str, dict[str, Any]]) -> None:
    """Add each scored method's ``tracemalloc`` peak over the first ``memory_sample`` items (MB)."""
    mem_n = min(run.cfg.memory_sample, len(run.items))
    if mem_n <= 0:
        return
    for name in run.runnable:
        if results[name].get("scored", 0) == 0:
            continue
        peak = 0
        tracemalloc.start()
        try:
            for item, ents in zip(run.items[:mem_n], run.entity_lists[:mem_n], strict=True):
                tracemalloc.reset_peak()
                try:
                    _run_one(name, item, ents, run.res, run.cfg.budget)
                except Exception:  # noqa: BLE001 - errors were counted in the main pass
                    continue
                peak = max(peak, tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
            run.res.llm_log.take()
        results[name]["peak_mem_mb"] = round(peak / 2**20, 3)


def _results(
    run: _Run, results: dict[str, dict[str, Any]], rows_of: dict[str, list[dict[str, Any]]], keep_rows: bool
) -> dict[str, Any]:
    """The results dict of ``results.json``: the settings, the machine and every method's summary."""
    cfg = run.cfg
    out: dict[str, Any] = {
        "dataset": cfg.dataset,
        "split": cfg.split if cfg.dataset in ("genmedgpt5k", "cmcqa") else "all",
        "n": len(run.items),
        "budget": cfg.budget,
        "entities": cfg.entities,
        "llm": cfg.llm,
        "max_tokens": cfg.max_tokens,
        "limit": cfg.limit,
        "seed": cfg.seed,
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "store": run.res.store_uri,
        "gold": run.info,
        "methods": results,
        "disabled": run.disabled,
        "torch_threads": torch_threads(),
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "config": {k: v for k, v in asdict(cfg).items() if k not in ("methods",)},
    }
    if run.ner_ms:
        out["ner_ms_p50"] = mt.percentile(run.ner_ms, 50)
        out["ner_ms_p95"] = mt.percentile(run.ner_ms, 95)
    if keep_rows:
        out["rows"] = {
            n: [{k: v for k, v in r.items() if k != "_text"} for r in rs] for n, rs in rows_of.items()
        }
    return out


def run_eval(
    cfg: EvalConfig,
    *,
    on_start: Callable[[str, int], None] | None = None,
    on_advance: Callable[[str], None] | None = None,
    keep_rows: bool = False,
) -> dict[str, Any]:
    """Run the evaluation described by ``cfg``.

    Args:
        cfg: The run settings.
        on_start: Called with (method, number of items) before a method runs (progress bars).
        on_advance: Called with the method name after each item.
        keep_rows: Include per-item rows under ``"rows"`` (large), each with the triples
            behind every evidence item it showed (``shown``, :mod:`kgmind.eval.shown`).

    Returns:
        The results dict (see :mod:`kgmind.eval.report`).

    """
    run = _prepare(cfg)
    run.keep_rows = keep_rows
    with _llm_cache(cfg, run.res.model):
        results, rows_of = _latency_pass(run, on_start, on_advance)
        _memory_pass(run, results)  # tracemalloc, separate from the latency pass
    return _results(run, results, rows_of, keep_rows)
