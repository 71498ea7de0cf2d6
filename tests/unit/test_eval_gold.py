"""Derived gold: surface forms, leftmost-longest matching, agreement, splits and sampling."""

from pathlib import Path

import pytest

from kgmind.eval import datasets as ds
from kgmind.eval import gold as gd

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "eval"


@pytest.fixture()
def vocab():
    return gd.load_emckg_vocabulary(str(FIX / "format_dataset.csv"))


def test_surface_forms():
    assert gd.surface_forms("Hematologic tests (Blood test)") == (
        "hematologic tests (blood test)",
        "hematologic tests",
        "blood test",
    )
    assert gd.surface_forms("Other diagnostic procedures (interview; evaluation; consultation)") == (
        "other diagnostic procedures (interview; evaluation; consultation)",
        "other diagnostic procedures",
    )
    assert gd.surface_forms("Physical therapy exercises (Exercises)") == (
        "physical therapy exercises (exercises)",
        "physical therapy exercises",
    )
    assert gd.surface_forms("Air") == ()


def test_vocabulary_types_and_comma_names(vocab):
    assert vocab.type_of("panic disorder") == "disease"
    assert vocab.type_of("Psychotherapy") == "test"
    assert vocab.type_of("Vitamin B 12, Folic Acid") == "medication"  # literal_eval, not comma split
    assert vocab.type_of("Weakness") is None  # symptoms are not gold types
    # "Depression" is a disease; its test "Depression screen" is a separate entity
    assert vocab.type_of("Depression") == "disease"


def test_leftmost_longest_and_aliases(vocab):
    found = [e.name for e in vocab.matcher.find("We will perform a depression screen and give Xanax.")]
    assert found == ["Depression screen (Depression screening)", "Alprazolam (Xanax)"]
    found = [e.name for e in vocab.matcher.find("Kidney function tests, then Depression.")]
    assert found == ["Kidney function tests (Kidney function test)", "Depression"]
    assert vocab.matcher.find("Insulinoma is different") == []  # word boundary


def test_derive_gold_on_fixture_dialogues(vocab):
    dl = ds.load_dialogues(FIX / "dialogues.json")
    names = [[e.name for e in gd.derive_gold(d.answer, vocab)] for d in dl]
    assert names[0] == [
        "Panic disorder",
        "Psychotherapy",
        "Electrocardiogram",
        "Depression screen (Depression screening)",
    ]
    assert names[1] == [
        "Vocal cord polyp",
        "Tracheoscopy and laryngoscopy with biopsy",
        "Esomeprazole (Nexium)",
    ]
    assert names[3] == []
    assert [e.name for e in gd.derive_gold(dl[4].answer, vocab, types=("medication",))] == [
        "Sertraline (Zoloft)"
    ]


def test_gold_agreement_hand_values():
    agr = gd.gold_agreement([(["a", "b"], ["a", "c"]), (["x"], ["x"])])
    # row 1: P 1/2 R 1/2 J 1/3; row 2: all 1
    assert agr["precision"] == pytest.approx(0.75)
    assert agr["recall"] == pytest.approx(0.75)
    assert agr["jaccard"] == pytest.approx((1 / 3 + 1) / 2)
    assert agr["micro_precision"] == pytest.approx(2 / 3)
    assert agr["rows"] == 2


def test_sample_is_seeded_and_keeps_order():
    items = list(range(100))
    s0 = gd.sample(items, 10, seed=0)
    assert s0 == sorted(s0) and len(set(s0)) == 10
    assert s0 == gd.sample(items, 10, seed=0)
    assert s0 != gd.sample(items, 10, seed=1)
    assert gd.sample(items, None) == items and gd.sample(items, 500) == items
