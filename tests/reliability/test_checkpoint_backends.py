"""Runs stored by one process are shown, rated and resumed by another: SQLite and PostgreSQL.

Each step is its own process (``rel_harness.py`` modes): a run paused for human feedback
(``interrupt()`` in ``request_feedback``), a CLI ``ask --checkpoint URI``, ``show`` (URI from
``$KGMIND_CHECKPOINT_URI``) and ``feedback --checkpoint URI`` resuming the paused run. The
PostgreSQL server is a real one started on a loopback port from the installed binaries
(``apt-get install postgresql``); without them the PostgreSQL case is skipped with the
reason, or fails where ``KGMIND_REQUIRE_POSTGRES=1`` (CI) says it must run.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rel_harness import QUESTION

from kgmind.graphs.checkpoint import compile_persistent
from kgmind.stores.factory import close_all_stores, open_store

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process handling")

HARNESS = Path(__file__).resolve().parent / "rel_harness.py"
SRC = Path(__file__).resolve().parents[2] / "src"


def _pg_bin() -> Path | None:
    """The directory of ``initdb``/``pg_ctl`` (Debian's versioned one first, then PATH)."""
    for found in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))[::-1]:
        if (Path(found) / "initdb").exists():
            return Path(found)
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def postgres_uri() -> Iterator[str]:
    """A throw-away PostgreSQL server on 127.0.0.1 (trust auth), stopped and deleted afterwards."""
    pg_bin = _pg_bin()
    if pg_bin is None:
        reason = "PostgreSQL server binaries not found (apt-get install postgresql)"
        if os.environ.get("KGMIND_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason + ", and KGMIND_REQUIRE_POSTGRES=1")
        pytest.skip(reason)
    # initdb refuses to run as root: as root, the cluster belongs to the `postgres` user
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    data = Path(tempfile.mkdtemp(prefix="kgmind-pg-"))  # under /tmp: pytest's dirs are private to us
    if as_user:
        shutil.chown(data, "postgres", "postgres")
    port = _free_port()
    pg_ctl = [*as_user, str(pg_bin / "pg_ctl"), "-D", str(data)]
    try:
        subprocess.run(
            [*as_user, str(pg_bin / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {data}"  # loopback TCP, socket in DIR
        subprocess.run(
            [*pg_ctl, "-o", options, "-l", str(data / "log"), "-w", "start"],
            check=True,
            capture_output=True,
            timeout=120,
        )
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(data, ignore_errors=True)
        pytest.fail(f"could not start PostgreSQL: {exc.stderr.decode(errors='replace')[-2000:]}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*pg_ctl, "-m", "fast", "stop"], capture_output=True, timeout=120)
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgres"])
def checkpoint_uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The checkpoint URI of each backend."""
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'ck.sqlite'}"
    return str(request.getfixturevalue("postgres_uri"))


def _child(home: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run a ``rel_harness.py`` mode in a new process; its stdout (it must exit 0)."""
    full = dict(os.environ)
    full.pop("KGMIND_CHECKPOINT_URI", None)
    full.update(env or {})
    full["KGMIND_HOME"] = str(home)
    full["PYTHONPATH"] = os.pathsep.join([str(SRC), str(HARNESS.parent), full.get("PYTHONPATH", "")])
    full["LANGSMITH_TRACING"] = "false"
    proc = subprocess.run(
        [sys.executable, str(HARNESS), *args], env=full, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, f"{args[:2]} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return proc.stdout


def _json(out: str) -> Any:
    return json.loads(out[out.index("{") :])


@pytest.mark.timeout(600)
def test_run_paused_in_one_process_is_rated_and_resumed_in_another(
    demo_uri: str, isolated_home: Path, checkpoint_uri: str
) -> None:
    close_all_stores()  # the children open the store; this process only after they exit
    thread = f"paused-{os.getpid()}-{Path(demo_uri).parent.name}"

    paused = _json(_child(isolated_home, "ask-human", demo_uri, checkpoint_uri, thread))
    assert paused["interrupted"] and paused["payload"]["run_id"] == thread
    assert paused["payload"]["cited_ids"], "the fake answer cites evidence, so a rating moves weights"

    asked = _json(
        _child(
            isolated_home,
            *("cli", "ask", QUESTION, "--store", demo_uri, "--model", "fake:ckpt", "--json", "--quiet"),
            *("--checkpoint", checkpoint_uri),
        )
    )
    shown = _json(
        _child(
            isolated_home,
            *("cli", "show", asked["run_id"], "--json"),
            env={"KGMIND_CHECKPOINT_URI": checkpoint_uri},
        )
    )
    assert shown["answer"] == asked["answer"] and shown["answer"]
    assert shown["selected_evidence"] == asked["selected_evidence"]

    rated = _json(
        _child(
            isolated_home,
            *("cli", "feedback", thread, "--rating", "excellent", "--json", "--checkpoint", checkpoint_uri),
        )
    )
    assert rated["rating"] == "excellent" and rated["applied"] is True and rated["changes"] > 0

    snapshot = compile_persistent(checkpoint_uri).get_state({"configurable": {"thread_id": thread}})
    assert snapshot.next == ()  # resumed to the end, not paused any more
    assert snapshot.values["feedback"]["rating"] == "excellent"
    assert snapshot.values["answer"] == paused["answer"]
    changes = [c for c in open_store(demo_uri).weight_changes() if c.run_id == thread]
    assert len(changes) == rated["changes"]
    assert not (isolated_home / "checkpoints.sqlite").exists()  # nothing went to the default database
