"""plan_exploration, the four explore_* nodes and aggregate_evidence with fakes."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from langgraph.runtime import Runtime
from langgraph.types import Send

from kgmind.graphs import services
from kgmind.graphs.aggregate_evidence import (
    aggregate_evidence,
    aggregate_evidence_for_answer,
    rewrite_evidence,
)
from kgmind.graphs.context import Context
from kgmind.graphs.explore import explore_chains, explore_kgcot, explore_neighbors, explore_paths
from kgmind.graphs.plan_exploration import EXPLORATION_NODES, plan_exploration
from kgmind.models import Evidence, LinkedEntity
from kgmind.retrievers import aggregate, exploration
from kgmind.tuning import EVIDENCE_VALUES, PIPELINE


def _rt(**kw: Any) -> Runtime[Context]:
    return Runtime(context=Context(**kw))


LINKED = [LinkedEntity(mention="fever", entity_id="e1", name="Fever")]
STATE: Any = {
    "question": "fever?",
    "hypothesis": "flu",
    "linked_entities": LINKED,
    "store_uri": "s",
}


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("full", list(EXPLORATION_NODES)),
        ("mindmap", ["explore_paths", "explore_neighbors"]),
        ("hykge", ["explore_chains"]),
        ("kgcot", ["explore_kgcot"]),
    ],
)
def test_plan_exploration_sends_per_mode(mode: str, expected: list[str]) -> None:
    sends = plan_exploration(STATE, _rt(mode=mode))
    assert isinstance(sends, list)
    assert all(isinstance(s, Send) for s in sends)
    assert [s.node for s in sends] == expected
    assert sends[0].arg == {"entity_ids": ["e1"], "phrases": ["fever"], "named": ["e1"]}


def test_plan_exploration_names_only_what_the_question_says_word_for_word() -> None:
    linked = [
        LinkedEntity(mention="Fever", entity_id="e1", name="Fever"),
        LinkedEntity(mention="flu", entity_id="e2", name="Flu"),  # the hypothesis' word
        LinkedEntity(mention="feverish", entity_id="e3", name="Fever", score=0.95),
    ]
    sends = plan_exploration({**STATE, "question": "A FEVER since Monday", "linked_entities": linked}, _rt())
    assert isinstance(sends, list)
    assert sends[0].arg["named"] == ["e1"]
    assert sends[0].arg["phrases"] == ["Fever", "flu", "feverish"]


def _named(question: str, linked: list[LinkedEntity]) -> list[str]:
    sends = plan_exploration({**STATE, "question": question, "linked_entities": linked}, _rt())
    assert isinstance(sends, list)
    return list(sends[0].arg["named"])


def test_a_word_another_phrases_finding_holds_names_no_diagnosis() -> None:
    """In "my eyes burn and sting", "burn" is the finding "Eye burns or stings", which "sting" linked."""
    burn = LinkedEntity(mention="burn", entity_id="d1", name="Burn", type="disease")
    linked = [
        burn,
        LinkedEntity(mention="sting", entity_id="s1", name="Eye burns or stings", type="symptom", score=0.6),
        LinkedEntity(mention="asthma", entity_id="d2", name="Asthma", type="disease"),
        # Another disease holding the word is no finding: "asthma" still names Asthma.
        LinkedEntity(mention="attack", entity_id="d3", name="Asthma attack", type="disease", score=0.95),
    ]
    assert _named("My eyes burn and sting, and my asthma is worse", linked) == ["d2"]
    # Alone, the same word names the disease.
    assert _named("A burn on my hand", [burn]) == ["d1"]


def test_a_finding_linked_by_a_near_name_the_question_does_not_state_leaves_the_word_named() -> None:
    """Linked from "红色胎记", the near name 白色胎记 is not stated (no 白): 胎记 stays named."""
    birthmark = LinkedEntity(mention="胎记", entity_id="d1", name="胎记", type="disease")
    white = LinkedEntity(mention="红色胎记", entity_id="s1", name="白色胎记", type="symptom", score=0.945)
    red = LinkedEntity(mention="红色", entity_id="s2", name="红色胎记", type="symptom", score=0.95)
    question = "宝宝后脑勺长了一片像红色胎记的东西，感觉不是胎记"
    assert _named(question, [birthmark, white]) == ["d1"]
    assert _named(question, [birthmark, red]) == []


def test_plan_exploration_goes_to_reasoning_without_entities() -> None:
    assert plan_exploration({**STATE, "linked_entities": []}, _rt()) == "reason_mindmap"
    assert plan_exploration(STATE, _rt(mode="llm_only")) == "reason_mindmap"


@pytest.fixture
def fake_kg(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    calls: dict[str, Any] = {}
    monkeypatch.setattr(services, "get_store", lambda uri: "STORE")
    monkeypatch.setattr(services, "get_graph_index", lambda store, **_: "GI")

    def record(name: str, kind: Any) -> Any:
        def fn(gi: Any, ids: Any, **kw: Any) -> list[Evidence]:
            calls[name] = {"gi": gi, "ids": list(ids), **kw}
            return [Evidence(kind=kind, text=f"{name} text", relation_ids=[f"r-{name}"])]

        return fn

    monkeypatch.setattr(exploration, "path_evidence", record("paths", "path"))
    monkeypatch.setattr(exploration, "neighbor_evidence", record("neighbors", "neighbor"))
    monkeypatch.setattr(exploration, "hykge_chains", record("chains", "chain"))
    monkeypatch.setattr(exploration, "weighted_dfs_chains", record("dfs", "kgcot"))
    return calls


TASK: Any = {"entity_ids": ["e1", "e2"]}


def test_explore_paths_weight_aware_except_mindmap(fake_kg: dict[str, Any]) -> None:
    out = explore_paths(TASK, _rt(max_hops=4, max_paths=7))
    assert [e.kind for e in out["path_evidence"]] == ["path"]
    assert fake_kg["paths"] == {
        "gi": "GI",
        "ids": ["e1", "e2"],
        "max_hops": 4,
        "max_paths": 7,
        "weight_aware": True,
        "hub_percentile": _rt().context.hub_percentile,
    }
    explore_paths(TASK, _rt(mode="mindmap"))
    assert fake_kg["paths"]["weight_aware"] is False
    assert fake_kg["paths"]["hub_percentile"] is None  # MindMap walks through every node


def test_explore_neighbors_faithful_in_mindmap(fake_kg: dict[str, Any]) -> None:
    out = explore_neighbors(TASK, _rt(max_neighbors=3, packing="rank"))
    assert out["neighbor_evidence"][0].kind == "neighbor"
    assert fake_kg["neighbors"]["ranked"] is True and fake_kg["neighbors"]["max_lines"] == 3
    assert fake_kg["neighbors"]["tail_types"] is None
    # value packing is offered the answer-type lines of more diseases, and keeps what is worth it
    explore_neighbors(TASK, _rt(max_neighbors=3))
    assert fake_kg["neighbors"]["max_lines"] == PIPELINE.candidate_lines
    assert fake_kg["neighbors"]["tail_types"] == {"disease", "test", "medication"}
    explore_neighbors(TASK, _rt(mode="mindmap"))
    assert fake_kg["neighbors"]["tail_types"] is None
    assert fake_kg["neighbors"]["ranked"] is False and fake_kg["neighbors"]["weight_aware"] is False
    assert fake_kg["neighbors"]["phrases"] is None  # a task from before phrases were sent
    explore_neighbors({**TASK, "phrases": ["fever", "a cough"], "named": ["e2"]}, _rt())
    assert fake_kg["neighbors"]["phrases"] == ["fever", "a cough"] and fake_kg["neighbors"]["named"] == ["e2"]


def test_explore_chains_and_kgcot(fake_kg: dict[str, Any]) -> None:
    out = explore_chains(TASK, _rt(max_chains=11))
    assert out["chain_evidence"][0].kind == "chain"
    assert fake_kg["chains"]["max_chains"] == 11
    out = explore_kgcot(TASK, _rt(dfs_chains=4, dfs_depth=2, seed=9))
    assert out["kgcot_evidence"][0].kind == "kgcot"
    assert {k: fake_kg["dfs"][k] for k in ("n_chains", "max_depth", "seed", "store")} == {
        "n_chains": 4,
        "max_depth": 2,
        "seed": 9,
        "store": "STORE",
    }
    assert "explore_kgcot" in out["timings_ms"]


def _numbered(evs: list[Evidence], question: str, hypothesis: str = "", **kw: Any) -> list[Evidence]:
    out = []
    for i, e in enumerate(evs, 1):
        out.append(e.model_copy(update={"id": f"{e.kind[0].upper()}{i}"}))
    return out


def test_aggregate_evidence_merges_all_branches(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_agg(evs: list[Evidence], question: str, hypothesis: str = "", **kw: Any) -> list[Evidence]:
        seen.update(kinds=[e.kind for e in evs], question=question, hypothesis=hypothesis, **kw)
        return _numbered(evs, question)

    monkeypatch.setattr(aggregate, "aggregate_evidence", fake_agg)
    state: Any = {
        "question": "q",
        "hypothesis": "h",
        "path_evidence": [Evidence(kind="path", text="a")],
        "neighbor_evidence": [Evidence(kind="neighbor", text="b")],
        "chain_evidence": [],
        "kgcot_evidence": [Evidence(kind="kgcot", text="c")],
    }
    out = aggregate_evidence(state, _rt(budget_tokens=321, packing="rank"))
    assert seen == {
        "kinds": ["path", "neighbor", "kgcot"],
        "question": "q",
        "hypothesis": "h",
        "reranker": None,  # the fitted default (aggregate.default_reranker's own mode)
        "budget_tokens": 321,
        "tokenizer": None,
        "value": None,
        "types": None,
    }
    assert [e.id for e in out["selected_evidence"]] == ["P1", "N2", "K3"]
    # full mode packs by value, with the language's fitted chances and the entities' types
    monkeypatch.setattr(services, "index_entity_types", lambda ctx, seeds, evs: {"a": "disease"})
    aggregate_evidence({**state, "language": "zh"}, _rt(budget_tokens=321))
    assert seen["value"] is EVIDENCE_VALUES["zh"] and seen["types"] == {"a": "disease"}
    aggregate_evidence(state, _rt(budget_tokens=321, mode="mindmap"))  # single-method modes: rank order
    assert seen["value"] is None
    # a calibration run names the reranker's question mode through the Context
    monkeypatch.setattr(aggregate, "default_reranker", lambda evs, question: ("reranker", question))
    aggregate_evidence(state, _rt(rerank_question="embed"))
    assert seen["reranker"] == ("reranker", "embed")
    assert out["llm_calls"] == 0
    assert out["flags"] == {"no_kg_evidence": False}


def test_the_answering_graph_counts_the_budget_in_its_models_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    """The full graph's node asks for the reader's tokenizer; the retrieval graph's reader is unknown."""
    import kgmind.llm

    seen: list[Any] = []

    def fake_agg(evs: list[Evidence], question: str, hypothesis: str = "", **kw: Any) -> list[Evidence]:
        seen.append(kw["tokenizer"])
        return _numbered(evs, question)

    def tokenizer(text: str) -> list[int]:
        return [0] * len(text)

    asked: list[str] = []

    def local_tokenizer(name: str) -> Any:
        asked.append(name)
        return tokenizer if name == "local" else None

    monkeypatch.setattr(aggregate, "aggregate_evidence", fake_agg)
    monkeypatch.setattr(kgmind.llm, "local_tokenizer", local_tokenizer)
    state: Any = {"question": "q", "neighbor_evidence": [Evidence(kind="neighbor", text="b")]}
    aggregate_evidence_for_answer(state, _rt(model="local"))
    aggregate_evidence_for_answer(state, _rt(model="fake:x"))
    aggregate_evidence(state, _rt(model="local"))
    assert seen == [tokenizer, None, None] and asked == ["local", "fake:x"]


