"""The wired graph with fakes: routing per mode, LLM call counts, reducers, interrupts, snapshot."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from entity_fakes import FeedbackLedgerStore
from kgmind.graphs import services
from kgmind.graphs.context import Context
from kgmind.graphs.pipeline import build_graph, build_retrieval_graph, graph
from kgmind.llm.fake import FakeChatModel
from kgmind.models import Evidence, LinkedEntity
from pipeline_fakes import fake_retrieval

SNAPSHOT = Path(__file__).resolve().parents[1] / "snapshots" / "kgmind_graph.mmd"


def _number(evs: list[Evidence], question: str, hypothesis: str = "", **kw: Any) -> list[Evidence]:
    counts: dict[str, int] = {}
    out = []
    for e in evs:
        p = {"path": "P", "neighbor": "N", "chain": "C", "kgcot": "K"}[e.kind]
        counts[p] = counts.get(p, 0) + 1
        out.append(e.model_copy(update={"id": f"{p}{counts[p]}"}))
    return out


@pytest.fixture
def fake_world(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Fake store, NER, linker, exploration and aggregation; the LLM is the deterministic fake model."""
    world: dict[str, Any] = {"linked": [LinkedEntity(mention="fever", entity_id="e1", name="Fever")]}

    def ev(kind: Any, name: str) -> list[Evidence]:
        triple = ("Fever", name, "Flu")
        return [Evidence(kind=kind, text=f"Fever -> {name}", triples=[triple], relation_ids=[f"r{name}"])]

    fake_retrieval(
        monkeypatch,
        get_store=lambda uri: FeedbackLedgerStore(),
        linked=lambda: world["linked"],
        evidence={
            "path_evidence": ev("path", "path_rel"),
            "neighbor_evidence": ev("neighbor", "nb_rel"),
            "hykge_chains": ev("chain", "chain_rel"),
            "weighted_dfs_chains": ev("kgcot", "dfs_rel"),
        },
        number=_number,
    )
    return world


def _run(mode: Any, **kw: Any) -> tuple[dict[str, Any], list[str]]:
    nodes: list[str] = []
    final: Any = {}
    ctx = Context(model="fake:unit", mode=mode, **kw)
    for kind, chunk in graph.stream(
        {"question": "I have a fever?"}, context=ctx, stream_mode=["updates", "values"]
    ):
        if kind == "updates":
            nodes.extend(chunk)
        else:
            final = chunk
    return final, nodes


def test_wiring_full_mode_two_llm_calls_all_tools(fake_world: dict[str, Any]) -> None:
    """Full mode runs every exploration tool and two LLM calls, and its answer reaches the check.

    The fake model fills any schema with valid values: ``flagged == []`` proves the graph is
    wired, not that answers are grounded.
    """
    out, nodes = _run("full")
    assert out["llm_calls"] == 2
    assert {"explore_paths", "explore_neighbors", "explore_chains", "explore_kgcot"} <= set(nodes)
    assert (
        nodes.index("generate_hypothesis") < nodes.index("link_entities") < nodes.index("aggregate_evidence")
    )
    assert sorted(e.id for e in out["selected_evidence"]) == ["C1", "K1", "N1", "P1"]
    assert out["answer"] and out["mind_map"]["children"]
    assert out["grounding"]["flagged"] == []
    assert set(out["timings_ms"]) >= {
        "generate_hypothesis",
        "explore_paths",
        "reason_mindmap",
        "check_grounding",
    }
    assert out["flags"]["no_kg_evidence"] is False
    assert "reason_kgcot" not in nodes and "request_feedback" not in nodes


@pytest.mark.parametrize("mode", ["full", "mindmap", "kgcot"])
def test_wiring_fake_answer_cites_only_shown_ids_in_every_step_and_node(
    fake_world: dict[str, Any], mode: str
) -> None:
    """The shown ids reach each mode's answer schema, and the grounding report reads the answer.

    The fake model fills any schema with valid values, so this proves the graph is wired, not
    that answers are grounded: grounding is proven by the hand-made failing answers of
    ``test_check_grounding.py`` and by the real model in ``integration/test_ask_local_llm.py``.
    """
    out, _ = _run(mode)
    shown = {e.id for e in out["selected_evidence"]}
    assert out["inference_chain"] and all(s["evidence_ids"] for s in out["inference_chain"])
    assert all(set(s["evidence_ids"]) <= shown for s in out["inference_chain"])
    children = out["mind_map"]["children"]
    assert children and all(c["evidence_ids"] and set(c["evidence_ids"]) <= shown for c in children)
    names = {n for e in out["selected_evidence"] for h, _r, tl in e.triples for n in (h, tl)}
    assert out["conclusions"] and all(set(v) <= names for v in out["conclusions"].values())
    report = out["grounding"]
    assert report["citation_rate"] == 1.0 and report["citation_support"] == 1.0 and report["grounded"]


