"""One model call whose answer is read into a pydantic schema, tolerant of tiny models.

Every model is held to the schema where it can be (structured output for API models; the
schema as ``response_format`` for the local llama.cpp ones, written by the schema decoder
or llama.cpp's grammar), and whatever still fails to validate goes to a tolerant text parser.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import BaseModel

from kgmind.llm.messages import message_text
from kgmind.settings import get_settings

__all__ = ["StructuredResult", "invoke_structured", "is_llama_cpp", "uses_native_structured_output"]

S = TypeVar("S", bound=BaseModel)


@dataclass
class StructuredResult:
    """What :func:`invoke_structured` returns.

    Attributes:
        value: The parsed schema instance.
        raw: The raw model output text (empty when the model returned an object).
        used_fallback: True when the tolerant text parser produced ``value``.
        cut: Free strings of ``value`` that the local schema decoder ended at their
            ``maxLength`` where the model had not ended them (``DecodeResult.cut``).

    """

    value: Any
    raw: str
    used_fallback: bool
    cut: frozenset[str] = frozenset()


def is_llama_cpp(llm: Any) -> bool:
    """Whether ``llm`` is (a subclass of) LangChain's ``ChatLlamaCpp``."""
    return any(cls.__name__ == "ChatLlamaCpp" for cls in type(llm).__mro__)


def uses_native_structured_output(llm: BaseChatModel) -> bool:
    """Whether :func:`invoke_structured` should use the model's ``with_structured_output``.

    True for every model, including llama.cpp ones: holding tiny models to the schema
    (by the schema decoder, or llama.cpp's grammar) keeps them on it and makes them stop at
    the closing brace (unconstrained, the 0.5B model rambles to ``max_tokens`` and was slower
    overall). Set ``KGMIND_LOCAL_GRAMMAR=0`` to let llama.cpp models answer in free text,
    read by the tolerant parser.
    """
    if is_llama_cpp(llm):
        return get_settings().local_grammar
    return True


def invoke_structured(
    llm: Any,
    schema: type[S],
    messages: Sequence[BaseMessage],
    fallback: Callable[[str], S],
    config: RunnableConfig | None = None,
    json_schema: dict[str, Any] | None = None,
) -> StructuredResult:
    """One LLM call whose answer is parsed into ``schema``, tolerant of tiny models.

    ``llm`` may be a chat model (its ``with_structured_output(schema, include_raw=True)``
    is used; models without it are called plainly) or any Runnable (e.g. a test fake)
    returning a schema instance, a dict, a message or text. Whatever fails to validate
    is handed to ``fallback`` (a tolerant text parser). Exactly one model call is made.

    Args:
        llm: Chat model or Runnable.
        schema: Pydantic model of the expected output.
        messages: The prompt.
        fallback: Text parser used when structured parsing fails.
        config: Runnable config (run name, metadata, callbacks).
        json_schema: A JSON schema the model is held to instead of ``schema``'s own (a
            per-question schema with enums); ``schema`` still reads the result.

    Returns:
        A :class:`StructuredResult`.

    """
    runnable, schema_only = _structured_runnable(llm, schema, json_schema)
    out = runnable.invoke(list(messages), config=config)
    if schema_only:
        raw_text = message_text(out)
        cut = frozenset(getattr(out, "response_metadata", {}).get("cut_strings") or ())
        try:
            return StructuredResult(schema.model_validate_json(raw_text), raw_text, False, cut)
        except ValueError:  # cut off at max_tokens: the tolerant parser keeps what is there
            return StructuredResult(fallback(raw_text), raw_text, True)
    return _read_structured(out, schema, fallback)


def _structured_runnable(
    llm: Any, schema: type[BaseModel], json_schema: dict[str, Any] | None
) -> tuple[Runnable[Any, Any], bool]:
    """What to invoke for a structured call, and whether it is bound to the schema alone (llama.cpp)."""
    if not (isinstance(llm, BaseChatModel) and uses_native_structured_output(llm)):
        return llm, False
    if is_llama_cpp(llm):
        # the schema as response_format, and nothing else: bound as a tool, the schema would be
        # written into the prompt by the chat template (thousands of tokens for enum schemas)
        fmt = {"type": "json_object", "schema": json_schema or schema.model_json_schema()}
        return llm.bind(response_format=fmt), True
    try:
        return llm.with_structured_output(json_schema or schema, include_raw=True), False
    except (NotImplementedError, ValueError, TypeError):
        return llm, False


def _read_structured(out: Any, schema: type[S], fallback: Callable[[str], S]) -> StructuredResult:
    """Read what a structured call returned: a raw/parsed pair, an instance, a dict, a message or text."""
    if isinstance(out, dict) and "raw" in out and "parsed" in out:
        parsed = out.get("parsed")
        raw_text = message_text(out.get("raw"))
        if isinstance(parsed, schema):
            return StructuredResult(parsed, raw_text, False)
        if isinstance(parsed, dict):
            try:
                return StructuredResult(schema.model_validate(parsed), raw_text, False)
            except ValueError:
                pass
        return StructuredResult(fallback(raw_text), raw_text, True)
    if isinstance(out, schema):
        return StructuredResult(out, "", False)
    if isinstance(out, dict):
        try:
            return StructuredResult(schema.model_validate(out), "", False)
        except ValueError:
            return StructuredResult(fallback(json.dumps(out, ensure_ascii=False)), "", True)
    raw_text = message_text(out)
    return StructuredResult(fallback(raw_text), raw_text, True)
