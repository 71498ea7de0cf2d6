"""Persistence for CLI runs: a SQLite checkpointer at ``$KGMIND_HOME/checkpoints.sqlite``.

The thread id of a CLI run is its run id, so ``kgmind feedback RUN_ID`` can load the
run's final state (evidence, citations) long after the answer was printed. Studio
and the LangGraph server bring their own checkpointer and do not use this module.
"""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph.state import CompiledStateGraph

from kgmind.settings import kgmind_home

__all__ = ["SERDE_ALLOWED", "checkpoint_path", "compile_persistent", "get_checkpointer", "load_run_state"]

#: kgmind's pydantic types stored in checkpoints (allowed for msgpack round-trips).
SERDE_ALLOWED: list[tuple[str, str]] = [
    ("kgmind.models", "Evidence"),
    ("kgmind.models", "LinkedEntity"),
    ("kgmind.models", "Mention"),
]


def checkpoint_path(home: Path | None = None) -> Path:
    """``$KGMIND_HOME/checkpoints.sqlite``."""
    return (home or kgmind_home()) / "checkpoints.sqlite"


def get_checkpointer(path: str | None = None) -> SqliteSaver:
    """Return the SQLite checkpointer at ``path`` (default :func:`checkpoint_path`), one per file.

    Args:
        path: Database file; its directory is created.

    Returns:
        A ``SqliteSaver`` whose serializer knows kgmind's evidence types.

    """
    return _open_saver(str(Path(path) if path else checkpoint_path()))


@functools.cache
def _open_saver(path: str) -> SqliteSaver:
    db = Path(path)
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(db), check_same_thread=False)
    saver = SqliteSaver(conn, serde=JsonPlusSerializer(allowed_msgpack_modules=SERDE_ALLOWED))
    saver.setup()
    return saver


def compile_persistent(path: str | None = None) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Return the kgmind graph compiled with the SQLite checkpointer (what the CLI runs)."""
    from kgmind.graphs.pipeline import build_graph

    return build_graph().compile(checkpointer=get_checkpointer(path), name="kgmind")


def load_run_state(run_id: str, path: str | None = None) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Return the stored state of run ``run_id`` and the nodes it is paused before.

    Args:
        run_id: The run (= thread) id printed by ``kgmind ask``.
        path: Checkpoint database (default :func:`checkpoint_path`).

    Returns:
        ``(values, next_nodes)``.

    Raises:
        KeyError: No run with that id was stored.

    """
    if not (Path(path) if path else checkpoint_path()).exists():
        raise KeyError(run_id)
    g = compile_persistent(path)
    snapshot = g.get_state({"configurable": {"thread_id": run_id}})
    if not snapshot.values:
        raise KeyError(run_id)
    return dict(snapshot.values), tuple(snapshot.next)
