"""Retrieval methods compared by the harness, each a function ``(question, entities, resources, budget)``.

Every method sees the same KG (one store), the same linker, the same token counter and
the same token budget, and returns a :class:`MethodResult` (evidence, LLM calls, notes).
The runner times each call and subtracts the time spent inside LLM calls.

==================  =========================================================================
``llm_only``        no evidence.
``bm25_doc``        BM25 (``bm25s``) over ``genmedgpt5k/disease_documents``; top docs while the
                    budget lasts (MindMap's BM25 baseline).
``embedding_doc``   dense MiniLM retrieval over the same documents.
``kg_shortest_path`` MindMap's plain KG retriever (``kgmind.retrievers.baselines``).
``mindmap``         faithful MindMap: forced nearest-neighbour linking (``threshold=None``),
                    5 path + 5 neighbour evidence, template rendering, no rerank.
``hykge``           faithful HyKGE: hypothesis (LLM; the question itself with ``--llm none``,
                    recorded in the notes), δ-linking, 2-hop chains, rerank top-10.
``kgcot``           KGCoT weighted-DFS chains from δ-linked entities.
``kgmind``          kgmind's pipeline retrieval (Context defaults): ranked neighbours + paths
                    + chains + DFS, cut to the budget by ``aggregate_evidence``.
==================  =========================================================================

Modules are imported lazily, so a missing retrieval module only disables the methods
that need it (:func:`check_methods` says which and why).
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgmind.eval.datasets import default_path
from kgmind.eval.llm_cache import CachedLLM
from kgmind.eval.metrics import approx_tokens
from kgmind.models import EVIDENCE_PREFIX, Evidence, Mention

__all__ = [
    "METHODS",
    "MethodResult",
    "MethodSpec",
    "Resources",
    "check_methods",
    "evidence_text",
    "fit_budget",
    "resolve_methods",
]

EntityInput = Mention | str


@dataclass
class MethodResult:
    """What one method retrieved for one question.

    Attributes:
        evidence: The evidence shown to the LLM, in order.
        llm_calls: LLM calls the method made (the final answer call is counted by the runner).
        notes: Remarks (e.g. ``"hypothesis=question"`` without an LLM).
        linked: Entity ids the method linked.
        hypothesis: The hypothesis used (HyKGE / kgmind).

    """

    evidence: list[Evidence] = field(default_factory=list)
    llm_calls: int = 0
    notes: list[str] = field(default_factory=list)
    linked: list[str] = field(default_factory=list)
    hypothesis: str = ""


class Resources:
    """Lazily built, cached heavy objects shared by all methods of one evaluation.

    Args:
        store_uri: The KG store (``None``: no KG methods).
        docs_dir: Folder of ``*.txt`` documents for the doc baselines.
        llm: The (cached) LLM, or ``None`` for ``--llm none``.
        embed_model: Embedder name for ``embedding_doc`` (``minilm``).
        seed: Seed of KGCoT's DFS.

    """

    def __init__(
        self,
        store_uri: str | None = None,
        docs_dir: str | Path | None = None,
        llm: CachedLLM | None = None,
        embed_model: str = "minilm",
        seed: int = 0,
    ) -> None:
        self.store_uri = store_uri
        self.docs_dir = Path(docs_dir) if docs_dir else default_path("docs")
        self.llm = llm
        self.embed_model = embed_model
        self.seed = seed
        self._cache: dict[str, Any] = {}

    def _get(self, key: str, build: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    # -- KG ---------------------------------------------------------------------
    def store(self) -> Any:
        """Return the GraphStore (``open_store(store_uri)``)."""
        from kgmind.tools.factory import open_store

        return self._get("store", lambda: open_store(self.store_uri))

    def graph_index(self) -> Any:
        """Return the cached in-memory GraphIndex of the store."""
        from kgmind.retrievers.graph_index import get_graph_index

        return get_graph_index(self.store())

    def linker(self) -> Any:
        """Return the cached EntityLinker of the store."""
        from kgmind.retrievers.linker import get_linker

        return self._get("linker", lambda: get_linker(self.store()))

    def link(
        self,
        entities: Sequence[EntityInput],
        threshold: Any = "calibrated",
        top_k: int = 5,
        max_entities: int | None = None,
    ) -> list[str]:
        """Link mentions to entity ids, in question order.

        One batched ``linker.link`` call; the linked entities (deduplicated by the
        linker, best score kept) are ordered by the position of their mention in
        ``entities`` (then by score), because MindMap's path search starts from the
        first question entity.

        Args:
            entities: Mentions or strings, in question order.
            threshold: ``"calibrated"`` (the linker's δ), a float, or ``None``
                (MindMap's forced nearest match).
            top_k: Nearest entities considered per mention.
            max_entities: Keep the best-scoring this many entities (``None``: all).

        Returns:
            Distinct entity ids.

        """
        mentions = [e for e in entities if (e.text if isinstance(e, Mention) else e).strip()]
        if not mentions:
            return []
        linked = self.linker().link(mentions, top_k=top_k, threshold=threshold, max_entities=max_entities)
        pos: dict[str, int] = {}
        for i, m in enumerate(mentions):
            pos.setdefault(m.text if isinstance(m, Mention) else m, i)
        order = sorted(
            range(len(linked)), key=lambda j: (pos.get(linked[j].mention, len(mentions)), -linked[j].score)
        )
        out: list[str] = []
        for j in order:
            if linked[j].entity_id not in out:
                out.append(linked[j].entity_id)
        return out

    # -- text -------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        """Tokens of ``text``: ``aggregate.count_tokens`` when available, else :func:`approx_tokens`."""
        fn = self._get("count_tokens", _token_counter)
        return int(fn(text))

    def render(self, ev: Evidence) -> str:
        """One evidence item as the LLM sees it."""
        fn = self._get("render", _renderer)
        return str(fn(ev))

    def reranker(self) -> Any:
        """Return the embedding reranker of HyKGE/kgmind (``EmbeddingReranker(embed_model)``)."""
        from kgmind.retrievers.aggregate import EmbeddingReranker

        return self._get("reranker", lambda: EmbeddingReranker(self.embed_model))

    # -- documents --------------------------------------------------------------
    def docs(self) -> list[tuple[str, str]]:
        """``(doc name, text)`` of every ``*.txt`` in :attr:`docs_dir`, sorted by name."""

        def build() -> list[tuple[str, str]]:
            files = sorted(self.docs_dir.glob("*.txt"), key=lambda p: (len(p.stem), p.stem))
            if not files:
                raise FileNotFoundError(str(self.docs_dir / "*.txt"))
            return [(f.stem, f.read_text(encoding="utf-8").strip()) for f in files]

        return list(self._get("docs", build))

    def bm25(self) -> Any:
        """Return a ``bm25s`` index over :meth:`docs` (English stop words)."""

        def build() -> Any:
            import bm25s

            retriever = bm25s.BM25()
            retriever.index(
                bm25s.tokenize([t for _, t in self.docs()], stopwords="en", show_progress=False),
                show_progress=False,
            )
            return retriever

        return self._get("bm25", build)

    def embedder(self) -> Any:
        """Return the embedder for dense retrieval (``get_embedder(embed_model)``)."""
        from kgmind.retrievers.embeddings import get_embedder

        return self._get("embedder", lambda: get_embedder(self.embed_model))

    def doc_vectors(self) -> Any:
        """Embeddings of :meth:`docs` (``(n, dim)``, L2-normalised)."""
        return self._get("doc_vectors", lambda: self.embedder().embed_documents([t for _, t in self.docs()]))


def _token_counter() -> Callable[[str], int]:
    try:
        from kgmind.retrievers.aggregate import count_tokens
    except ImportError:
        return approx_tokens
    return count_tokens


def _fallback_render(ev: Evidence) -> str:
    return (ev.text or "; ".join(f"{h} {r.replace('_', ' ')} {t}" for h, r, t in ev.triples)).strip()


def _renderer() -> Callable[[Evidence], str]:
    try:
        from kgmind.retrievers.aggregate import render_evidence
    except ImportError:
        return _fallback_render

    def render(ev: Evidence) -> str:
        if ev.kind == "doc":
            return _fallback_render(ev)
        return str(render_evidence(ev))

    return render


def evidence_text(evidence: Sequence[Evidence], res: Resources) -> str:
    """Render the evidence block as the LLM sees it: one ``ID: sentence`` line per item."""
    return "\n".join(f"{ev.id}: {res.render(ev)}" if ev.id else res.render(ev) for ev in evidence)


def fit_budget(evidence: Sequence[Evidence], budget: int, res: Resources) -> list[Evidence]:
    """Keep evidence in order while the rendered total stays within ``budget`` tokens.

    Stops at the first item that does not fit. If not even the first fits, it is kept
    with its text cut to the budget (whole words), so a method never returns nothing
    only because its first unit is long.
    """
    out: list[Evidence] = []
    used = 0
    for ev in evidence:
        n = res.count_tokens(res.render(ev))
        if used + n > budget:
            break
        out.append(ev)
        used += n
    if not out and evidence:
        first = evidence[0].model_copy(deep=True)
        words = (first.text or res.render(first)).split()
        lo, hi = 0, len(words)
        while lo < hi:  # the longest word prefix within budget
            mid = (lo + hi + 1) // 2
            first.text = " ".join(words[:mid])
            if res.count_tokens(res.render(first)) <= budget:
                lo = mid
            else:
                hi = mid - 1
        first.text = " ".join(words[:lo])
        first.meta["truncated"] = True
        out.append(first)
    return out


def _number(evidence: Sequence[Evidence]) -> list[Evidence]:
    try:
        from kgmind.retrievers.aggregate import number_evidence
    except ImportError:
        counts: dict[str, int] = {}
        out = []
        for ev in evidence:
            p = EVIDENCE_PREFIX[ev.kind]
            counts[p] = counts.get(p, 0) + 1
            out.append(ev.model_copy(update={"id": f"{p}{counts[p]}"}))
        return out
    return list(number_evidence(list(evidence)))


def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``fn`` with only the keyword arguments its signature accepts."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn(*args, **kwargs)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return fn(*args, **kwargs)
    return fn(*args, **{k: v for k, v in kwargs.items() if k in params})


def _mention_texts(entities: Sequence[EntityInput]) -> list[str]:
    return [e.text if isinstance(e, Mention) else e for e in entities]


# -- methods ----------------------------------------------------------------------


def llm_only(question: str, entities: Sequence[EntityInput], res: Resources, budget: int) -> MethodResult:
    """No retrieval: the LLM answers from its own knowledge."""
    return MethodResult()


def _doc_evidence(ranked: Sequence[tuple[int, float]], res: Resources, budget: int) -> list[Evidence]:
    docs = res.docs()
    evs = [
        Evidence(id=f"D{rank}", kind="doc", text=docs[i][1], score=float(score), source=f"doc:{docs[i][0]}")
        for rank, (i, score) in enumerate(ranked, 1)
    ]
    return fit_budget(evs, budget, res)


def bm25_doc(question: str, entities: Sequence[EntityInput], res: Resources, budget: int) -> MethodResult:
    """BM25 over the disease documents: best documents first while the budget lasts."""
    import bm25s

    retriever = res.bm25()
    n = len(res.docs())
    tokens = bm25s.tokenize([question], stopwords="en", show_progress=False)
    docs_idx, scores = retriever.retrieve(tokens, k=n, show_progress=False)
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
    from kgmind.retrievers import baselines

    ids = res.link(entities, threshold=None, top_k=1)
    evs = _call(baselines.kg_shortest_path, res.store(), ids)
    evs = fit_budget(_number(evs), budget, res)
    return MethodResult(evidence=evs, linked=ids)


def mindmap(question: str, entities: Sequence[EntityInput], res: Resources, budget: int) -> MethodResult:
    """Faithful MindMap: forced nearest linking, 5 paths + 5 neighbour lines, template rendering."""
    from kgmind.retrievers import exploration

    ids = res.link(entities, threshold=None, top_k=1)
    gi = res.graph_index()
    paths = exploration.path_evidence(gi, ids, max_hops=5, max_paths=5)
    neigh = exploration.neighbor_evidence(gi, ids, max_lines=5)
    evs = fit_budget(_number([*paths, *neigh]), budget, res)
    return MethodResult(evidence=evs, linked=ids)


_HYPOTHESIS_PROMPT = (
    "You are a medical expert. Write a short hypothetical answer (2-3 sentences) to the patient's question, "
    "naming the likely disease, the tests to run and the medications to consider.\n\n"
    "Question: {question}\n\nAnswer:"
)


def _hypothesis(question: str, res: Resources, out: MethodResult) -> str:
    if res.llm is None:
        out.notes.append("hypothesis=question (no LLM)")
        return ""
    out.llm_calls += 1
    return res.llm.invoke(_HYPOTHESIS_PROMPT.replace("{question}", question)).strip()


def _with_hypothesis_mentions(
    entities: Sequence[EntityInput], hypothesis: str, res: Resources
) -> list[EntityInput]:
    ents: list[EntityInput] = list(entities)
    if not hypothesis:
        return ents
    try:
        from kgmind.retrievers.ner import Gazetteer
    except ImportError:
        return ents
    ents.extend(Gazetteer.for_store(res.store()).find(hypothesis))
    return ents


def hykge(question: str, entities: Sequence[EntityInput], res: Resources, budget: int) -> MethodResult:
    """Faithful HyKGE: hypothesis, δ-linking, 2-hop chains, rerank against question + hypothesis, top 10."""
    from kgmind.retrievers import aggregate, exploration

    out = MethodResult()
    out.hypothesis = _hypothesis(question, res, out)
    ids = res.link(_with_hypothesis_mentions(entities, out.hypothesis, res))
    chains = exploration.hykge_chains(res.graph_index(), ids, max_hops=2, max_chains=30)
    out.evidence = list(
        aggregate.aggregate_evidence(
            chains, question, out.hypothesis, reranker=res.reranker(), budget_tokens=budget, max_items=10
        )
    )
    out.linked = ids
    return out


def kgcot(question: str, entities: Sequence[EntityInput], res: Resources, budget: int) -> MethodResult:
    """KGCoT: probabilistic DFS chains over edge weights from the δ-linked entities."""
    from kgmind.retrievers import exploration

    ids = res.link(entities)
    chains = exploration.weighted_dfs_chains(res.graph_index(), ids, n_chains=3, max_depth=3, seed=res.seed)
    return MethodResult(evidence=fit_budget(_number(chains), budget, res), linked=ids)


def _pipeline_settings() -> dict[str, Any]:
    """Exploration settings of the kgmind pipeline: :class:`kgmind.graphs.context.Context` defaults."""
    defaults = {
        "max_neighbors": 5,
        "max_paths": 5,
        "max_hops": 3,
        "max_chains": 30,
        "dfs_chains": 3,
        "dfs_depth": 3,
        "weight_aware": True,
        "max_linked": 10,
    }
    try:
        from kgmind.graphs.context import Context
    except Exception:  # noqa: BLE001 - the pipeline is optional for the harness
        return defaults
    ctx = Context()
    return {k: getattr(ctx, k, v) for k, v in defaults.items()}


def kgmind(question: str, entities: Sequence[EntityInput], res: Resources, budget: int) -> MethodResult:
    """Run kgmind's retrieval as its pipeline does (``mode="full"``, the Context defaults).

    Ranked, weight-aware neighbour lines + paths + HyKGE chains + KGCoT DFS chains, then
    ``aggregate_evidence`` (no reranker, as in the pipeline's node) within the budget.
    """
    from kgmind.retrievers import aggregate, exploration

    cfg = _pipeline_settings()
    out = MethodResult()
    out.hypothesis = _hypothesis(question, res, out)
    ids = res.link(_with_hypothesis_mentions(entities, out.hypothesis, res), max_entities=cfg["max_linked"])
    gi = res.graph_index()
    wa = bool(cfg["weight_aware"])
    pool: list[Evidence] = []
    pool += _call(
        exploration.path_evidence,
        gi,
        ids,
        max_hops=cfg["max_hops"],
        max_paths=cfg["max_paths"],
        weight_aware=wa,
    )
    pool += _call(
        exploration.neighbor_evidence, gi, ids, max_lines=cfg["max_neighbors"], ranked=True, weight_aware=wa
    )
    pool += exploration.hykge_chains(
        gi, ids, max_hops=min(int(cfg["max_hops"]), 3), max_chains=cfg["max_chains"]
    )
    pool += exploration.weighted_dfs_chains(
        gi, ids, n_chains=cfg["dfs_chains"], max_depth=cfg["dfs_depth"], seed=res.seed
    )
    out.evidence = list(aggregate.aggregate_evidence(pool, question, out.hypothesis, budget_tokens=budget))
    out.linked = ids
    return out


Method = Callable[[str, Sequence[EntityInput], Resources, int], MethodResult]


@dataclass(frozen=True)
class MethodSpec:
    """A registered method: its function, the modules it needs and whether it reads the KG."""

    name: str
    func: Method
    requires: tuple[str, ...]
    uses_kg: bool = True
    uses_docs: bool = False


_KG = ("kgmind.retrievers.linker", "kgmind.retrievers.graph_index", "kgmind.retrievers.exploration")

#: Every method, in report order.
METHODS: dict[str, MethodSpec] = {
    s.name: s
    for s in (
        MethodSpec("llm_only", llm_only, (), uses_kg=False),
        MethodSpec("bm25_doc", bm25_doc, ("bm25s",), uses_kg=False, uses_docs=True),
        MethodSpec(
            "embedding_doc", embedding_doc, ("kgmind.retrievers.embeddings",), uses_kg=False, uses_docs=True
        ),
        MethodSpec(
            "kg_shortest_path", kg_shortest_path, ("kgmind.retrievers.linker", "kgmind.retrievers.baselines")
        ),
        MethodSpec("mindmap", mindmap, _KG),
        MethodSpec("hykge", hykge, (*_KG, "kgmind.retrievers.aggregate")),
        MethodSpec("kgcot", kgcot, _KG),
        MethodSpec("kgmind", kgmind, (*_KG, "kgmind.retrievers.aggregate")),
    )
}


@functools.lru_cache(maxsize=64)
def _import_error(module: str) -> str | None:
    try:
        importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - any import failure disables the method
        return f"{module}: {type(exc).__name__}: {exc}"
    return None


def resolve_methods(spec: str) -> list[str]:
    """Parse ``--methods`` (``all`` or a comma list) into known method names.

    Raises:
        ValueError: An unknown method name.

    """
    if spec.strip() in ("", "all"):
        return list(METHODS)
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
        spec = METHODS[name]
        if spec.uses_kg and not has_store:
            disabled[name] = "no KG store"
            continue
        errors = [e for e in (_import_error(m) for m in spec.requires) if e]
        if errors:
            disabled[name] = "; ".join(errors)
        else:
            ok.append(name)
    return ok, disabled
