"""KGCoT's reasoning prompt (paper Figure 5 style), English and Chinese.

The chains and their knowledge are given as prior question–answer turns: first how to
read a chain ``e1 -> e2 -> e3``, then, for every chain ``Ki``, "the knowledge of chain
Ki is …"; the user's question comes last, with the same three outputs (and JSON layout)
as the MindMap prompt.

Variables of the templates: ``chain_id``, ``chain``, ``knowledge`` (per chain) and
``question``.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.prompts import PromptTemplate

from kgmind.prompts.mindmap import OUTPUT_FORMAT_EN, OUTPUT_FORMAT_ZH

__all__ = ["KGCOT_EN", "KGCOT_ZH", "build_kgcot_messages"]

KGCOT_EN: dict[str, str] = {
    "system": (
        "You are an excellent AI doctor who reasons over chains of knowledge from a knowledge graph. "
        "If the knowledge is not medical, you are an equally careful expert of its domain."
    ),
    "read_q": "How to read a chain like e1 -> r1 -> e2 -> r2 -> e3?",
    "read_a": (
        "A chain is read from left to right: entity e1 is linked to entity e2 by relation r1, and e2 is "
        "linked to e3 by relation r2, so e1 reaches e3 through e2."
    ),
    "chain_q": "What is chain {chain_id}?",
    "chain_a": "Chain {chain_id} is: {chain}. The knowledge of chain {chain_id} is: {knowledge}",
    "question": (
        "Question: {question}\n\nUse the chains above and your own knowledge. "
        "Output 1 (summary): the answer. "
        "Output 2 (inference_chain): the inference process step by step, each step citing the chain ids "
        "it uses. "
        "Output 3 (mind_map): a mind map of the reasoning as a tree whose nodes cite chain ids. "
        "Cite only ids of the chains above. " + OUTPUT_FORMAT_EN
    ),
    "no_knowledge": "(no further knowledge)",
}

KGCOT_ZH: dict[str, str] = {
    "system": (
        "你是一名优秀的AI医生，善于在知识图谱的知识链上推理。"
        "如果这些知识不属于医学领域，你就是该领域同样严谨的专家。"
    ),
    "read_q": "如何阅读像 e1 -> r1 -> e2 -> r2 -> e3 这样的链？",
    "read_a": (
        "链从左向右读：实体 e1 通过关系 r1 连接到实体 e2，e2 通过关系 r2 连接到 e3，因此 e1 经由 e2 到达 e3。"
    ),
    "chain_q": "链 {chain_id} 是什么？",
    "chain_a": "链 {chain_id} 是：{chain}。链 {chain_id} 的知识是：{knowledge}",
    "question": (
        "问题：{question}\n\n请结合上面的链和你自己的知识回答。"
        "输出1（summary）：回答。"
        "输出2（inference_chain）：逐步的推理过程，每一步引用所用链的编号。"
        "输出3（mind_map）：把推理画成思维导图树，节点引用链的编号。"
        "只能引用上面出现的链编号。" + OUTPUT_FORMAT_ZH
    ),
    "no_knowledge": "（无更多知识）",
}


def _fmt(template: str, **values: str) -> str:
    return PromptTemplate.from_template(template).format(**values)


def build_kgcot_messages(
    question: str, chains: Sequence[tuple[str, str, str]], language: str = "en"
) -> list[BaseMessage]:
    """Return the KGCoT prompt as messages.

    Args:
        question: The user's question.
        chains: ``(chain_id, chain text "e1 -> r1 -> e2 …", knowledge text)`` per chain.
        language: ``zh`` for Chinese, anything else for English.

    Returns:
        System message, the chain-reading turns, one turn pair per chain, the question.

    """
    t = KGCOT_ZH if language == "zh" else KGCOT_EN
    messages: list[BaseMessage] = [
        SystemMessage(content=t["system"]),
        HumanMessage(content=t["read_q"]),
        AIMessage(content=t["read_a"]),
    ]
    for chain_id, chain, knowledge in chains:
        messages.append(HumanMessage(content=_fmt(t["chain_q"], chain_id=chain_id)))
        messages.append(
            AIMessage(
                content=_fmt(
                    t["chain_a"], chain_id=chain_id, chain=chain, knowledge=knowledge or t["no_knowledge"]
                )
            )
        )
    messages.append(HumanMessage(content=_fmt(t["question"], question=question)))
    return messages
