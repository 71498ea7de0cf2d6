"""Fuzzing what a client hands a run: human-feedback resume payloads and graph inputs with their Context.

Resume payloads: a run asked with ``feedback="human"`` pauses in ``request_feedback``
(real SQLite checkpointer, real LadybugDB demo store, the ``fake:`` model). Each example
resumes it with ``Command(resume=payload)``: a valid payload (a rating and claim ids the
run shows) must finish the run; any other must pause it again with an ``error`` that says
what was wrong, never raise, and leave the store and the run's checkpoints as they were.
The checkpoint file and the store are put back after every example.

Graph inputs (what ``graph.invoke`` and a LangGraph server's ``runs.create`` pass on):
``{"question", "entities", "reference"}`` of any type, NUL bytes, surrogate-escaped bytes
and 200 kB strings, and ``Context`` fields of the wrong type or out of range. The run
returns an answer or raises ``ValueError``, ``TypeError``, ``StoreError`` or LangGraph's
``InvalidUpdateError`` (an input that is not a dict) / ``EmptyInputError`` (``None``), and
never writes to the store (feedback is off). Profiles as in :mod:`test_fuzz_inputs`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fuzz_strategies import HUGE, count_outcome, json_values, odd_text
from hypothesis import example, given
from hypothesis import strategies as st
from langgraph.errors import EmptyInputError, InvalidUpdateError
from langgraph.types import Command
from rel_harness import QUESTION, clear_caches, full_dump, sqlite_rows
from test_fuzz_inputs import FuzzStore

from kgmind.graphs.checkpoint import get_checkpointer
from kgmind.graphs.claims import claim_edges
from kgmind.graphs.context import MODES, Context
from kgmind.graphs.pipeline import build_graph, graph
from kgmind.stores.factory import open_store
from kgmind.stores.protocol import StoreError

# -- resume payloads ---------------------------------------------------------------------------


class PausedRun:
    """A run paused for human feedback, its checkpoint file, and a way back to that pause."""

    def __init__(self, store: FuzzStore) -> None:
        self.store = store
        self.db = store.root / "checkpoints.sqlite"
        self.graph = build_graph().compile(checkpointer=get_checkpointer(f"sqlite:{self.db}"))
        self.config: Any = {"configurable": {"thread_id": "fuzz-run"}}
        self.context = Context(model="fake:fuzz", store=store.uri, feedback="human")
        out = self.graph.invoke({"question": QUESTION}, self.config, context=self.context)
        assert out["__interrupt__"], "the run did not pause for feedback"
        self.values = self.graph.get_state(self.config).values
        self.claims = [c for c, edges in claim_edges(self.values).items() if edges]
        assert self.claims, "the paused run shows no claim resting on a KG edge"
        self.template = store.root / "checkpoints.template.sqlite"
        with sqlite3.connect(self.template) as dst:
            get_checkpointer(f"sqlite:{self.db}").conn.backup(dst)  # type: ignore[attr-defined]
        self.rows = sqlite_rows(self.template)
        self.store.before = full_dump(open_store(store.uri))

    def resume(self, payload: Any) -> dict[str, Any]:
        return self.graph.invoke(Command(resume=payload), self.config, context=self.context)

    def restore(self) -> None:
        """Back to the pause: the checkpoint file's rows and, when the store changed, the store."""
        with sqlite3.connect(self.template) as src:
            src.backup(get_checkpointer(f"sqlite:{self.db}").conn)  # type: ignore[attr-defined]
        if not self.store.unchanged():
            self.store.restore()


@pytest.fixture
def paused(demo_template: Path, tmp_path: Path) -> Iterator[PausedRun]:
    yield PausedRun(FuzzStore(demo_template, tmp_path))
    clear_caches()


def _claim_lists(claims: list[str]) -> st.SearchStrategy[tuple[list[str], list[str]]]:
    """Disjoint ``wrong`` and ``right`` lists of claim ids the run shows (any case, maybe bracketed)."""
    spelled = st.sampled_from(claims).flatmap(lambda c: st.sampled_from([c, c.lower(), f"[{c}]", f" {c} "]))
    return st.lists(spelled, max_size=3).flatmap(
        lambda wrong: st.tuples(
            st.just(wrong),
            st.lists(
                st.sampled_from(claims).filter(lambda c: c not in {w.strip(" []").upper() for w in wrong}),
                max_size=2,
            ),
        )
    )


