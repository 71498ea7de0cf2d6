"""Loaders on small fixture files in the upstream formats (and on the shared data when present)."""

import json
import os
from pathlib import Path

import pytest

from kgmind.eval import datasets as ds

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "eval"


def test_parse_ner_output_variants():
    assert ds.parse_ner_output("<CLS>Q text<SEP>The extracted entities are A, B, c<EOS>") == (
        "Q text",
        ["A", "B", "c"],
    )
    assert ds.parse_ner_output("<CLS>Q<SEP>The extracted entities are A<EntityMarker>B: x<EOS>")[1] == [
        "A",
        "B: x",
    ]
    assert ds.parse_ner_output("<CLS>Q<SEP>The extracted entities are A, B")[1] == ["A", "B"]  # no <EOS>
    assert ds.parse_ner_output("Sorry, there was no question.") == ("Sorry, there was no question.", [])
    assert ds.parse_ner_output("<CLS>Q<SEP>The extracted entities are <EOS>") == ("Q", [])


def test_load_dialogues_ner_and_align_by_id():
    dl = ds.load_dialogues(FIX / "dialogues.json")
    ner = ds.load_ner(FIX / "ner_chatgpt.jsonl")
    assert [d.id for d in dl] == [0, 1, 2, 3, 4]
    ds.align_ner(dl, list(reversed(ner)))  # by id: order does not matter
    assert dl[0].question_entities == ["Panic attacks", "Frequent panic attacks"]
    assert dl[1].question_entities == ["Hoarse voice", "Duration: few weeks"]
    assert dl[2].question_entities == ["Weakness", "Fatigue", "Muscle cramps"]
    assert dl[3].question_entities == []  # ChatGPT refusal
    assert dl[4].answer_entities == ["Depression", "Zoloft"]


def test_align_by_order_when_ids_missing(tmp_path):
    rows = [json.loads(x) for x in (FIX / "ner_chatgpt.jsonl").read_text().splitlines()]
    p = tmp_path / "ner.jsonl"
    p.write_text("\n".join(json.dumps({k: v for k, v in r.items() if k != "id"}) for r in rows))
    dl = ds.align_ner(ds.load_dialogues(FIX / "dialogues.json"), ds.load_ner(p))
    assert dl[4].question_entities == ["Sadness", "Hopelessness"]
    with pytest.raises(ValueError, match="count"):
        ds.align_ner(ds.load_dialogues(FIX / "dialogues.json"), ds.load_ner(p)[:3])


def test_load_gold_keeps_duplicate_ids_and_underscores():
    gold = ds.load_gold(FIX / "gold_kg_entities.jsonl")
    assert [g.id for g in gold] == [0, 1, 1]
    assert gold[0].output_kg[:2] == ["Psychotherapy", "Panic disorder"]
    assert gold[1].input_kg == ["Hoarse voice"]


def test_load_cmcqa_and_explaincpe():
    qa = ds.load_cmcqa(FIX / "qa_ner.jsonl")
    assert qa[0].question_kg == ["小儿金翘颗粒", "发烧", "咳嗽", "流鼻涕"]
    cpe = ds.load_explaincpe(FIX / "explaincpe_test.json")
    assert [c.answer for c in cpe] == ["D", "B"] and len(cpe[0].options) == 5


def test_explaincpe_rejects_bad_answer(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps([{"id": 0, "question": "q", "options": ["a", "b"], "answer": "E"}]))
    with pytest.raises(ValueError, match="answer"):
        ds.load_explaincpe(p)


def test_medical_dialogue_zh_gb18030_multiline_and_skips():
    raw = (FIX / "medical_dialogue_zh" / "sample_gb18030.csv").read_bytes()
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")  # the fixture really is GB18030
    rows = ds.load_medical_dialogue_zh(FIX / "medical_dialogue_zh")
    assert len(rows) == 2  # the row without ask is skipped
    assert rows[0].department == "心血管科"
    assert "\n" in rows[1].ask
    assert rows[0].question.startswith("高血压患者能吃党参吗？")


DATA = Path(os.environ.get("KGMIND_DATA_DIR") or Path(__file__).resolve().parents[3] / "shared" / "data")


@pytest.mark.data
@pytest.mark.skipif(not (DATA / "genmedgpt5k" / "dialogues.json").exists(), reason="shared data not found")
def test_real_genmedgpt5k_alignment(monkeypatch):
    monkeypatch.setenv("KGMIND_DATA_DIR", str(DATA))
    dl = ds.load_dialogues()
    ner = ds.load_ner()
    assert len(dl) == len(ner) and all(r.id is not None for r in ner)
    assert [d.id for d in dl] == [r.id for r in ner]  # rows align by id and by order
    ds.align_ner(dl, ner)
    assert sum(1 for d in dl if d.question_entities) > 0.99 * len(dl)
    assert len(ds.load_gold()) == 203