def test_aggregate_evidence_empty_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aggregate, "aggregate_evidence", lambda evs, q, h="", **kw: [])
    out = aggregate_evidence({"question": "q"}, _rt())
    assert out["selected_evidence"] == [] and out["flags"] == {"no_kg_evidence": True}


def test_llm_renderer_rewrites_by_id_and_counts_a_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aggregate, "aggregate_evidence", _numbered)
    reply = AIMessage(content="P1: Fever can point to flu.\nsome chatter\nK9: unknown id is ignored")
    monkeypatch.setattr(
        services, "get_llm", lambda ctx, purpose="reason", **kw: RunnableLambda(lambda m: reply)
    )
    state: Any = {
        "question": "q",
        "path_evidence": [Evidence(kind="path", text="Fever->sign_of->Flu")],
        "neighbor_evidence": [Evidence(kind="neighbor", text="Flu->treated_by->Rest")],
    }
    out = aggregate_evidence(state, _rt(evidence_renderer="llm"))
    texts = {e.id: e.text for e in out["selected_evidence"]}
    assert texts == {"P1": "Fever can point to flu.", "N2": "Flu->treated_by->Rest"}
    assert out["selected_evidence"][0].meta["template_text"] == "Fever->sign_of->Flu"
    assert out["llm_calls"] == 1


