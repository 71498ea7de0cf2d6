"""The evaluation loop: build the items of a data set, run every method on each, aggregate metrics.

One :class:`EvalConfig` describes a run; :func:`run_eval` returns the results dict that
:mod:`kgmind.eval.report` writes (``results.json``). The kgmind methods run the compiled
graph (see :mod:`kgmind.eval.methods`); every answer comes from the shipped reasoning
prompt, and LLM outputs are cached by LangChain's LLM cache (SQLite), so a rerun costs
nothing. Each method gets a warm-up call on
the first item (lazy models and indexes are built then, outside the timings); latency
is the method's wall time minus the time spent inside LLM calls. Peak memory is the
``tracemalloc`` peak of Python allocations during one method call, maximised over the
first ``memory_sample`` items in a separate pass (tracemalloc slows code down, so it is
kept out of the latency pass; native allocations of torch/faiss are not traced). The
process's max RSS is reported once.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import platform
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kgmind.eval import datasets as ds
from kgmind.eval import gold as gd
from kgmind.eval import metrics as mt
from kgmind.eval.methods import (
    METHODS,
    MethodResult,
    Resources,
    check_methods,
    evidence_text,
    resolve_methods,
)
from kgmind.graphs.check_grounding import grounding_report
from kgmind.graphs.context import Context
from kgmind.models import Mention
from kgmind.settings import kgmind_home

__all__ = [
    "DATASETS",
    "EvalConfig",
    "EvalItem",
    "build_items",
    "default_llm_cache_path",
    "in_calibration",
    "machine_info",
    "prepare_store",
    "question_text",
    "run_eval",
]

#: Data sets ``kgmind eval`` knows.
DATASETS: tuple[str, ...] = ("genmedgpt5k", "cmcqa", "explaincpe", "medical_dialogue_zh")

#: Splits of GenMedGPT-5k. ``calib`` and ``test`` partition ``dev``: every tuned default
#: (δ, δ_span, the reranker) is fitted on ``calib``; README figures are reported on ``test``.
SPLITS: tuple[str, ...] = ("dev", "calib", "test", "gold203", "all")

#: One dev row in this many (by a hash of its id) joins the calibration split, beside
#: the annotated rows. A hash, not a shuffle: a row's side never depends on which other
#: rows a data file holds, so held-out data splits the same way.
CALIB_ONE_IN = 5


def in_calibration(row_id: str, annotated: set[str]) -> bool:
    """Whether a GenMedGPT-5k row belongs to the calibration split.

    The calibration split is the rows annotated in ``gold_kg_entities.jsonl`` (the
    linking thresholds were calibrated on their ``input_KG``) plus one in
    :data:`CALIB_ONE_IN` of the other rows, chosen by ``sha256("kgmind-calib:" + id)``.
    """
    if row_id in annotated:
        return True
    digest = hashlib.sha256(f"kgmind-calib:{row_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % CALIB_ONE_IN == 0


@dataclass
class EvalItem:
    """One evaluation question with its gold.

    Attributes:
        id: Row id (string).
        question: The question.
        reference: The reference answer (may be empty).
        entities: Stored question entities (ChatGPT NER / ``question_kg``).
        gold: Gold entities, each as its surface forms.
        gold_names: Gold entity names (for precision).
        gold_diseases: Gold diseases, each as its surface forms.
        options: Choice options (ExplainCPE).
        answer_key: The right option letter (ExplainCPE).

    """

    id: str
    question: str
    reference: str = ""
    entities: list[str] = field(default_factory=list)
    gold: list[tuple[str, ...]] = field(default_factory=list)
    gold_names: list[str] = field(default_factory=list)
    gold_diseases: list[tuple[str, ...]] = field(default_factory=list)
    options: list[str] | None = None
    answer_key: str | None = None


@dataclass
class EvalConfig:
    """Settings of one evaluation run (the ``kgmind eval`` options)."""

    dataset: str = "genmedgpt5k"
    methods: str = "all"
    entities: str = "chatgpt"
    llm: str = "none"
    budget: int = field(default_factory=lambda: Context().budget_tokens)  # what users get
    split: str = "dev"
    limit: int | None = None
    seed: int = 0
    ids: str | None = None  # a file of item ids: evaluate only those (after the split)
    dialogues: str | None = None
    ner: str | None = None
    gold: str | None = None
    qa: str | None = None
    docs: str | None = None
    vocab: str | None = None
    store: str | None = None
    kg: str | None = None
    kg_format: str | None = None  # None: the default KG's format, or chatdoctor for ``kg``
    memory_sample: int = 20
    bertscore: bool = True
    llm_cache: str | None = None
    interleave: bool = False
    threads: int | None = None
    max_tokens: int | None = None
    context: dict[str, Any] = field(default_factory=dict)  # Context overrides for kgmind's graph runs


def _from_vocab(
    names: Sequence[str], vocab: gd.Vocabulary
) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    gold = [vocab.forms_of(n) for n in names]
    diseases = [vocab.forms_of(n) for n in names if vocab.type_of(n) == "disease"]
    return gold, diseases


def _derived_item(
    item_id: str, question: str, answer: str, entities: Sequence[str], vocab: gd.Vocabulary
) -> EvalItem:
    """An item whose gold is derived from its reference answer (the KG entities it names)."""
    derived = gd.derive_gold(answer, vocab)
    return EvalItem(
        id=item_id,
        question=question,
        reference=answer,
        entities=list(entities),
        gold=[e.forms for e in derived],
        gold_names=[e.name for e in derived],
        gold_diseases=[e.forms for e in derived if e.type == "disease"],
    )


def build_items(cfg: EvalConfig) -> tuple[list[EvalItem], dict[str, Any]]:
    """Build the items of ``cfg.dataset`` / ``cfg.split`` (sampled by ``limit``/``seed``) and gold facts.

    Returns:
        ``(items, info)``; ``info`` holds the split definition, the sizes and, for
        GenMedGPT-5k, the agreement of derived gold with ``output_KG`` on the annotated rows.

    Raises:
        ValueError: Unknown data set or split.

    """
    info: dict[str, Any] = {}
    items: list[EvalItem] = []
    if cfg.dataset == "genmedgpt5k":
        if cfg.split not in SPLITS:
            raise ValueError(f"unknown split {cfg.split!r}; choose from {', '.join(SPLITS)}")
        vocab = gd.load_emckg_vocabulary(cfg.vocab)
        dialogues = ds.load_dialogues(cfg.dialogues)
        ner_path = Path(cfg.ner) if cfg.ner else ds.default_path("ner")
        if ner_path.exists():
            ds.align_ner(dialogues, ds.load_ner(ner_path))
        elif cfg.entities == "chatgpt":
            raise FileNotFoundError(str(ner_path))
        by_id = {d.id: d for d in dialogues}
        gold_path = Path(cfg.gold) if cfg.gold else ds.default_path("gold")
        gold_rows = ds.load_gold(gold_path) if gold_path.exists() else []
        if gold_rows:
            pairs = []
            for r in gold_rows:
                ref = by_id[r.id].answer if r.id in by_id else r.answer
                pairs.append(([e.name for e in gd.derive_gold(ref, vocab)], r.output_kg))
            info["derived_vs_output_kg"] = gd.gold_agreement(pairs)
        if cfg.split == "gold203":
            info["split_rule"] = "the annotated rows of gold_kg_entities.jsonl; gold = output_KG"
            for i, r in enumerate(gold_rows):
                d = by_id.get(r.id)
                gold, diseases = _from_vocab(r.output_kg, vocab)
                items.append(
                    EvalItem(
                        id=f"{r.id}#{i}",
                        question=d.question if d else r.question,
                        reference=d.answer if d else r.answer,
                        entities=list(d.question_entities) if d else [],
                        gold=gold,
                        gold_names=list(r.output_kg),
                        gold_diseases=diseases,
                    )
                )
        else:
            dev_rule = (
                "every dialogue whose derived gold (EMCKG diseases/tests/medications named in the reference "
                "answer) is non-empty"
            )
            calib_rule = (
                f"the rows annotated in gold_kg_entities.jsonl plus one in {CALIB_ONE_IN} of the others "
                "by sha256('kgmind-calib:'+id)"
            )
            info["split_rule"] = {
                "dev": dev_rule,
                "calib": f"{dev_rule}, in the calibration slice: {calib_rule}",
                "test": f"{dev_rule}, outside the calibration slice ({calib_rule}); disjoint from calib",
                "all": "every dialogue",
            }[cfg.split]
            annotated = {str(r.id) for r in gold_rows}
            for d in dialogues:
                if cfg.split in ("calib", "test") and in_calibration(str(d.id), annotated) != (
                    cfg.split == "calib"
                ):
                    continue
                item = _derived_item(str(d.id), d.question, d.answer, d.question_entities, vocab)
                if cfg.split == "all" or item.gold:
                    items.append(item)
        info["vocabulary"] = {"source": vocab.source, "entities": len(vocab.entities)}
    elif cfg.dataset == "cmcqa":
        rule = "entities = question_kg; gold = CMCKG diseases/checks/drugs named in the answer"
        info["split_rule"] = {
            "calib": f"one row in {CALIB_ONE_IN} by sha256('kgmind-calib:'+id); {rule}",
            "test": f"the rows outside calib (one in {CALIB_ONE_IN} by sha256('kgmind-calib:'+id)); {rule}",
        }.get(cfg.split, f"every row; {rule}")
        try:
            vocab = gd.load_cmckg_vocabulary(cfg.vocab)
        except FileNotFoundError:
            vocab = gd.Vocabulary()
        items.extend(
            _derived_item(str(q.id), q.question, q.answer, q.question_kg, vocab)
            for q in ds.load_cmcqa(cfg.qa)
            if cfg.split not in ("calib", "test")
            or in_calibration(str(q.id), set()) == (cfg.split == "calib")
        )
    elif cfg.dataset == "explaincpe":
        info["split_rule"] = "every item of the given split file (default test.json); metric: accuracy"
        for c in ds.load_explaincpe(cfg.qa):
            items.append(
                EvalItem(
                    id=str(c.id),
                    question=c.question,
                    reference=c.explanation,
                    options=c.options,
                    answer_key=c.answer,
                )
            )
    elif cfg.dataset == "medical_dialogue_zh":
        info["split_rule"] = "every row with ask and answer; answer metrics only"
        for m in ds.load_medical_dialogue_zh(cfg.qa):
            items.append(EvalItem(id=str(m.id), question=m.question, reference=m.answer))
    else:
        raise ValueError(f"unknown dataset {cfg.dataset!r}; choose from {', '.join(DATASETS)}")
    if cfg.ids:
        items = _only_ids(items, cfg.ids)
        info["ids_file"] = cfg.ids
    info["size"] = len(items)
    items = gd.sample(items, cfg.limit, cfg.seed)
    return items, info


def read_ids(path: str | Path) -> list[str]:
    """Item ids from a file, one per line, in file order (blank lines and ``#`` comments skipped).

    Raises:
        FileNotFoundError: No such file.

    """
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return list(dict.fromkeys(s for s in (line.strip() for line in lines) if s and not s.startswith("#")))


def _only_ids(items: Sequence[EvalItem], path: str) -> list[EvalItem]:
    """The items named in the ids file ``path``, in the file's order; every id must be an item."""
    by_id = {it.id: it for it in items}
    wanted = read_ids(path)
    missing = [i for i in wanted if i not in by_id]
    if missing:
        raise ValueError(
            f"{len(missing)} of the {len(wanted)} ids in {path} are not items of this data set and split "
            f"(first: {missing[0]!r})"
        )
    return [by_id[i] for i in wanted]


#: The KG a data set is evaluated on when no ``--store`` is given: store name under
#: ``$KGMIND_HOME``, data file role (:data:`kgmind.eval.datasets.DEFAULT_FILES`), importer format.
DEFAULT_KGS: dict[str, tuple[str, str, str]] = {
    "genmedgpt5k": ("eval-emckg-full", "emckg", "chatdoctor"),
    "cmcqa": ("eval-cmckg-recrawl", "recrawl", "recrawl-json"),
}


#: Chinese data sets: their document baselines search documents written from the Chinese KG.
CHINESE_DATASETS: frozenset[str] = frozenset({"cmcqa", "explaincpe", "medical_dialogue_zh"})


def _documents_kg(cfg: EvalConfig) -> tuple[str, str, str] | None:
    """The KG whose diseases are the documents of a Chinese data set (``None``: English documents).

    ``--kg`` (with ``--kg-format``) when given, else the CMCKG re-crawl that CMCQA is
    evaluated on; ``--docs`` overrides both (the runner passes it as ``docs_dir``).
    """
    if cfg.dataset not in CHINESE_DATASETS:
        return None
    if cfg.kg:
        return (cfg.kg, cfg.kg_format or "chatdoctor", "zh")
    _, role, fmt = DEFAULT_KGS["cmcqa"]
    return (str(ds.default_path(role)), fmt, "zh")


def prepare_store(cfg: EvalConfig) -> str | None:
    """Open the KG store for the KG methods, importing the KG into it when it is empty.

    Without ``cfg.store`` a data set of :data:`DEFAULT_KGS` gets its own store and KG
    (GenMedGPT-5k: EMCKG-full from ``emckg/format_dataset.csv``; CMCQA: the CMCKG re-crawl
    ``cmckg/recrawl_full``, whose first import takes about a minute); other data sets need
    ``--store``. ``cfg.kg`` replaces the default KG file (format ``cfg.kg_format``, default
    ``chatdoctor``).

    Returns:
        The store URI, or ``None`` when no KG is configured.

    """
    from kgmind.settings import default_store_uri

    uri, kg, fmt = cfg.store, cfg.kg, cfg.kg_format
    default = DEFAULT_KGS.get(cfg.dataset)
    if uri is None and default is not None:
        name, role, default_fmt = default
        uri = default_store_uri(name)
        if kg is None:
            kg, fmt = str(ds.default_path(role)), fmt or default_fmt
    if uri is None:
        return None
    from kgmind.stores.factory import open_store

    store = open_store(uri)
    if kg and store.stats().entities_total == 0:
        from kgmind.importers import import_kg

        import_kg(kg, fmt or "chatdoctor", store, progress=False)
    return store.uri


def question_text(item: EvalItem) -> str:
    """The question as every method receives it: with the choices appended for a choice item."""
    if not item.options:
        return item.question
    choices = "\n".join(f"{'ABCDE'[i]}. {o}" for i, o in enumerate(item.options))
    return (
        f"{item.question}\n\nOptions:\n{choices}\n\n"
        "Reply with the letter of the single best option first (答案：X), then a short reason."
    )


def machine_info() -> dict[str, Any]:
    """CPU (with the AVX-512 / AMX flags that change embedding speed), core count, OS and Python."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from kgmind.retrievers.embeddings import cpu_flags

    flags = cpu_flags()
    return {
        "cpu": cpu,
        "isa": [f for f in ("avx512f", "avx512_bf16", "amx_bf16") if f in flags],
        "cores": os.cpu_count(),
        "gpu": None,
        "os": platform.platform(),
        "python": platform.python_version(),
    }


def _set_threads(n: int | None) -> None:
    """Set torch's intra-op threads to ``n`` when given (torch is not imported otherwise).

    On a small, shared CPU two torch threads per single-query encode can be far slower
    than one (thread oversubscription), so the harness lets the run pin it.
    """
    if not n:
        return
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(n)


def _torch_threads() -> int | None:
    torch = sys.modules.get("torch")
    return int(torch.get_num_threads()) if torch is not None else None


def default_llm_cache_path() -> Path:
    """``$KGMIND_HOME/llm_cache/langchain.sqlite``: where evaluations cache LLM outputs."""
    return kgmind_home() / "llm_cache" / "langchain.sqlite"


def _llm_cache(cfg: EvalConfig) -> Any:
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


def _llama_token_counter(model: str) -> Callable[[str], int] | None:
    """The local model's own token count, for the LLM call log (``None`` for other models)."""
    from kgmind.llm import local_tokenizer

    tokenize = local_tokenizer(model)
    return None if tokenize is None else (lambda text: len(tokenize(text)))


def _own_mentions(question: str, res: Resources) -> list[Mention]:
    from kgmind.retrievers.ner import extract_mentions

    return list(extract_mentions(question, res.store()))


def _run_one(
    name: str, item: EvalItem, ents: Sequence[Mention | str], res: Resources, budget: int
) -> tuple[MethodResult, float, float]:
    """Run one method on one item: ``(result, non-LLM ms, wall ms)``."""
    t0 = time.perf_counter()
    result = METHODS[name].func(question_text(item), ents, res, budget)
    wall_ms = (time.perf_counter() - t0) * 1000.0
    return result, max(0.0, wall_ms - result.llm_ms), wall_ms


def _score(
    item: EvalItem, result: MethodResult, res: Resources, vocab: gd.Vocabulary | None
) -> dict[str, Any]:
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


def _answer_metrics(
    item: EvalItem,
    row: dict[str, Any],
    result: MethodResult,
    answer: str,
    vocab: gd.Vocabulary | None,
    bertscore: bool,
) -> None:
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


_MEAN_KEYS = (
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


def _eval_item(
    name: str,
    item: EvalItem,
    ents: Sequence[Mention | str],
    res: Resources,
    cfg: EvalConfig,
    vocab: gd.Vocabulary | None,
) -> dict[str, Any]:
    """Run method ``name`` on one item (and, with an LLM, answer it) and score it: one result row."""
    result, ms, wall_ms = _run_one(name, item, ents, res, cfg.budget)
    row = _score(item, result, res, vocab)
    row["llm_calls"] = result.llm_calls
    row["latency_ms"] = ms
    row["wall_ms"] = wall_ms
    if res.model is not None:
        answer = result.answer
        if answer is None:  # a baseline: its evidence answered by the shipped prompt
            t0 = time.perf_counter()
            answered = res.answer(question_text(item), result.evidence)
            row["wall_ms"] += (time.perf_counter() - t0) * 1000.0
            answer = str(answered.get("answer") or "")
            row["llm_calls"] += 1
            result.grounding = grounding_report(
                result.evidence,
                answered.get("inference_chain") or [],
                answered.get("mind_map"),
                derived=bool((answered.get("flags") or {}).get("fallback_parse")),
            )
        row["answer"] = answer
        _answer_metrics(item, row, result, answer, vocab, cfg.bertscore)
    row["id"] = item.id
    row["notes"] = result.notes
    row["llm_detail"] = res.llm_log.take()
    return row


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


def _summarize(rows: list[dict[str, Any]], lat: list[float], errors: int, first_error: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in _MEAN_KEYS:
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
        keep_rows: Include per-item rows under ``"rows"`` (large).

    Returns:
        The results dict (see :mod:`kgmind.eval.report`).

    """
    names = resolve_methods(cfg.methods)
    if cfg.entities not in ("chatgpt", "own"):
        raise ValueError("--entities must be 'chatgpt' or 'own'")
    _set_threads(cfg.threads)
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
        docs_kg=_documents_kg(cfg),
        model=model,
        max_tokens=cfg.max_tokens,
        seed=cfg.seed,
        context_overrides=cfg.context,
    )
    if model is not None:
        res.llm_log.tokenize = _llama_token_counter(model)
    vocab: gd.Vocabulary | None = None
    if cfg.dataset == "genmedgpt5k":
        vocab = gd.load_emckg_vocabulary(cfg.vocab)
    elif cfg.dataset == "cmcqa":
        try:
            vocab = gd.load_cmckg_vocabulary(cfg.vocab)
        except FileNotFoundError:
            vocab = None

    entity_lists: list[Sequence[Mention | str]] = []
    ner_ms: list[float] = []
    for item in items:
        if cfg.entities == "own":
            t0 = time.perf_counter()
            entity_lists.append(_own_mentions(item.question, res))
            ner_ms.append((time.perf_counter() - t0) * 1000)
        else:
            entity_lists.append(list(item.entities))

    from langchain_core.globals import get_llm_cache, set_llm_cache

    results: dict[str, Any] = {}
    all_rows: dict[str, list[dict[str, Any]]] = {}
    previous_cache = get_llm_cache()
    if model is not None and cfg.llm_cache != "off":
        set_llm_cache(_llm_cache(cfg))
    elif model is not None:  # every call runs: timings of the whole product
        set_llm_cache(None)
    try:
        rows_of: dict[str, list[dict[str, Any]]] = {name: [] for name in runnable}
        lat_of: dict[str, list[float]] = {name: [] for name in runnable}
        errors_of: dict[str, int] = dict.fromkeys(runnable, 0)
        first_error_of: dict[str, str] = dict.fromkeys(runnable, "")
        for name in runnable:
            if on_start:
                on_start(name, len(items))
            try:  # warm-up: builds lazy indexes and models outside the timings
                _run_one(name, items[0], entity_lists[0], res, cfg.budget)
            except Exception as exc:  # noqa: BLE001 - reported per method
                first_error_of[name] = f"{type(exc).__name__}: {exc}"
            res.llm_log.take()
        order = (
            [(name, i) for i in range(len(items)) for name in runnable]
            if cfg.interleave
            else [(name, i) for name in runnable for i in range(len(items))]
        )
        for name, i in order:
            item, ents = items[i], entity_lists[i]
            try:
                row = _eval_item(name, item, ents, res, cfg, vocab)
            except Exception as exc:  # noqa: BLE001 - one failing item must not stop the run
                errors_of[name] += 1
                first_error_of[name] = first_error_of[name] or f"{type(exc).__name__}: {exc}"
                res.llm_log.take()
            else:
                rows_of[name].append(row)
                lat_of[name].append(row["latency_ms"])
            if on_advance:
                on_advance(name)
        for name in runnable:
            rows = rows_of[name]
            summary = (
                _summarize(rows, lat_of[name], errors_of[name], first_error_of[name])
                if rows
                else {"errors": errors_of[name], "first_error": first_error_of[name], "scored": 0}
            )
            notes = sorted({n for r in rows for n in r["notes"]})
            if notes:
                summary["notes"] = notes
            results[name] = summary
            all_rows[name] = rows

        # memory pass (tracemalloc), separate from the latency pass
        mem_n = min(cfg.memory_sample, len(items))
        if mem_n > 0:
            for name in runnable:
                if results[name].get("scored", 0) == 0:
                    continue
                peak = 0
                tracemalloc.start()
                try:
                    for item, ents in zip(items[:mem_n], entity_lists[:mem_n], strict=True):
                        tracemalloc.reset_peak()
                        try:
                            _run_one(name, item, ents, res, cfg.budget)
                        except Exception:  # noqa: BLE001 - errors were counted in the main pass
                            continue
                        peak = max(peak, tracemalloc.get_traced_memory()[1])
                finally:
                    tracemalloc.stop()
                    res.llm_log.take()
                results[name]["peak_mem_mb"] = round(peak / 2**20, 3)
    finally:
        set_llm_cache(previous_cache)

    out: dict[str, Any] = {
        "dataset": cfg.dataset,
        "split": cfg.split if cfg.dataset in ("genmedgpt5k", "cmcqa") else "all",
        "n": len(items),
        "budget": cfg.budget,
        "entities": cfg.entities,
        "llm": cfg.llm,
        "max_tokens": cfg.max_tokens,
        "limit": cfg.limit,
        "seed": cfg.seed,
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "store": store_uri,
        "gold": info,
        "methods": results,
        "disabled": disabled,
        "torch_threads": _torch_threads(),
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "config": {k: v for k, v in asdict(cfg).items() if k not in ("methods",)},
    }
    if ner_ms:
        out["ner_ms_p50"] = mt.percentile(ner_ms, 50)
        out["ner_ms_p95"] = mt.percentile(ner_ms, 95)
    if keep_rows:
        out["rows"] = {
            n: [{k: v for k, v in r.items() if k != "_text"} for r in rs] for n, rs in all_rows.items()
        }
    return out
