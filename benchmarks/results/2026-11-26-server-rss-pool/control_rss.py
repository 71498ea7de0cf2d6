"""Control for the server's RSS growth: the same load on `langgraph dev` serving a graph that is not kgmind.

One node returns a state of about the size of a kgmind run's (question, answer, 40 evidence items of
~600 characters, distinct per run). 20 warm-up runs, then 2,000 runs 8 at once through `langgraph_sdk`,
each thread deleted when its run is over (as `server_load.py --delete-threads`). Prints the server
tree's RSS after warm-up and after the load. From the repository root:
`PYTHONPATH=tests python benchmarks/results/2026-11-26-server-rss-pool/control_rss.py`.
"""

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

from langgraph_server import langgraph_dev, tree_rss_bytes

GRAPH = """
import os
from typing import Any, TypedDict
from langgraph.graph import END, START, StateGraph

class State(TypedDict, total=False):
    question: str
    answer: str
    evidence: list[dict[str, Any]]

def answer(state: State) -> dict[str, Any]:
    salt = os.urandom(8).hex()
    text = (salt + state["question"]) * 12
    ev = [{"id": f"E{i}", "text": text, "relation_ids": [f"r{i}-{salt}"]} for i in range(40)]
    return {"answer": "control " + salt, "evidence": ev}

graph = StateGraph(State).add_node("answer", answer)
graph = graph.add_edge(START, "answer").add_edge("answer", END).compile()
"""


async def load(url: str, runs: int, at_once: int) -> None:
    from langgraph_sdk import get_client

    client = get_client(url=url)
    sem = asyncio.Semaphore(at_once)

    async def one(i: int) -> None:
        async with sem:
            t = await client.threads.create()
            await client.runs.wait(t["thread_id"], "control", input={"question": f"question {i} " * 4})
            await client.threads.delete(t["thread_id"])

    await asyncio.gather(*(one(i) for i in range(runs)))


def main(runs: int = 2000) -> None:
    work = Path(tempfile.mkdtemp(prefix="control-rss-"))
    (work / "control_graph.py").write_text(GRAPH)
    config = work / "langgraph.json"
    config.write_text(json.dumps({"dependencies": ["."], "graphs": {"control": "./control_graph.py:graph"}}))
    with langgraph_dev(work / "home", work / "server.log", cwd=work, config=config) as server:
        asyncio.run(load(server.url, 20, 1))
        warm = tree_rss_bytes(server.proc.pid) / 2**20
        t0 = time.monotonic()
        asyncio.run(load(server.url, runs, 8))
        wall = time.monotonic() - t0
        time.sleep(2)
        after = tree_rss_bytes(server.proc.pid) / 2**20
    print(
        json.dumps(
            {
                "runs": runs,
                "at_once": 8,
                "rss_warm_mib": round(warm, 1),
                "rss_after_mib": round(after, 1),
                "ratio": round(after / warm, 3),
                "wall_s": round(wall, 1),
            }
        )
    )


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
