"""The compiled graph as a plain LangChain Runnable, for embedding in LCEL chains."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import Runnable

from kgmind.graphs.context import Context

__all__ = ["as_runnable", "coerce_context"]


def coerce_context(context: Context | Mapping[str, Any] | None) -> Context:
    """Return a :class:`Context` from a Context, a mapping of its fields, or None (defaults)."""
    if context is None:
        return Context()
    if isinstance(context, Context):
        return context
    return Context(**dict(context))


def as_runnable(context: Context | Mapping[str, Any] | None = None) -> Runnable[Any, Any]:
    """Return the kgmind graph bound to ``context``: ``invoke({"question": …})`` returns the answer dict.

    Args:
        context: Run settings (a :class:`Context` or a dict of its fields).

    Returns:
        ``graph.bind(context=…, stream_mode="values")``.

    """
    from kgmind.graphs.pipeline import graph

    return graph.bind(context=coerce_context(context), stream_mode="values")
