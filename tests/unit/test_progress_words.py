"""The status line says what the model has written in words, from the partial JSON of its answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kgmind.cli.progress_words import progress_words, scan_partial_json

FIX = Path(__file__).parents[1] / "fixtures" / "progress"

#: A grounded answer as the local model writes it (the demo KG's English question).
EN = (
    '{"inference_chain": [{"evidence_ids": ["C1"], "about": "Fever", "step": "Fever and cough are '
    'signs of influenza."}, {"evidence_ids": ["N1"], "about": "Influenza", "step": "Influenza is '
    'checked with a rapid test."}], "mind_map": {"label": "fever and cough", "children": [{"label": '
    '"Influenza", "evidence_ids": ["N1"]}]}, "diagnoses": [{"disease": "Influenza", "tests": ["Rapid '
    'influenza diagnostic test", "Influenza PCR test"], "medications": ["Oseltamivir"]}, {"disease": '
    '"Pneumonia"}], "own_knowledge": [], "summary": "Likely influenza; a rapid test confirms it."}'
)
#: The same in Chinese, with the names escaped as a JSON writer may (``\\uXXXX``).
ZH = (
    '{"inference_chain": [{"evidence_ids": ["N1"], "about": "\\u53d1\\u70ed", "step": "发热和咳嗽是感冒'
    '的表现"}], "mind_map": {"label": "发烧咳嗽", "children": [{"label": "感冒", "evidence_ids": ["N1"]}]}'
    ', "diagnoses": [{"disease": "感冒", "tests": ["血常规", "胸部X线"], "medications": ["对乙酰氨基酚"]}]'
    ', "own_knowledge": [], "summary": "可能是感冒，建议查血常规。"}'
)


def _cut(text: str, marker: str, extra: int = 0) -> str:
    """``text`` up to just after the first ``marker`` (plus ``extra`` characters)."""
    return text[: text.index(marker) + len(marker) + extra]


def test_empty_and_prose() -> None:
    assert progress_words("", "en") == "" and progress_words("  \n", "zh") == ""
    prose = "The patient probably has influenza, which\nis treated with rest, fluids and oseltamivir."
    words = progress_words(prose, "en")
    assert words.endswith("fluids and oseltamivir.") and "\n" not in words and len(words) <= 41


def test_the_raw_json_of_the_issue_is_said_in_words() -> None:
    # the status line showed exactly this text before
    assert progress_words('{"inference_chain": [{"evidence_ids": ["C1"], "about"', "en") == (
        "writing step 1 of the reasoning…"
    )
    assert progress_words("{", "en") == "starting the answer…"


def test_mid_key() -> None:
    assert progress_words('{"inference_chain": [{"evidence_ids": ["C1"], "ab', "en") == (
        "writing step 1 of the reasoning…"
    )
    # a top-level key half written that can only become one field is named already
    assert progress_words(_cut(EN, ', "mind_'), "en") == "drawing the mind map…"
    assert progress_words(_cut(EN, ', "summ'), "en") == "writing the summary…"
    assert progress_words(_cut(ZH, ', "diag'), "zh") == "正在选择第 1 个诊断…"


def test_mid_string() -> None:
    assert progress_words(_cut(EN, '"step": "Influenza is che'), "en") == (
        "writing step 2 of the reasoning: Influenza is che…"
    )
    assert progress_words(_cut(EN, '"summary": "Likely influenza; a'), "en") == (
        "writing the summary: Likely influenza; a…"
    )
    # the evidence ids a step cites are not words: the step is named alone
    assert progress_words(_cut(EN, '"evidence_ids": ["N'), "en") == "writing step 2 of the reasoning…"
    assert progress_words(_cut(ZH, '"step": "发热和咳嗽'), "zh") == "正在写第 1 步推理：发热和咳嗽…"
    assert progress_words(_cut(ZH, '"about": "\\u53d1'), "zh") == "正在写第 1 步推理：发…"  # escapes decoded
    # a long text shows its last words, cut at a word
    long = progress_words(_cut(EN, '"summary": "Likely influenza; a rapid test confirms i'), "en")
    assert long == "writing the summary: …influenza; a rapid test confirms i…"


def test_mid_array() -> None:
    assert progress_words(_cut(EN, '"tests": ["Rapid influenza diagnostic test", "Influenza P'), "en") == (
        "choosing test 2 for Influenza (1 so far): Influenza P…"
    )
    assert (
        progress_words(_cut(EN, '"Rapid influenza diagnostic test",'), "en")
        == "choosing test 2 for Influenza (1 so far)…"
    )
    assert progress_words(_cut(EN, '"medications": ['), "en") == "choosing medication 1 for Influenza…"
    assert progress_words(_cut(EN, '{"disease": "Pneu'), "en") == "choosing diagnosis 2 (1 so far): Pneu…"
    assert progress_words(_cut(EN, '"children": [{"label": "Infl'), "en") == (
        "drawing the mind map: branch 1: Infl…"
    )
    assert (
        progress_words(_cut(ZH, '"tests": ["血常规", "胸部'), "zh")
        == "正在为感冒选择第 2 项检查（已选 1 项）：胸部…"
    )
    assert progress_words(_cut(ZH, '"medications": ["对乙'), "zh") == "正在为感冒选择第 1 种药物：对乙…"
    # a closed list is said as it ended, not as if it started again
    assert (
        progress_words(_cut(EN, 'checked with a rapid test."}]'), "en") == "writing step 2 of the reasoning…"
    )


def test_finished_answer_and_the_hypothesis_call() -> None:
    assert progress_words(EN, "en") == "answer written" and progress_words(ZH, "zh") == "答案已写完"
    hyp = '{"hypothesis": "Influenza is likely", "entities": ["fever", "cou'
    assert progress_words(_cut(hyp, '"Influenza is'), "en") == "writing a first answer: Influenza is…"
    assert progress_words(hyp, "en") == "naming entity 2 (1 so far): cou…"
    assert progress_words('```json\n{"summary": "Fl', "en") == "writing the summary: Fl…"  # a fence first
    assert progress_words('{"findings_of_note": "x', "en") == "writing the findings of note: x…"


def _outputs() -> list[tuple[str, str]]:
    """The inline answers, and the real local-model outputs recorded in ``tests/fixtures/progress``."""
    found = [(EN, "en"), (ZH, "zh")]
    for path in sorted(FIX.glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        found.append((record["output"], record["language"]))
    return found


@pytest.mark.parametrize(("text", "language"), _outputs())
def test_no_prefix_is_shown_as_json(text: str, language: str) -> None:
    """Every prefix of a real output, cut anywhere, is said in words: no JSON syntax, no field names."""
    for end in range(len(text) + 1):
        words = progress_words(text[:end], language)
        assert not set(words) & set('{}[]"'), (text[:end], words)
        for key in ("inference_chain", "evidence_ids", "mind_map", "own_knowledge"):
            assert key not in words, (text[:end], words)
        assert "\n" not in words and len(words) <= 120


def test_scan_tracks_keys_items_and_finished_values() -> None:
    cur = scan_partial_json(_cut(EN, '"tests": ["Rapid influenza diagnostic test", "Inf'))
    assert [f.is_object for f in cur.frames] == [True, False, True, False]
    assert cur.frames[2].strings == {"disease": "Influenza"} and cur.frames[3].index == 1
    assert cur.text == "Inf" and not cur.in_key and not cur.done


def _steps(record: str, bounds: dict[str, Any] | None = None) -> list[str]:
    """The steps said while the recorded output is written, character by character (details left out)."""
    data = json.loads((FIX / record).read_text(encoding="utf-8"))
    text, steps = data["output"], []
    for end in range(1, len(text) + 1):
        step = progress_words(text[:end], data["language"], bounds).split(": ")[0].split("：")[0].rstrip("…")
        if not steps or steps[-1] != step:
            steps.append(step)
    return steps


def test_real_local_model_answers_are_said_step_by_step() -> None:
    """The demo questions' answers as the 0.5B local model wrote them (recorded), in English and Chinese."""
    assert _steps("en_reason_mindmap.json") == [
        "starting the answer",
        "writing step 1 of the reasoning",
        "writing step 2 of the reasoning",
        "drawing the mind map",
        "choosing diagnosis 1",
        "choosing test 1 for Influenza",
        "choosing test 2 for Influenza (1 so far)",
        "choosing medication 1 for Influenza",
        "choosing diagnosis 1",
        "choosing diagnosis 2 (1 so far)",
        "adding a point of the model's own knowledge",
        "writing the summary",
        "answer written",
    ]
    zh = _steps("zh_reason_mindmap.json")
    assert zh[:5] == [
        "开始作答",
        "正在写第 1 步推理",
        "正在写第 2 步推理",
        "正在画思维导图",
        "正在选择第 1 个诊断",
    ]
    assert "正在为感冒选择第 4 项检查（已选 3 项）" in zh and "正在为感冒选择第 1 种药物" in zh
    assert zh[-3:] == ["正在补充模型自身的知识", "正在写总结", "答案已写完"]
    assert _steps("zh_generate_hypothesis.json")[1:3] == ["正在写初步答案", "正在列出第 1 个实体"]