class _CitesUnshownIds(FakeChatModel):
    """The fake model, except that its answer's first step and first node cite P9, which was never shown."""

    def with_structured_output(self, schema: Any, *, include_raw: bool = False, **kwargs: Any) -> Any:
        def lie(out: Any) -> Any:
            if not isinstance(schema, dict):  # the hypothesis: left as the fake wrote it
                return out
            out = copy.deepcopy(out)
            answer = out["parsed"] if include_raw else out
            answer["inference_chain"][0]["evidence_ids"] = ["P9"]
            answer["mind_map"]["children"][0]["evidence_ids"] = ["P9"]
            return out

        return super().with_structured_output(schema, include_raw=include_raw, **kwargs) | RunnableLambda(lie)


@pytest.mark.parametrize("mode", ["full", "mindmap", "kgcot"])
def test_the_graph_flags_the_fake_answer_once_it_cites_an_id_not_shown(
    fake_world: dict[str, Any], monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The wiring test's answer with one step and one node citing P9: the graph's own check must catch it."""
    liar = _CitesUnshownIds(tag="liar")
    monkeypatch.setattr(services, "get_llm", lambda ctx, purpose="reason", **kw: liar)
    out, _ = _run(mode)
    report = out["grounding"]
    assert report["unknown_ids"] == ["P9"] and "P9" in report["flagged"]
    assert report["citation_rate"] < 1.0 and report["grounded"] is False
    assert out["flags"]["ungrounded"] is True
    assert "P9" not in {i for s in out["inference_chain"] for i in s["evidence_ids"]}


def test_llm_only_grounded_schema_has_no_citations(fake_world: dict[str, Any]) -> None:
    out, _ = _run("llm_only")
    assert out["inference_chain"] and all(not s["evidence_ids"] for s in out["inference_chain"])
    assert out["grounding"]["grounded"] is False and out["grounding"]["cited_ids"] == []


@pytest.mark.parametrize(
    ("mode", "tools", "reasoner"),
    [
        ("mindmap", {"explore_paths", "explore_neighbors"}, "reason_mindmap"),
        ("hykge", {"explore_chains"}, "reason_mindmap"),
        ("kgcot", {"explore_kgcot"}, "reason_kgcot"),
    ],
)
def test_wiring_modes_route_to_their_tools(
    fake_world: dict[str, Any], mode: str, tools: set[str], reasoner: str
) -> None:
    """Each mode runs its own tools and reasoner; a wiring test (the fake model fills any schema)."""
    out, nodes = _run(mode)
    assert {n for n in nodes if n.startswith("explore_")} == tools
    assert reasoner in nodes
    assert out["llm_calls"] == 2
    assert out["grounding"]["flagged"] == []


def test_llm_only_skips_retrieval(fake_world: dict[str, Any]) -> None:
    out, nodes = _run("llm_only")
    assert nodes == ["prepare_run", "reason_mindmap", "check_grounding"]
    assert out["llm_calls"] == 1
    assert out["flags"]["no_kg_evidence"] is True


def test_nothing_linked_answers_from_llm(fake_world: dict[str, Any]) -> None:
    fake_world["linked"] = []
    out, nodes = _run("full")
    assert not any(n.startswith("explore_") for n in nodes)
    assert out["flags"]["no_kg_evidence"] is True
    assert out["answer"] and out["llm_calls"] == 2


def test_llm_renderer_adds_one_call(fake_world: dict[str, Any]) -> None:
    out, _ = _run("full", evidence_renderer="llm")
    assert out["llm_calls"] == 3


def test_custom_progress_events(fake_world: dict[str, Any]) -> None:
    events = [
        c
        for c in graph.stream({"question": "fever?"}, context=Context(model="fake:u"), stream_mode="custom")
        if c.get("status") == "end"
    ]
    ended = [e["node"] for e in events]
    assert ended[0] == "generate_hypothesis" and ended[-1] == "check_grounding"
    assert all(e["ms"] >= 0 for e in events)


def test_human_feedback_interrupt_and_resume(
    fake_world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgmind.stores import feedback as fb

    applied: list[Any] = []

    def fake_apply(store: Any, run_id: str, rating: str, rel: Any, feedback_id: str = "") -> list[Any]:
        applied.append((run_id, rating, rel))
        return [SimpleNamespace(relation_id=rel[0])]

    monkeypatch.setattr(fb, "apply_feedback", fake_apply)
    g = build_graph().compile(checkpointer=InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": "t-1"}}
    ctx = Context(model="fake:u", feedback="human")
    first = g.invoke({"question": "fever?"}, cfg, context=ctx)
    assert "__interrupt__" in first
    payload = first["__interrupt__"][0].value
    assert payload["run_id"] == "t-1" and payload["cited_ids"]
    out = g.invoke(Command(resume={"rating": "excellent"}), cfg, context=ctx)
    assert out["feedback"]["rating"] == "excellent" and out["feedback"]["applied"] is True
    assert applied and applied[0][0] == "t-1" and applied[0][1] == "excellent"
    assert out["llm_calls"] == 2  # resuming does not re-run the LLM nodes


def test_human_feedback_resume_with_verdicts_and_a_bad_payload(
    fake_world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgmind.stores import feedback as fb
    from kgmind.stores.protocol import VerdictResult

    recorded: list[tuple[str, str, list[Any], str]] = []

    def fake_verdicts(store: Any, fid: str, run_id: str, pairs: Any, *, source: str) -> VerdictResult:
        recorded.append((fid, run_id, list(pairs), source))
        return VerdictResult(feedback_id=fid)

    monkeypatch.setattr(fb, "apply_feedback", lambda *a, **k: [])
    monkeypatch.setattr(fb, "apply_verdicts", fake_verdicts)
    g = build_graph().compile(checkpointer=InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": "t-3"}}
    ctx = Context(model="fake:u", feedback="human")
    first = g.invoke({"question": "fever?"}, cfg, context=ctx)
    claims = first["__interrupt__"][0].value["claim_ids"]
    assert "N1" in claims and "S1" in claims  # the payload tells a client which ids it may flag
    bad_replies = [({"wrong": ["Z9"]}, "unknown claim id(s) Z9"), ({"rating": "great"}, "rating must be")]
    for bad, said in [*bad_replies, ({"rating": "poor", "because": "no"}, "unknown feedback key")]:
        again = g.invoke(Command(resume=bad), cfg, context=ctx)
        assert said in again["__interrupt__"][0].value["error"]  # asked again, told why
    assert recorded == [] and g.get_state(cfg).next == ("request_feedback",)  # still paused, nothing written
    out = g.invoke(Command(resume={"rating": "poor", "wrong": ["n1"]}), cfg, context=ctx)
    assert recorded == [("t-3:N1:wrong", "t-3", [("rnb_rel", "wrong")], "human")]
    assert out["feedback"]["rating"] == "poor" and out["feedback"]["verdicts"][0]["claim"] == "N1"


def test_reused_thread_starts_from_scratch(fake_world: dict[str, Any]) -> None:
    g = build_graph().compile(checkpointer=InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": "t-2"}}
    ctx = Context(model="fake:u")
    g.invoke({"question": "fever?"}, cfg, context=ctx)
    out = g.invoke({"question": "fever again?"}, cfg, context=ctx)
    assert out["llm_calls"] == 2
    assert len(out["selected_evidence"]) == 4


def test_retrieval_graph_stops_after_aggregation(fake_world: dict[str, Any]) -> None:
    g = build_retrieval_graph().compile()
    out = g.invoke({"question": "fever?"}, context=Context(model="fake:u"))
    assert out["llm_calls"] == 1 and len(out["selected_evidence"]) == 4
    assert "answer" not in out


def test_as_runnable_binds_context(fake_world: dict[str, Any]) -> None:
    import kgmind

    out = kgmind.as_runnable({"model": "fake:bound", "mode": "hykge"}).invoke({"question": "fever?"})
    assert [e.id for e in out["selected_evidence"]] == ["C1"]
    assert out["answer"].startswith("[bound]")


def test_empty_question_is_rejected(fake_world: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="empty"):
        graph.invoke({"question": "  "}, context=Context(model="fake:u"))


def test_mermaid_snapshot() -> None:
    text = graph.get_graph().draw_mermaid()
    if os.environ.get("KGMIND_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(text, encoding="utf-8")
    assert text == SNAPSHOT.read_text(encoding="utf-8"), (
        "graph wiring changed: KGMIND_UPDATE_SNAPSHOTS=1 to accept"
    )


def test_only_the_answering_graph_counts_evidence_in_its_models_tokens() -> None:
    """``aggregate_evidence`` is one node name in both graphs; the full graph's reader is its own model."""
    from kgmind.graphs.aggregate_evidence import aggregate_evidence, aggregate_evidence_for_answer

    full = build_graph().nodes["aggregate_evidence"].runnable
    retrieval = build_retrieval_graph().nodes["aggregate_evidence"].runnable
    assert getattr(full, "func", None) is aggregate_evidence_for_answer
    assert getattr(retrieval, "func", None) is aggregate_evidence
