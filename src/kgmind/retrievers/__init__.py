"""Entity extraction and linking, graph exploration and its LangChain tools, reranking and budgeting."""

from kgmind.models import EVIDENCE_PREFIX, Evidence, LinkedEntity, Mention

__all__ = ["EVIDENCE_PREFIX", "Evidence", "LinkedEntity", "Mention"]
