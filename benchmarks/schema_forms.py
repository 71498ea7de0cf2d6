"""Robustness to schema (issue 44): the same facts in five triples forms, imported and evaluated with the CLI.

A user's KG holds the facts kgmind was fitted on, but in the user's own direction and words. This
benchmark writes EMCKG-full (English, scored on GenMedGPT-5k ``test``) and the CMCKG re-crawl
(Chinese, scored on CMCQA ``test``) in five forms and runs, for each, only what a user runs:
``kgmind kg import FILE --format F --store ladybug:WORK/stores/LANG-FORM --json --no-progress`` (timed)
and ``kgmind eval DATASET --split test --methods kgmind --entities chatgpt --llm none --budget 800
--store … --out … --no-progress``. The forms:

* ``a`` the fitted import: the source file with its own importer (``chatdoctor`` / ``recrawl-json``),
  which stores every fact and its inverse, plus the disease documents; nothing is written;
* ``b`` one direction, disease → X, with the native relation names (the importer's, e.g.
  ``has_symptom``, ``need_medical_test``, ``need_medication``);
* ``c`` one direction, disease → X, with other names (:data:`NAMES`, column "forward");
* ``d`` the reverse direction, X → disease (symptom → disease …), with names that read that way
  (:data:`NAMES`, column "reverse");
* ``e`` both directions: the rows of ``c`` and of ``d``.

The facts come from kgmind's own parser of the source (:func:`kgmind.importers.parse`), keeping only
the disease → X edges: a relation type whose head type in the importer vocabulary
(:data:`kgmind.importers.RELATION_TYPES`) is ``disease``; the symmetric ``has_complication`` keeps
each unordered pair once (first seen). Edges between other types (the re-crawl's department
hierarchy) and the documents are in form ``a`` only. Names are the entities' display names.

A form whose import fails is recorded with its ``error:`` line and not evaluated; the run goes on.
``--limit N`` passes ``--limit N --seed 0`` to ``kgmind eval`` (its seeded sample: the same N
questions in every form) for a quick smoke run.

Usage::

    KGMIND_DATA_DIR=../shared/data python benchmarks/schema_forms.py --lang both \\
        --out benchmarks/results/2026-11-26-schema-forms-before --work /tmp/schema-forms
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import cli_env, parsed_edges, write_triples

FORMS = ("a", "a0", "b", "c", "d", "e")

FORM_TITLES = {
    "a": "fitted import (native importer)",
    "a0": "control: (a)'s edges as triples, no documents",
    "b": "one direction, native names",
    "c": "one direction, other names",
    "d": "reverse direction",
    "e": "both directions, other names",
}

#: Native (importer) disease → X relation -> (forward name of forms c/e, reverse name of forms d/e), per
#: language. English names read "disease … X" / "X … disease"; the Chinese forward names are the
#: re-crawl's own field meanings, the reverse names read "X 可见于 disease" and so on.
NAMES: dict[str, dict[str, tuple[str, str]]] = {
    "en": {
        "has_symptom": ("presents_with", "symptom_of"),
        "need_medical_test": ("diagnosed_by", "test_for"),
        "need_medication": ("treated_with", "treats"),
        "has_complication": ("complicated_by", "complication_of"),
        "belongs_to_department": ("treated_in_department", "department_for"),
        "good_food": ("recommended_food", "food_recommended_for"),
        "avoid_food": ("food_to_avoid", "food_to_avoid_for"),
        "recommended_recipe": ("suggested_recipe", "recipe_for"),
    },
    "zh": {
        "has_symptom": ("症状", "可见于"),
        "need_medical_test": ("检查", "可用于检查"),
        "need_medication": ("药物", "可用于治疗"),
        "has_complication": ("并发症", "可并发于"),
        "belongs_to_department": ("所属科室", "诊治疾病"),
        "good_food": ("宜吃", "宜吃于"),
        "avoid_food": ("忌吃", "忌吃于"),
        "recommended_recipe": ("推荐食谱", "推荐食谱于"),
    },
}


@dataclass(frozen=True)
class Source:
    """One language's KG file, its importer and the QA set it is scored on."""

    path: str  # under KGMIND_DATA_DIR
    fmt: str
    dataset: str


