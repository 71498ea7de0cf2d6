"""Prompt that rewrites numbered evidence as plain sentences (``evidence_renderer="llm"``).

MindMap spends one extra LLM call turning path and neighbor evidence into natural
language. Ids must survive: the reply keeps one ``ID: sentence`` line per item.

Variables: ``evidence`` (numbered lines ``ID: text``).
"""

from __future__ import annotations

from langchain_core.prompts import ChatPromptTemplate

__all__ = ["RENDER_EVIDENCE_EN", "RENDER_EVIDENCE_ZH", "render_evidence_prompt"]

RENDER_EVIDENCE_EN = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            "Rewrite each knowledge item below as one short, fluent sentence. Keep every fact and every "
            "entity name; add nothing. Keep the id: reply with one line per item, 'ID: sentence', in the "
            "same order.",
        ),
        ("human", "{evidence}"),
    ]
)

RENDER_EVIDENCE_ZH = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            "把下面每条知识改写成一句简短通顺的话。保留所有事实和实体名称，不要添加内容。保留编号："
            "每条一行，格式为“编号: 句子”，顺序不变。",
        ),
        ("human", "{evidence}"),
    ]
)


def render_evidence_prompt(language: str) -> ChatPromptTemplate:
    """Return the evidence-rewriting prompt for ``language``."""
    return RENDER_EVIDENCE_ZH if language == "zh" else RENDER_EVIDENCE_EN
