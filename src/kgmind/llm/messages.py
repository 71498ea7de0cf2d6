"""The text of a model reply, whatever shape the model gave it (content blocks, tool calls, a dict)."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import BaseMessage

__all__ = ["message_text"]


def message_text(msg: Any) -> str:
    """The text of a model reply: its content blocks, tool-call arguments and cut-off tool calls."""
    if isinstance(msg, BaseMessage):
        parts: list[str] = []
        content = msg.content
        if isinstance(content, str):
            parts.append(content)
        else:
            for block in content:
                if isinstance(block, str):
                    parts.append(block)
                elif isinstance(block, dict) and block.get("type") == "text":
                    parts.append(str(block.get("text", "")))
        for call in getattr(msg, "tool_calls", None) or []:
            parts.append(json.dumps(call.get("args", {}), ensure_ascii=False))
        for bad in getattr(msg, "invalid_tool_calls", None) or []:  # e.g. JSON cut off at max_tokens
            parts.append(str(bad.get("args") or ""))
        return "\n".join(p for p in parts if p)
    if isinstance(msg, dict):
        return json.dumps(msg, ensure_ascii=False)
    return str(msg)
