"""The local llama.cpp chat model: one lock per loaded model, schema-held calls written by the schema decoder.

:class:`LocalChatModel` is LangChain's ``ChatLlamaCpp`` with three changes:

- every call holds the model's lock: llama.cpp is not thread-safe, and LangGraph runs
  branches and concurrent requests in threads against one cached model; copies made by
  :func:`kgmind.llm.with_max_tokens` share the lock and the caches (pydantic copies private
  attributes shallowly). Streaming holds the lock until the stream ends;
- a call bound to a JSON schema (``response_format``) that :mod:`kgmind.llm.schema_decoding`
  supports is written by that decoder, greedily (the local models run at temperature 0):
  the schema's fixed text is evaluated in batches instead of being generated token by
  token. Other calls go through llama-cpp-python's chat completion with its grammar
  (:class:`~kgmind.llm.local.grammar.GrammarCheckingLlama`);
- every prompt is evaluated from position 0, so an answer depends on its prompt only;
  the states after its system message come from :mod:`kgmind.llm.local.prefix_cache`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import llama_cpp
import numpy as np
from langchain_community.chat_models import ChatLlamaCpp
from langchain_core.language_models.chat_models import generate_from_stream
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from llama_cpp.llama_chat_format import Jinja2ChatFormatter
from pydantic import PrivateAttr, model_validator

from kgmind.llm.local.grammar import GrammarCheckingLlama
from kgmind.llm.local.prefix_cache import PrefixStates, prefix_state_dir
from kgmind.llm.local.token_table import token_table
from kgmind.llm.messages import message_text
from kgmind.llm.schema_decoding import TokenTable, has_east_asian, iter_json, supports
from kgmind.settings import get_settings

__all__ = [
    "LOCAL_MAX_TOKENS",
    "LOCAL_N_CTX",
    "LOCAL_SEED",
    "LlamaTokens",
    "LocalChatModel",
    "load_local_model",
]

#: Generation settings of the local model (deterministic, bounded).
LOCAL_N_CTX = 4096
LOCAL_MAX_TOKENS = 512
LOCAL_SEED = 42

#: ChatLlamaCpp fields handed to ``Llama(...)``, as ChatLlamaCpp's own validator hands them.
_LLAMA_FIELDS = (
    "rope_freq_scale", "rope_freq_base", "lora_path", "lora_base", "n_ctx", "n_parts", "seed",
    "f16_kv", "logits_all", "vocab_only", "use_mlock", "n_threads", "n_batch", "use_mmap",
    "last_n_tokens_size", "verbose",
)  # fmt: skip


class LlamaTokens:
    """The schema decoder's ``TokenModel`` over a ``llama_cpp.Llama`` (the caller holds its lock)."""

    def __init__(self, llama: Any) -> None:
        self._llama = llama

    def tokenize_text(self, text: bytes) -> list[int]:
        """Tokens of ``text`` (no BOS, special tokens not parsed)."""
        return list(self._llama.tokenize(text, add_bos=False, special=False))

    def eval_tokens(self, tokens: Sequence[int]) -> None:
        """Append ``tokens`` to the context and evaluate them in one batch."""
        self._llama.eval(list(tokens))

    def last_logits(self) -> Any:
        """The logits after the last evaluated token (a view into llama.cpp's buffer)."""
        ptr = llama_cpp.llama_get_logits_ith(self._llama.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self._llama.n_vocab(),))


@dataclass
class _Caches:
    """What one loaded model builds once and its copies share (used under the model's lock)."""

    formatters: dict[bool, Jinja2ChatFormatter] = field(default_factory=dict)
    tokens: TokenTable | None = None
    prefix_states: PrefixStates | None = None


