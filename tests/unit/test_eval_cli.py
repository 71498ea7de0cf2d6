"""`kgmind eval DATASET …` end to end on fixtures (doc and LLM-free methods only: fast), and the report."""

import json
from pathlib import Path

from typer.testing import CliRunner

from kgmind.cli import app
from kgmind.eval import report

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "eval"


def _fixture_args():
    return [
        "--dialogues",
        str(FIX / "dialogues.json"),
        "--ner",
        str(FIX / "ner_chatgpt.jsonl"),
        "--gold",
        str(FIX / "gold_kg_entities.jsonl"),
        "--vocab",
        str(FIX / "format_dataset.csv"),
        "--docs",
        str(FIX / "disease_documents"),
    ]


def test_eval_genmedgpt5k_smoke(tmp_path, monkeypatch):
    monkeypatch.setenv("KGMIND_HOME", str(tmp_path / "home"))
    out = tmp_path / "out"
    args = [
        "eval",
        "genmedgpt5k",
        "--methods",
        "bm25_doc,llm_only",
        "--entities",
        "chatgpt",
        "--llm",
        "none",
        "--budget",
        "120",
        "--max-tokens",
        "64",
        "--out",
        str(out),
        "--json",
        *_fixture_args(),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout[result.stdout.index("{") :])
    written = json.loads((out / "results.json").read_text())
    assert printed["methods"] == written["methods"]
    assert (written["dataset"], written["budget"], written["entities"], written["llm"]) == (
        "genmedgpt5k",
        120,
        "chatgpt",
        "none",
    )
    assert written["max_tokens"] == 64
    assert written["n"] == 4  # dev split: the dialogue whose answer names no KG entity is left out
    assert written["gold"]["derived_vs_output_kg"]["rows"] == 3
    bm25, only = written["methods"]["bm25_doc"], written["methods"]["llm_only"]
    for key in (
        "evidence_recall",
        "gold_disease_hit",
        "evidence_precision",
        "evidence_tokens_mean",
        "llm_calls_mean",
        "latency_ms_p50",
        "latency_ms_p95",
    ):
        assert key in bm25
    assert bm25["evidence_recall"] > only["evidence_recall"] == 0.0
    assert 0 < bm25["evidence_tokens_mean"] <= 120
    assert bm25["llm_calls_mean"] == 0.0
    assert "| bm25_doc |" in (out / "results.md").read_text()
    assert (out / "results.png").read_bytes()[:4] == b"\x89PNG"


def test_eval_gold203_split_and_sampling(tmp_path, monkeypatch):
    monkeypatch.setenv("KGMIND_HOME", str(tmp_path / "home"))
    args = [
        "eval",
        "genmedgpt5k",
        "--methods",
        "bm25_doc",
        "--split",
        "gold203",
        "--limit",
        "2",
        "--seed",
        "3",
        "--no-progress",
        "--json",
        *_fixture_args(),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    res = json.loads(result.stdout[result.stdout.index("{") :])
    assert res["n"] == 2 and res["split"] == "gold203"


def test_eval_unknown_dataset_and_method_fail_cleanly(tmp_path, monkeypatch):
    monkeypatch.setenv("KGMIND_HOME", str(tmp_path / "home"))
    bad = CliRunner().invoke(app, ["eval", "nope"])
    assert bad.exit_code == 2 and "unknown dataset" in bad.output
    bad = CliRunner().invoke(app, ["eval", "genmedgpt5k", "--methods", "magic", *_fixture_args()])
    assert bad.exit_code == 2 and "unknown method" in bad.output


def test_eval_set_passes_context_settings_and_rejects_unknown_fields(tmp_path, monkeypatch):
    monkeypatch.setenv("KGMIND_HOME", str(tmp_path / "home"))
    base = ["eval", "genmedgpt5k", "--methods", "bm25_doc", "--split", "gold203", "--limit", "1"]
    ok = CliRunner().invoke(
        app,
        [*base, "--set", "hub_percentile=99.5", "--set", "embedding_spans=never", "--json", *_fixture_args()],
    )
    assert ok.exit_code == 0, ok.output
    res = json.loads(ok.stdout[ok.stdout.index("{") :])
    assert res["config"]["context"] == {"hub_percentile": 99.5, "embedding_spans": "never"}
    for bad_pair, message in (("warp_speed=9", "no field 'warp_speed'"), ("hub_percentile", "FIELD=VALUE")):
        bad = CliRunner().invoke(
            app, [*base, "--set", bad_pair, "--out", str(tmp_path / "x"), *_fixture_args()]
        )
        assert bad.exit_code == 2 and message in bad.output
        assert not (tmp_path / "x").exists()  # nothing ran, nothing written


def test_markdown_table_lists_methods_and_disabled():
    res = {
        "dataset": "d",
        "n": 2,
        "budget": 800,
        "methods": {
            "a": {"evidence_recall": 0.5, "latency_ms_p50": 1.0},
            "b": {"evidence_recall": None, "latency_ms_p50": 2.0},
        },
        "disabled": {"c": "no KG store"},
    }
    md = report.markdown_table(res)
    assert "| a | 0.500 | 1.0 |" in md and "| b | – | 2.0 |" in md
    assert "- c: no KG store" in md


def test_eval_rows_keep_what_each_item_was_shown(tmp_path, monkeypatch):
    monkeypatch.setenv("KGMIND_HOME", str(tmp_path / "home"))
    out = tmp_path / "out"
    args = ["eval", "genmedgpt5k", "--methods", "bm25_doc", "--llm", "none", "--budget", "120"]
    result = CliRunner().invoke(app, [*args, "--rows", "--no-progress", "--out", str(out), *_fixture_args()])
    assert result.exit_code == 0, result.output
    rows = json.loads((out / "results.json").read_text())["rows"]["bm25_doc"]
    assert len(rows) == 4 and all("evidence_recall" in r for r in rows)
    # documents carry no KG edge: every shown item is listed, by id, with no triples
    shown = [s for r in rows for s in r["shown"]]
    assert shown and all(s["id"].startswith("D") and s["triples"] == [] for s in shown)
    assert [len(r["shown"]) for r in rows] == [r["evidence_items"] for r in rows]
