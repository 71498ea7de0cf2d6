"""kgmind.llm.schema_decoding with a fake byte-level model: valid JSON under any logits, fixed text batched.

The fake model's vocabulary is every printable byte plus the multi-byte tokens a real
BPE vocabulary has around JSON (``":"``, ``", "``, ``.",`` …); its tokenizer takes the
longest token first. Its logits are either seeded noise (any output must still be valid
for the schema) or a preference for one target text (the decoder must write exactly it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import jsonschema
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evidence_fixtures import evidence_item, pneumonia_case
from kgmind.llm.schema_decoding import (
    SchemaNotSupportedError,
    TokenTable,
    decode_json,
    has_east_asian,
    iter_json,
    supports,
)
from kgmind.prompts.grounded import build_answer_schema
from kgmind.prompts.schemas import HypothesisOut

MULTI = [
    '{"',
    '":',
    '":"',
    '": "',
    '", "',
    '",',
    '"]',
    '"}',
    '."',
    '.",',
    '"],',
    '"},',
    ' "',
    "[{",
    "},",
    "}]",
    "Pneu",
    "monia",
    "Pneumonia",
    "Cough",
    "Fever",
    "Chest",
    " x-ray",
    "Amox",
    "icillin",
    " the",
    " a",
    "es",
    "N1",
    "P1",
    "P10",
    '\\"',
    "\n",
    ' ""',
]
ZH = "诊".encode()  # a CJK character split over two tokens, as byte-level BPE does
VOCAB = [b""] + [bytes([c]) for c in range(0x20, 0x7F)] + [m.encode() for m in MULTI] + [ZH[:2], ZH[2:]]


class FakeModel:
    """A model over :data:`VOCAB` whose logits come from ``pick(text_so_far) -> logits``."""

    def __init__(self, pick: Any) -> None:
        self.table = TokenTable(VOCAB)
        self.pick = pick
        self.text = b""
        self.evals: list[int] = []

    def tokenize_text(self, text: bytes) -> list[int]:
        out, i = [], 0
        by_len = sorted(range(1, len(VOCAB)), key=lambda t: -len(VOCAB[t]))
        while i < len(text):
            tok = next(t for t in by_len if VOCAB[t] and text.startswith(VOCAB[t], i))
            out.append(tok)
            i += len(VOCAB[tok])
        return out

    def eval_tokens(self, tokens: Sequence[int]) -> None:
        self.evals.append(len(tokens))
        self.text += b"".join(VOCAB[t] for t in tokens)

    def last_logits(self) -> np.ndarray:
        return np.asarray(self.pick(self.text), dtype=np.float32)


def noise(seed: int) -> Any:
    def pick(text: bytes) -> np.ndarray:
        digest = hashlib.sha256(seed.to_bytes(4, "little") + text).digest()
        return np.random.default_rng(int.from_bytes(digest[:8], "little")).normal(size=len(VOCAB))

    return pick


def wants(target: str) -> Any:
    """Logits of a model that wants to write ``target``: the longest token continuing it wins."""
    goal = target.encode()

    def pick(text: bytes) -> np.ndarray:
        rest = goal[len(text) :] if goal.startswith(text) else b""
        return np.array([float(len(b)) if b and rest.startswith(b) else -1.0 for b in VOCAB])

    return pick


EVIDENCE = [
    *pneumonia_case(["Chest x-ray"], ["Amoxicillin"]),
    evidence_item("P10", "Fever may be a sign of Flu.", ("Fever", "possible_disease", "Flu")),
]
TYPES = {"pneumonia": "disease", "flu": "disease", "chest x-ray": "test", "amoxicillin": "medication"}
SCHEMAS = {
    "grounded": build_answer_schema(EVIDENCE, TYPES),
    "flat": build_answer_schema(EVIDENCE[1:]),
    "no evidence": build_answer_schema([]),
    "hypothesis": HypothesisOut.model_json_schema(),
    "constant items": {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string", "const": "x"}, "maxItems": 3},
            "codes": {"type": "array", "items": {"const": 5}, "maxItems": 2},
            "boxes": {"type": "array", "items": {"const": {"a": 1}}, "maxItems": 2},
        },
        "required": ["tags", "codes", "boxes"],
    },
}


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1), name=st.sampled_from(sorted(SCHEMAS)), penalty=st.sampled_from([1.0, 1.1])
)
def test_any_logits_give_json_valid_for_the_schema(seed: int, name: str, penalty: float) -> None:
    schema = SCHEMAS[name]
    model = FakeModel(noise(seed))
    result = decode_json(model, model.table, schema, max_tokens=4000, repeat_penalty=penalty)
    assert result.finish_reason == "stop"
    value = json.loads(result.text)
    jsonschema.validate(value, schema)
    # what the model evaluated is the text written, up to the unevaluated tail
    assert result.text.encode().startswith(model.text)
    assert set(result.cut) <= set(_strings(value)), "a reported cut is a string of the value"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [s for item in items for s in _strings(item)]


def test_enum_arrays_never_repeat_a_choice() -> None:
    schema = {
        "type": "array",
        "items": {"enum": ["Cough", "Fever", "Chest x-ray"]},
        "minItems": 3,
        "maxItems": 3,
    }
    model = FakeModel(wants('["Cough", "Cough", "Cough"]'))
    value = json.loads(decode_json(model, model.table, schema, max_tokens=100).text)
    assert sorted(value) == ["Chest x-ray", "Cough", "Fever"]


def test_the_decoder_writes_what_the_model_wants_with_its_spacing() -> None:
    target = '{"hypothesis":"Pneumonia, I think.", "entities": ["Cough", "Fever"]}'
    model = FakeModel(wants(target))
    assert decode_json(model, model.table, SCHEMAS["hypothesis"], max_tokens=500).text == target


def test_fixed_text_is_evaluated_in_batches() -> None:
    target = json.dumps(
        {
            "inference_chain": [{"evidence_ids": ["P1"], "about": "Pneumonia", "step": "a"}],
            "mind_map": {
                "label": "a",
                "children": [{"label": "Fever", "evidence_ids": ["P1"]}],
            },
            "diagnoses": [{"disease": "Pneumonia", "tests": ["Chest x-ray"], "medications": ["Amoxicillin"]}],
            "own_knowledge": [],
            "summary": "a",
        }
    )
    model = FakeModel(wants(target))
    result = decode_json(model, model.table, SCHEMAS["grounded"], max_tokens=500)
    jsonschema.validate(json.loads(result.text), SCHEMAS["grounded"])
    assert result.completion_tokens > 3 * result.decisions  # most tokens were fixed by the schema
    assert len(model.evals) <= result.decisions + 1  # one evaluation per decision, fixed text riding along
    assert max(model.evals) > 5


def test_a_closing_token_with_content_ends_the_string() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}
    target = '{"a": "Fever.", "b": "x"}'  # the model wants '.",' as one token
    model = FakeModel(wants(target))
    assert json.loads(decode_json(model, model.table, schema, max_tokens=100).text) == {
        "a": "Fever.",
        "b": "x",
    }


def test_max_length_and_the_token_limit() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "minLength": 1, "maxLength": 7}}}
    model = FakeModel(wants('{"s": "Pneumonia Pneumonia"}'))
    assert json.loads(decode_json(model, model.table, schema, max_tokens=100).text) == {"s": "Pneumon"}
    model = FakeModel(noise(3))
    cut = decode_json(model, model.table, SCHEMAS["grounded"], max_tokens=12)
    assert cut.finish_reason == "length"
    assert cut.completion_tokens <= 12
    with pytest.raises(ValueError):
        json.loads(cut.text)


@pytest.mark.parametrize(
    ("wanted", "bound", "written", "cut"),
    [
        ("Pneumonia Pneumonia", 7, "Pneumon", True),  # the model writes on: cut inside a word
        ("Cough.", 12, "Cough.", False),  # the model ends it itself
        ("Fever", 5, "Fever", True),  # filled exactly: the model was not asked whether it ends there
        ("Amoxicillin", 9, None, True),  # "icillin" does not fit after "Amox": the bound ends it
    ],
)
def test_strings_the_bound_ended_are_reported_and_those_the_model_ended_are_not(
    wanted: str, bound: int, written: str | None, cut: bool
) -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "maxLength": bound}}}
    model = FakeModel(wants(json.dumps({"s": wanted})))
    result = decode_json(model, model.table, schema, max_tokens=100)
    value = json.loads(result.text)["s"]
    assert value == written if written is not None else value.startswith("Amox") and len(value) <= bound
    assert result.cut == ((value,) if cut else ())
    assert result.text.encode().startswith(model.text)  # the report reaches neither the model nor the text


def _wants_chinese(seed: int) -> Any:
    """Noise, but the first byte-token of a CJK character always wins (its second one after it)."""
    lead, tail = VOCAB.index(ZH[:2]), VOCAB.index(ZH[2:])

    def pick(text: bytes) -> np.ndarray:
        logits = noise(seed)(text)
        logits[tail if text.endswith(ZH[:2]) else lead] = 50.0
        return logits

    return pick


@pytest.mark.parametrize("seed", range(5))
def test_east_asian_characters_only_where_the_prompt_has_them(seed: int) -> None:
    schema = {
        "type": "object",
        "properties": {"s": {"type": "string", "maxLength": 12}, "t": {"type": "string", "maxLength": 12}},
    }
    model = FakeModel(_wants_chinese(seed))
    allowed = json.loads(decode_json(model, model.table, schema, max_tokens=100).text)
    assert "诊" in allowed["s"]  # the model writes it when it may
    model = FakeModel(_wants_chinese(seed))
    held = json.loads(decode_json(model, model.table, schema, max_tokens=100, east_asian=False).text)
    assert not has_east_asian(held["s"] + held["t"])
    assert held["s"] and held["t"]  # the strings go on in other characters


def test_east_asian_text_and_tokens() -> None:
    for text in ("lack of休息", "咳嗽", "せき", "기침", "肺炎。"):
        assert has_east_asian(text)
    for text in ("Fever, cough — 38°C", "naïve café", "Ω ≥ 2", ""):
        assert not has_east_asian(text)
    table = TokenTable(VOCAB)
    assert table.east_asian[VOCAB.index(ZH[:2])]
    assert not table.east_asian[VOCAB.index(ZH[2:])]  # a continuation alone starts nothing
    assert table.east_asian.sum() == 1


def test_repeat_penalty_moves_the_choice_off_a_repeated_token() -> None:
    schema = {
        "type": "object",
        "properties": {"x": {"enum": ["Cough", "Fever"]}, "y": {"enum": ["Cough", "Fever"]}},
    }

    def pick(text: bytes) -> np.ndarray:
        logits = np.full(len(VOCAB), -5.0)
        logits[VOCAB.index(b"Cough")] = 2.0
        logits[VOCAB.index(b"Fever")] = 1.9
        return logits

    model = FakeModel(pick)
    plain = json.loads(decode_json(model, model.table, schema, max_tokens=50).text)
    model = FakeModel(pick)
    penalised = json.loads(decode_json(model, model.table, schema, max_tokens=50, repeat_penalty=1.1).text)
    assert plain == {"x": "Cough", "y": "Cough"}
    assert penalised == {"x": "Cough", "y": "Fever"}  # 2.0 / 1.1 < 1.9 once "Cough" was written


def test_stream_pieces_add_up_to_the_text() -> None:
    model = FakeModel(noise(7))
    gen = iter_json(model, model.table, SCHEMAS["grounded"], max_tokens=4000)
    pieces: list[str] = []
    while True:
        try:
            pieces.append(next(gen))
        except StopIteration as done:
            result = done.value
            break
    assert len(pieces) > 5
    assert "".join(pieces) == result.text


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "integer"},
        {"type": "object", "properties": {"n": {"type": "number"}}},
        {"anyOf": [{"type": "string"}, {"type": "null"}]},
        {"enum": [1, 2]},
        {"$ref": "#/definitions/x"},
    ],
)
def test_schemas_outside_the_subset_are_refused(schema: dict[str, Any]) -> None:
    assert not supports(schema)
    model = FakeModel(noise(0))
    with pytest.raises(SchemaNotSupportedError):
        decode_json(model, model.table, schema, max_tokens=10)
    assert model.evals == []  # refused before anything was generated


def test_kgmind_schemas_are_supported() -> None:
    for schema in SCHEMAS.values():
        assert supports(schema)


def test_a_saved_token_table_loads_as_built_and_a_damaged_one_does_not(tmp_path) -> None:
    built = TokenTable(VOCAB)
    path = tmp_path / "t" / "table.npz"
    built.save(path)
    loaded = TokenTable.load(path)
    assert loaded is not None
    assert loaded.bytes == built.bytes and loaded.index == built.index
    for name in ("content", "chars", "close_at", "east_asian", "need_after"):
        got, want = getattr(loaded, name), getattr(built, name)
        assert got.dtype == want.dtype and np.array_equal(got, want), name
    assert loaded.starting_with(b"Pneu").tolist() == built.starting_with(b"Pneu").tolist()
    assert list(path.parent.iterdir()) == [path]  # written whole, no temporary left
    # the loaded table decodes as the built one does
    schema = build_answer_schema(EVIDENCE, TYPES)
    texts = [decode_json(FakeModel(noise(3)), t, schema, max_tokens=400).text for t in (built, loaded)]
    assert texts[0] == texts[1] and json.loads(texts[0])
    assert TokenTable.load(tmp_path / "missing.npz") is None
    path.write_bytes(path.read_bytes()[:100])  # cut short
    assert TokenTable.load(path) is None
    other = TokenTable(VOCAB)
    other.FORMAT = TokenTable.FORMAT + 1  # an older or newer layout is rebuilt, not read
    other.save(path)
    assert TokenTable.load(path) is None
