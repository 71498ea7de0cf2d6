"""Test doubles that ship with kgmind: the deterministic ``fake:`` chat model.

``get_chat_model("fake:<tag>")`` returns :class:`FakeChatModel`, so tests, demos and
Studio runs can exercise the whole graph offline and deterministically. It is not a
language model: it echoes the question and, for kgmind's schemas, fills them from the
prompt itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda

from kgmind.llm import message_text as _message_text

__all__ = ["FakeChatModel"]


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

    Plain calls answer with a fixed sentence. With structured output it fills the
    kgmind schemas from the prompt itself: the hypothesis echoes the question, and a
    mind-map answer cites the evidence ids found in the prompt's evidence block (up to
    three), so grounding checks pass. It never calls a network.
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
        :func:`kgmind.prompts.grounded.fill_schema`, parsed to a dict.
        """
        if isinstance(schema, dict):
            from kgmind.prompts.grounded import fill_schema

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
