"""Persistence for CLI runs: one checkpointer per URI, SQLite by default, PostgreSQL on request.

A checkpoint URI is ``sqlite:PATH`` (the default is ``$KGMIND_HOME/checkpoints.sqlite``) or
``postgresql://USER@HOST:PORT/DB`` (``postgres://`` too, needs the ``postgres`` extra);
``$KGMIND_CHECKPOINT_URI`` replaces the default. A plain path is a SQLite file. The thread
id of a CLI run is its run id, so ``kgmind feedback RUN_ID`` can load (and resume) the run
in another process, or on another machine when the checkpoints are in PostgreSQL. Studio
and the LangGraph server bring their own checkpointer and do not use this module.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph.state import CompiledStateGraph

from kgmind.settings import get_settings, kgmind_home, uri_path

__all__ = [
    "PLAIN_JSON",
    "SERDE_ALLOWED",
    "CheckpointURI",
    "CheckpointUnavailableError",
    "RunSerializer",
    "checkpoint_path",
    "compile_persistent",
    "get_checkpointer",
    "load_run_state",
    "parse_checkpoint_uri",
]

#: kgmind's pydantic types stored in checkpoints (allowed for msgpack round-trips).
SERDE_ALLOWED: list[tuple[str, str]] = [
    ("kgmind.models", "Evidence"),
    ("kgmind.models", "LinkedEntity"),
    ("kgmind.models", "Mention"),
]

_PG_SCHEMES = ("postgresql://", "postgres://")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")  # C:\… is a path, not a scheme


class CheckpointUnavailableError(RuntimeError):
    """The checkpoint database cannot be opened, reached or set up (a one-line message)."""


@dataclass(frozen=True)
class CheckpointURI:
    """A parsed checkpoint URI.

    Attributes:
        backend: ``sqlite`` or ``postgres``.
        location: The database file (SQLite) or the connection string (PostgreSQL).
        display: What messages show: the file, or the URL with its password masked.
    """

    backend: Literal["sqlite", "postgres"]
    location: str
    display: str


def checkpoint_path(home: Path | None = None) -> Path:
    """``$KGMIND_HOME/checkpoints.sqlite``."""
    return (home or kgmind_home()) / "checkpoints.sqlite"


def _mask_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def parse_checkpoint_uri(uri: str | None = None) -> CheckpointURI:
    """Parse a checkpoint URI; ``None``/``""``: ``$KGMIND_CHECKPOINT_URI``, else the SQLite default.

    Args:
        uri: ``sqlite:PATH``, ``postgresql://…``, ``postgres://…`` or a plain file path.

    Returns:
        The parsed URI (SQLite paths resolved).

    Raises:
        ValueError: An unknown scheme or an empty SQLite path.

    """
    text = (uri or "").strip() or (get_settings().checkpoint_uri or "").strip()
    if not text:
        path = checkpoint_path().resolve()
        return CheckpointURI("sqlite", str(path), str(path))
    if text.startswith(_PG_SCHEMES):
        return CheckpointURI("postgres", text, _mask_password(text))
    if text.startswith("sqlite:"):
        text = uri_path(text, "sqlite", "checkpoint", "sqlite:./checkpoints.sqlite")
    elif _SCHEME.match(text) and not _DRIVE.match(text):
        raise ValueError(
            f"unknown checkpoint URI {_mask_password(text)!r}: use sqlite:PATH or postgresql://USER@HOST:PORT/DB"
        )
    path = Path(text).expanduser().resolve()
    return CheckpointURI("sqlite", str(path), str(path))


def get_checkpointer(uri: str | None = None) -> BaseCheckpointSaver[Any]:
    """Return the checkpointer for ``uri`` (see :func:`parse_checkpoint_uri`), one per database.

    Args:
        uri: Checkpoint URI or SQLite file; default ``$KGMIND_CHECKPOINT_URI`` or
            ``$KGMIND_HOME/checkpoints.sqlite``.

    Returns:
        A ``SqliteSaver`` or ``PostgresSaver`` (tables created) whose serializer knows
        kgmind's evidence types.

    Raises:
        ValueError: Bad URI.
        CheckpointUnavailableError: The server cannot be reached, or the extra is missing.

    """
    parsed = parse_checkpoint_uri(uri)
    if parsed.backend == "postgres":
        return _open_postgres(parsed.location, parsed.display)
    return _open_sqlite(parsed.location)


#: The type tag of a value stored as plain JSON (:class:`RunSerializer`).
PLAIN_JSON = "kgmind-json"


class RunSerializer(JsonPlusSerializer):
    """LangGraph's serializer, allowing kgmind's own types, that also stores what msgpack cannot.

    A client's resume value may hold an integer past 64 bits (``Command(resume=2**70)``);
    msgpack refuses it, and LangGraph would raise while writing the value, before
    ``request_feedback`` could answer "bad payload" and pause the run again (found by
    fuzzing). Such a value is stored as plain JSON under its own tag and read back with
    ``json.loads`` alone (no constructors, no pickle), so it reaches the node unchanged.
    """

    def __init__(self) -> None:
        super().__init__(allowed_msgpack_modules=SERDE_ALLOWED)

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        """Msgpack as LangGraph writes it; plain JSON for a value msgpack refuses and JSON can hold."""
        try:
            return super().dumps_typed(obj)
        except TypeError as exc:  # ormsgpack.MsgpackEncodeError
            try:
                data = json.dumps(obj).encode()
            except (TypeError, ValueError):
                raise exc from None
            return PLAIN_JSON, data

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """A value written by :meth:`dumps_typed`."""
        if data[0] == PLAIN_JSON:
            return json.loads(data[1])
        return super().loads_typed(data)


def _serde() -> JsonPlusSerializer:
    return RunSerializer()


@functools.cache
def _open_sqlite(path: str) -> SqliteSaver:
    db = Path(path)
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(db), check_same_thread=False)
    saver = SqliteSaver(conn, serde=_serde())
    saver.setup()
    return saver


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


@functools.cache
def _open_postgres(conninfo: str, display: str) -> BaseCheckpointSaver[Any]:
    try:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.conninfo import conninfo_to_dict, make_conninfo
        from psycopg.rows import dict_row
    except ImportError:
        raise CheckpointUnavailableError(
            "PostgreSQL checkpoints need the postgres extra: pip install 'kgmind[postgres]'"
        ) from None
    try:
        options = conninfo_to_dict(conninfo)
    except psycopg.Error as exc:
        raise ValueError(f"bad checkpoint URI {display!r}: {_one_line(exc)}") from None
    if "connect_timeout" not in options:  # an unreachable host fails in seconds, not minutes
        conninfo = make_conninfo(conninfo, connect_timeout=10)
    try:
        conn = psycopg.connect(conninfo, autocommit=True, prepare_threshold=0, row_factory=dict_row)
    except psycopg.Error as exc:
        raise CheckpointUnavailableError(
            f"cannot reach the checkpoint database {display}: {_one_line(exc)}"
        ) from None
    # PostgresSaver serialises use of its one connection with a lock (graph branches run in threads).
    saver = PostgresSaver(conn, serde=_serde())
    try:
        saver.setup()
    except psycopg.Error as exc:
        conn.close()
        raise CheckpointUnavailableError(
            f"cannot set up the checkpoint tables in {display}: {_one_line(exc)}"
        ) from None
    return saver


def compile_persistent(uri: str | None = None) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Return the kgmind graph compiled with the checkpointer of ``uri`` (what the CLI runs)."""
    from kgmind.graphs.pipeline import build_graph

    return build_graph().compile(checkpointer=get_checkpointer(uri), name="kgmind")


def load_run_state(run_id: str, uri: str | None = None) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Return the stored state of run ``run_id`` and the nodes it is paused before.

    Args:
        run_id: The run (= thread) id printed by ``kgmind ask``.
        uri: Checkpoint URI or SQLite file (default as :func:`get_checkpointer`).

    Returns:
        ``(values, next_nodes)``.

    Raises:
        KeyError: No run with that id was stored.
        ValueError: Bad URI.
        CheckpointUnavailableError: The checkpoint server cannot be reached.

    """
    parsed = parse_checkpoint_uri(uri)
    if parsed.backend == "sqlite" and not Path(parsed.location).exists():
        raise KeyError(run_id)  # a lookup does not create an empty database
    g = compile_persistent(uri)
    snapshot = g.get_state({"configurable": {"thread_id": run_id}})
    if not snapshot.values:
        raise KeyError(run_id)
    return dict(snapshot.values), tuple(snapshot.next)
