"""Checkpoint URIs: parsing, the default and its env var, and one-line errors for bad or unreachable ones."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from typer.testing import CliRunner

from kgmind.cli import app
from kgmind.graphs.checkpoint import (
    PLAIN_JSON,
    CheckpointUnavailableError,
    get_checkpointer,
    load_run_state,
    parse_checkpoint_uri,
)

runner = CliRunner()


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KGMIND_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KGMIND_CHECKPOINT_URI", raising=False)
    return tmp_path / "home"


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens there once the socket is closed


def test_default_is_the_sqlite_file_in_home(home: Path) -> None:
    parsed = parse_checkpoint_uri(None)
    assert (parsed.backend, parsed.location) == ("sqlite", str((home / "checkpoints.sqlite").resolve()))


def test_env_var_replaces_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGMIND_CHECKPOINT_URI", f"sqlite:{tmp_path / 'env.sqlite'}")
    assert parse_checkpoint_uri(None).location == str(tmp_path / "env.sqlite")
    assert parse_checkpoint_uri(f"sqlite:{tmp_path / 'arg.sqlite'}").location == str(tmp_path / "arg.sqlite")


@pytest.mark.parametrize(
    ("uri", "backend", "display"),
    [
        ("sqlite:/x/ck.sqlite", "sqlite", "/x/ck.sqlite"),
        ("sqlite:///x/ck.sqlite", "sqlite", "/x/ck.sqlite"),
        ("/x/ck.sqlite", "sqlite", "/x/ck.sqlite"),
        ("postgresql://kg@db:5432/runs", "postgres", "postgresql://kg@db:5432/runs"),
        ("postgres://kg:s3cret@db/runs", "postgres", "postgres://kg:***@db/runs"),
    ],
)
def test_parse(uri: str, backend: str, display: str) -> None:
    parsed = parse_checkpoint_uri(uri)
    assert (parsed.backend, parsed.display) == (backend, display)
    assert "s3cret" not in parsed.display
    if backend == "postgres":
        assert parsed.location == uri  # the password still reaches the driver


@pytest.mark.parametrize("uri", ["mysql://db/runs", "sqlite:", "redis:x", "ladybug:./kg"])
def test_bad_uri_is_a_value_error(uri: str) -> None:
    with pytest.raises(ValueError, match="checkpoint URI"):
        parse_checkpoint_uri(uri)


def test_sqlite_uri_opens_that_file(tmp_path: Path, home: Path) -> None:
    saver = get_checkpointer(f"sqlite:{tmp_path / 'sub' / 'ck.sqlite'}")
    assert isinstance(saver, SqliteSaver)
    assert (tmp_path / "sub" / "ck.sqlite").exists() and not (home / "checkpoints.sqlite").exists()
    assert get_checkpointer(str(tmp_path / "sub" / "ck.sqlite")) is saver  # one saver per file


def test_lookup_does_not_create_a_sqlite_file(tmp_path: Path) -> None:
    with pytest.raises(KeyError):
        load_run_state("nope", f"sqlite:{tmp_path / 'none.sqlite'}")
    assert not (tmp_path / "none.sqlite").exists()


def test_unreachable_server_is_one_clear_error() -> None:
    uri = f"postgresql://kg:s3cret@127.0.0.1:{_closed_port()}/runs?connect_timeout=5"
    with pytest.raises(CheckpointUnavailableError, match="cannot reach the checkpoint database") as exc:
        get_checkpointer(uri)
    assert "s3cret" not in str(exc.value) and "\n" not in str(exc.value)


def test_missing_postgres_extra_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langgraph.checkpoint.postgres", None)
    with pytest.raises(CheckpointUnavailableError, match=r"pip install 'kgmind\[postgres\]'"):
        get_checkpointer("postgresql://kg@127.0.0.1:1/runs")


@pytest.mark.parametrize("command", ["show", "feedback", "ask"])
def test_cli_bad_uri_is_one_line_and_exit_2(command: str, home: Path) -> None:
    args = {
        "show": ["show", "r1"],
        "feedback": ["feedback", "r1", "--rating", "poor"],
        "ask": ["ask", "fever?", "--model", "fake:x", "--store", "ladybug:/unused"],
    }[command]
    res = runner.invoke(app, [*args, "--checkpoint", "mysql://db/runs"])
    assert res.exit_code == 2, res.output
    assert res.stderr.strip().splitlines() == [
        "error: unknown checkpoint URI 'mysql://db/runs': use sqlite:PATH or postgresql://USER@HOST:PORT/DB"
    ]
    assert not home.exists()  # nothing was written, not even the default database


@pytest.mark.parametrize("command", ["show", "ask"])
def test_cli_unreachable_server_is_one_line_and_exit_1(command: str) -> None:
    uri = f"postgresql://kg:s3cret@127.0.0.1:{_closed_port()}/runs"
    args = ["show", "r1"] if command == "show" else ["ask", "fever?", "--model", "fake:x"]
    res = runner.invoke(app, args, env={"KGMIND_CHECKPOINT_URI": uri})
    assert res.exit_code == 1, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: cannot reach the checkpoint database postgresql://"
    )
    assert "kg:***@127.0.0.1" in lines[0] and "s3cret" not in res.output


def test_cli_unknown_run_names_the_database(tmp_path: Path) -> None:
    res = runner.invoke(app, ["show", "r1", "--checkpoint", f"sqlite:{tmp_path / 'ck.sqlite'}"])
    assert res.exit_code == 1
    assert f"no run with that id in {tmp_path / 'ck.sqlite'}" in res.stderr


@pytest.mark.parametrize(
    "value", [2**70, -(2**64), {"rating": 2**64, "wrong": ["N1", 2**65]}, [1, "a", None, 2**100]]
)
def test_values_msgpack_refuses_round_trip_as_plain_json(value: object, tmp_path: Path) -> None:
    """An integer past 64 bits (a client's resume value) is stored, and read back unchanged."""
    serde = get_checkpointer(f"sqlite:{tmp_path / 'c.sqlite'}").serde
    kind, data = serde.dumps_typed(value)
    assert kind == PLAIN_JSON
    assert serde.loads_typed((kind, data)) == value


def test_a_value_neither_msgpack_nor_json_holds_is_still_refused(tmp_path: Path) -> None:
    serde = get_checkpointer(f"sqlite:{tmp_path / 'c.sqlite'}").serde
    with pytest.raises(TypeError):
        serde.dumps_typed({"n": 2**70, "x": object()})
    assert serde.dumps_typed({"n": 1})[0] == "msgpack"  # everything else as LangGraph writes it
