"""MindMap's final reasoning prompt, English and Chinese.

Follows the MindMap paper's last call: the system role ("You are an excellent AI
doctor…", worded so that it also fits non-medical KGs), the patient input, the
evidence as the assistant's own retrieved knowledge (delimited and quoted, with ids
P…/N…/C…/K…), then the three outputs — the answer, the inference chain citing evidence
ids, and the mind map — with the instruction to combine the evidence with the model's
own knowledge.

Variables: ``question``, ``evidence`` (numbered lines ``ID: text``).
"""

from __future__ import annotations

from langchain_core.prompts import ChatPromptTemplate

__all__ = [
    "MINDMAP_EN",
    "MINDMAP_ZH",
    "NO_EVIDENCE_EN",
    "NO_EVIDENCE_ZH",
    "OUTPUT_FORMAT_EN",
    "OUTPUT_FORMAT_ZH",
    "mindmap_prompt",
]

#: The JSON layout every reasoning prompt asks for (the fallback parser reads it too).
OUTPUT_FORMAT_EN = (
    'Reply with one JSON object only, with the keys "summary" (the answer as text), '
    '"inference_chain" (a list of objects with "step" (text) and "evidence_ids" (a list of ids such as '
    '"P1")) and "mind_map" (an object with "label" (text), "evidence_ids" (a list of ids) and "children" '
    "(a list of such objects)). Write real content in every field."
)
OUTPUT_FORMAT_ZH = (
    '只回复一个JSON对象，包含键 "summary"（回答文本）、'
    '"inference_chain"（对象列表，每个对象有 "step"（文本）和 "evidence_ids"（编号列表，如 "P1")）'
    '以及 "mind_map"（对象，含 "label"（文本）、"evidence_ids"（编号列表）和 '
    '"children"（同样结构的对象列表））。每个字段都写真实内容。'
)

#: Evidence block text when nothing was retrieved (llm_only mode or nothing linked).
NO_EVIDENCE_EN = "(No knowledge-graph evidence is available. Answer from your own knowledge and cite no ids.)"
NO_EVIDENCE_ZH = "（没有可用的知识图谱证据。请根据你自己的知识回答，不要引用任何编号。）"

MINDMAP_EN = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            "You are an excellent AI doctor, and you can diagnose diseases and recommend medications based "
            "on the symptoms in the conversation. If the knowledge below is not medical, you are an equally "
            "careful expert of its domain.",
        ),
        ("human", "Patient input: {question}"),
        (
            "ai",
            "You have some knowledge information in the following, each item with its id:\n\n"
            '<evidence>\n"""\n{evidence}\n"""\n</evidence>',
        ),
        (
            "human",
            "Answer the patient input. For a medical question: what disease does the patient have, what "
            "tests should the patient take to confirm the diagnosis, and what recommended medications can "
            "cure the disease? Think step by step, and combine the evidence above with your own knowledge."
            "\n\n"
            "Output 1 (summary): the answer.\n"
            "Output 2 (inference_chain): the inference process, step by step; each step says which "
            "knowledge it takes from which evidence and cites those evidence ids (P1, N2, …) in "
            "evidence_ids.\n"
            "Output 3 (mind_map): a mind map of the reasoning as a tree; each node is an entity, relation "
            "or conclusion from the inference process, with the ids of the evidence it comes from.\n\n"
            "Cite only ids that appear in the evidence. " + OUTPUT_FORMAT_EN,
        ),
    ]
)

MINDMAP_ZH = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            "你是一名优秀的AI医生，能够根据对话中的症状诊断疾病并推荐药物。"
            "如果下面的知识不属于医学领域，你就是该领域同样严谨的专家。",
        ),
        ("human", "患者输入：{question}"),
        (
            "ai",
            '你拥有以下知识信息，每条都带有编号：\n\n<evidence>\n"""\n{evidence}\n"""\n</evidence>',
        ),
        (
            "human",
            "请回答患者输入。医学问题时：患者患了什么病？应该做哪些检查来确诊？推荐哪些药物治疗？"
            "请一步一步思考，并把上面的证据与你自己的知识结合起来。\n\n"
            "输出1（summary）：回答。\n"
            "输出2（inference_chain）：逐步的推理过程；每一步说明从哪条证据中取了哪些知识，"
            "并在 evidence_ids 中引用这些证据的编号（P1、N2……）。\n"
            "输出3（mind_map）：把推理画成一棵思维导图树；"
            "每个节点是推理过程中的实体、关系或结论，并带上其证据编号。\n\n"
            "只能引用证据中出现的编号。" + OUTPUT_FORMAT_ZH,
        ),
    ]
)


def mindmap_prompt(language: str) -> ChatPromptTemplate:
    """Return the MindMap reasoning prompt for ``language`` (``zh`` or anything else = English)."""
    return MINDMAP_ZH if language == "zh" else MINDMAP_EN
