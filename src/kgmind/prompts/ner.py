"""Few-shot prompts for LLM entity extraction (MindMap Table 9 style), in English and Chinese.

Each prompt shows two worked examples in MindMap's ``<CLS>text<SEP>The extracted
entities are a, b, c<EOS>`` format and asks for the entities of ``{text}``. The
answer is requested as structured output (:class:`kgmind.retrievers.ner.Entities`)
when the model supports it; the textual format is the fallback that
:func:`kgmind.retrievers.ner.parse_entity_list` reads.
"""

from __future__ import annotations

from langchain_core.prompts import ChatPromptTemplate

__all__ = ["NER_PROMPTS", "NER_PROMPT_EN", "NER_PROMPT_ZH", "ner_prompt"]

_SYSTEM_EN = (
    "You extract medical entities (diseases, symptoms, tests, medications, body parts) from text. "
    "Copy each entity as a short noun phrase, as it is written; do not explain; do not add entities "
    "that the text does not mention."
)

_EXAMPLES_EN = """There are some samples:

### Instruction:
'Learn to extract entities from the following medical questions.'

### Input:
<CLS>Doctor, I have been having discomfort and dryness in my vagina for a while now. I also experience \
pain during sex. What could be the problem and what tests do I need?<SEP>The extracted entities are

### Output:
<CLS>Doctor, I have been having discomfort and dryness in my vagina for a while now. I also experience \
pain during sex. What could be the problem and what tests do I need?<SEP>The extracted entities are \
Vaginal pain, Vaginal dryness, Pain during intercourse<EOS>

### Instruction:
'Learn to extract entities from the following medical answers.'

### Input:
<CLS>Okay, based on your symptoms, we need to perform some diagnostic procedures to confirm the \
diagnosis. We may need to do a CAT scan of your head and an Influenzavirus antibody assay to rule out \
any other conditions. Additionally, we may need to evaluate you further and consider other respiratory \
therapy or physical therapy exercises to help you feel better.<SEP>The extracted entities are

### Output:
<CLS>Okay, based on your symptoms, we need to perform some diagnostic procedures to confirm the \
diagnosis. We may need to do a CAT scan of your head and an Influenzavirus antibody assay to rule out \
any other conditions. Additionally, we may need to evaluate you further and consider other respiratory \
therapy or physical therapy exercises to help you feel better.<SEP>The extracted entities are CAT scan \
of head, Influenzavirus antibody assay, Physical therapy exercises, Respiratory therapy<EOS>

Try to output:
### Instruction:
'Learn to extract entities from the following medical questions.'

### Input:
<CLS>{text}<SEP>The extracted entities are

### Output:"""

_SYSTEM_ZH = (
    "你从文本中抽取医学实体（疾病、症状、检查、药品、食物、部位）。每个实体写成文本中的原词或简短名词短语；"
    "不要解释；不要添加文本没有提到的实体。"
)

_EXAMPLES_ZH = """下面是一些示例：

### 指令：
'学习从下面的医学问题中抽取实体。'

### 输入：
<CLS>医生，我最近一周总是头痛，晚上睡不好，还有点恶心，需要做什么检查？<SEP>抽取的实体是

### 输出：
<CLS>医生，我最近一周总是头痛，晚上睡不好，还有点恶心，需要做什么检查？<SEP>抽取的实体是头痛，失眠，恶心<EOS>

### 指令：
'学习从下面的医学回答中抽取实体。'

### 输入：
<CLS>你好，根据你的描述，可能是急性胃肠炎，建议做血常规和大便常规检查，可以口服蒙脱石散，饮食要清淡。<SEP>抽取的实体是

### 输出：
<CLS>你好，根据你的描述，可能是急性胃肠炎，建议做血常规和大便常规检查，可以口服蒙脱石散，饮食要清淡。<SEP>抽取的实体是\
急性胃肠炎，血常规，大便常规，蒙脱石散<EOS>

请输出：
### 指令：
'学习从下面的医学问题中抽取实体。'

### 输入：
<CLS>{text}<SEP>抽取的实体是

### 输出："""

#: English MindMap-style few-shot NER prompt; variable ``text``.
NER_PROMPT_EN = ChatPromptTemplate.from_messages([("system", _SYSTEM_EN), ("human", _EXAMPLES_EN)])

#: Chinese few-shot NER prompt; variable ``text``.
NER_PROMPT_ZH = ChatPromptTemplate.from_messages([("system", _SYSTEM_ZH), ("human", _EXAMPLES_ZH)])

#: Prompt per language code.
NER_PROMPTS: dict[str, ChatPromptTemplate] = {"en": NER_PROMPT_EN, "zh": NER_PROMPT_ZH}


def ner_prompt(language: str) -> ChatPromptTemplate:
    """The NER prompt for ``language`` (``zh`` → Chinese, anything else → English)."""
    return NER_PROMPTS.get(language, NER_PROMPT_EN)
