"""Start ``langgraph dev`` on a free loopback port, wait until it answers, stop it by process group.

Shared by the Studio tests and the server load test/benchmark: the server runs
langgraph.json's graph from the repository root as a subprocess in its own session, so
it (and every process it starts) is stopped by its process-group id, and it never
reaches the network (analytics and version checks off, tracing off).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ROOT", "LanggraphServer", "free_port", "langgraph_dev", "server_env", "tree_rss_bytes"]

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class LanggraphServer:
    """A running ``langgraph dev``: its URL, its process and the file its output goes to."""

    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def log_text(self) -> str:
        """Everything the server wrote to stdout and stderr so far."""
        return self.log.read_text(errors="replace")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ok(url: str, proc: subprocess.Popen[bytes], deadline_s: float) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"langgraph dev exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"langgraph dev did not answer {url} within {deadline_s}s")


def server_env(home: Path) -> dict[str, str]:
    """The environment of a server (or a helper process) whose kgmind files live under ``home``."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        "KGMIND_HOME": str(home),
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "1",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
    }


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@contextmanager
def langgraph_dev(
    home: Path, log: Path, ready_s: float = 120, cwd: Path | None = None, config: Path | None = None
) -> Iterator[LanggraphServer]:
    """Run ``langgraph dev`` with ``KGMIND_HOME=home`` until the block ends.

    ``langgraph dev`` keeps its threads and runs in ``.langgraph_api/`` under its working
    directory and loads them again when it starts; ``cwd`` (a fresh directory) gives a server
    that starts empty and leaves nothing in the repository (default: the repository root).
    ``config``: another ``langgraph.json`` than the repository's (a control graph in a benchmark).

    Raises:
        FileNotFoundError: ``langgraph`` (langgraph-cli) is not installed.
        AssertionError: The server exited or did not answer ``/ok`` within ``ready_s``
            (the message ends with the server's last output).

    """
    exe = shutil.which("langgraph")
    if exe is None:
        raise FileNotFoundError("langgraph-cli is not installed")
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                exe,
                "dev",
                "--config",
                str(config or ROOT / "langgraph.json"),
                "--no-browser",
                "--no-reload",
                "--port",
                str(port),
                "--host",
                "127.0.0.1",
            ],
            cwd=cwd or ROOT,
            env=server_env(home),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        server = LanggraphServer(f"http://127.0.0.1:{port}", proc, log)
        try:
            try:
                _wait_ok(f"{server.url}/ok", proc, ready_s)
            except (RuntimeError, TimeoutError) as exc:
                out.flush()
                raise AssertionError(f"{exc}\n{server.log_text()[-3000:]}") from exc
            yield server
        finally:
            _stop(proc)


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def tree_rss_bytes(pid: int) -> int:
    """Resident memory of process ``pid`` and all its descendants (Linux ``/proc``), in bytes."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
        todo.extend(_children(p))
    return total
