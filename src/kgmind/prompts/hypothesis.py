"""Hypothesis Output prompt (HyKGE Table 3), English and Chinese; one call also does NER.

HyKGE first lets the LLM answer the question from its own knowledge (the *hypothesis
output*); the hypothesis names entities the question does not, which widens entity
linking. Here the same call also lists the entities (question + hypothesis), so it
doubles as MindMap's LLM entity extraction: one call instead of two.

Variables: ``question``.
"""

from __future__ import annotations

from langchain_core.prompts import ChatPromptTemplate

__all__ = ["HYPOTHESIS_EN", "HYPOTHESIS_ZH", "hypothesis_prompt"]

HYPOTHESIS_EN = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            "You are a professional expert of the domain of the question (for medical questions, an "
            "experienced doctor). Answer the question from your own knowledge, concisely and "
            "professionally, in at most 80 words. Name the specific entities involved (for example "
            "diseases, symptoms, tests, medications). Then list every specific entity that appears in the "
            "question or in your answer, each as a short noun phrase. Reply with one JSON object only, with "
            "the keys "
            '"hypothesis" (your answer as text) and "entities" (a list of strings).',
        ),
        ("human", "Question: {question}"),
    ]
)

HYPOTHESIS_ZH = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            "你是问题所属领域的专业专家（医学问题时，你是一名经验丰富的医生）。"
            "请根据你自己的知识，简洁、专业地回答下面的问题，不超过150字，"
            "并写出涉及的具体实体（例如疾病、症状、检查、药物）。"
            "然后列出问题和你的回答中出现的所有具体实体，每个实体为一个简短的名词短语。"
            '只回复一个JSON对象，包含键 "hypothesis"（你的回答文本）和 "entities"（字符串列表）。',
        ),
        ("human", "问题：{question}"),
    ]
)


def hypothesis_prompt(language: str) -> ChatPromptTemplate:
    """Return the hypothesis prompt for ``language`` (``zh`` or anything else = English)."""
    return HYPOTHESIS_ZH if language == "zh" else HYPOTHESIS_EN
