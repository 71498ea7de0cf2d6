"""README "Your own KG", run as written: a natural one-way triples file, imported, asked, shown, rated.

The commands and the CSV are read from the README itself, so the test fails when the README
drifts from what works. Real components throughout: the embedded store, the MiniLM linker and
the local LLM (``ask`` with its default model).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.llm]

README = Path(__file__).resolve().parents[2] / "README.md"


def _section() -> tuple[str, list[str]]:
    """The CSV and the command lines of the README's "Your own KG" paragraph."""
    text = README.read_text(encoding="utf-8")
    start = text.index("**Your own KG.**")
    part = text[start : text.index("\n## ", start)]
    csv = re.search(r"```csv\n(.*?)```", part, re.S)
    bash = re.search(r"```bash\n(.*?)```", part, re.S)
    assert csv and bash, "the README's Your own KG paragraph has a csv and a bash block"
    lines = [ln.split("  #", 1)[0].strip() for ln in bash.group(1).splitlines()]
    return csv.group(1), [ln for ln in lines if ln]


def _run(line: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(line)
    assert argv[0] == "kgmind"
    return subprocess.run(
        [sys.executable, "-c", "from kgmind.cli import main; main()", *argv[1:]],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_the_readme_walkthrough_runs_as_written(tmp_path: Path) -> None:
    csv, commands = _section()
    (tmp_path / "measles.csv").write_text(csv, encoding="utf-8")
    env = {**os.environ, "KGMIND_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    run_id = ""
    for line in commands:
        line = line.replace("RUN_ID", run_id)
        out = _run(line, env, tmp_path)
        assert out.returncode == 0, f"{line}\n{out.stdout}\n{out.stderr}"
        if " kg import " in f" {line} ":
            report = out.stdout + out.stderr
            assert "presents_with" in report and "symptom" in report  # the relation and its inferred role
        elif " ask " in f" {line} ":
            assert "No KG evidence" not in out.stdout + out.stderr
            found = re.search(r"run ([0-9a-f]{32})", out.stdout)
            assert found, out.stdout
            run_id = found.group(1)
            # the natural one-way KG gives evidence naming the disease the symptoms point to
            evidence = out.stdout[out.stdout.index("Evidence") :]
            assert "Measles" in evidence
        elif " show " in f" {line} ":
            page = (tmp_path / "run.html").read_text(encoding="utf-8")
            assert "Measles" in page
        elif " feedback " in f" {line} ":
            assert "excellent" in out.stdout + out.stderr
    assert run_id, "the walkthrough asked a question"
