"""The errors a chat model raises when it cannot be built or reached: setup steps, not bugs."""

from __future__ import annotations

__all__ = ["LocalModelUnavailableError", "ModelUnavailableError"]


class ModelUnavailableError(RuntimeError):
    """A chat model cannot be built or reached; the message says how to fix it.

    The CLI prints it as one ``error:`` line: a missing package, API key or server is a
    setup step, not a bug, so a traceback would only hide the fix.
    """


class LocalModelUnavailableError(ModelUnavailableError):
    """The local GGUF model cannot be assembled (packages missing or file corrupt)."""
