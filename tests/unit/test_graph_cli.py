"""`kgmind ask` / `kgmind feedback` and the Mermaid/HTML renderers, with a fake KG and the fake LLM."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from kgmind.cli import app
from kgmind.graphs.render import evidence_mermaid, mind_map_mermaid, run_html
from kgmind.models import Evidence, LinkedEntity
from pipeline_fakes import fake_retrieval

runner = CliRunner()


def _number(evs: list[Evidence], question: str, hypothesis: str = "", **kw: Any) -> list[Evidence]:
    return [e.model_copy(update={"id": f"{e.kind[0].upper()}{i}"}) for i, e in enumerate(evs, 1)]


class _Store:
    """The feedback side of a store: which feedback ids were applied."""

    def __init__(self, world: dict[str, Any]) -> None:
        self.world = world

    def weight_changes(self, feedback_id: str | None = None) -> list[Any]:
        return [1] if feedback_id in self.world["applied"] else []

    def get_entities(self, ids: Any) -> list[Any]:
        return []


@pytest.fixture
def cli_world(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    monkeypatch.setenv("KGMIND_HOME", str(tmp_path / "home"))
    world: dict[str, Any] = {"feedback": [], "applied": set()}
    store = _Store(world)
    path = Evidence(
        kind="path",
        text="Fever may be a sign of Flu.",
        triples=[("Fever", "possible_disease", "Flu")],
        relation_ids=["r1"],
    )
    nb = Evidence(
        kind="neighbor",
        text="Flu can be treated with Rest.",
        triples=[("Flu", "need_medication", "Rest")],
        relation_ids=["r2"],
    )
    fake_retrieval(
        monkeypatch,
        get_store=lambda uri: store,
        linked=lambda: [LinkedEntity(mention="fever", entity_id="e1", name="Fever")],
        evidence={"path_evidence": [path], "neighbor_evidence": [nb]},
        number=_number,
    )

    import kgmind.stores.factory as factory
    from kgmind.stores import feedback as fb

    monkeypatch.setattr(factory, "open_store", lambda uri=None: store)
    monkeypatch.setattr(factory, "require_store", lambda uri: None)  # the fake store "exists"

    def apply(store: Any, run_id: str, rating: str, rel: list[str], feedback_id: str = "") -> list[Any]:
        world["feedback"].append((run_id, rating, rel))
        world["applied"].add(feedback_id)
        return [SimpleNamespace(relation_id=rel[0])]

    monkeypatch.setattr(fb, "apply_feedback", apply)
    # the first-use loads before a run (ONNX export, entity index) need a real store
    from kgmind.cli import progress

    monkeypatch.setattr(progress, "prepare_linking", lambda ctx, console, plain=False: None)
    return world


def _ask_json(*extra: str) -> dict[str, Any]:
    res = runner.invoke(
        app,
        [
            "ask",
            "I have a fever?",
            "--store",
            "ladybug:/unused",
            "--model",
            "fake:cli",
            "--json",
            "--quiet",
            *extra,
        ],
    )
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_wiring_ask_json_contract(cli_world: dict[str, Any]) -> None:
    """The JSON keys and evidence of ``kgmind ask``; a wiring test (the fake model fills any schema)."""
    out = _ask_json()
    assert set(out) >= {
        "run_id",
        "answer",
        "inference_chain",
        "mind_map",
        "selected_evidence",  # the graph's own name, as the SDK returns it
        "grounding",
        "llm_calls",
        "timings_ms",
    }
    assert out["llm_calls"] == 2
    assert [e["id"] for e in out["selected_evidence"]] == ["P1", "N2"]
    assert out["selected_evidence"][0] == {
        "id": "P1",
        "kind": "path",
        "text": "Fever may be a sign of Flu.",
        "relation_ids": ["r1"],
        "triples": [["Fever", "possible_disease", "Flu"]],
        "entity_types": {},  # what the exploring tool knew (none in this fake world)
        "readings": {},
    }
    assert out["grounding"]["flagged"] == []
    ids = {e["id"] for e in out["selected_evidence"]}
    assert all(set(s["evidence_ids"]) <= ids for s in out["inference_chain"])


def test_ask_writes_mermaid_and_html(cli_world: dict[str, Any], tmp_path: Path) -> None:
    mm, page = tmp_path / "m.md", tmp_path / "a.html"
    out = _ask_json("--mermaid", str(mm), "--html", str(page))
    text = mm.read_text(encoding="utf-8")
    assert text.count("```mermaid") == 2 and "flowchart LR" in text and "possible_disease P1" in text
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "<script src" not in html
    assert out["answer"].split(" (")[0].replace("[cli] ", "") in html or "[cli]" in html


def test_ask_says_where_it_wrote(cli_world: dict[str, Any], tmp_path: Path) -> None:
    page = tmp_path / "a.html"
    res = runner.invoke(
        app,
        [
            "ask",
            "fever?",
            "--store",
            "ladybug:/unused",
            "--model",
            "fake:cli",
            "--json",
            "-q",
            "--html",
            str(page),
        ],
    )
    assert res.exit_code == 0, res.output
    assert res.stderr.strip() == f"wrote {page.resolve()}"
    assert json.loads(res.stdout)["run_id"]  # stdout is still the JSON alone


def test_ask_rich_output(cli_world: dict[str, Any]) -> None:
    res = runner.invoke(
        app, ["ask", "fever?", "--store", "ladybug:/unused", "--model", "fake:cli", "--mode", "mindmap"]
    )
    assert res.exit_code == 0, res.output
    assert "Answer" in res.stdout and "Mind map" in res.stdout and "P1" in res.stdout
    assert "kgmind feedback" in res.stdout


def test_ask_hypothesis_option_and_the_skipped_node(cli_world: dict[str, Any]) -> None:
    on = _ask_json("--hypothesis", "on")
    assert on["llm_calls"] == 2 and "hypothesis_skipped" not in on["flags"]
    off = _ask_json("--hypothesis", "off")
    assert off["llm_calls"] == 1 and off["flags"]["hypothesis_skipped"] is True
    # with progress on, the skipped node is named with the reason instead of a time
    res = runner.invoke(
        app, ["ask", "fever?", "--store", "ladybug:/unused", "--model", "fake:cli", "--hypothesis", "off"]
    )
    assert res.exit_code == 0, res.output
    assert "– generate_hypothesis skipped (hypothesis=false)" in res.stderr
    assert "✓ generate_hypothesis" not in res.stderr and "✓ reason_mindmap" in res.stderr
    bad = runner.invoke(app, ["ask", "fever?", "--hypothesis", "maybe", "--store", "ladybug:/x"])
    assert bad.exit_code == 2 and "unknown --hypothesis 'maybe'" in bad.stderr


def test_ask_rejects_unknown_mode(cli_world: dict[str, Any]) -> None:
    res = runner.invoke(app, ["ask", "fever?", "--mode", "bogus", "--store", "ladybug:/x"])
    assert res.exit_code == 2 and "unknown mode" in res.stderr


def test_feedback_round_trip(cli_world: dict[str, Any]) -> None:
    out = _ask_json()
    res = runner.invoke(app, ["feedback", out["run_id"], "--rating", "excellent", "--json"])
    assert res.exit_code == 0, res.output
    rec = json.loads(res.stdout)
    assert rec["rating"] == "excellent" and rec["applied"] is True
    cited = {i for s in out["inference_chain"] for i in s["evidence_ids"]}
    expected = sorted({"P1": "r1", "N2": "r2"}[c] for c in cited)
    assert cli_world["feedback"] == [(out["run_id"], "excellent", expected)]
    # The rating is recorded in the run's stored state.
    from kgmind.graphs.checkpoint import load_run_state

    values, _ = load_run_state(out["run_id"])
    assert values["feedback"]["rating"] == "excellent"
    assert rec["credit"] == "cited" and rec["already_applied"] is False
    again = runner.invoke(app, ["feedback", out["run_id"], "--rating", "excellent"])
    assert again.exit_code == 0 and "already applied (feedback id fb" in again.stdout
    assert len(cli_world["feedback"]) == 1  # the repeat changed nothing


def test_feedback_unknown_run_and_bad_rating(cli_world: dict[str, Any]) -> None:
    res = runner.invoke(app, ["feedback", "nope", "--rating", "poor"])
    assert res.exit_code == 1 and "unknown run id" in res.stderr
    _ask_json()  # creates the checkpoint DB; the id is still unknown
    res = runner.invoke(app, ["feedback", "nope", "--rating", "poor"])
    assert res.exit_code == 1 and "unknown run id 'nope'" in res.stderr
    res = runner.invoke(app, ["feedback", "nope", "--rating", "great"])
    assert res.exit_code == 2 and "rating must be" in res.stderr


def test_mermaid_renderers_escape_labels() -> None:
    mm = mind_map_mermaid(
        {
            "label": 'root "x" [y]',
            "evidence_ids": [],
            "children": [{"label": "child", "evidence_ids": ["P1"], "children": []}],
        }
    )
    assert 'm0["root x y"]' in mm and 'm1["child (P1)"]' in mm and "m0 --> m1" in mm
    eg = evidence_mermaid(
        [
            Evidence(id="P1", kind="path", triples=[("A", "r", "B")]),
            Evidence(id="N1", kind="neighbor", triples=[("A", "r", "B")]),
        ]
    )
    assert eg.count("-->") == 1 and "r P1 N1" in eg
    page = run_html(
        {
            "answer": "<b>x</b>",
            "mind_map": {"label": "m"},
            "selected_evidence": [],
            "grounding": {"flagged": ["P9"]},
        }
    )
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "P9" in page


def test_live_stream_writes_the_llm_output_per_node(cli_world: dict[str, Any]) -> None:
    import io

    from kgmind.cli.ask import run_question
    from kgmind.graphs.context import Context

    live = io.StringIO()
    ctx = Context(model="fake:live", store="ladybug:/unused")
    result = run_question("fever?", ctx, progress=False, live=live)
    text = live.getvalue()
    assert "[generate_hypothesis]" in text  # the node whose model produced the tokens
    assert "[live]" in text  # the fake model's tokens reached the stream
    quiet = run_question("fever?", ctx, progress=False)
    assert quiet["selected_evidence"] == result["selected_evidence"]


def _printed(result: dict[str, Any], monkeypatch: pytest.MonkeyPatch, width: int = 80) -> str:
    import io

    from rich.console import Console

    from kgmind.cli import ask as ask_mod

    buf = io.StringIO()
    monkeypatch.setattr(ask_mod, "console", Console(file=buf, width=width, color_system=None))
    ask_mod.print_result(result)
    return buf.getvalue()


def _result(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "run_id": "r1",
        "answer": "Flu.",
        "inference_chain": [],
        "mind_map": {"label": "Flu"},
        "selected_evidence": [{"id": "P1", "kind": "path", "text": "Fever may be a sign of Flu."}],
        "grounding": {"flagged": []},
        "llm_calls": 1,
        "flags": {},
    }
    return {**base, **over}


def test_flags_are_said_in_words(monkeypatch: pytest.MonkeyPatch) -> None:
    clean = _printed(_result(), monkeypatch)
    assert "free text" not in clean and "not in the evidence" not in clean
    out = _printed(
        _result(
            flags={"fallback_parse": True},
            grounding={
                "unknown_ids": ["P9", "N7", "C3"],
                "ungrounded_nodes": ["Moon dust"],
                "flagged": ["P9", "N7", "C3", "Moon dust"],
            },
        ),
        monkeypatch,
        width=200,
    )
    assert "answer rebuilt from free text" in out
    assert "3 cited ids are not in the evidence: P9, N7, C3" in out
    assert "1 mind-map node is not grounded in the evidence: Moon dust" in out
    assert "fallback_parse" not in out


def test_cjk_evidence_rows_wrap_without_truncation(monkeypatch: pytest.MonkeyPatch) -> None:
    zh = (
        "发热可能是流行性感冒的症状，流行性感冒可以用奥司他韦治疗，也可能出现咳嗽、头痛和全身肌肉酸痛等表现。"
        * 2
    )
    en = "Fever may be a sign of influenza, which can be treated with oseltamivir and rest. " * 2
    out = _printed(
        _result(
            selected_evidence=[
                {"id": "N1", "kind": "neighbor", "text": zh},
                {"id": "N2", "kind": "path", "text": en},
            ]
        ),
        monkeypatch,
    )
    assert "…" not in out
    flat = "".join(ch for ch in out if ch not in " │┃\n")
    assert zh in flat  # every character is printed, across several rows
    rows = [line for line in out.splitlines() if "发热" in line or "流行" in line or "症状" in line]
    assert len(rows) >= 3


def test_feedback_warns_before_rating_a_flagged_answer(cli_world: dict[str, Any]) -> None:
    from kgmind.graphs.checkpoint import compile_persistent

    out = _ask_json()
    config: Any = {"configurable": {"thread_id": out["run_id"]}}
    g = compile_persistent()
    grounding = {**out["grounding"], "flagged": ["Moon dust"], "ungrounded_nodes": ["Moon dust"]}
    g.update_state(config, {"grounding": grounding}, as_node="apply_feedback")
    res = runner.invoke(app, ["feedback", out["run_id"], "--rating", "excellent"])
    assert res.exit_code == 0, res.output
    assert "warning: the rated answer was flagged as not grounded (1 items): Moon dust" in res.stderr
    assert res.output.index("warning:") < res.output.index("rating excellent")  # said before, not after
    assert len(cli_world["feedback"]) == 1  # a warning, not a refusal


def test_status_line_follows_the_running_node(cli_world: dict[str, Any]) -> None:
    import io

    from rich.console import Console

    from kgmind.cli.ask import run_question
    from kgmind.cli.progress import NodeStatus
    from kgmind.graphs.context import Context

    status = NodeStatus(Console(file=io.StringIO(), width=60))
    run_question(
        "fever?", Context(model="fake:status", store="ladybug:/unused"), progress=False, status=status
    )
    assert status.seen[0] == "generate_hypothesis" and "reason_mindmap" in status.seen
    assert status.running == {}  # every node ended (by its update, even without an end event)
    status.start("reason_mindmap")
    status.start("explore_paths")
    status.token("The patient\nmay have " + "influenza " * 10)
    line = status.__rich__().plain
    assert line.startswith("⏵ explore_paths 0.0 s (+1 in parallel)") and "\n" not in line
    assert len(line) <= 59  # cut to the console width
    status.end("explore_paths")
    assert status.__rich__().plain.startswith("⏵ reason_mindmap ")


def test_non_terminal_run_says_each_step_in_one_line(cli_world: dict[str, Any]) -> None:
    """Outside a terminal (CliRunner's stderr) each node start and end is one plain line, never JSON."""
    res = runner.invoke(app, ["ask", "fever?", "--store", "ladybug:/unused", "--model", "fake:plain"])
    assert res.exit_code == 0, res.output
    lines = res.stderr.splitlines()
    started = [line.split()[1] for line in lines if line.startswith("· ") and line.endswith(" started")]
    ended = [line.split()[1] for line in lines if line.startswith("✓ ")]
    assert "reason_mindmap" in started and "reason_mindmap" in ended
    assert set(ended) <= set(started)  # every node that ends was said to start
    for node in ended:
        assert lines.index(f"· {node} started") < next(
            i for i, x in enumerate(lines) if x.startswith(f"✓ {node} ")
        )
    assert all(line[:2] in {"· ", "✓ ", "– "} for line in lines), lines
    assert "{" not in res.stderr and "note: this is the demo KG" not in res.stderr  # the user's own store
