"""Paths and defaults read from the environment (``KGMIND_HOME``, ``KGMIND_DATA_DIR``)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_KG_NAME", "data_dir", "default_store_uri", "kgmind_home"]

#: The KG the default store holds (the shipped demo KG, imported on first use).
DEFAULT_KG_NAME = "demo"


def kgmind_home() -> Path:
    """``$KGMIND_HOME`` (default ``~/.kgmind``): stores, indexes, models, checkpoints."""
    return Path(os.environ.get("KGMIND_HOME") or Path.home() / ".kgmind").expanduser()


def data_dir() -> Path:
    """``$KGMIND_DATA_DIR`` (default ``../shared/data``): public KGs and QA sets."""
    return Path(os.environ.get("KGMIND_DATA_DIR") or "../shared/data").expanduser()


def default_store_uri(name: str = DEFAULT_KG_NAME) -> str:
    """The embedded store URI for the KG called ``name``: ``ladybug:$KGMIND_HOME/<name>``."""
    return f"ladybug:{kgmind_home() / name}"


def uri_path(uri: str, scheme: str, what: str, example: str) -> str:
    """The path after ``scheme:`` (an optional ``//`` dropped) in a ``what`` (store, checkpoint) URI.

    Raises:
        ValueError: The path is empty (``example`` shows a valid URI).
    """
    path = uri[len(scheme) + 1 :]
    if path.startswith("//"):
        path = path[2:]
    if not path.strip():
        raise ValueError(f"{what} URI '{scheme}:' needs a path, e.g. {example}")
    return path