RATINGS = ["excellent", "poor", "neutral", " Poor ", "EXCELLENT", ""]


@st.composite
def valid_payloads(draw: st.DrawFn, claims: list[str]) -> Any:
    rating = draw(st.sampled_from([*RATINGS, None]))
    if draw(st.integers(0, 4)) == 0 and rating is not None:
        return rating  # a bare rating string (Command(resume=None) fails inside LangGraph itself)
    wrong, right = draw(_claim_lists(claims))
    payload: dict[str, Any] = {"rating": rating}  # never {}: LangGraph reads that as "resume nothing"
    for key, value in (("wrong", wrong), ("right", right)):
        if draw(st.booleans()):
            payload[key] = value
    if draw(st.booleans()) and len(payload) > 1:
        del payload["rating"]
    return payload


@st.composite
def any_payloads(draw: st.DrawFn, claims: list[str]) -> Any:
    """A valid payload, or one with a wrong type, unknown key, unknown or empty claim id somewhere."""
    claim_ish = st.one_of(
        st.sampled_from(claims), st.sampled_from(["N99", "S0", "X", "N1,,S1", ",", "\x00"]), odd_text
    )
    field = st.one_of(json_values, st.lists(claim_ish, max_size=3), claim_ish, st.sampled_from(RATINGS))
    keys = st.one_of(st.sampled_from(["rating", "wrong", "right"]), st.text(max_size=8))
    return draw(
        st.one_of(
            valid_payloads(claims),
            st.dictionaries(keys, field, max_size=4),
            # not None at the top: LangGraph itself fails on Command(resume=None) (UnboundLocalError in
            # pregel, langgraph 1.x) before any kgmind code runs
            json_values.filter(lambda v: v is not None),
            st.sampled_from([HUGE, b"excellent", ["excellent"], 5, {"rating": None, "wrong": 5}]),
        )
    )


def check_resume(paused: PausedRun, payload: Any, kind: str) -> bool:
    """Resume with ``payload``; assert it finished or paused again cleanly. Returns whether it finished.

    The case is tallied under ``kind`` (:func:`fuzz_strategies.count_outcome`) once its checks held.
    """
    out = paused.resume(payload)
    interrupts = out.get("__interrupt__")
    if not interrupts:
        assert out.get("feedback", {}).get("source") == "human"
        count_outcome(kind, "finished the run")
        return True
    ask = interrupts[0].value
    # LangGraph reads a dict resume as {interrupt id: value}; an empty one resumes nothing, so
    # the run asks again unchanged (no error: no payload reached request_feedback)
    if payload != {}:
        assert isinstance(ask.get("error"), str) and ask["error"], ask
    assert ask["claim_ids"] == list(claim_edges(paused.values))
    assert paused.store.unchanged(), "a rejected payload changed the store"
    assert paused.graph.get_state(paused.config).values == paused.values
    now = [row for row in sqlite_rows(paused.db) if row[0] == "checkpoints"]
    assert now == [row for row in paused.rows if row[0] == "checkpoints"], (
        "a rejected payload wrote a checkpoint"
    )
    count_outcome(kind, "paused again, store, state and checkpoints unchanged")
    return False


#: Payloads that were bugs, each a regression example.
KNOWN_BAD: dict[str, Any] = {
    "claim list a number": {"wrong": 5},
    "int past 64 bits": -9_223_512_774_343_131_136,
}


@given(data=st.data())
@example(data="claim list a number").via("a claim list that is a number (failed the run with a TypeError)")
@example(data="int past 64 bits").via(
    "msgpack refused it: a TypeError while LangGraph wrote the resume value"
)
def test_fuzzed_resume_payload_finishes_or_pauses_again_cleanly(data: Any, paused: PausedRun) -> None:
    if isinstance(data, str):
        payload = KNOWN_BAD[data]
    else:
        payload = data.draw(any_payloads(paused.claims), label="payload")
    try:
        check_resume(paused, payload, "resume payload (any)")
    finally:
        paused.restore()


