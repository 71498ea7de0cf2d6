"""Ending texts that are too long: the mind map's root and the model's free texts at their ``maxLength``."""

from __future__ import annotations

import pytest

from kgmind.text import end_cut, shorten

#: A summary the 0.5B model wrote under a 160-character bound (committed test sample, question 327).
CUT_SUMMARY = (
    "Itching of unknown cause may present with Itching of skin. The patient is allergic to spider or "
    "animal bite and itchy of skin may be a sign of Envenomation from"
)


def test_a_text_the_model_ended_is_kept() -> None:
    text = "Take a chest X-ray and a sputum culture"  # no full stop, but shorter than its bound
    assert end_cut(text, 160) == text


def test_a_cut_text_ends_after_its_last_full_sentence_when_that_keeps_half() -> None:
    text = "Pneumonia fits the fever and the cough best. A chest X-ray will show it. Sputum cul"
    assert (
        end_cut(text, len(text)) == "Pneumonia fits the fever and the cough best. A chest X-ray will show it."
    )


def test_a_cut_text_without_a_late_sentence_end_loses_its_last_word() -> None:
    # the only full stop is in the first half: keeping just that sentence would drop most of the text
    assert end_cut(CUT_SUMMARY, len(CUT_SUMMARY)) == CUT_SUMMARY.removesuffix(" from") + "…"
    # the decoder's report: the model's next token (" test") did not fit the one character left
    step = "Check chest X-ray, Sputum smear microscopy, Tuberculin skin"
    assert end_cut(step, 60, cut=True) == "Check chest X-ray, Sputum smear microscopy, Tuberculin…"
    assert end_cut(step, 60) == step, "not reported and under its bound: the model ended it"


def test_a_marked_text_ending_a_sentence_keeps_it() -> None:
    assert end_cut("Rest and drink fluids.", 160, cut=True) == "Rest and drink fluids."


def test_a_cut_word_without_a_space_is_marked_not_shortened() -> None:
    # a bound filled by one word: nothing to cut at, and dropping letters would not help a reader
    assert end_cut("Pneumonia", 9) == "Pneumonia…"


def test_a_cut_text_never_ends_in_a_dangling_comma_or_inside_a_word() -> None:
    text = "Tests: chest X-ray, sputum culture, complete blood count, blood culture, proc"
    out = end_cut(text, len(text))
    assert out == "Tests: chest X-ray, sputum culture, complete blood count, blood culture…"


def test_chinese_is_cut_at_a_clause_mark_or_marked_whole() -> None:
    text = (
        "患者可能患有肺炎，建议做胸部X光检查，痰培养，以及血常规检查，"
        + "如果症状持续请及时就医并按医嘱服用抗生素药物治"
    )
    assert end_cut(text, len(text)) == "患者可能患有肺炎，建议做胸部X光检查，痰培养，以及血常规检查…"
    assert (
        end_cut("肺炎需要胸部X光检查。建议服用抗生素并多休息观察症状变化情况如", 31)
        == "肺炎需要胸部X光检查。建议服用抗生素并多休息观察症状变化情况如…"
    )
    assert (
        end_cut("症状提示肺炎。需要检查胸片并且服用抗生素。多喝", 23)
        == "症状提示肺炎。需要检查胸片并且服用抗生素。"
    )


@pytest.mark.parametrize(
    ("text", "max_chars", "expected"),
    [
        ("I have a fever.", 80, "I have a fever."),
        ("word " * 30, 22, "word word word word…"),
        ("发烧" * 50, 10, "发烧发烧发烧发烧发烧…"),
    ],
)
def test_shorten_cuts_at_a_word_boundary_or_inside_unbroken_text(
    text: str, max_chars: int, expected: str
) -> None:
    assert shorten(text, max_chars) == expected
