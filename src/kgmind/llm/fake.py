"""Test doubles that ship with kgmind: the deterministic ``fake:`` chat model.

``get_chat_model("fake:<tag>")`` returns :class:`FakeChatModel`, so tests, demos and
Studio runs can exercise the whole graph offline and deterministically. It is not a
language model: it echoes the question and fills any schema it is held to with valid
values (:func:`fill_schema`), so a test that uses it proves wiring, not grounding.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda

from kgmind.llm.messages import message_text as _message_text

__all__ = ["FakeChatModel", "fill_schema"]


_EVIDENCE_LINE = re.compile(
    r"^\s*(?:Chain |链 )?\[?([PNCKD]\d+)\]?\s*(?:is|是)?\s*[:：.)\]]\s*(.+?)\s*$", re.M
)


def _all_text(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(_message_text(m) for m in messages)


def _question_of(messages: Sequence[BaseMessage]) -> str:
    for m in messages:
        if m.type == "human":
            text = _message_text(m)
            for marker in ("Patient input:", "Question:", "问题：", "患者输入："):
                if marker in text:
                    return text.split(marker, 1)[1].strip().splitlines()[0][:300]
    for m in messages:
        if m.type == "human":
            return _message_text(m).strip().splitlines()[-1][:300] if _message_text(m).strip() else ""
    return ""


class FakeChatModel(BaseChatModel):
    """A deterministic chat model for tests and offline demos (``get_chat_model("fake:…")``).

    It fills any schema with valid values, whatever the prompt says: a test that uses it
    tests the wiring (the graph calls the model, reads its answer, passes it on), not
    grounding; a grounded answer is proven with the real local model or with hand-made
    answers that must fail. Plain calls answer with a fixed sentence. A JSON-schema dict
    (a grounded answer's per-question schema) is answered with :func:`fill_schema`, so it
    cites the first ids the schema allows; the pydantic schemas ``HypothesisOut`` (the
    question echoed) and ``MindMapAnswer`` (up to three evidence ids found in the prompt)
    are filled from the prompt. It never calls a network.
    """

    tag: str = "fake"

    @property
    def _llm_type(self) -> str:
        return "kgmind-fake"

    def _respond(self, messages: Sequence[BaseMessage], schema_name: str | None) -> str:
        question = _question_of(messages)
        if schema_name == "HypothesisOut":
            return json.dumps(
                {"hypothesis": f"[{self.tag}] A likely answer to: {question}", "entities": []},
                ensure_ascii=False,
            )
        if schema_name == "MindMapAnswer":
            found = _EVIDENCE_LINE.findall(_all_text(messages))
            seen: dict[str, str] = {}
            for ev_id, text in found:
                seen.setdefault(ev_id, text)
            cited = list(seen.items())[:3]
            steps = [
                {"step": f"{ev_id} supports: {text[:80]}", "evidence_ids": [ev_id]} for ev_id, text in cited
            ]
            summary = f"[{self.tag}] Answer to: {question}" + (
                f" (based on {', '.join(i for i, _ in cited)})" if cited else " (from general knowledge)"
            )
            children = [
                {"label": text[:60], "evidence_ids": [ev_id], "children": []} for ev_id, text in cited
            ]
            return json.dumps(
                {
                    "summary": summary,
                    "inference_chain": steps,
                    "mind_map": {
                        "label": question[:60] or "question",
                        "evidence_ids": [],
                        "children": children,
                    },
                },
                ensure_ascii=False,
            )
        return f"[{self.tag}] {question}".strip()

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = self._respond(messages, kwargs.get("schema_name"))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    def with_structured_output(
        self,
        schema: Any,
        *,
        include_raw: bool = False,
        **kwargs: Any,
    ) -> Runnable[Any, Any]:
        """Structured output for the kgmind schemas (JSON produced by :meth:`_respond`).

        A JSON-schema dict (a grounded answer's per-question schema) is answered with
        :func:`fill_schema`, parsed to a dict.
        """
        if isinstance(schema, dict):
            filled = fill_schema(schema, f"[{self.tag}] answer")

            def _instance(msg: BaseMessage) -> Any:
                return filled

            if include_raw:
                return RunnableLambda(
                    lambda _m: {
                        "raw": AIMessage(content=json.dumps(filled)),
                        "parsed": filled,
                        "parsing_error": None,
                    }
                )
            return RunnableLambda(_instance)
        bound = self.bind(schema_name=getattr(schema, "__name__", None))

        def _parse(msg: BaseMessage) -> Any:
            return schema.model_validate_json(_message_text(msg))

        if include_raw:

            def _with_raw(msg: BaseMessage) -> dict[str, Any]:
                try:
                    return {"raw": msg, "parsed": _parse(msg), "parsing_error": None}
                except ValueError as exc:
                    return {"raw": msg, "parsed": None, "parsing_error": exc}

            return bound | RunnableLambda(_with_raw)
        return bound | RunnableLambda(_parse)


def fill_schema(schema: Mapping[str, Any], text: str = "answer") -> Any:
    """A deterministic instance of a JSON schema (the subset grounded answer schemas use).

    Arrays get ``max(minItems, 1)`` items (capped by ``maxItems``), the i-th item taking
    the i-th ``anyOf`` variant or ``enum`` value, so a grounded answer cites the first
    evidence items it may. The offline ``fake:`` model answers with it, which keeps the
    wiring tests of grounded answers free of any real model.

    Args:
        schema: The JSON schema (``$ref`` to ``#/$defs/…`` resolved against its root).
        text: The text put into free strings.

    Returns:
        A JSON value valid for ``schema``.

    """
    defs = schema.get("$defs", {})

    def fill(node: Mapping[str, Any], index: int) -> Any:
        if "$ref" in node:
            return fill(defs[str(node["$ref"]).rsplit("/", 1)[-1]], index)
        if "const" in node:
            return node["const"]
        if "enum" in node:
            values = list(node["enum"])
            return values[index % len(values)]
        if "anyOf" in node:
            variants = list(node["anyOf"])
            return fill(variants[index % len(variants)], index)
        kind = node.get("type")
        if kind == "object":
            return {k: fill(v, index) for k, v in node.get("properties", {}).items()}
        if kind == "array":
            n = max(int(node.get("minItems", 0)), 1)
            n = min(n, int(node.get("maxItems", n)))
            return [fill(node.get("items", {}), i) for i in range(n)]
        if kind == "string":
            return text[: int(node.get("maxLength", len(text)))]
        return None

    return fill(schema, 0)
