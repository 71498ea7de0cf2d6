"""LangGraph Studio / SDK: ``langgraph dev`` serves langgraph.json's graph; a thread streams a run.

The server runs as a subprocess on a free port (bounded wait, always killed) over the
real demo KG with the deterministic fake LLM passed through the run's context.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "I have a fever and a cough, what could it be?"


def _free_port() -> int:
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


@pytest.fixture
def studio(tmp_path: Path) -> Iterator[str]:
    import kgmind.importers.demo_store  # noqa: F401 - a broken import must fail, not skip

    exe = shutil.which("langgraph")
    if exe is None:
        pytest.skip("langgraph-cli is not installed")
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        "KGMIND_HOME": str(tmp_path / "home"),
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "1",
        "LANGSMITH_TRACING": "false",
    }
    log = (tmp_path / "server.log").open("wb")
    proc = subprocess.Popen(
        [exe, "dev", "--no-browser", "--no-reload", "--port", str(port), "--host", "127.0.0.1"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        _wait_ok(f"http://127.0.0.1:{port}/ok", proc, 120)
        yield f"http://127.0.0.1:{port}"
    except (RuntimeError, TimeoutError) as exc:
        log.flush()
        raise AssertionError(
            f"{exc}\n{(tmp_path / 'server.log').read_text(errors='replace')[-3000:]}"
        ) from exc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        log.close()


async def _schemas_and_wait(url: str) -> tuple[dict[str, Any], Any]:
    """What Studio's forms are built from, and the README's one-call ``runs.wait`` with a context."""
    from langgraph_sdk import get_client

    client = get_client(url=url)
    assistants = await client.assistants.search(graph_id="kgmind")
    schemas: Any = await client.assistants.get_schemas(assistants[0]["assistant_id"])
    thread = await client.threads.create()
    out = await client.runs.wait(
        thread["thread_id"],
        "kgmind",
        input={"question": QUESTION},
        context={"model": "fake:wait", "mode": "mindmap", "hypothesis": False},
    )
    return dict(schemas), out


async def _run(url: str) -> tuple[list[str], dict[str, Any], list[Any]]:
    from langgraph_sdk import get_client

    client = get_client(url=url)
    assistants = await client.assistants.search(graph_id="kgmind")
    assert assistants, "the kgmind graph from langgraph.json is registered"
    thread = await client.threads.create()
    nodes: list[str] = []
    async for part in client.runs.stream(
        thread["thread_id"],
        "kgmind",
        input={"question": QUESTION},
        context={"model": "fake:studio", "mode": "full"},
        stream_mode="updates",
    ):
        if part.event == "updates" and isinstance(part.data, dict):
            nodes.extend(part.data)
        assert part.event != "error", part.data
    state = await client.threads.get_state(thread["thread_id"])
    values: Any = state["values"]
    return nodes, values, list(assistants)


@pytest.mark.slow
def test_wiring_studio_streams_a_run_and_keeps_state(studio: str) -> None:
    """Studio streams every node and keeps the state; a wiring test (the fake model fills any schema)."""
    nodes, values, _assistants = asyncio.run(asyncio.wait_for(_run(studio), timeout=400))
    assert nodes[0] == "prepare_run" and nodes[-1] == "check_grounding"
    assert {"generate_hypothesis", "link_entities", "aggregate_evidence", "reason_mindmap"} <= set(nodes)
    assert values["answer"].startswith("[studio]")
    assert values["llm_calls"] == 2
    ids = {e["id"] for e in values["selected_evidence"]}
    assert ids and values["grounding"]["flagged"] == []
    assert set(values["grounding"]["cited_ids"]) <= ids


@pytest.mark.slow
def test_studio_schemas_and_runs_wait(studio: str) -> None:
    import dataclasses

    from kgmind.graphs.context import Context

    schemas, out = asyncio.run(asyncio.wait_for(_schemas_and_wait(studio), timeout=400))
    assert "question" in schemas["input_schema"]["properties"]
    assert "question" in schemas["input_schema"].get("required", [])
    context_props = set(schemas["context_schema"]["properties"])
    assert {f.name for f in dataclasses.fields(Context)} <= context_props
    assert "answer" in schemas["output_schema"]["properties"]
    assert out["answer"].startswith("[wait]") and out["llm_calls"] == 1  # hypothesis off: one call
