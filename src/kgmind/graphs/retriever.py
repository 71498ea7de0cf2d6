"""KGMindRetriever: kgmind's retrieval half as a LangChain ``BaseRetriever`` returning evidence Documents.

It runs hypothesis → entity extraction → linking → exploration → aggregation (no
reasoning call) and returns the selected evidence as ``Document`` objects whose
metadata carries the evidence id, kind and the KG relation ids behind it.
"""

from __future__ import annotations

import functools
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from kgmind.models import Evidence

__all__ = ["KGMindRetriever", "evidence_to_document"]


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


@functools.cache
def _retrieval_graph() -> Any:
    from kgmind.graphs.pipeline import build_retrieval_graph

    return build_retrieval_graph().compile(name="kgmind-retrieval")


class KGMindRetriever(BaseRetriever):
    """Retrieve KG evidence for a query with the kgmind pipeline (one LLM call: the hypothesis).

    Attributes:
        context: A :class:`kgmind.graphs.context.Context` or a dict of its fields
            (``None`` = defaults: local model, demo store).

    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    context: Any = None

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        from kgmind.graphs.runnable import coerce_context

        ctx = coerce_context(self.context)
        out = _retrieval_graph().invoke(
            {"question": query}, config={"callbacks": run_manager.get_child()}, context=ctx
        )
        return [evidence_to_document(ev) for ev in out.get("selected_evidence") or []]