SOURCES: dict[str, Source] = {
    "en": Source("emckg/format_dataset.csv", "chatdoctor", "genmedgpt5k"),
    "zh": Source("cmckg/recrawl_full", "recrawl-json", "cmcqa"),
}

Fact = tuple[str, str, str]  # (disease name, native relation, X name)


def forward_types(relation_types: dict[str, tuple[str, str, str]]) -> set[str]:
    """The importer's relation types that go disease → X (their head type is ``disease``)."""
    return {rel for rel, (head, _tail, _inverse) in relation_types.items() if head == "disease"}


def disease_facts(
    relations: Iterable[tuple[str, str, str]], relation_types: dict[str, tuple[str, str, str]]
) -> list[Fact]:
    """The disease → X facts among ``(head name, type, tail name)`` edges, each once.

    Inverse edges (symptom → disease …) are dropped; a symmetric type (its own inverse, e.g.
    ``has_complication``) keeps each unordered pair once, in the direction first seen.
    """
    keep = forward_types(relation_types)
    symmetric = {rel for rel in keep if relation_types[rel][2] == rel}
    seen: set[tuple[str, frozenset[str] | tuple[str, str]]] = set()
    facts: list[Fact] = []
    for head, rel, tail in relations:
        if rel not in keep:
            continue
        key = (rel, frozenset((head, tail)) if rel in symmetric else (head, tail))
        if key not in seen:
            seen.add(key)
            facts.append((head, rel, tail))
    return facts


def form_rows(facts: Sequence[Fact], form: str, names: dict[str, tuple[str, str]]) -> list[Fact]:
    """The ``head, relation, tail`` rows of ``form`` (``b``–``e``) for ``facts``.

    Raises:
        KeyError: A native relation has no entry in ``names`` (add one to :data:`NAMES`).
    """
    forward = [(h, names[r][0], t) for h, r, t in facts]
    reverse = [(t, names[r][1], h) for h, r, t in facts]
    rows = {"b": list(facts), "c": forward, "d": reverse, "e": forward + reverse}
    return rows[form]


def parse_facts(source: Path, fmt: str) -> list[Fact]:
    """Parse ``source`` with kgmind's own importer and keep its disease → X facts by display name."""
    from kgmind.importers import RELATION_TYPES, parse

    result = parse(source, fmt)
    names = {e.id: e.name for e in result.entities}
    edges = ((names[r.head], r.type, names[r.tail]) for r in result.relations)
    return disease_facts(edges, RELATION_TYPES)


def stored_edges(source: Path, fmt: str) -> list[Fact]:
    """Every edge the native importer stores (both directions, native names), by display name.

    Form ``a0``: the fitted import's graph without what a triples file cannot carry (the
    documents behind KGCoT's "Source:" notes, entity descriptions), so the forms b–e can be
    told apart from (a) by schema alone.
    """
    return parsed_edges(source, fmt)


def write_forms(lang: str, source: Path, forms: Sequence[str], work: Path) -> dict[str, tuple[Path, int]]:
    """Write the triples files of ``forms`` (other than ``a``): form -> (file, rows)."""
    written: dict[str, tuple[Path, int]] = {}
    if "a0" in forms:
        path = work / "triples" / f"{lang}-a0.csv"
        written["a0"] = (path, write_triples(path, stored_edges(source, SOURCES[lang].fmt)))
    todo = [f for f in forms if f not in ("a", "a0")]
    if not todo:
        return written
    facts = parse_facts(source, SOURCES[lang].fmt)
    for form in todo:
        path = work / "triples" / f"{lang}-{form}.csv"
        written[form] = (path, write_triples(path, form_rows(facts, form, NAMES[lang])))
    return written


# --- running the CLI ----------------------------------------------------------------------


def kgmind_cmd() -> list[str]:
    """The ``kgmind`` console script as a user runs it (its entry point where it is not on PATH)."""
    exe = shutil.which("kgmind")
    return [exe] if exe else [sys.executable, "-c", "from kgmind.cli import main; main()"]


def _run(cmd: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], float]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    return proc, time.perf_counter() - t0