def test_rewrite_evidence_keeps_items_the_reply_misses() -> None:
    evs = [Evidence(id="P1", kind="path", text="x"), Evidence(id="N1", kind="neighbor", text="y")]
    out = rewrite_evidence(RunnableLambda(lambda m: "nothing useful"), evs, "en")
    assert [e.text for e in out] == ["x", "y"]


def test_index_entity_types_reads_the_explored_index_and_trusts_it_for_the_recheck_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from types import SimpleNamespace

    from kgmind.tools.exploration import RECHECK_S

    gi = SimpleNamespace(
        index_of={"e1": 0, "e2": 1}, names=["Fever", "Influenza  A"], types=["symptom", "disease"]
    )
    seen: dict[str, Any] = {}
    monkeypatch.setattr(services, "get_store", lambda uri: "STORE")

    def index(store: Any, mode: str, seeds: Any, **kw: Any) -> Any:
        seen.update(store=store, mode=mode, seeds=list(seeds), **kw)
        return gi

    monkeypatch.setattr(services, "get_exploration_index", index)
    ev = Evidence(
        kind="path",
        text="t",
        triples=[("Fever", "possible_disease", "Influenza A")],
        entity_ids=["e1", "e2", "e9"],
    )
    types = services.index_entity_types(Context(), ["e1"], [ev])
    assert types == {"fever": "symptom", "influenza a": "disease"}  # e9 is not in the index: left out
    assert seen == {"store": "STORE", "mode": "auto", "seeds": ["e1"], "recheck_s": RECHECK_S}
