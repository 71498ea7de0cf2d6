"""Every metric against hand-computed values."""

import math

import numpy as np
import pytest

from kgmind.eval import metrics as mt


def test_name_matching_rule_word_boundaries_plural_and_underscores():
    text = mt.normalize_name("Hearing loss; CT scan and Electrocardiograms, plus X-ray_imaging")
    assert not mt.name_in_text("ear", text)  # inside "hearing"
    assert mt.name_in_text("CT", text)
    assert mt.name_in_text("Electrocardiogram", text)  # plural
    assert mt.name_in_text("x-ray imaging", text)  # '_' == ' '
    assert not mt.name_in_text("scans", text)  # only the text may add the plural
    assert mt.name_in_text("高血压", mt.normalize_name("我有高血压病"))  # CJK: substring


def test_evidence_recall_hand_value():
    ev = "Panic disorder needs Electrocardiograms and psychotherapy."
    gold = [("panic disorder",), ("electrocardiogram",), ("biopsy",), ("depression",)]
    assert mt.evidence_recall(ev, gold) == pytest.approx(2 / 4)
    # any surface form counts
    assert mt.evidence_recall("a blood test", [("hematologic tests (blood test)", "blood test")]) == 1.0
    assert mt.evidence_recall("anything", []) is None


def test_gold_disease_hit():
    assert mt.gold_disease_hit("Hyperkalemia: check potassium", ["hyperkalemia"]) == 1.0
    assert mt.gold_disease_hit("Anemia", ["hyperkalemia", "gout"]) == 0.0
    assert mt.gold_disease_hit("Anemia", []) is None


def test_evidence_precision_and_set_agreement():
    assert mt.evidence_precision(["A", "B", "C", "D", "b"], ["b", "x"]) == pytest.approx(1 / 4)
    assert mt.evidence_precision([], ["b"]) is None
    agr = mt.set_agreement(["a", "b", "c"], ["b", "c", "d", "e"])
    assert agr == pytest.approx({"precision": 2 / 3, "recall": 2 / 4, "jaccard": 2 / 5})
    assert mt.set_agreement([], []) == {"precision": 1.0, "recall": 1.0, "jaccard": 1.0}


def test_mean_and_percentile():
    assert mt.mean([1.0, None, 3.0]) == 2.0
    assert mt.mean([None]) is None
    assert mt.percentile([4, 1, 3, 2], 50) == pytest.approx(2.5)
    assert mt.percentile([1, 2, 3, 4], 95) == pytest.approx(3.85)
    assert mt.percentile([], 50) is None


def test_one_token_counter():
    from kgmind.retrievers.aggregate import count_tokens

    assert count_tokens("hello world 你好") == math.ceil(2 * 1.3) + 2
    assert count_tokens("") == 0


def test_greedy_match_f1_hand_value():
    c = np.array([[1.0, 0.0], [0.0, 2.0]])
    r = np.array([[3.0, 0.0]])
    p, rec, f = mt.greedy_match_f1(c, r)
    assert (p, rec) == pytest.approx((0.5, 1.0))
    assert f == pytest.approx(2 * 0.5 * 1.0 / 1.5)
    assert mt.greedy_match_f1(np.zeros((0, 2)), r) == (0.0, 0.0, 0.0)


def test_rouge_l_hand_values():
    # LCS 3; P = 3/3, R = 3/6
    assert mt.rouge_l("the cat sat", "the cat sat on the mat") == pytest.approx(2 * 1 * 0.5 / 1.5)
    # Chinese by character: LCS 3; P = 1, R = 3/4
    assert mt.rouge_l("高血压", "高血压病") == pytest.approx(2 * 0.75 / 1.75)
    assert mt.rouge_l("", "x") == 0.0


def test_bleu4_hand_value():
    # p1..p4 = 4/5, 3/4, 2/3, 1/2, equal lengths (BP = 1)
    expected = (0.8 * 0.75 * (2 / 3) * 0.5) ** 0.25
    assert mt.bleu4("a b c d e", "a b c d f") == pytest.approx(expected, abs=1e-4)
    assert mt.bleu4("x y z w", "x y z w") == pytest.approx(1.0)


def test_answer_entity_recall():
    assert mt.answer_entity_recall("Take insulin.", [("insulin",), ("biopsy",)]) == 0.5


def test_unsupported_entities():
    found = mt.unsupported_entities(
        ["Gout", "Colchicine", "Allopurinol"], "[N1] Gout possible cure colchicine"
    )
    assert found == ["Allopurinol"]
    assert mt.unsupported_entities(["Fever"], "", question="I have a fever") == []


def test_extract_choice():
    assert mt.extract_choice("答案：D，因为喷雾剂……") == "D"
    assert mt.extract_choice("The answer is B.") == "B"
    assert mt.extract_choice("I think C") == "C"
    assert mt.extract_choice("no idea") is None


class _FakeEncoder(mt.TokenEncoder):
    """One-hot 'embeddings' per word: BERTScore reduces to word overlap."""

    def encode(self, text):
        vocab = ["a", "b", "c", "d"]
        rows = [np.eye(4)[vocab.index(w)] for w in text.split()]
        return np.array(rows)


def test_bertscore_with_fake_encoder_hand_value():
    # candidate a b c, reference a b d: P = 2/3, R = 2/3
    assert mt.bertscore_f1("a b c", "a b d", _FakeEncoder()) == pytest.approx(2 / 3)
