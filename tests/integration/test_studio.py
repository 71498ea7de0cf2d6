"""LangGraph Studio / SDK: ``langgraph dev`` serves langgraph.json's graph; a thread streams a run.

The server runs as a subprocess on a free port (bounded wait, always killed) over the
real demo KG with the deterministic fake LLM passed through the run's context.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langgraph_server import langgraph_dev

QUESTION = "I have a fever and a cough, what could it be?"


@pytest.fixture
def studio(tmp_path: Path) -> Iterator[str]:
    import kgmind.importers.demo_store  # noqa: F401 - a broken import must fail, not skip

    try:
        with langgraph_dev(tmp_path / "home", tmp_path / "server.log", cwd=tmp_path) as server:
            yield server.url
    except FileNotFoundError:
        pytest.skip("langgraph-cli is not installed")


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
    assert "[studio] answer" in values["answer"]  # the fake summary, behind the first diagnosis
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
    assert "[wait] answer" in out["answer"] and out["llm_calls"] == 1  # hypothesis off: one call