def _flu_bounds() -> dict[str, tuple[int, int]]:
    """The list bounds of a real answer schema: influenza with three tests and a drug, then pneumonia."""
    from evidence_fixtures import workup_item
    from kgmind.models import normalize_name
    from kgmind.prompts.grounded import build_answer_schema, list_bounds

    flu_tests = ["Rapid influenza diagnostic test", "Influenza PCR test", "Chest X-ray"]
    evidence = [
        workup_item("N1", "Influenza workup.", "Influenza", flu_tests, ["Oseltamivir"]),
        workup_item("N2", "Pneumonia workup.", "Pneumonia", ["Sputum culture"], ["Amoxicillin"]),
    ]
    kinds = {"Influenza": "disease", "Pneumonia": "disease", "Oseltamivir": "medication"}
    kinds |= {"Amoxicillin": "medication", "Sputum culture": "test"} | dict.fromkeys(flu_tests, "test")
    return list_bounds(build_answer_schema(evidence, {normalize_name(n): t for n, t in kinds.items()}))


def test_a_list_the_schema_bounds_is_said_as_n_of_its_size() -> None:
    """With the schema's bounds the real recorded answer says "test 2 of 3-4", "diagnosis 2 of 2"."""
    bounds = _flu_bounds()
    assert bounds["diagnoses"] == (2, 2) and bounds["Influenza/tests"] == (3, 4)
    assert bounds["Influenza/medications"] == (1, 1) and "Pneumonia/tests" not in bounds  # rank 2: named only
    steps = _steps("en_reason_mindmap.json", bounds)
    assert steps[steps.index("drawing the mind map") + 1 :][:6] == [
        "choosing diagnosis 1 of 2",
        "choosing test 1 of 3-4 for Influenza",
        "choosing test 2 of 3-4 for Influenza",
        "choosing medication 1 of 1 for Influenza",
        "choosing diagnosis 1 of 2",
        "choosing diagnosis 2 of 2",
    ]
    zh = _steps(
        "zh_reason_mindmap.json", {"diagnoses": (2, 2), "感冒/tests": (3, 4), "感冒/medications": [1, 1]}
    )
    assert "正在为感冒选择第 2 项检查（共 3-4 项）" in zh and "正在为感冒选择第 1 种药物（共 1 种）" in zh
    assert "正在选择第 2 个诊断（共 2 个）" in zh
    # a list bounded below by nothing says its ceiling; an unknown list still counts what it has
    assert progress_words('{"diagnoses": ["Flu", "Co', "en", {"diagnoses": (0, 3)}) == (
        "choosing diagnosis 2 of up to 3: Co…"
    )
    assert (
        progress_words('{"diagnoses": ["Flu", "Co', "zh", {"tests": (1, 3)})
        == "正在选择第 2 个诊断（已选 1 个）：Co…"
    )