class LocalChatModel(ChatLlamaCpp):
    """``ChatLlamaCpp`` with a per-model lock and the schema decoder (see the module docstring)."""

    # re-entrant: ChatLlamaCpp._generate itself runs through _stream (streaming is its default)
    _call_lock: threading.RLock = PrivateAttr(default_factory=threading.RLock)
    _caches: _Caches = PrivateAttr(default_factory=_Caches)

    @model_validator(mode="after")
    def validate_environment(self) -> Self:
        """Load the model file as a :class:`GrammarCheckingLlama` (ChatLlamaCpp's own builds a ``Llama``)."""
        params = {name: getattr(self, name) for name in _LLAMA_FIELDS}
        if self.n_gpu_layers is not None:
            params["n_gpu_layers"] = self.n_gpu_layers
        self.client = GrammarCheckingLlama(self.model_path, **{**params, **self.model_kwargs})
        return self

    # -- the calls -------------------------------------------------------------------------
    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        with self._call_lock:
            if self._decodable_schema(kwargs) is None:
                self._fresh_context()
                return super()._generate(*args, **kwargs)
            return generate_from_stream(self._stream(*args, **kwargs))

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> Iterator[Any]:
        with self._call_lock:
            schema = self._decodable_schema(kwargs)
            if schema is None:
                self._fresh_context()
                yield from super()._stream(messages, stop=stop, run_manager=run_manager, **kwargs)
                return
            for chunk in self._schema_stream(messages, schema, kwargs):
                if run_manager is not None and chunk.text:
                    run_manager.on_llm_new_token(chunk.text, chunk=chunk)
                yield chunk

    def _decodable_schema(self, kwargs: dict[str, Any]) -> dict[str, Any] | None:
        """The schema this call is bound to, when the schema decoder writes it (else None)."""
        fmt = kwargs.get("response_format")
        if not (isinstance(fmt, dict) and fmt.get("type") == "json_object"):
            return None
        schema = fmt.get("schema")
        temperature = kwargs.get("temperature", self.temperature)
        if (
            not isinstance(schema, dict)
            or get_settings().local_decoder != "schema"
            or (temperature or 0.0) > 0.0
            or kwargs.get("grammar") is not None
            or kwargs.get("logits_processor") is not None
        ):
            return None
        return schema if supports(schema) else None

    def _schema_stream(
        self, messages: list[BaseMessage], schema: dict[str, Any], kwargs: dict[str, Any]
    ) -> Iterator[ChatGenerationChunk]:
        """Write the answer with the schema decoder; the last chunk carries usage and finish reason."""
        llama = self.client
        n_prompt = self._evaluate_prompt(messages)
        max_tokens = min(kwargs.get("max_tokens", self.max_tokens) or llama.n_ctx(), llama.n_ctx() - n_prompt)
        decoding = iter_json(
            LlamaTokens(llama),
            self._token_table(),
            schema,
            max_tokens=max_tokens,
            repeat_penalty=kwargs.get("repeat_penalty", self.repeat_penalty),
            penalty_last_n=self.last_n_tokens_size,
            # an English prompt gets no Chinese: the 0.5B model drifts into it mid-sentence
            east_asian=any(has_east_asian(message_text(m)) for m in messages),
        )
        while True:
            try:
                piece = next(decoding)
            except StopIteration as done:
                result = done.value
                break
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
        usage = UsageMetadata(
            input_tokens=n_prompt,
            output_tokens=result.completion_tokens,
            total_tokens=n_prompt + result.completion_tokens,
        )
        info = {
            "finish_reason": result.finish_reason,
            "decisions": result.decisions,
            "cut_strings": list(result.cut),
        }
        yield ChatGenerationChunk(
            message=AIMessageChunk(content="", usage_metadata=usage, response_metadata=info),
            generation_info=info,
        )

    # -- the prompt --------------------------------------------------------------------------
    def _fresh_context(self) -> None:
        # llama.cpp reuses the KV cache of whatever prompt came before when it shares a
        # prefix; the reused prefix was computed in another batch shape, so greedy decoding
        # could differ with the order of questions (two threads vs a serial run did, in CI).
        # Evaluating every prompt from position 0 makes an answer depend on its prompt only.
        self.client.reset()

    def _evaluate_prompt(self, messages: list[BaseMessage]) -> int:
        """Evaluate the prompt from position 0, message by message; returns its length in tokens.

        Every prefix that ends a message (but the last) is evaluated as its own batch, and
        its state is kept (:class:`PrefixStates`): the next prompt with the same system
        message starts from there. A prompt is always split at the same places, whether its
        prefix is kept or not, so an answer still depends on its prompt only (the reason
        every call starts from position 0).
        """
        llama = self.client
        dicts = self._create_message_dicts(messages)
        tokens = self._tokens(dicts, True)
        if len(tokens) >= llama.n_ctx():
            raise ValueError(f"Requested tokens ({len(tokens)}) exceed context window of {llama.n_ctx()}")
        bounds = self._message_bounds(dicts, tokens)
        states = self._prefix_states()
        self._fresh_context()
        start = next((b for b in reversed(bounds) if states.restore(llama, tuple(tokens[:b]))), 0)
        for b in [*(x for x in bounds if x > start), len(tokens)]:
            llama.eval(tokens[start:b])
            start = b
            if b < len(tokens):
                states.keep(llama, tuple(tokens[:b]))
        return len(tokens)

    def _message_bounds(self, dicts: list[dict[str, Any]], tokens: list[int]) -> list[int]:
        """Where in ``tokens`` each message but the last ends (the prefixes whose states are kept)."""
        bounds: list[int] = []
        for k in range(1, len(dicts)):
            head = self._tokens(dicts[:k], False)
            if head and head == tokens[: len(head)] and (not bounds or len(head) > bounds[-1]):
                bounds.append(len(head))
        return bounds

    def _tokens(self, messages: list[Any], generation_prompt: bool) -> list[int]:
        rendered = self._formatter(generation_prompt)(messages=messages)
        text = rendered.prompt.encode("utf-8")
        return list(self.client.tokenize(text, add_bos=not rendered.added_special, special=True))

    def _formatter(self, generation_prompt: bool) -> Jinja2ChatFormatter:
        """The model's chat template (as llama-cpp-python's chat handler renders it), built once."""
        formatter = self._caches.formatters.get(generation_prompt)
        if formatter is None:
            llama = self.client
            eos, bos = llama.token_eos(), llama.token_bos()
            formatter = self._caches.formatters[generation_prompt] = Jinja2ChatFormatter(
                template=llama.metadata["tokenizer.chat_template"],
                eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
                bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
                add_generation_prompt=generation_prompt,
                stop_token_ids=[eos],
            )
        return formatter

    # -- built once per model ----------------------------------------------------------------
    def _prefix_states(self) -> PrefixStates:
        if self._caches.prefix_states is None:
            self._caches.prefix_states = PrefixStates(prefix_state_dir(self.client))
        return self._caches.prefix_states

    def _token_table(self) -> TokenTable:
        if self._caches.tokens is None:
            self._caches.tokens = token_table(self.client)
        return self._caches.tokens


def load_local_model(path: Path, threads: int) -> LocalChatModel:
    """Load the GGUF file at ``path`` as kgmind runs it: greedy, seeded, bounded, ``threads`` threads."""
    return LocalChatModel(
        model_path=str(path),
        n_ctx=LOCAL_N_CTX,
        n_batch=512,
        # ChatLlamaCpp passes its own RoPE defaults (base 10000, scale 1) to llama.cpp, which
        # override the GGUF's: Qwen2.5 is trained with base 1e6, and ran with the wrong
        # positions until this. 0 means "as the model file says".
        rope_freq_base=0.0,
        rope_freq_scale=0.0,
        temperature=0.0,
        max_tokens=LOCAL_MAX_TOKENS,
        n_threads=threads,
        seed=LOCAL_SEED,
        verbose=False,
        # llama.cpp's fused attention: prompts are read ~9 % faster on the 2-core CPU
        # (800 tokens: 150 -> 164 tokens/s), and the evidence prompt is most of the time
        model_kwargs={"flash_attn": True, "n_threads_batch": threads},
    )
