"""What `kgmind ask` says on stderr: the live line in words, plain lines off a terminal, the demo notice."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from kgmind.cli.progress import LongLoads, NodeStatus, event_line, update_status


def _plain() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=80, color_system=None), buf


def test_status_line_says_the_answer_json_in_words() -> None:
    status = NodeStatus(Console(file=io.StringIO(), width=100), language="en")
    meta = {"langgraph_node": "reason_mindmap"}
    for piece in (
        '{"inference_chain": [{"evidence_ids": ["C1"], "about"',
        ': "Fever", "step": "Fever and co',
    ):
        update_status(status, "messages", (SimpleNamespace(content=piece, id="m1"), meta))
    line = status.__rich__().plain
    assert line.startswith("⏵ reason_mindmap ") and "writing step 1 of the reasoning: Fever and co…" in line
    assert "{" not in line and '"' not in line
    # a second call of the same node (a retry) starts its words over
    update_status(status, "messages", (SimpleNamespace(content='{"summ', id="m2"), meta))
    assert status.__rich__().plain.endswith("writing the summary…")
    # an API model's structured output streams as tool-call arguments, not content
    status.end("reason_mindmap")
    chunk = SimpleNamespace(content="", id="m3", tool_call_chunks=[{"args": '{"diagnoses": ["Infl'}])
    update_status(status, "messages", (chunk, meta))
    assert status.__rich__().plain.endswith("choosing diagnosis 1: Infl…")


def test_status_line_counts_a_list_by_the_bounds_in_the_calls_metadata() -> None:
    """reason_mindmap's model call carries its schema's list bounds; the line says "test 2 of 3-4"."""
    status = NodeStatus(Console(file=io.StringIO(), width=120), language="en")
    meta = {"langgraph_node": "reason_mindmap", "kgmind_list_bounds": {"Influenza/tests": [3, 4]}}
    piece = '{"diagnoses": [{"disease": "Influenza", "tests": ["Rapid test", "PC'
    update_status(status, "messages", (SimpleNamespace(content=piece, id="m1"), meta))
    assert status.__rich__().plain.endswith("choosing test 2 of 3-4 for Influenza: PC…")
    # a call without bounds (the hypothesis) counts what it has so far
    status.end("reason_mindmap")
    update_status(status, "messages", (SimpleNamespace(content=piece, id="m2"), {"langgraph_node": "x"}))
    assert status.__rich__().plain.endswith("choosing test 2 for Influenza (1 so far): PC…")


def test_status_line_in_chinese() -> None:
    status = NodeStatus(Console(file=io.StringIO(), width=100), language="zh")
    status.start("reason_mindmap")
    status.token('{"inference_chain": [{"evidence_ids": ["N1"], "about": "发热", "step": "发热和咳')
    assert status.__rich__().plain.endswith("正在写第 1 步推理：发热和咳…")


def test_event_lines() -> None:
    assert event_line({"node": "explore_paths", "status": "end", "ms": 12.4}) == "✓ explore_paths 12 ms"
    assert event_line({"node": "g", "status": "skipped", "why": "off"}) == "– g skipped (off)"
    start = {"node": "reason_mindmap", "status": "start"}
    assert event_line(start) is None  # a terminal's live line says what runs
    assert event_line(start, starts=True) == "· reason_mindmap started"
    assert event_line({"node": "prepare_run", "status": "start", "run_id": "r"}, starts=True) is None


def test_long_loads_say_one_line_as_they_start_and_end() -> None:
    console, buf = _plain()
    with LongLoads(console, plain=True).step("exporting MiniLM to ONNX (first use only, ~10 s)"):
        pass
    lines = buf.getvalue().splitlines()
    assert lines[0] == "· exporting MiniLM to ONNX (first use only, ~10 s) …"
    assert lines[1].startswith("✓ exporting MiniLM to ONNX (first use only, ~10 s) ") and lines[1].endswith(
        " s"
    )


def test_assembly_is_one_line_each_way_outside_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    from kgmind import llm
    from kgmind.cli.progress import assemble_local_model

    def ensure(name: str, progress: Any = None) -> Path:
        for done in (1, 2, 3):
            progress(done, 3)
        return Path("x.gguf")

    monkeypatch.setattr(llm, "ensure_local_model", ensure)
    monkeypatch.setitem(llm.LOCAL_MODELS, "tiny", SimpleNamespace())
    console, buf = _plain()
    assemble_local_model("tiny", console, plain=True)
    lines = buf.getvalue().splitlines()
    assert len(lines) == 2 and lines[0] == "· assembling the local model tiny (first use only) …"
    assert lines[1].startswith("✓ assembling the local model tiny (first use only) ")
    monkeypatch.setattr(llm, "ensure_local_model", lambda name, progress=None: Path("x.gguf"))
    console, buf = _plain()
    assemble_local_model("tiny", console, plain=True)
    assert buf.getvalue() == ""  # already assembled: nothing said


def test_linking_loads_are_named_outside_a_terminal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from kgmind.cli.progress import prepare_linking
    from kgmind.graphs import services
    from kgmind.graphs.context import Context
    from kgmind.retrievers import embeddings, entity_index, entity_index_cache
    from kgmind.retrievers.embeddings import onnx_export

    pending: list[Any] = [SimpleNamespace(quantized=False)]
    built: list[tuple[str, bool]] = []
    store = SimpleNamespace(uri="ladybug:/kg", fingerprint=lambda: "f1")
    monkeypatch.setattr(services, "get_store", lambda uri: store)
    monkeypatch.setattr(services, "get_linker", lambda store: SimpleNamespace(model="minilm"))
    monkeypatch.setattr(embeddings, "pending_onnx_export", lambda model: pending[0])
    monkeypatch.setattr(onnx_export, "onnx_minilm_path", lambda quantized=True: pending.__setitem__(0, None))
    monkeypatch.setattr(entity_index_cache, "resolve_model", lambda store, model: model)
    monkeypatch.setattr(entity_index_cache, "entity_index_dir", lambda uri, model: tmp_path / model)
    monkeypatch.setattr(
        entity_index_cache, "get_entity_index", lambda s, m, progress=False: built.append((m, progress))
    )
    console, buf = _plain()
    prepare_linking(Context(), console, plain=True)
    lines = buf.getvalue().splitlines()
    assert [line.split(" ")[0] for line in lines] == ["·", "✓", "·", "✓"]
    assert "exporting it to ONNX (first use only, ~10 s)" in lines[0]
    assert lines[2] == "· building the entity index of ladybug:/kg (minilm; first use of this KG) …"
    assert built == [("minilm", False)]  # no bar drawn outside a terminal
    (tmp_path / "minilm").mkdir()
    meta = {"format": entity_index.INDEX_FORMAT_VERSION, "model": "minilm", "fingerprint": "f1"}
    (tmp_path / "minilm" / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    console, buf = _plain()
    prepare_linking(Context(), console, plain=True)
    assert buf.getvalue() == "" and built[-1] == ("minilm", False)  # exported and indexed: nothing said


def _stats_store(entities: dict[str, int], names: list[tuple[str, str]] = ()) -> Any:  # type: ignore[assignment]
    from kgmind.models import Entity
    from kgmind.stores.protocol import StoreStats

    stats = StoreStats(entities=entities, entities_total=sum(entities.values()))

    def iter_entities() -> Any:
        if sum(entities.values()) > 1000:
            raise AssertionError("a large KG is not read entity by entity")
        return iter(Entity(name=n, type=t) for n, t in names)

    return SimpleNamespace(stats=lambda: stats, iter_entities=iter_entities)


def test_demo_notice_only_for_the_demo_kg() -> None:
    from kgmind.cli.kg import demo_notice
    from kgmind.importers.demo_store import demo_entity_counts

    counts = demo_entity_counts()
    assert counts["disease"] == 54
    line = demo_notice(_stats_store(dict(counts)))
    assert line is not None and "\n" not in line
    assert "54 common conditions" in line and "kgmind kg import FILE --format FORMAT --name NAME" in line
    assert demo_notice(_stats_store({**counts, "disease": 55})) is None  # more than the demo: the user's KG
    assert demo_notice(_stats_store({"entity": 4})) is None


def test_condition_names_of_small_and_large_kgs() -> None:
    from kgmind.cli.kg import MAX_LISTED_CONDITIONS, condition_names

    small = _stats_store(
        {"disease": 2, "symptom": 1}, [("flu", "disease"), ("Asthma", "Disease"), ("x", "symptom")]
    )
    assert condition_names(small, small.stats()) == ["Asthma", "flu"]
    large = _stats_store({"disease": MAX_LISTED_CONDITIONS + 1, "symptom": 5000})
    assert condition_names(large, large.stats()) is None
    none = _stats_store({"entity": 5000})
    assert condition_names(none, none.stats()) == []
