"""Crash and resume: SIGKILL a run after exploration and a feedback mid-transaction, then recover.

The child processes are ``rel_harness.py`` modes: ``ask`` blocks inside the reasoning
LLM call (so the checkpoint after ``aggregate_evidence`` is on disk), ``feedback``
sleeps inside ``apply_weight_updates`` (in the rule, or after the weight UPDATE ran in
the open transaction). The parent kills the child with SIGKILL and checks recovery.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from rel_harness import QUESTION, canonical_dump

from kgmind.graphs import services
from kgmind.graphs.checkpoint import get_checkpointer
from kgmind.graphs.context import Context
from kgmind.graphs.pipeline import build_graph, graph
from kgmind.llm import get_chat_model
from kgmind.models import MIND_MAP_ONLY, Entity, Relation
from kgmind.stores.factory import close_all_stores, open_store
from kgmind.stores.feedback import apply_feedback

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL semantics are POSIX-only")

HARNESS = Path(__file__).resolve().parent / "rel_harness.py"
SRC = Path(__file__).resolve().parents[2] / "src"
WAIT_S = 180.0  # generous bound for a cold child on a loaded 2-core machine (not a speed check)


def _spawn(home: Path, *args: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env["KGMIND_HOME"] = str(home)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(HARNESS.parent), env.get("PYTHONPATH", "")])
    env["LANGSMITH_TRACING"] = "false"
    return subprocess.Popen(
        [sys.executable, str(HARNESS), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )


def _wait_for(marker: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not marker.exists():
        if proc.poll() is not None:
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            pytest.fail(f"child exited early with {proc.returncode}:\n{out[-3000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("child never reached the crash point")
        time.sleep(0.05)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.timeout(400)
def test_run_killed_after_exploration_resumes_with_the_same_evidence(
    demo_uri: str, tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ckpt = tmp_path / "ck.sqlite"
    marker = tmp_path / "reasoning.marker"
    close_all_stores()
    proc = _spawn(isolated_home, "ask", demo_uri, str(ckpt), "thread-crash", str(marker))
    try:
        _wait_for(marker, proc)
    finally:
        if proc.poll() is None:
            _kill(proc)

    saver = get_checkpointer(str(ckpt))
    g = build_graph().compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "thread-crash"}}
    snap = g.get_state(cfg)
    assert snap.next == ("reason_mindmap",)  # the last checkpoint is the one after aggregation
    saved = snap.values["selected_evidence"]
    assert saved and "answer" not in snap.values

    calls: list[str] = []
    fake = get_chat_model("fake:crash")

    def get_llm(ctx: Any, purpose: str = "reason", max_tokens: int | None = None) -> Any:
        calls.append(purpose)
        return fake

    monkeypatch.setattr(services, "get_llm", get_llm)
    ctx = Context(model="fake:crash", store=demo_uri)
    resumed = g.invoke(None, cfg, context=ctx)
    assert calls == ["reason"]  # only the interrupted node ran again
    assert resumed["run_id"] == "thread-crash"
    # what the model read; the mind map may add items after the answer
    read = [e for e in resumed["selected_evidence"] if not e.meta.get(MIND_MAP_ONLY)]
    assert [e.model_dump() for e in read] == [e.model_dump() for e in saved]

    calls.clear()
    ref = graph.invoke({"question": QUESTION}, context=ctx)  # an uninterrupted run
    assert calls == ["hypothesis", "reason"]
    strip = [(e.id, e.kind, e.text, e.relation_ids) for e in ref["selected_evidence"]]
    assert [(e.id, e.kind, e.text, e.relation_ids) for e in resumed["selected_evidence"]] == strip
    assert resumed["answer"] == ref["answer"] and resumed["grounding"] == ref["grounding"]


def _feedback_store(uri: str) -> list[Relation]:
    store = open_store(uri, create=True)
    heads = [Entity(name=f"disease {i}", type="disease") for i in range(2)]
    tails = [Entity(name=f"symptom {i}", type="symptom") for i in range(4)]
    rels = [Relation(head=h.id, type="has_symptom", tail=t.id) for h in heads for t in tails]
    store.bulk_load([*heads, *tails], rels)
    apply_feedback(store, "run-0", "poor", [rels[1].id], feedback_id="fb-0")  # weights no longer all 1.0
    return rels


@pytest.mark.timeout(400)
@pytest.mark.parametrize("where", ["rule", "write"])
def test_feedback_killed_mid_transaction_leaves_weights_unchanged(
    where: str, tmp_path: Path, isolated_home: Path
) -> None:
    uri = f"ladybug:{tmp_path / 'kg'}"
    rels = _feedback_store(uri)
    before = canonical_dump(open_store(uri))
    close_all_stores()  # one process per LadybugDB directory: hand it to the child
    marker = tmp_path / "feedback.marker"
    proc = _spawn(isolated_home, "feedback", uri, rels[0].id, str(marker), where)
    try:
        _wait_for(marker, proc)
    finally:
        if proc.poll() is None:
            _kill(proc)
    assert marker.read_text(encoding="utf-8") == where

    store = open_store(uri)  # reopening replays the WAL: the uncommitted feedback must be gone
    assert canonical_dump(store) == before
    assert store.weight_changes("fb-crash") == []
    # the killed feedback was never recorded, so submitting it again applies it (once)
    from kgmind.stores.weights import make_rule

    changes = store.apply_weight_updates(
        "fb-crash", "run-crash", "excellent", [rels[0].id], make_rule("excellent")
    )
    assert changes
    assert (
        store.apply_weight_updates("fb-crash", "run-crash", "excellent", [rels[0].id], make_rule("excellent"))
        == []
    )