@given(data=st.data())
def test_valid_resume_payload_finishes_the_run(data: st.DataObject, paused: PausedRun) -> None:
    payload = data.draw(valid_payloads(paused.claims), label="payload")
    try:
        assert check_resume(paused, payload, "resume payload (valid)"), (
            f"a valid payload was refused: {payload!r}"
        )
    finally:
        paused.restore()


# -- graph inputs and Context fields ------------------------------------------------------------

_SMALL_INTS = st.integers(-3, 40)
CONTEXT_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "mode": st.sampled_from(["full", "mindmap", "hykge", "kgcot", "llm_only", "FULL", "nope", ""]),
    "hypothesis": st.sampled_from([True, False, "auto", "yes", None]),
    "top_k": _SMALL_INTS,
    "threshold": st.one_of(st.none(), st.floats(allow_nan=True)),
    "max_linked": st.one_of(st.none(), _SMALL_INTS),
    "max_hops": _SMALL_INTS,
    "max_paths": _SMALL_INTS,
    "max_neighbors": _SMALL_INTS,
    "dfs_chains": _SMALL_INTS,
    "dfs_depth": _SMALL_INTS,
    "seed": st.integers(),
    "budget_tokens": st.integers(-10, 5000),
    "language": st.sampled_from(["auto", "en", "zh", "fr", ""]),
    "packing": st.sampled_from(["value", "rank", "other"]),
    "answer_schema": st.sampled_from(["grounded", "free", "strict"]),
    "max_tokens": st.integers(-5, 600),
    "exploration": st.sampled_from(["auto", "memory", "pushdown", "disk"]),
}


@st.composite
def graph_inputs(draw: st.DrawFn) -> tuple[Any, dict[str, Any]]:
    """An input (mostly a dict with a question) and Context fields, each maybe of the wrong type."""
    question = st.one_of(st.sampled_from([QUESTION, "我发烧了，还咳嗽"]), odd_text, json_values)
    entities = st.one_of(
        st.lists(st.one_of(odd_text, st.sampled_from(["Fever", "Cough"])), max_size=4), json_values
    )
    payload: Any = {"question": draw(question)}
    for key, value in (("entities", entities), ("reference", odd_text), ("junk", json_values)):
        if draw(st.integers(0, 3)) == 0:
            payload[key] = draw(value)
    if draw(st.integers(0, 9)) == 0:
        payload = draw(json_values)
    fields = {k: draw(v | json_values) for k, v in CONTEXT_FIELDS.items() if draw(st.integers(0, 4)) == 0}
    return payload, fields


@given(case=graph_inputs())
@example(case=({"question": 5}, {})).via("a question that is not a string (was an AttributeError)")
@example(case=({"question": QUESTION}, {"mode": "ful"})).via("a typo in mode (answered without KG evidence)")
@example(case=({"question": "fever", "entities": "Fever"}, {})).via(
    "entities not a list (read letter by letter)"
)
def test_fuzzed_graph_input_answers_or_raises_a_documented_error(
    case: tuple[Any, dict[str, Any]], fuzz_store: FuzzStore
) -> None:
    payload, fields = case
    context = Context(model="fake:fuzz", store=fuzz_store.uri, **fields)
    unknown_mode = "mode" in fields and fields["mode"] not in MODES
    try:
        out = graph.invoke(payload, context=context)
    except (
        ValueError,
        TypeError,
        StoreError,
        InvalidUpdateError,
        EmptyInputError,
    ) as exc:  # the last two: LangGraph's
        outcome = f"raised {type(exc).__name__}, store unchanged"
    else:
        assert isinstance(out.get("answer"), str)
        assert not unknown_mode, f"mode {fields['mode']!r} was accepted"
        outcome = "answered, store unchanged"
    assert fuzz_store.unchanged(), "a run with feedback off changed the store"
    count_outcome("graph input (SDK)", outcome)


@pytest.fixture
def fuzz_store(demo_template: Path, tmp_path: Path) -> Iterator[FuzzStore]:
    yield FuzzStore(demo_template, tmp_path)
    clear_caches()
