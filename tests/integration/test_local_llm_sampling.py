"""The REAL local model (Qwen2.5-Coder-0.5B) runs as its file says; grammar checking changes no token.

- LangChain's ``ChatLlamaCpp`` passes RoPE base 10000 to llama.cpp unless told otherwise;
  Qwen2.5 is trained with 1e6, so the model must be built with "from the file" (0).
- The grammar-checking sampler (greedy token checked first, whole vocabulary masked only
  when the grammar rejects it) must give exactly the tokens of llama-cpp-python's own
  chain (grammar over the whole vocabulary at every step), for a per-question answer
  schema with enums and for the hypothesis schema, while masking the vocabulary for only
  a minority of the tokens.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evidence_fixtures import pneumonia_case
from kgmind.prompts.grounded import build_answer_schema, grounded_prompt
from kgmind.prompts.hypothesis import hypothesis_prompt
from kgmind.prompts.schemas import HypothesisOut

pytestmark = [pytest.mark.llm, pytest.mark.slow]

EVIDENCE = pneumonia_case(["Chest x-ray", "Complete blood count"], ["Azithromycin", "Amoxicillin"])
QUESTION = "I have had a cough and a fever for three days. What could it be, and what should I do?"


@pytest.fixture(scope="module")
def model_path(local_llm_env: pytest.MonkeyPatch) -> Path:
    from kgmind.llm import ensure_local_model

    return ensure_local_model("local")


def _messages(prompt: Any, **values: str) -> list[dict[str, str]]:
    roles = {"system": "system", "human": "user"}
    return [{"role": roles[m.type], "content": str(m.content)} for m in prompt.format_messages(**values)]


def test_the_local_model_keeps_the_rope_base_of_its_file(model_path: Path) -> None:
    from kgmind.llm import get_chat_model

    get_chat_model.cache_clear()
    try:
        llm: Any = get_chat_model("local")
        assert float(llm.client.metadata["qwen2.rope.freq_base"]) == 1_000_000.0
        assert llm.client.context_params.rope_freq_base == 0.0  # 0 = the file's value
        assert llm.client.context_params.rope_freq_scale == 0.0
    finally:
        get_chat_model.cache_clear()


def test_grammar_checking_gives_the_tokens_of_the_full_mask(model_path: Path) -> None:
    import llama_cpp

    from kgmind.llm.local.grammar import GrammarCheckingLlama
    from kgmind.llm.local.model import LOCAL_N_CTX

    answer_schema = build_answer_schema(
        EVIDENCE,
        {
            "pneumonia": "disease",
            "chest x-ray": "test",
            "complete blood count": "test",
            "azithromycin": "medication",
            "amoxicillin": "medication",
        },
    )
    cases = [
        (
            _messages(
                grounded_prompt("en"),
                question=QUESTION,
                evidence="\n".join(f"{e.id}: {e.text}" for e in EVIDENCE),
            ),
            answer_schema,
            160,
        ),
        (_messages(hypothesis_prompt("en"), question=QUESTION), HypothesisOut.model_json_schema(), 96),
    ]
    params = {
        "model_path": str(model_path),
        "n_ctx": LOCAL_N_CTX,
        "n_batch": 512,
        "n_threads": 2,
        "verbose": False,
    }
    plain = llama_cpp.Llama(**params)
    checking = GrammarCheckingLlama(**params)
    for messages, schema, max_tokens in cases:
        outs = []
        for llm in (plain, checking):
            llm.reset()
            out = llm.create_chat_completion(
                messages=messages,
                response_format={"type": "json_object", "schema": schema},
                max_tokens=max_tokens,
                temperature=0.0,
                repeat_penalty=1.1,
            )
            outs.append((out["choices"][0]["message"]["content"], out["usage"]["completion_tokens"]))
        (text_plain, n_plain), (text_checked, n_checked) = outs
        assert text_checked == text_plain
        assert n_checked == n_plain > 10
        masked = checking.last_grammar_sampler.masked
        assert masked < n_checked / 2, f"the whole vocabulary was masked for {masked} of {n_checked} tokens"
        if n_checked < max_tokens:  # a finished answer is valid JSON of the schema's shape
            assert isinstance(json.loads(text_checked), dict)
