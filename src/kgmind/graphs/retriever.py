"""KGMindRetriever: kgmind's retrieval half as a LangChain ``BaseRetriever`` returning evidence Documents.

It runs hypothesis → entity extraction → linking → exploration → aggregation (no
reasoning call) and returns the selected evidence as ``Document`` objects whose
metadata carries the evidence id, kind, score and the KG relation ids behind it.
Like LangChain's other retrievers, it takes ``k`` (constructor field or ``invoke``
keyword) and returns the best-scored documents first.
"""

from __future__ import annotations

import functools
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, Field

from kgmind.models import Evidence

__all__ = ["KGMindRetriever", "evidence_to_document", "top_k_documents"]

#: Keywords ``BaseRetriever.invoke`` forwards besides the caller's own (it reads them itself).
_FORWARDED_BY_INVOKE = frozenset({"verbose"})


def evidence_to_document(ev: Evidence) -> Document:
    """One evidence item as a Document (``page_content`` = its sentence)."""
    return Document(
        page_content=ev.text,
        metadata={
            "id": ev.id,
            "kind": ev.kind,
            "relation_ids": list(ev.relation_ids),
            "entity_ids": list(ev.entity_ids),
            "score": ev.score,
            "source": ev.source,
        },
    )


def _check_k(k: Any) -> int | None:
    """``k`` as given, or a ``ValueError``: an int of at least 1, or None (every document)."""
    if k is None or (isinstance(k, int) and not isinstance(k, bool) and k >= 1):
        return k
    raise ValueError(f"k must be a whole number of at least 1 (or None for every document), got {k!r}")


def top_k_documents(docs: list[Document], k: int | None) -> list[Document]:
    """The ``k`` best-scored documents (all when ``k`` is None), highest ``metadata["score"]`` first.

    The sort is stable, so documents with equal scores keep the pipeline's order (the
    order the answer call numbers its evidence in).
    """
    ranked = sorted(docs, key=lambda d: -float(d.metadata.get("score") or 0.0))
    return ranked if k is None else ranked[:k]


@functools.cache
def _retrieval_graph() -> Any:
    from kgmind.graphs.pipeline import build_retrieval_graph

    return build_retrieval_graph().compile(name="kgmind-retrieval")


class KGMindRetriever(BaseRetriever):
    """Retrieve KG evidence for a query with the kgmind pipeline (one LLM call: the hypothesis).

    Documents come best-scored first (``metadata["score"]``, descending). ``k`` caps
    how many: ``KGMindRetriever(k=3)`` or ``retriever.invoke(query, k=3)`` (the
    keyword wins), as with LangChain's other retrievers.

    Attributes:
        context: A :class:`kgmind.graphs.context.Context` or a dict of its fields
            (``None`` = defaults: local model, demo store).
        k: At most this many documents; ``None`` (the default) = every evidence item
            the pipeline selected within its token budget.

    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    context: Any = None
    k: int | None = Field(default=None, ge=1, strict=True)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        from kgmind.graphs.runnable import coerce_context

        k = self._k(kwargs)
        ctx = coerce_context(self.context)
        out = _retrieval_graph().invoke(
            {"question": query}, config={"callbacks": run_manager.get_child()}, context=ctx
        )
        docs = [evidence_to_document(ev) for ev in out.get("selected_evidence") or []]
        return top_k_documents(docs, k)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        # BaseRetriever's own async fallback drops the keywords (``k``); run the sync path with them.
        return await run_in_executor(
            None, self._get_relevant_documents, query, run_manager=run_manager.get_sync(), **kwargs
        )

    def _k(self, kwargs: dict[str, Any]) -> int | None:
        """The ``k`` of this call: the ``invoke`` keyword, else the field; other keywords are an error."""
        unknown = sorted(set(kwargs) - {"k"} - _FORWARDED_BY_INVOKE)
        if unknown:
            raise TypeError(f"KGMindRetriever got unexpected keyword arguments {unknown}; it takes k")
        return _check_k(kwargs["k"]) if "k" in kwargs else self.k
