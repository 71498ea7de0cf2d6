"""The heavy objects an evaluation's methods share, built lazily once per run, and its LLM call log.

:class:`Resources` opens the store, compiles the graph, builds the linker, reranker, BM25
index, embedder and document vectors on first use, so a method that needs none of them
costs nothing; :class:`LLMCallLog` records where an evaluation's LLM seconds go.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from kgmind.eval.datasets import default_path
from kgmind.graphs.context import Context, Mode
from kgmind.models import Evidence, Mention
from kgmind.retrievers import aggregate
from kgmind.text import detect_language

__all__ = ["EntityInput", "LLMCallLog", "Resources"]

#: A question entity as a method receives it: a stored string, or a mention of kgmind's NER.
EntityInput = Mention | str

#: A BM25 word of Chinese text: has a letter, digit or ideograph (punctuation is dropped).
_WORD = re.compile(r"\w")


class LLMCallLog(BaseCallbackHandler):
    """Where an evaluation's LLM seconds go: per call, its name, seconds, prompt and generated tokens.

    Tokens are counted by the local model's own tokenizer when the model is llama.cpp
    (``tokens_by="llama"``), else by the budget's approximate counter (``"approx"``);
    the prompt count covers the messages' text, not the chat template's few tokens.
    """

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self._open: dict[Any, tuple[str, float, str]] = {}
        self._lock = threading.Lock()
        self.tokenize: Callable[[str], int] | None = None

    def count(self, text: str) -> int:
        """Tokens of ``text`` (see the class docstring)."""
        return self.tokenize(text) if self.tokenize else int(aggregate.count_tokens(text))

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[Any]], *, run_id: Any, **kwargs: Any
    ) -> None:
        """Open a call: its name and the prompt text."""
        text = "\n".join(str(getattr(m, "content", m)) for batch in messages for m in batch)
        with self._lock:
            self._open[run_id] = (str(kwargs.get("name") or "llm"), time.perf_counter(), text)

    def on_llm_end(self, response: Any, *, run_id: Any, **kwargs: Any) -> None:
        """Close a call: seconds, prompt and generated tokens."""
        with self._lock:
            opened = self._open.pop(run_id, None)
        if opened is None:
            return
        name, t0, prompt = opened
        out = "".join(g.text or str(getattr(g, "message", "")) for gens in response.generations for g in gens)
        record = {
            "name": name,
            "seconds": time.perf_counter() - t0,
            "prompt_tokens": self.count(prompt),
            "output_tokens": self.count(out),
        }
        with self._lock:
            self.calls.append(record)

    def take(self) -> list[dict[str, Any]]:
        """The calls logged since the last take."""
        with self._lock:
            calls, self.calls = self.calls, []
        return calls


class Resources:
    """Lazily built, cached heavy objects shared by all methods of one evaluation.

    Args:
        store_uri: The KG store (``None``: no KG methods).
        docs_dir: Folder of ``*.txt`` documents for the doc baselines.
        docs_kg: Instead of ``docs_dir``: ``(KG path, importer format, language)`` whose
            diseases become the documents (:func:`kgmind.eval.datasets.kg_disease_documents`;
            the Chinese data sets, which have no document corpus of their own).
        model: Chat model name (``local``, ``fake:x``, ``openai:…``) or ``None`` for ``--llm none``.
        max_tokens: Generation limit per LLM call (``None``: the Context default).
        embed_model: Embedder name for ``embedding_doc`` (``minilm``).
        seed: Seed of KGCoT's DFS.
        context_overrides: :class:`Context` fields set on every graph run (an ablation,
            e.g. ``{"weight_aware": False}``); empty = the shipped defaults.

    """

    def __init__(
        self,
        store_uri: str | None = None,
        docs_dir: str | Path | None = None,
        docs_kg: tuple[str | Path, str, str] | None = None,
        model: str | None = None,
        max_tokens: int | None = None,
        embed_model: str = "minilm",
        seed: int = 0,
        context_overrides: dict[str, Any] | None = None,
    ) -> None:
        self.store_uri = store_uri
        self.context_overrides = dict(context_overrides or {})
        self.llm_log = LLMCallLog()
        self.callbacks: list[Any] = [self.llm_log]
        self.docs_dir = Path(docs_dir) if docs_dir else default_path("docs")
        self.docs_kg = None if docs_dir else docs_kg
        self.model = model
        self.max_tokens = max_tokens
        self.embed_model = embed_model
        self.seed = seed
        self._cache: dict[str, Any] = {}

    def _get(self, key: str, build: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    # -- the product -------------------------------------------------------------
    def context(self, mode: Mode, budget: int, **overrides: Any) -> Context:
        """The :class:`Context` a graph-run method uses: the defaults, plus the run's model and budget."""
        kwargs: dict[str, Any] = {
            "mode": mode,
            "store": self.store_uri,
            "budget_tokens": budget,
            "seed": self.seed,
            "feedback": "off",
            # with a model, the graph's own default decides (``auto``); without one there is no call
            "hypothesis": "auto" if self.model is not None else False,
        }
        if self.model is not None:
            kwargs["model"] = self.model
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        return Context(**{**kwargs, **self.context_overrides, **overrides})

    def graph(self) -> Any:
        """The compiled graph: the full one with an LLM, the retrieval half without."""
        from kgmind.graphs.pipeline import build_graph, build_retrieval_graph

        def build() -> Any:
            if self.model is None:
                return build_retrieval_graph().compile(name="kgmind-retrieval")
            return build_graph().compile(name="kgmind")

        return self._get("graph", build)

    def answer(self, question: str, evidence: Sequence[Evidence]) -> dict[str, Any]:
        """Answer ``evidence`` with the shipped reasoning prompt (the baselines' answer call)."""
        from langchain_core.runnables import RunnableLambda

        from kgmind.graphs.reason_mindmap import answer_with_evidence

        ctx = self.context("full", 0)
        call: RunnableLambda[Any, dict[str, Any]] = RunnableLambda(
            lambda _: answer_with_evidence(question, evidence, ctx), name="baseline_answer"
        )
        return dict(call.invoke(None, config={"callbacks": self.callbacks}))

    def chat(self) -> Any:
        """The chat model for the baselines' own calls (HyKGE's hypothesis)."""
        from kgmind.llm import get_chat_model, with_max_tokens

        if self.model is None:
            raise ValueError("no LLM configured")
        return with_max_tokens(get_chat_model(self.model), self.max_tokens)

    # -- KG ---------------------------------------------------------------------
    def store(self) -> Any:
        """Return the GraphStore (``open_store(store_uri)``)."""
        from kgmind.stores.factory import open_store

        return self._get("store", lambda: open_store(self.store_uri))

    def graph_index(self) -> Any:
        """Return the cached in-memory GraphIndex of the store."""
        from kgmind.retrievers.graph_index_cache import get_graph_index

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
        """Link mentions to entity ids, in question order (the baselines' linking).

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
    @staticmethod
    def count_tokens(text: str) -> int:
        """Tokens of ``text`` (the budget's own counter)."""
        return int(aggregate.count_tokens(text))

    @staticmethod
    def render(ev: Evidence) -> str:
        """One evidence item as the LLM sees it."""
        if ev.kind == "doc" or (ev.text and not ev.triples):
            return ev.text.strip()
        return str(aggregate.render_evidence(ev))

    def reranker(self) -> Any:
        """Return the embedding reranker of HyKGE (``EmbeddingReranker(embed_model)``)."""
        return self._get("reranker", lambda: aggregate.EmbeddingReranker(self.embed_model))

    # -- documents --------------------------------------------------------------
    def docs(self) -> list[tuple[str, str]]:
        """``(doc name, text)``: each ``*.txt`` in :attr:`docs_dir` by name, or :attr:`docs_kg`'s diseases."""

        def build() -> list[tuple[str, str]]:
            if self.docs_kg:
                from kgmind.eval.datasets import kg_disease_documents

                path, fmt, language = self.docs_kg
                return kg_disease_documents(path, fmt, language)
            files = sorted(self.docs_dir.glob("*.txt"), key=lambda p: (len(p.stem), p.stem))
            if not files:
                raise FileNotFoundError(str(self.docs_dir / "*.txt"))
            return [(f.stem, f.read_text(encoding="utf-8").strip()) for f in files]

        return list(self._get("docs", build))

    @property
    def docs_language(self) -> str:
        """Language of the documents (picks BM25's tokenizer and their embedder): of their first ten."""
        if self.docs_kg:
            return self.docs_kg[2]
        return detect_language(" ".join(t for _, t in self.docs()[:10]))

    def bm25(self) -> Any:
        """Return a ``bm25s`` index over :meth:`docs` (tokens by :meth:`bm25_tokens`)."""

        def build() -> Any:
            import bm25s

            retriever = bm25s.BM25()
            retriever.index(self.bm25_tokens([t for _, t in self.docs()]), show_progress=False)
            return retriever

        return self._get("bm25", build)

    def bm25_tokens(self, texts: Sequence[str]) -> list[list[str]]:
        """BM25 words of each text, in the documents' language.

        English: ``bm25s.tokenize`` with its English stop words (MindMap's baseline).
        Chinese: jieba's search-mode words (a long word and its shorter words, so that
        "上呼吸道感染" in a question meets "呼吸道感染" in a document), keeping only
        words with a letter, digit or ideograph.
        """
        if self.docs_language != "zh":
            import bm25s

            words: list[list[str]] = bm25s.tokenize(
                list(texts), stopwords="en", return_ids=False, show_progress=False
            )
            return words
        import logging

        import jieba

        logging.getLogger("jieba").setLevel(logging.WARNING)
        return [[w.lower() for w in jieba.lcut_for_search(t) if _WORD.search(w)] for t in texts]

    def embedder(self) -> Any:
        """Return the embedder for dense retrieval (``get_embedder(embed_model)``)."""
        from kgmind.retrievers.embeddings import get_embedder

        name = "e5" if self.docs_language == "zh" else self.embed_model
        return self._get("embedder", lambda: get_embedder(name))

    def doc_vectors(self) -> Any:
        """Embeddings of :meth:`docs` (``(n, dim)``, L2-normalised)."""
        return self._get("doc_vectors", lambda: self.embedder().embed_documents([t for _, t in self.docs()]))
