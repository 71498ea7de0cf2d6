"""What nodes need from the outside world, behind small cached seams that tests replace.

Nodes never open stores or load models themselves: they call :func:`get_store`,
:func:`get_llm`, :func:`get_graph_index` and :func:`get_linker` here, so a unit test
monkeypatches one function instead of a whole subsystem. Progress events go out
through LangGraph's custom stream (``stream_mode="custom"``), and evidence ids are
attached to traced child runs so LangSmith shows which evidence a node handled.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal

from langchain_core.runnables import RunnableLambda
from langgraph.runtime import Runtime

from kgmind.graphs.context import Context, context_of
from kgmind.models import Evidence, LinkedEntity, Mention
from kgmind.settings import default_store_uri
from kgmind.stores.protocol import GraphStore
from kgmind.text import detect_language

__all__ = [
    "detect_language",
    "emit",
    "ensure_default_store",
    "entity_types",
    "explore",
    "extract_mentions",
    "get_exploration_index",
    "get_graph_index",
    "get_linker",
    "get_llm",
    "get_store",
    "index_entity_types",
    "link_mentions",
    "require_store",
    "resolve_language",
    "timed",
    "trace_evidence",
]

#: Default-store URIs whose demo KG import was already checked in this process.
_demo_ready: set[str] = set()


def get_store(uri: str | None) -> GraphStore:
    """Open the store at ``uri`` (``None``: the default store). Opening never writes.

    Args:
        uri: A store URI (see :func:`kgmind.stores.factory.open_store`) or None.

    Returns:
        The (cached) open store.

    """
    from kgmind.stores.factory import open_store

    return open_store(uri or default_store_uri())


def require_store(uri: str) -> None:
    """Fail before a run's first LLM call when its store does not exist (a run never creates one).

    Raises:
        StoreNotFoundError: The embedded store at ``uri`` does not exist.
    """
    from kgmind.stores.factory import require_store as check

    check(uri)


def ensure_default_store() -> None:
    """Import the shipped demo KG into the default store if it is empty (once per process and URI).

    The one write a run without a ``store`` may cause; ``prepare_run`` calls it at the
    start of such a run, so no read path imports anything.
    """
    key = default_store_uri()
    if key in _demo_ready:
        return
    from kgmind.importers.demo_store import ensure_demo_store

    ensure_demo_store(None)
    _demo_ready.add(key)


def explore(
    node: str,
    key: str,
    runtime: Runtime[Context],
    tool: Callable[[Context, GraphStore, Any], list[Evidence]],
    seeds: Sequence[str] = (),
) -> dict[str, Any]:
    """Run one exploration tool as a node does: timed, on the run's store and its graph index, traced.

    Args:
        node: The node's name (timings, progress, trace).
        key: The state key its evidence goes to (``path_evidence`` …).
        runtime: The node's LangGraph runtime (its :class:`Context`).
        tool: ``(ctx, store, graph index) -> evidence``.
        seeds: The linked entity ids the tool explores from (the neighbourhood a
            pushed-down index reads, ``Context.exploration``).

    Returns:
        ``{key: evidence, "timings_ms": {node: ms}}``.

    """
    ctx = context_of(runtime)
    timings: dict[str, float] = {}
    with timed(node, timings):
        store = get_store(ctx.store)
        evidence = tool(ctx, store, get_exploration_index(store, ctx.exploration, seeds))
    trace_evidence(f"{node}.evidence", evidence)
    return {key: evidence, "timings_ms": timings}


def get_llm(ctx: Context, purpose: str = "reason", max_tokens: int | None = None) -> Any:
    """Return the chat model for ``purpose`` (``hypothesis`` may use ``ctx.hypothesis_model``).

    Args:
        ctx: Run settings.
        purpose: ``hypothesis``, ``reason`` or ``render``.
        max_tokens: Generation cap for this call (default ``ctx.max_tokens``).

    Returns:
        A chat model (or any Runnable in tests), limited to ``ctx.max_tokens``.

    """
    from kgmind.llm import get_chat_model, with_max_tokens

    name = ctx.hypothesis_model if purpose == "hypothesis" and ctx.hypothesis_model else ctx.model
    return with_max_tokens(get_chat_model(name), max_tokens or ctx.max_tokens)


def hypothesis_skip(ctx: Context) -> str | None:
    """Why this run makes no hypothesis call (``Context.hypothesis``); ``None`` when it makes one.

    ``auto`` skips it in ``full`` mode when the model that would write it is one whose
    hypotheses were measured to buy nothing there (:func:`kgmind.llm.hypothesis_pays`);
    the other modes keep HyKGE's call (``hykge`` reranks against it, ``mindmap`` takes its
    entities as MindMap's LLM NER), as does every model not measured.

    Raises:
        ValueError: ``Context.hypothesis`` is not ``True``, ``False`` or ``"auto"``.

    """
    from kgmind.llm import hypothesis_pays

    choice = ctx.hypothesis
    if choice is True:
        return None
    if choice is False:
        return "hypothesis=false"
    if choice != "auto":
        raise ValueError(f"hypothesis must be true, false or 'auto', not {choice!r}")
    name = ctx.hypothesis_model or ctx.model
    if ctx.mode == "full" and not hypothesis_pays(name):
        return f"hypothesis=auto: the {name} model's hypotheses measured no gain in full mode"
    return None


def entity_types(store_uri: str | None, evidence: Sequence[Evidence]) -> dict[str, str]:
    """``normalize_name(name) -> type`` of the entities the evidence shows (one lookup; none without ids)."""
    from kgmind.models import normalize_name

    ids = sorted({i for ev in evidence for i in ev.entity_ids})
    return {normalize_name(e.name): e.type for e in get_store(store_uri).get_entities(ids)} if ids else {}


def index_entity_types(ctx: Context, seeds: Sequence[str], evidence: Sequence[Evidence]) -> dict[str, str]:
    """``normalize_name(name) -> type`` of the evidence's entities, read off the index it was explored on.

    The exploration index holds every entity the evidence names (it was built from it),
    so the types come from memory. The in-memory index was checked for freshness by the
    explore nodes a moment ago, so it is trusted for ``RECHECK_S`` (two store queries
    saved per question); a pushed-down one is the cached neighbourhood of the same seeds.
    :func:`entity_types` asks the store instead, for nodes that have no index.
    """
    from kgmind.models import normalize_name
    from kgmind.tools.exploration import RECHECK_S

    gi = get_exploration_index(get_store(ctx.store), ctx.exploration, seeds, recheck_s=RECHECK_S)
    out: dict[str, str] = {}
    for ev in evidence:
        for eid in ev.entity_ids:
            i = gi.index_of.get(eid)
            if i is not None:
                out[normalize_name(gi.names[i])] = gi.types[i]
    return out


def get_graph_index(store: GraphStore, *, recheck_s: float = 0.0) -> Any:
    """Return the cached in-memory adjacency index of ``store`` (H4b's GraphIndex).

    ``recheck_s`` > 0 trusts an index whose freshness was checked that recently (see
    :func:`kgmind.retrievers.graph_index_cache.get_graph_index`).
    """
    from kgmind.retrievers.graph_index_cache import get_graph_index as _get

    return _get(store, recheck_s=recheck_s)


def get_exploration_index(
    store: GraphStore, mode: str, seeds: Sequence[str], *, recheck_s: float = 0.0
) -> Any:
    """The index exploration runs on: the whole KG in memory, or the seeds' neighbourhood per question."""
    from kgmind.retrievers import graph_index_cache as gx

    if gx.pushdown_wanted(store, mode):
        return gx.get_neighborhood_index(store, seeds)
    return get_graph_index(store, recheck_s=recheck_s)


def release_question_heap(ctx: Context) -> bool:
    """After a pushed-down question, hand what it freed back to the OS (``machine.release_free_heap``).

    A pushed-down worker is meant to hold only what a question reads (issue 42); a worker
    with the whole KG in memory (small KGs, by default) skips the call.

    Returns:
        Whether the heap was trimmed.
    """
    from kgmind.machine import release_free_heap
    from kgmind.retrievers import graph_index_cache as gx

    return gx.pushdown_wanted(get_store(ctx.store), ctx.exploration) and release_free_heap()


def get_linker(store: GraphStore) -> Any:
    """Return the cached entity linker of ``store`` (H4a's EntityLinker)."""
    from kgmind.retrievers.linker import get_linker as _get

    return _get(store)


def extract_mentions(
    text: str,
    store: GraphStore,
    *,
    extra: Sequence[str] = (),
    language: str | None = None,
    embedding_spans: Literal["always", "unnamed", "never"] = "always",
) -> list[Mention]:
    """Mentions in ``text`` by gazetteer, embedding spans and ``extra`` (H4a's NER)."""
    from kgmind.retrievers.ner import extract_mentions as _extract

    return list(_extract(text, store, extra=list(extra), language=language, spans=embedding_spans))


def link_mentions(
    store: GraphStore,
    mentions: Sequence[Mention],
    *,
    top_k: int = 5,
    threshold: float | None = None,
    max_entities: int | None = None,
) -> list[LinkedEntity]:
    """Link ``mentions`` with the store's cached linker; ``threshold=None`` = calibrated δ.

    ``max_entities`` keeps the best-scoring entities only (``None``: all).
    """
    linker = get_linker(store)
    if threshold is None:
        return list(linker.link(list(mentions), top_k=top_k, max_entities=max_entities))
    return list(linker.link(list(mentions), top_k=top_k, threshold=threshold, max_entities=max_entities))


def resolve_language(ctx: Context, question: str) -> str:
    """Return the prompt language of a run: ``ctx.language`` unless ``auto``."""
    return ctx.language if ctx.language in ("en", "zh") else detect_language(question)


def emit(event: dict[str, Any]) -> None:
    """Send a custom progress event (no-op outside a graph run or without a custom stream)."""
    try:
        from langgraph.config import get_stream_writer

        get_stream_writer()(event)
    except (RuntimeError, KeyError):  # outside a graph run (unit tests, a plain Runnable)
        pass


@contextmanager
def timed(node: str, timings: dict[str, float]) -> Iterator[None]:
    """Measure the block in milliseconds into ``timings[node]`` and emit start/end progress events."""
    emit({"node": node, "status": "start"})
    t0 = time.perf_counter()
    try:
        yield
    finally:
        ms = round((time.perf_counter() - t0) * 1000.0, 2)
        timings[node] = ms
        emit({"node": node, "status": "end", "ms": ms})


def _identity(x: Any) -> Any:
    return x


def trace_evidence(name: str, evidence: Sequence[Evidence], **extra: Any) -> None:
    """Record a traced child run ``name`` whose metadata lists the evidence ids (LangSmith).

    Outside tracing this is a cheap no-op run. Items not yet numbered are listed by
    their relation ids instead.
    """
    ids = [e.id for e in evidence if e.id]
    rel_ids = sorted({r for e in evidence for r in e.relation_ids})
    metadata: dict[str, Any] = {
        "kgmind_evidence_ids": ids,
        "kgmind_evidence_count": len(evidence),
        "kgmind_relation_ids": rel_ids[:200],
        **extra,
    }
    RunnableLambda(_identity).invoke(
        {"evidence_ids": ids, "count": len(evidence)},
        config={"run_name": name, "metadata": metadata, "tags": ["kgmind:evidence"]},
    )
