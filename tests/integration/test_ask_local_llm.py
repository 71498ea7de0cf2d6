"""`kgmind ask` end to end with the REAL local LLM on the shipped demo KG.

The demo checks run with the default model (no ``--model``: the Qwen2.5-Coder-0.5B GGUF,
:data:`kgmind.llm.DEFAULT_MODEL`), as a new user gets it. Few and short, with bounded
generation. The model file is assembled from its part packages into a temporary
``KGMIND_HOME``.
"""

from __future__ import annotations

import importlib.util
import json
import re
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

pytestmark = [pytest.mark.llm, pytest.mark.slow]

QUESTION = "I have a fever and a cough for three days. What disease might I have and which medication helps?"


def _missing() -> str | None:
    from kgmind.llm import DEFAULT_MODEL, LOCAL_MODELS

    for mod in ("llama_cpp", "kgmind.importers.demo_store", *LOCAL_MODELS[DEFAULT_MODEL].modules()):
        if importlib.util.find_spec(mod) is None:
            return mod
    return None


@pytest.fixture(scope="module")
def home(fresh_home: Path) -> Path:
    missing = _missing()
    if missing:
        pytest.skip(f"the local LLM test needs {missing} (pip install 'kgmind[local]')")
    return fresh_home


QUESTION_ZH = "我发烧咳嗽三天了，可能是什么病？应该吃什么药？"


def _ask(mode: str, question: str = QUESTION, *extra: str) -> dict[str, Any]:
    from kgmind.cli import app

    res = CliRunner().invoke(
        app, ["ask", question, "--mode", mode, "--json", "--quiet", "--max-tokens", "384", *extra]
    )
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _check(out: dict[str, Any], question: str = QUESTION) -> None:
    from kgmind.graphs.check_grounding import names_in
    from kgmind.graphs.reason_mindmap import root_label

    assert out["answer"].strip()
    ids = {e["id"] for e in out["selected_evidence"]}
    assert ids, "the demo KG has evidence for fever and cough"
    mind_map = out["mind_map"]
    assert mind_map["label"] == root_label(question), "the root is the patient's input, not the model's words"
    assert mind_map.get("children"), "the grounded schema asks for at least one cited node"
    cited: set[str] = set()
    stack = [mind_map]
    while stack:
        node = stack.pop()
        cited.update(node.get("evidence_ids") or [])
        stack.extend(node.get("children") or [])
    for step in out["inference_chain"]:
        cited.update(step.get("evidence_ids") or [])
    assert cited <= ids
    assert set(out["grounding"]["cited_ids"]) >= cited
    # the grounded schema: every step and mind-map node cites a shown id
    assert out["inference_chain"] and all(s["evidence_ids"] for s in out["inference_chain"])
    assert all(c["evidence_ids"] for c in mind_map.get("children") or [])
    assert out["grounding"]["citation_rate"] == 1.0 and out["flags"]["fallback_parse"] is False
    # the mind map is the reasoning: diagnoses first, each with what supports it and what to do about it
    branches = mind_map["children"]
    assert branches[0]["kind"] == "diagnosis" and any(b.get("children") for b in branches)
    assert out["grounding"]["citation_support"] == 1.0, out["grounding"]["unsupported_citations"]
    # every step is a sentence naming an entity of an item it cites
    by_id = {e["id"]: e for e in out["selected_evidence"]}
    for step in out["inference_chain"]:
        names = [n for i in step["evidence_ids"] for h, _r, t in by_id[i]["triples"] for n in (h, t)]
        assert names_in([step["step"]], names), step
    # the summary is advice: the patient's words (the first person, a question) are not pasted into it
    summary = out["answer"].rsplit("\n", 1)[0]
    assert question.isascii() or _longest_run(summary, question) < 12, summary


def _longest_run(text: str, question: str) -> int:
    """The most CJK characters or words in a row that ``text`` copies from ``question`` (no punctuation)."""
    units = re.compile(r"[\u4e00-\u9fff]|[A-Za-z0-9']+")
    a, b = [u.lower() for u in units.findall(text)], [u.lower() for u in units.findall(question)]
    return SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b)).size


def _rate(run_id: str) -> dict[str, Any]:
    from kgmind.cli import app

    res = CliRunner().invoke(app, ["feedback", run_id, "--rating", "excellent", "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_rating_a_grounded_answer_moves_weights_once(home: Path) -> None:
    from kgmind.cli import app

    out = _ask("full")
    _check(out)
    first = _rate(out["run_id"])
    assert first["credit"] == "cited" and first["changes"] >= 1
    weights = CliRunner().invoke(app, ["kg", "weights", "--json"])
    assert weights.exit_code == 0, weights.output
    changed = {row["relation_id"] for row in json.loads(weights.stdout) if row["delta"] != 0}
    assert changed and changed <= set(first["relation_ids"])
    again = _rate(out["run_id"])
    assert again["already_applied"] is True and again["changes"] == 0


def test_chinese_question_is_grounded_and_rated(home: Path) -> None:
    out = _ask("full", QUESTION_ZH)
    _check(out, QUESTION_ZH)
    assert _rate(out["run_id"])["changes"] >= 1


def test_full_mode_skips_the_hypothesis_of_the_default_model_unless_asked(home: Path) -> None:
    """``hypothesis=auto``: the 0.5B model's hypothesis measured no gain in full mode, so one call."""
    out = _ask("full")
    _check(out)
    assert out["llm_calls"] == 1 and out["flags"]["hypothesis_skipped"] is True
    forced = _ask("full", QUESTION, "--hypothesis", "on")
    _check(forced)
    assert forced["llm_calls"] == 2 and not forced["flags"].get("hypothesis_skipped")
    from kgmind.llm import DEFAULT_MODEL, LOCAL_MODELS

    spec = LOCAL_MODELS[DEFAULT_MODEL]
    assert (home / "models" / spec.filename).stat().st_size == spec.size


def test_mindmap_mode(home: Path) -> None:
    out = _ask("mindmap")
    _check(out)
    assert {e["kind"] for e in out["selected_evidence"]} <= {"path", "neighbor"}
    assert out["llm_calls"] == 2


def test_two_threads_share_the_real_model_and_match_a_serial_run(home: Path) -> None:
    """One cached llama.cpp model and the real embedder serve two threads at once (the model's lock)."""
    from concurrent.futures import ThreadPoolExecutor

    from kgmind.graphs.context import Context
    from kgmind.graphs.pipeline import graph
    from kgmind.importers.demo_store import ensure_demo_store

    ensure_demo_store(None)
    ctx = Context(max_tokens=192)
    questions = [QUESTION, "My joints are swollen and stiff every morning. Which tests and drugs help?"]

    def run(q: str) -> tuple[Any, ...]:
        out = graph.invoke({"question": q}, context=ctx)
        return (
            out["answer"],
            out["inference_chain"],
            [e.id for e in out["selected_evidence"]],
            [le.entity_id for le in out["linked_entities"]],
        )

    serial = [run(q) for q in questions]
    with ThreadPoolExecutor(max_workers=2) as pool:
        concurrent = list(pool.map(run, questions))
    assert concurrent == serial
    assert serial[0][2] != serial[1][2]  # different questions, different evidence: the check can fail
