"""The REAL local model (Qwen2.5-Coder-0.5B) writes schema-held answers with kgmind's schema decoder.

- a grounded answer (per-question schema from the evidence) is valid for its schema, in
  English and in Chinese, and cites only shown ids;
- most of its tokens are fixed by the schema, so the model is asked far fewer times than
  tokens are written (the speed-up, checked structurally: no timing here);
- the streamed pieces are the answer, and the answer does not depend on whether the
  prompt's system-message state was cached (every prompt is split at the same places).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from langchain_core.messages import BaseMessage

from evidence_fixtures import evidence_item, pneumonia_case, workup_item
from kgmind.models import Evidence
from kgmind.prompts.grounded import build_answer_schema, grounded_prompt

pytestmark = [pytest.mark.llm, pytest.mark.slow]

EVIDENCE_EN = pneumonia_case(["Chest x-ray", "Complete blood count"], ["Azithromycin"])
TYPES_EN = {
    "pneumonia": "disease",
    "chest x-ray": "test",
    "complete blood count": "test",
    "azithromycin": "medication",
}
WORKUP_ZH = "肺炎可做的检查包括胸部X线、血常规；肺炎的常用药物包括阿奇霉素。"
EVIDENCE_ZH = [
    workup_item("N1", WORKUP_ZH, "肺炎", ["胸部X线", "血常规"], ["阿奇霉素"]),
    evidence_item("P1", "咳嗽可能提示肺炎。", ("咳嗽", "possible_disease", "肺炎")),
]
TYPES_ZH = {"肺炎": "disease", "胸部x线": "test", "血常规": "test", "阿奇霉素": "medication"}


@pytest.fixture(scope="module")
def chat(local_llm_env: pytest.MonkeyPatch) -> Iterator[Any]:
    local_llm_env.delenv("KGMIND_LOCAL_DECODER", raising=False)
    from kgmind.llm import get_chat_model

    get_chat_model.cache_clear()
    try:
        yield get_chat_model("local")
    finally:
        get_chat_model.cache_clear()


def _messages(language: str, question: str, evidence: list[Evidence]) -> list[BaseMessage]:
    block = "\n".join(f"{e.id}: {e.text}" for e in evidence)
    return grounded_prompt(language).format_messages(question=question, evidence=block)


def _cited(value: dict[str, Any]) -> set[str]:
    ids = {i for step in value["inference_chain"] for i in step["evidence_ids"]}
    stack = list(value["mind_map"]["children"])
    while stack:
        node = stack.pop()
        ids.update(node.get("evidence_ids", []))
        stack.extend(node.get("children", []))
    return ids


@pytest.mark.parametrize(
    ("language", "question", "evidence", "types"),
    [
        ("en", "I have had a cough and a fever for three days. What could it be?", EVIDENCE_EN, TYPES_EN),
        ("zh", "我咳嗽发烧三天了，可能是什么病？", EVIDENCE_ZH, TYPES_ZH),
    ],
)
def test_grounded_answer_is_valid_and_cites_only_shown_ids(
    chat: Any, language: str, question: str, evidence: list[Evidence], types: dict[str, str]
) -> None:
    schema = build_answer_schema(evidence, types)
    bound = chat.bind(response_format={"type": "json_object", "schema": schema})
    reply = bound.invoke(_messages(language, question, evidence))
    value = json.loads(reply.content)
    jsonschema.validate(value, schema)
    cited = _cited(value)
    assert cited and cited <= {e.id for e in evidence}
    assert value["diagnoses"][0]["disease"] == evidence[0].triples[0][0]
    usage = reply.usage_metadata
    assert usage is not None and usage["output_tokens"] > 0
    decisions = reply.response_metadata["decisions"]
    assert decisions < 0.75 * usage["output_tokens"], "the schema should fix a good share of the tokens"


def test_stream_and_prefix_cache_do_not_change_the_answer(chat: Any, tmp_path: Any, monkeypatch: Any) -> None:
    from kgmind.llm.local.prefix_cache import PrefixStates

    schema = build_answer_schema(EVIDENCE_EN, TYPES_EN)
    bound = chat.bind(response_format={"type": "json_object", "schema": schema}, max_tokens=160)
    messages = _messages("en", "Fever and a dry cough since Monday. What should I do?", EVIDENCE_EN)
    states = PrefixStates(tmp_path / "empty")  # cold in memory and on disk
    monkeypatch.setattr(chat._caches, "prefix_states", states)
    cold = bound.invoke(messages).content
    assert len(states.memory)  # the system message's state was kept
    warm = bound.invoke(messages).content
    pieces = [chunk.content for chunk in bound.stream(messages)]
    assert len(pieces) > 3
    assert cold == warm == "".join(pieces)


def test_prefix_states_on_disk_serve_the_next_process(chat: Any, tmp_path: Any, monkeypatch: Any) -> None:
    """A new process (empty memory) reads the system message's state from disk: same answer, and a
    damaged or unloadable file is read past, not trusted."""
    import hashlib

    import llama_cpp

    from kgmind.llm.local.prefix_cache import PrefixStates, prefix_state_dir

    folder = tmp_path / "states"
    states = PrefixStates(folder)
    monkeypatch.setattr(chat._caches, "prefix_states", states)
    loads: list[int] = []
    real_set = llama_cpp.llama_state_seq_set_data

    def counting_set(ctx: Any, buf: Any, size: int, seq: int) -> int:
        got = real_set(ctx, buf, size, seq)
        loads.append(got)
        return got

    monkeypatch.setattr(llama_cpp, "llama_state_seq_set_data", counting_set)
    schema = build_answer_schema(EVIDENCE_EN, TYPES_EN)
    bound = chat.bind(response_format={"type": "json_object", "schema": schema}, max_tokens=120)
    messages = _messages("en", "A cough for a week and now a fever. What is it?", EVIDENCE_EN)
    states.memory.clear()
    cold = bound.invoke(messages).content
    (kept,) = folder.glob("*.kv")
    assert loads == []
    states.memory.clear()  # as a new process: nothing in memory
    assert bound.invoke(messages).content == cold
    assert len(loads) == 1 and loads[0] > 0  # the prefix came from the file
    body = kept.read_bytes()
    kept.write_bytes(body[:16] + bytes(len(body) - 16))  # damaged: its digest no longer matches
    states.memory.clear()
    loads.clear()
    assert bound.invoke(messages).content == cold
    assert loads == [] and kept.read_bytes() == body  # read past, then written again
    junk = b"not a llama.cpp state" * 10
    kept.write_bytes(hashlib.blake2b(junk, digest_size=16).digest() + junk)  # intact, but not a state
    states.memory.clear()
    loads.clear()
    assert bound.invoke(messages).content == cold
    assert loads == [0]  # llama.cpp refused it; the prompt was read from position 0
    monkeypatch.setenv("KGMIND_LOCAL_PREFIX_CACHE", "0")
    assert prefix_state_dir(chat.client) is None
    monkeypatch.delenv("KGMIND_LOCAL_PREFIX_CACHE")
    assert prefix_state_dir(chat.client) is not None


def test_the_token_table_is_built_once_per_model_file(chat: Any) -> None:
    from kgmind.llm.local.token_table import TOKEN_TABLE_CHECKS, token_table, token_table_path

    path = token_table_path(chat.client, chat.client.n_vocab())
    assert path is not None
    built = token_table(chat.client)
    assert path.is_file()
    loaded = token_table(chat.client)
    assert loaded is not built and loaded.bytes == built.bytes and loaded.index == built.index
    for name in ("content", "chars", "close_at", "east_asian", "need_after"):
        assert (getattr(loaded, name) == getattr(built, name)).all(), name
    broken = list(built.bytes)
    broken[len(broken) // TOKEN_TABLE_CHECKS] = b"not this token"  # one the load compares
    type(built)(broken).save(path)
    assert token_table(chat.client).bytes == built.bytes  # rebuilt, not trusted


def test_the_budget_of_the_answering_graph_is_counted_in_the_local_models_tokens(chat: Any) -> None:
    """Medical names cost the real model about twice the word approximation, so an exact budget keeps less."""
    from kgmind.llm import local_tokenizer
    from kgmind.retrievers import aggregate

    tokenize = local_tokenizer("local")
    assert tokenize is not None and local_tokenizer("fake:answer") is None
    drugs = (
        "Psychotic disorder can be treated with Lithium (Li), Haloperidol, Divalproex Sodium (Depakote), "
        "Aripiprazole (Abilify), Olanzapine (Zyprexa), Quetiapine (Seroquel) and Risperidone."
    )
    assert tokenize(drugs) == list(chat.client.tokenize(drugs.encode(), add_bos=False, special=False))
    assert len(tokenize(drugs)) > 1.5 * aggregate.count_tokens(drugs)
    items = [
        Evidence(
            kind="neighbor",
            text=f"{drugs} ({i})",
            triples=[("Psychotic disorder", "need_medication", f"D{i}")],
        )
        for i in range(6)
    ]
    budget = 4 * aggregate.count_tokens(items[0].text) + 4 * aggregate.ID_OVERHEAD
    approx = aggregate.select_evidence(items, budget)
    exact = aggregate.select_evidence(items, budget, tokenizer=tokenize)
    assert len(approx) == 4 and 1 <= len(exact) < len(approx)


NO_EVIDENCE_QUESTION = "Doctor, my belly hurts and I think it is my bowel. Can you help me?"


def test_an_english_prompt_gets_no_east_asian_text(chat: Any) -> None:
    """The 0.5B model drifts into Chinese in English answers; the decoder holds it to the prompt's script."""
    from kgmind.llm.local.model import LlamaTokens
    from kgmind.llm.local.token_table import token_table
    from kgmind.llm.schema_decoding import decode_json, has_east_asian
    from kgmind.prompts.mindmap import NO_EVIDENCE_EN, NO_EVIDENCE_ZH

    table = token_table(chat.client)
    assert table.east_asian.sum() > 10_000  # Qwen2.5's vocabulary is rich in CJK tokens

    def tokens(text: str) -> list[int]:
        return list(chat.client.tokenize(text.encode(), add_bos=False, special=False))

    assert not table.east_asian[tokens("Pneumonia, fever 38°C — naïve café")].any()
    assert table.east_asian[tokens("诊断")[0]]  # the first token starts a CJK character

    schema = build_answer_schema([])
    messages = grounded_prompt("en").format_messages(question=NO_EVIDENCE_QUESTION, evidence=NO_EVIDENCE_EN)
    with chat._call_lock:  # what the model writes with every token allowed
        chat._evaluate_prompt(messages)
        free = decode_json(
            LlamaTokens(chat.client),
            table,
            schema,
            max_tokens=400,
            repeat_penalty=chat.repeat_penalty,
            penalty_last_n=chat.last_n_tokens_size,
        )
    assert has_east_asian(free.text), "this question was chosen because the model drifts into Chinese on it"
    reply = chat.bind(response_format={"type": "json_object", "schema": schema}, max_tokens=400).invoke(
        messages
    )
    jsonschema.validate(json.loads(reply.content), schema)
    assert not has_east_asian(reply.content)
    # a Chinese prompt is answered in Chinese: the switch reads the prompt, it does not ban Chinese
    zh = grounded_prompt("zh").format_messages(
        question="我咳嗽发烧三天了，可能是什么病？", evidence=NO_EVIDENCE_ZH
    )
    reply = chat.bind(response_format={"type": "json_object", "schema": schema}, max_tokens=200).invoke(zh)
    assert has_east_asian(json.loads(reply.content)["summary"])
