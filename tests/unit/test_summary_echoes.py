"""The grounded summary without the patient's words pasted into it (``readable.without_echoes``).

The 0.5B model often pastes the question into its advice, after the prompt's own label
("患者输入：…", 26 of 77 CMCQA calibration summaries) or as dialogue turns, and sometimes
loops on one phrase. The cases below are shaped like those answers.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda
from langgraph.runtime import Runtime
from test_mind_map import ZH_ANSWER, zh_case

from kgmind.graphs import services
from kgmind.graphs.context import Context
from kgmind.graphs.readable import (
    ECHO_SHARE,
    copied_share,
    evidence_sentence,
    is_fragment,
    readable_steps,
    without_echoes,
)
from kgmind.graphs.reason_mindmap import reason_mindmap
from kgmind.prompts.schemas import GroundedAnswer

ZH_DIALOGUE = (
    "胎记能退吗？刚出生时只有屁股和右侧大腿外侧有胎记,两个多月的时候突然发现胳膊和后背出现三块胎记。"
    "（男,2个月） 这个得怎么治啊 好的,谢谢"
)
EN_QUESTION = (
    "Doctor, I have been experiencing wrist weakness, upper abdominal pain, cross-eyed vision, and a vulvar "
    "sore. What could be the problem?"
)


@pytest.mark.parametrize(
    ("summary", "question", "expected"),
    [
        # the prompt's label and the dialogue after it, over two sentences: one paste, gone whole
        (
            "最可能的诊断是太田痣。患者输入了胎记能退吗？刚出生时只有屁股和右侧大腿外侧有胎记,"
            "两个多月的时候突然发现胳膊和后背出现三块胎记。",
            ZH_DIALOGUE,
            "最可能的诊断是太田痣。",
        ),
        # no label, the patient's voice (a question, thanks): gone; the advice after it stays
        (
            "这个得怎么治啊，好的，谢谢。建议到皮肤科就诊。",
            ZH_DIALOGUE,
            "建议到皮肤科就诊。",
        ),
        # the label before the model's own words (not a copy): kept as written
        (
            "患者输入了胎记的描述，可能提示太田痣。",
            ZH_DIALOGUE,
            "患者输入了胎记的描述，可能提示太田痣。",
        ),
        # unpunctuated dialogue: a particle inside a run is the patient's voice too; 吗啡 is a drug
        (
            "最可能的诊断是太田痣。宝宝才两个月大请问这个严重吗大夫原来就一小块现在那么大",
            "宝宝才两个月大请问这个严重吗大夫原来就一小块现在那么大",
            "最可能的诊断是太田痣。",
        ),
        (
            "疼痛时医生给打了吗啡止痛针，之后就好多了，一直没再疼过",
            "疼痛时医生给打了吗啡止痛针，之后就好多了，一直没再疼过",
            "疼痛时医生给打了吗啡止痛针，之后就好多了，一直没再疼过",
        ),
        # a restatement of the findings in the third person stays
        (
            "The most likely diagnosis is Uveitis. The patient has been experiencing wrist weakness, upper "
            "abdominal pain, cross-eyed vision, and a vulvar sore.",
            EN_QUESTION,
            "The most likely diagnosis is Uveitis. The patient has been experiencing wrist weakness, upper "
            "abdominal pain, cross-eyed vision, and a vulvar sore.",
        ),
        # … but not the patient's first person or question
        (
            "The most likely diagnosis is Uveitis. I have been experiencing wrist weakness, upper abdominal "
            "pain, cross-eyed vision. What could be the problem?",
            EN_QUESTION,
            "The most likely diagnosis is Uveitis.",
        ),
        # a decoding loop is said once; a number is not a loop
        (
            "建议做以下检查：血常规检查，血常规检查，血常规检查，血常规检查…",
            "喉咙很痒，干咳十天",
            "建议做以下检查：血常规检查…",
        ),
        ("Take 1,000,000,000 units? No: rest.", "x", "Take 1,000,000,000 units? No: rest."),
        # everything pasted: nothing left
        ("患者输入：" + ZH_DIALOGUE, ZH_DIALOGUE, ""),
    ],
)
def test_pasted_words_go_and_the_rest_stays_as_written(summary: str, question: str, expected: str) -> None:
    assert without_echoes(summary, question) == expected


def test_copied_share_counts_runs_across_punctuation_and_short_whole_copies() -> None:
    question = "脸部红肿,很胀,很痒,昨天用了炉甘石洗剂"
    assert copied_share("脸部红肿，很胀，很痒，昨天用了炉甘石洗剂。", question) == 1.0
    assert copied_share("很痒。", question) == 1.0  # shorter than a run, all of it copied
    assert copied_share("痒", question) == 0.0  # one character is no copy
    assert copied_share("可能是接触性皮炎，建议停用化妆品。", question) < ECHO_SHARE


def test_a_grounded_answer_loses_the_pasted_question(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wiring, with a fake chat model: the node drops the paste once the summary names the first diagnosis
    first, and an answer that chose nothing keeps its words (it has no list to stand on)."""
    question = "我是不是肺炎？最近一直咳嗽、发烧，吃了药也不见好，谢谢医生"

    def answer(written: dict[str, Any]) -> str:
        reply = GroundedAnswer.model_validate(written)
        monkeypatch.setattr(
            services, "get_llm", lambda ctx, purpose="reason", **kw: RunnableLambda(lambda _m: reply)
        )
        state = {"question": question, "language": "zh", "selected_evidence": zh_case()}
        return str(reason_mindmap(state, Runtime(context=Context()))["answer"])

    pasted = {**ZH_ANSWER, "summary": f"患者输入：{question}。多喝水。"}
    # the disease the pasted words name is made "also considered" before the paste goes
    assert answer(pasted).splitlines()[0] == "最可能的诊断是流感，也考虑肺炎。多喝水。"
    nothing = {**pasted, "diagnoses": []}
    assert answer(nothing).startswith(f"患者输入：{question}")


def test_a_step_that_pastes_the_question_shows_its_evidence_sentence() -> None:
    """A pasted step names both ends of its cited fact (the patient wrote them), so only the paste rule
    replaces it; the model's own sentence stays."""
    question = "我是不是肺炎？咳嗽两天了，昨天开始发热，吃了药也不见好，谢谢医生"
    pasted = {"evidence_ids": ["P2"], "about": "肺炎", "step": f"患者输入：{question}"}
    own = {"evidence_ids": ["P1"], "about": "流感", "step": "患者发热，可能提示流感。"}
    evidence = zh_case()
    assert not is_fragment(pasted["step"], [evidence[1]])
    steps = readable_steps([pasted, own], evidence, question)
    assert steps[0]["step"] == evidence_sentence(evidence[1], "肺炎", pasted["step"])
    assert steps[0]["step"] != pasted["step"] and steps[0]["evidence_ids"] == ["P2"]
    assert steps[1] == own
    assert readable_steps([pasted], evidence)[0] == pasted  # no question given: nothing to compare with
