"""`kgmind <command> --help` shows boolean options as flags, never with a `<bool>` type."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from kgmind.cli import app

runner = CliRunner()


def _command_paths() -> list[tuple[str, ...]]:
    """Every command and group of the ``kgmind`` app, as the words that name it (``()`` = the app)."""
    paths: list[tuple[str, ...]] = []

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        paths.append(path)
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return paths


PATHS = _command_paths()


def test_every_command_is_listed() -> None:
    assert {
        ("ask",),
        ("show",),
        ("feedback",),
        ("learn",),
        ("eval",),
        ("kg", "import"),
        ("index", "build"),
    } <= set(PATHS)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "kgmind")
def test_help_shows_flags_without_a_bool_type(path: tuple[str, ...]) -> None:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"}, terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "--help" in result.output
    assert "<bool>" not in result.output
    assert "BOOLEAN" not in result.output


def test_ask_flags_render_as_flags() -> None:
    out = runner.invoke(app, ["ask", "--help"], env={"COLUMNS": "200"}, terminal_width=200).output
    json_row = next(line for line in out.splitlines() if "--json" in line)
    assert "Print the result as JSON." in json_row
    assert "<" not in json_row.split("Print")[0]
    assert "<str>" in out or "TEXT" in out  # options that take a value still show their type
