"""Scorers and rating thresholds (kgmind.scoring) against hand-computed values."""

from __future__ import annotations

import math

import pytest

from kgmind.scoring import (
    BleuScorer,
    EntityRecallScorer,
    RougeLScorer,
    Scorer,
    rate,
    rouge_l,
    rouge_tokens,
)
from kgmind.text import has_cjk


def test_scorers_satisfy_protocol() -> None:
    for s in (BleuScorer(), RougeLScorer(), EntityRecallScorer(["x"])):
        assert isinstance(s, Scorer)
        assert s.name


def test_bleu_hand_computed_precisions() -> None:
    # 1..4-gram precisions 4/5, 3/4, 2/3, 1/2; equal lengths so BP = 1.
    expected = (4 / 5 * 3 / 4 * 2 / 3 * 1 / 2) ** 0.25
    assert BleuScorer().score("a b c d e", "a b c d f") == pytest.approx(expected, rel=1e-9)


def test_bleu_brevity_penalty() -> None:
    # every n-gram precision is 1; hyp length 4, ref length 6 → BP = exp(1 − 6/4)
    assert BleuScorer().score("a b c d", "a b c d e f") == pytest.approx(math.exp(-0.5), rel=1e-9)


def test_bleu_identical_and_disjoint() -> None:
    s = BleuScorer()
    assert s.score("fever and cough are symptoms", "fever and cough are symptoms") == pytest.approx(1.0)
    assert s.score("alpha beta gamma delta", "one two three four") == 0.0


def test_bleu_chinese_uses_character_tokens() -> None:
    expected = (4 / 5 * 3 / 4 * 2 / 3 * 1 / 2) ** 0.25
    assert BleuScorer().score("头痛发热咳", "头痛发热喘") == pytest.approx(expected, rel=1e-9)
    assert BleuScorer(language="zh").score("头痛发热咳", "头痛发热喘") == pytest.approx(expected, rel=1e-9)
    # with the English tokenizer each string is one token, and they differ
    assert BleuScorer(language="en").score("头痛发热咳", "头痛发热喘") == 0.0


def test_rouge_l_hand_computed() -> None:
    s = RougeLScorer()
    # LCS("a c b d", "a b c d") = 3 → P = R = F = 3/4
    assert s.score("a c b d", "a b c d") == pytest.approx(0.75)
    # LCS = 2, P = 2/3, R = 2/4 → F = 2PR/(P+R) = 4/7
    assert s.score("a b x", "a b c d") == pytest.approx(4 / 7)
    assert s.score("Fever, COUGH!", "fever cough") == pytest.approx(1.0)


def test_rouge_l_chinese_tokenised_per_character() -> None:
    assert rouge_tokens("Fever 头痛, COUGH") == ["fever", "头", "痛", "cough"]
    # characters 头痛发热咳嗽 vs 发热头痛咳嗽: LCS 4 of 6 → F = 2/3
    assert RougeLScorer().score("头痛 发热 咳嗽", "发热 头痛 咳嗽") == pytest.approx(2 / 3)
    # 高血压 vs 高血压病: LCS 3, P = 1, R = 3/4 (a jieba split would score it 0)
    assert rouge_l("高血压", "高血压病") == pytest.approx(2 * 0.75 / 1.75)
    assert RougeLScorer().score("糖尿病的症状是口渴", "糖尿病的症状是口渴") == pytest.approx(1.0)
    # rouge-score's own tokenizer drops CJK characters entirely
    assert RougeLScorer(language="en").score("头痛 发热 咳嗽", "发热 头痛 咳嗽") == 0.0


def test_entity_recall_normalised_substring() -> None:
    s = EntityRecallScorer(["Type_2 Diabetes", "ＨｂＡ1ｃ", "insulin", "type 2 diabetes", " "])
    assert s.gold == frozenset({"type 2 diabetes", "hba1c", "insulin"})
    assert s.score("Check HbA1c for TYPE 2   diabetes.", "") == pytest.approx(2 / 3)
    assert s.score("nothing relevant") == 0.0
    zh = EntityRecallScorer(["糖尿病", "胰岛素"])
    assert zh.score("糖尿病患者需要注射胰岛素") == 1.0


def test_entity_recall_needs_gold() -> None:
    with pytest.raises(ValueError):
        EntityRecallScorer(["", "  "])


@pytest.mark.parametrize(
    ("score", "expected"),
    [(0.9, "excellent"), (0.6, "excellent"), (0.59, None), (0.21, None), (0.2, "poor"), (0.0, "poor")],
)
def test_rate_thresholds(score: float, expected: str | None) -> None:
    assert rate(score, excellent_at=0.6, poor_at=0.2) == expected


def test_rate_rejects_bad_thresholds() -> None:
    with pytest.raises(ValueError):
        rate(0.5, excellent_at=0.2, poor_at=0.2)
    with pytest.raises(ValueError):
        rate(float("nan"), excellent_at=0.6, poor_at=0.2)


def test_language_detection_and_bad_language() -> None:
    assert has_cjk("what is 糖尿病")
    assert not has_cjk("diabetes insulin")
    with pytest.raises(ValueError):
        BleuScorer(language="fr")  # type: ignore[arg-type]
