"""Concurrency: 16 questions at once in one process (threads and asyncio) equal the sequential results.

The store is the embedded LadybugDB demo store, the LLM the deterministic ``fake:`` model;
linker, gazetteer, graph index and store caches are shared by every run, so any shared
state corruption shows up as a result that differs from the sequential one.
Concurrent *feedback* is covered by tests/integration/test_feedback_concurrency.py.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from rel_harness import canonical_dump

from kgmind.graphs.context import Context
from kgmind.graphs.pipeline import graph
from kgmind.stores.factory import open_store

QUESTIONS = [
    "I have a fever and a cough, what disease could it be?",
    "What medication treats pneumonia?",
    "I have a headache and nausea.",
    "My child has a rash and a fever.",
    "What test confirms diabetes?",
    "I feel chest pain when breathing.",
    "What should I take for a sore throat?",
    "I have diarrhea and abdominal pain.",
    "Which tests check for tuberculosis?",
    "I sneeze a lot and have a runny nose.",
    "What can cure influenza?",
    "I have frequent urination and thirst.",
    "我发烧了，还咳嗽，是什么病？",
    "头痛应该吃什么药？",
    "I have back pain and fever, is it pyelonephritis?",
    "What is asthma treated with?",
]
N = len(QUESTIONS)


def _key(out: dict[str, Any]) -> tuple[Any, ...]:
    """Everything a run produced except its run id and timings."""
    return (
        out["question"],
        out["answer"],
        tuple(le.entity_id for le in out["linked_entities"]),
        tuple((e.id, e.kind, e.text, tuple(e.relation_ids)) for e in out["selected_evidence"]),
        repr(out["inference_chain"]),
        repr(out["mind_map"]),
        repr(sorted(out["grounding"].items())),
        out["llm_calls"],
        tuple(sorted(out["flags"].items())),
    )


@pytest.fixture
def ctx(demo_uri: str) -> Context:
    return Context(model="fake:conc", store=demo_uri)


@pytest.fixture
def sequential(ctx: Context) -> list[tuple[Any, ...]]:
    return [_key(graph.invoke({"question": q}, context=ctx)) for q in QUESTIONS]


def test_sequential_results_are_meaningful(sequential: list[tuple[Any, ...]]) -> None:
    """The comparison below can fail: the questions retrieve different evidence and links.

    (The fake model echoes the question, so the answers differ whatever happens; the
    evidence and the linked entities come from the shared store, linker and index.)
    """
    evidence = [k[3] for k in sequential if k[3]]
    assert len(evidence) >= N // 2  # most questions found KG evidence
    assert len(set(evidence)) >= N // 2  # ... and not the same evidence for every question
    assert len({k[2] for k in sequential if k[2]}) >= N // 2  # different linked entities too


def test_16_threads_equal_sequential(ctx: Context, sequential: list[tuple[Any, ...]], demo_uri: str) -> None:
    before = canonical_dump(open_store(demo_uri))
    with ThreadPoolExecutor(max_workers=N) as pool:
        outs = list(pool.map(lambda q: graph.invoke({"question": q}, context=ctx), QUESTIONS))
    assert [_key(o) for o in outs] == sequential
    assert len({o["run_id"] for o in outs}) == N
    assert canonical_dump(open_store(demo_uri)) == before


def test_16_threads_on_cold_caches_equal_sequential(ctx: Context, sequential: list[tuple[Any, ...]]) -> None:
    """All threads race to build the linker, gazetteer and graph index at the same time."""
    from rel_harness import clear_caches

    clear_caches()
    with ThreadPoolExecutor(max_workers=N) as pool:
        outs = list(pool.map(lambda q: graph.invoke({"question": q}, context=ctx), QUESTIONS))
    assert [_key(o) for o in outs] == sequential


def test_abatch_equals_sequential(ctx: Context, sequential: list[tuple[Any, ...]]) -> None:
    outs = asyncio.run(
        graph.abatch([{"question": q} for q in QUESTIONS], context=ctx, config={"max_concurrency": N})
    )
    assert [_key(o) for o in outs] == sequential


def test_gathered_ainvoke_equals_sequential(ctx: Context, sequential: list[tuple[Any, ...]]) -> None:
    async def main() -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(graph.ainvoke({"question": q}, context=ctx) for q in QUESTIONS)))

    outs = asyncio.run(main())
    assert [_key(o) for o in outs] == sequential