def _error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The CLI's ``error:`` line, else the last line it printed."""
    lines = [ln.strip() for ln in (proc.stderr + "\n" + proc.stdout).splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.lower().startswith("error")]
    return (errors or lines or [f"exit {proc.returncode}"])[-1]


def _summary_counts(report: dict[str, Any]) -> dict[str, Any]:
    """rows / entities / relations of the import summary (top level, or one level down)."""
    keys = ("rows", "skipped", "entities", "relations", "docs")
    found = {k: report[k] for k in keys if isinstance(report.get(k), int)}
    for value in report.values():
        if isinstance(value, dict):
            found.update({k: value[k] for k in keys if k not in found and isinstance(value.get(k), int)})
    return found


def run_import(path: Path, fmt: str, store: str, env: dict[str, str], log: Path) -> dict[str, Any]:
    """``kgmind kg import`` one file, timed; its JSON summary, or its error line."""
    cmd = [
        *kgmind_cmd(),
        "kg",
        "import",
        str(path),
        "--format",
        fmt,
        "--store",
        store,
        "--json",
        "--no-progress",
    ]
    proc, secs = _run(cmd, env)
    log.write_text(f"$ {shlex.join(cmd)}\n# exit {proc.returncode}\n{proc.stdout}\n# stderr\n{proc.stderr}")
    out: dict[str, Any] = {"command": shlex.join(cmd), "exit": proc.returncode, "seconds": round(secs, 2)}
    if proc.returncode != 0:
        out["error"] = _error_line(proc)
        return out
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return out
    out.update(_summary_counts(report) if isinstance(report, dict) else {})
    return out


def run_eval(
    dataset: str, store: str, out_dir: Path, limit: int | None, env: dict[str, str]
) -> dict[str, Any]:
    """``kgmind eval DATASET --split test --methods kgmind`` on ``store``; the kgmind method's figures."""
    cmd = [*kgmind_cmd(), "eval", dataset, "--split", "test", "--methods", "kgmind", "--entities", "chatgpt"]
    cmd += ["--llm", "none", "--budget", "800", "--store", store, "--out", str(out_dir), "--no-progress"]
    if limit:
        cmd += ["--limit", str(limit), "--seed", "0"]
    proc, secs = _run(cmd, env)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "eval.log").write_text(f"$ {shlex.join(cmd)}\n# exit {proc.returncode}\n{proc.stderr[-4000:]}")
    out: dict[str, Any] = {"command": shlex.join(cmd), "exit": proc.returncode, "seconds": round(secs, 1)}
    results = out_dir / "results.json"
    if proc.returncode != 0 or not results.exists():
        out["error"] = _error_line(proc)
        return out
    data = json.loads(results.read_text())
    kg = data["methods"]["kgmind"]
    out.update(
        n=data.get("n"),
        evidence_recall=kg.get("evidence_recall"),
        gold_disease_hit=kg.get("gold_disease_hit"),
        evidence_tokens_mean=kg.get("evidence_tokens_mean"),
        latency_ms_p50=kg.get("latency_ms_p50"),
        latency_ms_p95=kg.get("latency_ms_p95"),
        errors=kg.get("errors"),
    )
    return out


def run_form(
    lang: str, form: str, file: Path, fmt: str, args: argparse.Namespace, env: dict[str, str]
) -> dict:
    """Import one form into a fresh store, evaluate it, drop the store (unless ``--keep-stores``)."""
    store_path = args.work / "stores" / f"{lang}-{form}"
    for stale in (store_path, store_path.with_name(store_path.name + ".index")):
        shutil.rmtree(stale, ignore_errors=True)
    store = f"ladybug:{store_path}"
    form_dir = args.out / lang / form
    form_dir.mkdir(parents=True, exist_ok=True)
    print(f"[{lang} {form}] import {file.name} ({fmt})", flush=True)
    row: dict[str, Any] = {"form": form, "title": FORM_TITLES[form], "file": str(file), "format": fmt}
    row["import"] = run_import(file, fmt, store, env, form_dir / "import.log")
    if "error" not in row["import"]:
        print(f"[{lang} {form}] eval {SOURCES[lang].dataset}", flush=True)
        row["eval"] = run_eval(SOURCES[lang].dataset, store, form_dir / "eval", args.limit, env)
    if not args.keep_stores:
        for stale in (store_path, store_path.with_name(store_path.name + ".index")):
            shutil.rmtree(stale, ignore_errors=True)
    return row


