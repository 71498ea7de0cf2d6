"""Entity extraction and linking, graph exploration, reranking and the LangChain retriever."""

from kgmind.models import EVIDENCE_PREFIX, Evidence, LinkedEntity, Mention

__all__ = ["EVIDENCE_PREFIX", "Evidence", "LinkedEntity", "Mention"]