# --- report -------------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _delta(value: Any, base: Any, *, points: bool) -> str:
    if not isinstance(value, (int, float)) or not isinstance(base, (int, float)):
        return "–"
    if points:
        return f"{(value - base) * 100:+.1f}"
    return f"{(value - base) / base * 100:+.0f} %" if base else "–"


def table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One language's markdown table; deltas against form ``a`` (recall and hit in points)."""
    base = next((r.get("eval", {}) for r in rows if r["form"] == "a"), {})
    lines = [
        "| form | file rows | import rows / entities / relations | import s | evidence recall (Δ pts) "
        "| disease hit (Δ pts) | tokens (Δ; vs a0) | latency p50 / p95 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        imp, ev = r["import"], r.get("eval", {})
        name = f"({r['form']}) {r['title']}"
        if "error" in imp:
            lines.append(
                f"| {name} | {_fmt(r.get('file_rows'))} | import failed: `{imp['error']}` "
                f"| {imp['seconds']} | – | – | – | – |"
            )
            continue
        counts = " / ".join(_fmt(imp.get(k)) for k in ("rows", "entities", "relations"))
        if "error" in ev:
            lines.append(
                f"| {name} | {_fmt(r.get('file_rows'))} | {counts} | {imp['seconds']} "
                f"| eval failed: `{ev['error']}` | – | – | – |"
            )
            continue
        rec, hit, tok = ev.get("evidence_recall"), ev.get("gold_disease_hit"), ev.get("evidence_tokens_mean")
        lines.append(
            f"| {name} | {_fmt(r.get('file_rows'))} | {counts} | {imp['seconds']} "
            f"| {_fmt(rec)} ({_delta(rec, base.get('evidence_recall'), points=True)}) "
            f"| {_fmt(hit)} ({_delta(hit, base.get('gold_disease_hit'), points=True)}) "
            f"| {_fmt(tok, 0)} ({_delta(tok, base.get('evidence_tokens_mean'), points=False)}"
            f"{'; ' + format(r['tokens_vs_a0_pct'], '+.1f') + ' %' if 'tokens_vs_a0_pct' in r else ''}) "
            f"| {_fmt(ev.get('latency_ms_p50'), 1)} / {_fmt(ev.get('latency_ms_p95'), 1)} |"
        )
    return lines


def _commit() -> str:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def _cpu() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return next(
        (ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name")), "unknown"
    )


def write_report(out: Path, record: dict[str, Any]) -> str:
    """Write results.json and results.md; return the markdown."""
    md = [
        "# Schema forms: the same facts in five triples forms (issue 44)",
        "",
        f"- command: `{record['command']}`",
        f"- commit: `{record['commit']}`; CPU: {record['cpu']}; started {record['started']}, "
        f"{record['minutes']} min",
        "- eval: `kgmind eval DATASET --split test --methods kgmind --entities chatgpt --llm none "
        "--budget 800 --store ladybug:WORK/stores/LANG-FORM`"
        + (f" `--limit {record['limit']} --seed 0`" if record["limit"] else " (full split)"),
        "",
    ]
    for lang, rows in record["languages"].items():
        src = SOURCES[lang]
        md += [f"## {lang}: {src.path} ({src.fmt}) on {src.dataset} test", "", *table(rows), ""]
    md += [
        "Relation names of forms c (forward) and d (reverse):",
        "",
        "| native | " + " | ".join(f"{lang} forward | {lang} reverse" for lang in record["languages"]) + " |",
        "|---|" + "---|---|" * len(record["languages"]),
    ]
    for native in NAMES["en"]:
        cells = [f"`{NAMES[lang][native][0]}` | `{NAMES[lang][native][1]}`" for lang in record["languages"]]
        md.append(f"| `{native}` | " + " | ".join(cells) + " |")
    text = "\n".join(md) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    (out / "results.md").write_text(text)
    return text


def run_language(lang: str, args: argparse.Namespace, env: dict[str, str], data_dir: Path) -> list[dict]:
    """Write, import and evaluate every requested form of one language."""
    src = SOURCES[lang]
    source = data_dir / src.path
    print(f"[{lang}] writing forms from {source}", flush=True)
    files = write_forms(lang, source, args.forms, args.work)
    rows = []
    for form in args.forms:
        file, fmt, n = (source, src.fmt, None) if form == "a" else (files[form][0], "triples", files[form][1])
        row = run_form(lang, form, file, fmt, args, env)
        row["file_rows"] = n
        rows.append(row)
    add_deltas(rows)
    return rows


def add_deltas(rows: Sequence[dict[str, Any]]) -> None:
    """Each evaluated form's differences from form ``a``: recall and hit in points, tokens in percent.

    Also ``tokens_vs_a0_pct``: tokens against the control ``a0`` (the same graph without documents).
    """
    base = next((r.get("eval", {}) for r in rows if r["form"] == "a"), {})
    control = next((r.get("eval", {}) for r in rows if r["form"] == "a0"), {})
    for r in rows:
        ev = r.get("eval", {})
        if "evidence_tokens_mean" in ev and "evidence_tokens_mean" in control and r["form"] != "a0":
            r["tokens_vs_a0_pct"] = round(
                (ev["evidence_tokens_mean"] - control["evidence_tokens_mean"])
                / control["evidence_tokens_mean"]
                * 100,
                1,
            )
        if r["form"] == "a" or "evidence_recall" not in ev or "evidence_recall" not in base:
            continue
        r["delta_vs_a"] = {
            "evidence_recall_pts": round((ev["evidence_recall"] - base["evidence_recall"]) * 100, 2),
            "gold_disease_hit_pts": round((ev["gold_disease_hit"] - base["gold_disease_hit"]) * 100, 2),
            "evidence_tokens_pct": round(
                (ev["evidence_tokens_mean"] - base["evidence_tokens_mean"])
                / base["evidence_tokens_mean"]
                * 100,
                1,
            ),
        }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line (see the module doc)."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--lang", choices=("en", "zh", "both"), default="both")
    ap.add_argument("--forms", default=",".join(FORMS), help="comma list of a,a0,b,c,d,e (default all)")
    ap.add_argument("--out", type=Path, required=True, help="folder for results.json / results.md and logs")
    ap.add_argument(
        "--work",
        type=Path,
        default=None,
        help="folder for the triples files and stores (default: a new temporary folder)",
    )
    ap.add_argument("--limit", type=int, default=None, help="evaluate a seeded sample of N test items")
    ap.add_argument("--keep-stores", action="store_true", help="keep each form's store after its eval")
    args = ap.parse_args(argv)
    args.forms = [f.strip() for f in args.forms.split(",") if f.strip()]
    bad = [f for f in args.forms if f not in FORMS]
    if bad:
        ap.error(f"unknown form(s) {', '.join(bad)}; choose from {', '.join(FORMS)}")
    args.work = (args.work or Path(tempfile.mkdtemp(prefix="schema-forms-"))).resolve()
    args.out = args.out.resolve()
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and write the report."""
    args = parse_args(argv)
    data_dir, env = cli_env()
    t0, started = time.perf_counter(), datetime.now(UTC).isoformat(timespec="seconds")
    langs = ["en", "zh"] if args.lang == "both" else [args.lang]
    record: dict[str, Any] = {
        "benchmark": "schema_forms",
        "command": shlex.join(
            ["python", "benchmarks/schema_forms.py", *(sys.argv[1:] if argv is None else argv)]
        ),
        "commit": _commit(),
        "cpu": _cpu(),
        "started": started,
        "limit": args.limit,
        "work": str(args.work),
        "names": NAMES,
        "languages": {},
    }
    for lang in langs:
        record["languages"][lang] = run_language(lang, args, env, data_dir)
        record["minutes"] = round((time.perf_counter() - t0) / 60, 1)
        write_report(args.out, record)  # after each language, so a long run leaves its first half
    print(write_report(args.out, record))
    print(f"work folder (triples files): {args.work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
