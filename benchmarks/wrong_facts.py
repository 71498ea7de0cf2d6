"""Feedback that fixes wrong facts (issue 41): false edges, a simulated reviewer, what later questions see.

Everything measured comes from the commands a user runs (``kgmind kg import``, ``kgmind eval … --rows``,
``kgmind kg flag --file``, ``kgmind kg disputed --json``); this script only writes files, runs them and
reads what they print or write. Per language:

1. **Corrupt.** The KG's disease → symptom / test / medication facts get 5 % false edges (seeded,
   :func:`choose_false_edges`): each links a disease to a symptom, test or medication of an *unrelated*
   disease (the two share no symptom), under the relation type that item has there, with real names,
   and never to something the disease is already linked to. English: EMCKG-full rewritten as the same
   ChatDoctor CSV with each false item appended to its disease's list cell
   (:func:`write_chatdoctor`), imported with ``--format chatdoctor`` like the fitted KG. Chinese: the
   CMCKG re-crawl as kgmind's own parser reads it, every edge as a ``head,relation,tail`` row (both
   directions, as the fitted import stores them) plus each false edge and its inverse, imported with
   ``--format triples``; its clean reference is the same export without the false rows (the disease
   documents of the fitted import are not in either). The false list is written to the work folder
   (``LANG/false_edges.json``) and never given to kgmind. The evals' ``results.json`` (every row with
   what it was shown) stay in the work folder (``LANG/evals``); ``--out`` gets the report, each
   command's log and ``results.md``, the verdict files and the ``kg disputed --json`` output.
2. **Train** in increments on non-test questions (``all`` minus ``test``, shuffled by the seed):
   ``kgmind eval … --split all --ids FILE --rows`` on the corrupted store, then a simulated reviewer
   (:func:`review`) reads each shown item: one carrying a false edge has its false triple(s) flagged
   ``wrong`` with probability 0.5; one carrying only true edges has one of them flagged with
   probability 0.02 (a mistaken flag). Each question's verdicts have their own source
   (``review-<id>``), so they count as distinct runs. All go in through ``kgmind kg flag --file``.
3. **Measure** held-out ``test`` questions before training and after each increment: the share of shown
   evidence items carrying a false edge, evidence recall (beside the clean KG's on the same
   questions), and the share of the true edges training showed that ``kgmind kg disputed --json``
   lists. With ``--llm-questions N`` (English), the local model answers N seeded test questions
   before training and after ``--llm-after`` training questions; an answer *names a false fact* when
   it names both ends of a false edge.
4. **Fit the rule.** The dispute rule (:data:`kgmind.tuning.DISPUTE_RULE`) has no setting a user can
   change at run time, so candidate rules (``--rules``) are compared by re-counting the reviewer's own
   verdict log per stored edge (distinct sources), on the training (non-test) questions only: the share
   of false edges shown in training that each rule disputes, against the share of true ones. The
   count under the shipped rule is checked against ``kg disputed --json``.

Usage::

    KGMIND_DATA_DIR=../shared/data python benchmarks/wrong_facts.py --lang en \\
        --out benchmarks/results/2026-11-26-wrong-facts --work /tmp/wrong-facts --llm-questions 50
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import cli_env, parsed_edges, write_triples

#: The relation types false edges use (disease → X), and the ChatDoctor column of each.
ROLE_COLUMNS: dict[str, str] = {
    "has_symptom": "Symptom",
    "need_medical_test": "TestsAndProcedures",
    "need_medication": "commonMedications",
}
#: Inverse of each relation type as the importers store it (kgmind.importers.INVERSE).
INVERSE = {
    "has_symptom": "possible_disease",
    "need_medical_test": "can_check_disease",
    "need_medication": "possible_cure_disease",
}


@dataclass(frozen=True)
class Source:
    """One language's KG file, its importer and the QA set it is scored on."""

    path: str  # under KGMIND_DATA_DIR
    fmt: str
    dataset: str
    #: More training traffic after the QA set's own non-test rows (kgmind's own NER links it).
    extra: str = ""


SOURCES: dict[str, Source] = {
    "en": Source("emckg/format_dataset.csv", "chatdoctor", "genmedgpt5k"),
    # CMCQA has 77 non-test rows; Chinese patients' questions from medical_dialogue_zh follow them
    "zh": Source("cmckg/recrawl_full", "recrawl-json", "cmcqa", extra="medical_dialogue_zh"),
}

Triple = tuple[str, str, str]


@dataclass(frozen=True)
class FalseEdge:
    """A false fact: ``disease -[relation]-> tail``, where ``tail`` was taken from ``donor``."""

    disease: str
    relation: str
    tail: str
    donor: str


def norm(name: str) -> str:
    """A name as compared here: case-folded, inner whitespace collapsed."""
    return " ".join(name.casefold().split())


def pair_key(a: str, b: str) -> frozenset[str]:
    """The unordered pair of two names: a fact and its inverse reading share it."""
    return frozenset((norm(a), norm(b)))


# --- corrupting a KG --------------------------------------------------------------------------


def linked_names(facts: Iterable[Triple]) -> dict[str, set[str]]:
    """Every name each name is linked to, both ways (normalised)."""
    out: dict[str, set[str]] = defaultdict(set)
    for h, _r, t in facts:
        out[norm(h)].add(norm(t))
        out[norm(t)].add(norm(h))
    return out


def choose_false_edges(
    facts: Sequence[Triple], rate: float, seed: int, links: dict[str, set[str]] | None = None
) -> list[FalseEdge]:
    """``round(rate * len(facts))`` false disease → X edges, seeded.

    Args:
        facts: The KG's ``(disease, relation, X)`` facts with ``relation`` in :data:`ROLE_COLUMNS`.
        rate: False edges per true fact (0.05).
        seed: Random seed; the same facts and seed give the same list.
        links: Every name each (normalised) name is linked to in the whole KG (default: from ``facts``);
            a false tail is never already linked to its disease.

    Returns:
        False edges, each linking a disease to an item of another disease with which it shares no
        symptom (both have at least one), under the relation that item has there.

    Raises:
        ValueError: Fewer than two diseases with symptoms, or the wanted number cannot be found.
    """
    by_disease: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    display: dict[str, str] = {}
    for d, rel, x in facts:
        if rel in ROLE_COLUMNS:
            by_disease[norm(d)][rel].append(x)
            display.setdefault(norm(d), d)
    links = links if links is not None else linked_names(facts)
    symptoms = {d: {norm(x) for x in rels.get("has_symptom", [])} for d, rels in by_disease.items()}
    diseases = sorted(d for d in by_disease if symptoms[d])
    if len(diseases) < 2:
        raise ValueError("need at least two diseases with symptoms to pick unrelated pairs")
    want = round(rate * len(facts))
    rng = random.Random(seed)
    chosen: list[FalseEdge] = []
    seen: set[frozenset[str]] = set()
    for _ in range(want * 200):
        if len(chosen) == want:
            break
        d, u = rng.choice(diseases), rng.choice(diseases)
        rel = rng.choice(sorted(ROLE_COLUMNS))
        items = by_disease[u].get(rel)
        if d == u or not items or symptoms[d] & symptoms[u]:
            continue
        x = rng.choice(items)
        key = pair_key(d, x)
        if norm(x) == d or norm(x) in links.get(d, set()) or key in seen:
            continue
        seen.add(key)
        chosen.append(FalseEdge(display[d], rel, x, display[u]))
    if len(chosen) < want:
        raise ValueError(f"found only {len(chosen)} of {want} false edges")
    return chosen


def read_chatdoctor(path: Path) -> tuple[list[str], list[list[str]], list[Triple]]:
    """A ChatDoctor CSV's header, rows and ``(disease, relation, X)`` facts (list cells by literal_eval)."""
    with path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        rows = [row for row in reader if any(c.strip() for c in row)]
    d_col = header.index("disease")
    facts: list[Triple] = []
    for row in rows:
        for rel, col in ROLE_COLUMNS.items():
            cell = row[header.index(col)].strip()
            for x in ast.literal_eval(cell) if cell else []:
                facts.append((row[d_col].strip(), rel, str(x)))
    return header, rows, facts


def write_chatdoctor(path: Path, header: list[str], rows: list[list[str]], false: Sequence[FalseEdge]) -> int:
    """Write the ChatDoctor CSV with each false item appended to its disease's list cell; rows written.

    Raises:
        KeyError: A false edge's disease has no row.
    """
    d_col = header.index("disease")
    first_row = {}
    for i, row in enumerate(rows):
        first_row.setdefault(norm(row[d_col]), i)
    out = [list(r) for r in rows]
    for fe in false:
        row = out[first_row[norm(fe.disease)]]
        col = header.index(ROLE_COLUMNS[fe.relation])
        cell = row[col].strip()
        items = list(ast.literal_eval(cell)) if cell else []
        row[col] = repr([*items, fe.tail])
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(out)
    return len(out)


def false_triples(false: Sequence[FalseEdge]) -> list[Triple]:
    """Each false edge and its inverse reading, as stored by an importer that adds inverses."""
    return [
        t
        for fe in false
        for t in ((fe.disease, fe.relation, fe.tail), (fe.tail, INVERSE[fe.relation], fe.disease))
    ]


# --- the simulated reviewer and what was shown --------------------------------------------------


def item_false(item: dict[str, Any], pairs: set[frozenset[str]]) -> list[list[str]]:
    """The triples of one shown item that read a false edge (either direction)."""
    return [t for t in item.get("triples", []) if pair_key(t[0], t[2]) in pairs]


def review(
    rows: Sequence[dict[str, Any]],
    pairs: set[frozenset[str]],
    seed: int,
    catch: float = 0.5,
    mistake: float = 0.02,
) -> list[dict[str, str]]:
    """A simulated reviewer's verdicts on the items training questions were shown.

    An item carrying a false edge has its false triple(s) flagged ``wrong`` with probability
    ``catch``; an item with only true edges has one of them flagged with probability ``mistake``.
    Each item's draw is seeded by (seed, question id, item id), so a verdict does not depend on
    which other questions ran. The source is ``review-<question id>``.
    """
    verdicts: list[dict[str, str]] = []
    for row in rows:
        qid = str(row["id"])
        for item in row.get("shown", []):
            triples = item.get("triples", [])
            if not triples:
                continue
            rng = random.Random(f"{seed}:{qid}:{item['id']}")
            bad = item_false(item, pairs)
            if bad:
                picked = bad if rng.random() < catch else []
            else:
                picked = [rng.choice(triples)] if rng.random() < mistake else []
            for h, r, t in picked:
                verdicts.append(
                    {"head": h, "relation": r, "tail": t, "verdict": "wrong", "source": f"review-{qid}"}
                )
    return verdicts


def shown_stats(rows: Sequence[dict[str, Any]], pairs: set[frozenset[str]]) -> dict[str, Any]:
    """Shown items, how many carry a false edge, and that share, over ``rows``."""
    items = [it for r in rows for it in r.get("shown", []) if it.get("triples")]
    bad = sum(1 for it in items if item_false(it, pairs))
    return {"items": len(items), "false_items": bad, "false_item_share": bad / len(items) if items else None}


def shown_edges(rows: Sequence[dict[str, Any]]) -> set[Triple]:
    """Every distinct stored triple shown in ``rows`` (normalised names)."""
    return {(norm(t[0]), t[1], norm(t[2])) for r in rows for it in r.get("shown", []) for t in it["triples"]}


def wrong_counts(verdicts: Iterable[dict[str, str]]) -> dict[Triple, int]:
    """Distinct sources that called each (normalised) stored triple wrong."""
    sources: dict[Triple, set[str]] = defaultdict(set)
    for v in verdicts:
        sources[(norm(v["head"]), v["relation"], norm(v["tail"]))].add(v["source"])
    return {k: len(s) for k, s in sources.items()}


def rule_outcomes(
    counts: dict[Triple, int],
    shown: set[Triple],
    pairs: set[frozenset[str]],
    rules: Sequence[tuple[int, int]],
) -> list[dict[str, Any]]:
    """Per candidate rule ``(min_wrong, margin)``: shares of the false and the true shown edges it disputes.

    The simulated reviewer never says ``right``, so an edge is disputed iff its wrong count is at least
    ``max(min_wrong, margin)`` (:class:`kgmind.tuning.DisputeRule` with ``right = 0``).
    """
    false_shown = {e for e in shown if pair_key(e[0], e[2]) in pairs}
    true_shown = shown - false_shown
    out = []
    for min_wrong, margin in rules:
        hit = {e for e, n in counts.items() if n >= min_wrong and n >= margin}
        out.append(
            {
                "min_wrong": min_wrong,
                "margin": margin,
                "false_shown": len(false_shown),
                "false_disputed": len(hit & false_shown),
                "false_disputed_share": len(hit & false_shown) / len(false_shown) if false_shown else None,
                "true_shown": len(true_shown),
                "true_disputed": len(hit & true_shown),
                "true_disputed_share": len(hit & true_shown) / len(true_shown) if true_shown else None,
            }
        )
    return out


def _fact(head: str, tail: str) -> Triple:
    """A fact as an unordered pair, written as a triple (sorted normalised names, relation ``fact``)."""
    x, y = sorted((norm(head), norm(tail)))
    return (x, "fact", y)


def fact_outcomes(
    verdicts: Iterable[dict[str, str]],
    shown: set[Triple],
    pairs: set[frozenset[str]],
    rules: Sequence[tuple[int, int]],
) -> list[dict[str, Any]]:
    """:func:`rule_outcomes` per *fact* instead of per stored edge: a fact's two readings (an edge and
    its stored inverse) pool their flags, as kgmind counts them (a verdict reaches the edge's twins)."""
    return rule_outcomes(fact_wrong_counts(verdicts), {_fact(e[0], e[2]) for e in shown}, pairs, rules)


def fact_wrong_counts(verdicts: Iterable[dict[str, str]]) -> dict[Triple, int]:
    """Distinct sources that called each fact (either reading) wrong."""
    sources: dict[Triple, set[str]] = defaultdict(set)
    for v in verdicts:
        sources[_fact(v["head"], v["tail"])].add(v["source"])
    return {k: len(v) for k, v in sources.items()}


def disputed_summary(
    disputed: Sequence[dict[str, Any]], shown: set[Triple], pairs: set[frozenset[str]]
) -> dict[str, Any]:
    """``kg disputed --json`` rows split into false and true edges, against the edges training showed."""
    keys = {(norm(d["head"]), d["relation"], norm(d["tail"])) for d in disputed}
    false_keys = {k for k in keys if pair_key(k[0], k[2]) in pairs}
    true_shown = {e for e in shown if pair_key(e[0], e[2]) not in pairs}
    false_shown = shown - true_shown
    true_disputed = (keys - false_keys) & true_shown
    return {
        "disputed": len(keys),
        "disputed_facts": len({_fact(k[0], k[2]) for k in keys}),
        "disputed_false": len(false_keys),
        "disputed_true": len(keys - false_keys),
        "disputed_false_shown": len(false_keys & false_shown),
        "disputed_true_shown": len(true_disputed),
        "trained_true_edges": len(true_shown),
        "trained_false_edges": len(false_shown),
        "true_disputed_share": len(true_disputed) / len(true_shown) if true_shown else None,
        "false_disputed_share": len(false_keys & false_shown) / len(false_shown) if false_shown else None,
    }


def answers_naming_false(rows: Sequence[dict[str, Any]], false: Sequence[FalseEdge]) -> dict[str, Any]:
    """How many answers name both ends of some false edge (case-folded substring match)."""
    named = 0
    examples = []
    for r in rows:
        text = norm(str(r.get("answer") or ""))
        hits = [fe for fe in false if norm(fe.disease) in text and norm(fe.tail) in text]
        if hits:
            named += 1
            examples.append({"id": r["id"], "false": [asdict(fe) for fe in hits[:3]]})
    n = sum(1 for r in rows if "answer" in r)
    return {"answers": n, "naming_false": named, "share": named / n if n else None, "examples": examples[:10]}


# --- running the CLI ----------------------------------------------------------------------------


def kgmind_cmd() -> list[str]:
    """The ``kgmind`` console script as a user runs it (its entry point where it is not on PATH)."""
    exe = shutil.which("kgmind")
    return [exe] if exe else [sys.executable, "-c", "from kgmind.cli import main; main()"]


class Cli:
    """Runs ``kgmind`` commands one at a time, logging each with its exit status and seconds."""

    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.env = env
        self.log_dir = log_dir
        self.commands: list[dict[str, Any]] = []

    def __call__(self, args: list[str], label: str) -> subprocess.CompletedProcess[str]:
        """Run ``kgmind ARGS``; raise with its last lines when it fails."""
        cmd = [*kgmind_cmd(), *args]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=self.env, check=False)
        secs = round(time.perf_counter() - t0, 1)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        (self.log_dir / f"{label}.log").write_text(
            f"$ {shlex.join(cmd)}\n# exit {proc.returncode}, {secs} s\n{proc.stdout[-20000:]}\n# stderr\n"
            f"{proc.stderr[-6000:]}"
        )
        self.commands.append({"label": label, "command": shlex.join(["kgmind", *args]), "seconds": secs})
        print(f"  {label}: {secs} s (exit {proc.returncode})", flush=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-8:])
            raise RuntimeError(f"{shlex.join(cmd)} failed (exit {proc.returncode}):\n{tail}")
        return proc


def eval_rows(
    cli: Cli,
    dataset: str,
    store: str,
    out: Path,
    label: str,
    split_args: list[str],
    llm: str = "none",
    entities: str = "chatgpt",
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``kgmind eval DATASET --methods kgmind --rows`` on ``store``: the kgmind figures and rows."""
    args = ["eval", dataset, *split_args, "--methods", "kgmind", "--entities", entities, "--llm", llm]
    args += ["--store", store, "--out", str(out), "--rows", "--no-progress", "--memory-sample", "0"]
    if llm != "none":
        args += ["--no-bertscore"]
    cli(args, label)
    shutil.copyfile(out / "results.md", cli.log_dir / f"{label}.results.md")  # rows stay in --work
    data = json.loads((out / "results.json").read_text())
    return data["methods"]["kgmind"], data["rows"]["kgmind"]


def split_ids(dataset: str, split: str) -> list[str]:
    """The question ids of ``split`` (read with kgmind's item builder; nothing is evaluated)."""
    from kgmind.eval.config import EvalConfig
    from kgmind.eval.items import build_items

    items, _info = build_items(EvalConfig(dataset=dataset, split=split))
    return [str(it.id) for it in items]


def training_pool(dataset: str, seed: int, extra: str = "") -> list[tuple[str, str]]:
    """``(dataset, id)`` of every non-test question (``all`` minus ``test``), shuffled by ``seed``,
    then every question of ``extra`` (a data set with no test split of its own), shuffled likewise."""
    test = set(split_ids(dataset, "test"))
    pool = [i for i in dict.fromkeys(split_ids(dataset, "all")) if i not in test]
    random.Random(seed).shuffle(pool)
    more = list(dict.fromkeys(split_ids(extra, "all"))) if extra else []
    random.Random(seed).shuffle(more)
    return [(dataset, i) for i in pool] + [(extra, i) for i in more]


# --- one language -------------------------------------------------------------------------------


def prepare_kgs(lang: str, data_dir: Path, work: Path, rate: float, seed: int) -> dict[str, Any]:
    """Write the corrupted (and, for Chinese, the clean) KG files and the false list; what to import."""
    src = SOURCES[lang]
    source = data_dir / src.path
    d = work / lang
    d.mkdir(parents=True, exist_ok=True)
    if lang == "en":
        header, rows, facts = read_chatdoctor(source)
        false = choose_false_edges(facts, rate, seed)
        write_chatdoctor(d / "corrupted.csv", header, rows, false)
        files = {"clean": (source, src.fmt), "corrupted": (d / "corrupted.csv", src.fmt)}
        n_facts = len(facts)
    else:
        edges = parsed_edges(source, src.fmt)
        facts = [e for e in edges if e[1] in ROLE_COLUMNS]
        false = choose_false_edges(facts, rate, seed, links=linked_names(edges))
        write_triples(d / "clean.csv", edges)
        write_triples(d / "corrupted.csv", [*edges, *false_triples(false)])
        files = {"clean": (d / "clean.csv", "triples"), "corrupted": (d / "corrupted.csv", "triples")}
        n_facts = len(facts)
    (d / "false_edges.json").write_text(json.dumps([asdict(f) for f in false], ensure_ascii=False, indent=1))
    return {"files": files, "false": false, "facts": n_facts}


def import_kgs(cli: Cli, lang: str, files: dict[str, tuple[Path, str]], work: Path) -> dict[str, str]:
    """Import the clean and the corrupted KG into fresh stores; their URIs."""
    stores = {}
    for name, (path, fmt) in files.items():
        store_path = work / lang / "stores" / name
        for stale in (store_path, store_path.with_name(store_path.name + ".index")):
            shutil.rmtree(stale, ignore_errors=True)
        stores[name] = f"ladybug:{store_path}"
        cli(["kg", "import", str(path), "--format", fmt, "--store", stores[name], "--json", "--no-progress"],
            f"import-{name}")  # fmt: skip
    return stores


def test_point(
    cli: Cli, ctx: dict[str, Any], label: str, trained_rows: list[dict[str, Any]]
) -> dict[str, Any]:
    """Held-out test figures on the corrupted store now, and what training left disputed."""
    lang, out = ctx["lang"], ctx["out"] / ctx["lang"]
    figures, rows = eval_rows(cli, ctx["dataset"], ctx["stores"]["corrupted"], ctx["evals"] / f"test-{label}",
                              f"eval-test-{label}", ctx["test_args"])  # fmt: skip
    disputed = json.loads(cli(["kg", "disputed", "--store", ctx["stores"]["corrupted"], "--json"],
                              f"disputed-{label}").stdout)  # fmt: skip
    (out / f"disputed-{label}.json").write_text(json.dumps(disputed, ensure_ascii=False, indent=1))
    point = {
        "trained": label,
        **shown_stats(rows, ctx["pairs"]),
        "evidence_recall": figures.get("evidence_recall"),
        "gold_disease_hit": figures.get("gold_disease_hit"),
        **disputed_summary(disputed, shown_edges(trained_rows), ctx["pairs"]),
    }
    print(f"[{lang} {label}] {json.dumps({k: v for k, v in point.items() if k != 'trained'})}", flush=True)
    return point


def llm_point(cli: Cli, ctx: dict[str, Any], label: str) -> dict[str, Any]:
    """The local model's answers on the seeded test sample: how many name a false fact."""
    out = ctx["evals"] / f"llm-{label}"
    args = ["--split", "test", "--limit", str(ctx["llm_questions"]), "--seed", str(ctx["seed"])]
    figures, rows = eval_rows(cli, ctx["dataset"], ctx["stores"]["corrupted"], out, f"eval-llm-{label}",
                              args, llm="local")  # fmt: skip
    return {"trained": label, **answers_naming_false(rows, ctx["false"]), **shown_stats(rows, ctx["pairs"]),
            "evidence_recall": figures.get("evidence_recall")}  # fmt: skip


def train_step(cli: Cli, ctx: dict[str, Any], ids: list[tuple[str, str]], label: str) -> tuple[list, list]:
    """Evaluate training questions ``ids`` on the corrupted store, review them, send the verdicts.

    The QA set's own rows use its stored entities, like the test questions; an ``extra`` data set's
    rows go through kgmind's own NER (``--entities own``), as a user's question does.
    """
    out = ctx["out"] / ctx["lang"]
    rows: list[dict[str, Any]] = []
    for dataset in dict.fromkeys(d for d, _ in ids):
        tag = label if dataset == ctx["dataset"] else f"{label}-{dataset}"
        ids_file = ctx["work"] / ctx["lang"] / f"train-{tag}.ids"
        ids_file.write_text("\n".join(i for d, i in ids if d == dataset) + "\n")
        _fig, part = eval_rows(cli, dataset, ctx["stores"]["corrupted"], ctx["evals"] / f"train-{tag}",
                               f"eval-train-{tag}", ["--split", "all", "--ids", str(ids_file)],
                               entities="chatgpt" if dataset == ctx["dataset"] else "own")  # fmt: skip
        rows += [r if dataset == ctx["dataset"] else {**r, "id": f"{dataset}:{r['id']}"} for r in part]
    verdicts = review(rows, ctx["pairs"], ctx["seed"])
    vfile = out / f"verdicts-{label}.jsonl"
    vfile.write_text("".join(json.dumps(v, ensure_ascii=False) + "\n" for v in verdicts))
    if verdicts:
        cli(
            ["kg", "flag", "--file", str(vfile), "--store", ctx["stores"]["corrupted"], "--json"],
            f"flag-{label}",
        )
    return rows, verdicts


def run_language(lang: str, args: argparse.Namespace, cli: Cli, data_dir: Path) -> dict[str, Any]:
    """Corrupt, import, measure before, train in increments measuring after each, fit the rule."""
    src = SOURCES[lang]
    print(f"[{lang}] corrupting {src.path}", flush=True)
    prep = prepare_kgs(lang, data_dir, args.work, args.rate, args.seed)
    stores = import_kgs(cli, lang, prep["files"], args.work)
    test_args = ["--split", "test"] + (["--limit", str(args.limit_test), "--seed", str(args.seed)]
                                       if args.limit_test else [])  # fmt: skip
    pairs = {pair_key(fe.disease, fe.tail) for fe in prep["false"]}
    ctx = {"lang": lang, "out": args.out, "work": args.work, "dataset": src.dataset, "stores": stores,
           "test_args": test_args, "pairs": pairs, "false": prep["false"], "seed": args.seed,
           "llm_questions": args.llm_questions, "evals": args.work / lang / "evals"}  # fmt: skip
    clean, clean_rows = eval_rows(cli, src.dataset, stores["clean"], ctx["evals"] / "test-clean",
                                  "eval-test-clean", test_args)  # fmt: skip
    pool = training_pool(src.dataset, args.seed, src.extra if args.extra else "")
    sizes = sorted({min(n, len(pool)) for n in args.train})
    record: dict[str, Any] = {
        "source": asdict(src), "facts": prep["facts"], "false_edges": len(prep["false"]),
        "pool": len(pool), "sizes": sizes, "stores": stores,
        "clean": {"evidence_recall": clean.get("evidence_recall"),
                  "gold_disease_hit": clean.get("gold_disease_hit"), **shown_stats(clean_rows, pairs)},
        "points": [], "llm": [],
    }  # fmt: skip
    record["points"].append(test_point(cli, ctx, "0", []))
    use_llm = args.llm_questions and lang in args.llm_langs
    if use_llm:
        record["llm"].append(llm_point(cli, ctx, "0"))
    trained_rows: list[dict[str, Any]] = []
    verdicts: list[dict[str, str]] = []
    done = 0
    for size in sizes:
        rows, new = train_step(cli, ctx, pool[done:size], str(size))
        trained_rows += rows
        verdicts += new
        done = size
        point = test_point(cli, ctx, str(size), trained_rows)
        point["verdicts"] = len(verdicts)
        point["training"] = shown_stats(trained_rows, pairs)
        record["points"].append(point)
        if use_llm and size == min(args.llm_after, len(pool)):
            record["llm"].append(llm_point(cli, ctx, str(size)))
        counts = wrong_counts(verdicts)
        point["rules"] = rule_outcomes(counts, shown_edges(trained_rows), pairs, args.rules)
        point["rules_by_fact"] = fact_outcomes(verdicts, shown_edges(trained_rows), pairs, args.rules)
        facts = fact_wrong_counts(verdicts)
        point["shipped_rule_recount"] = sum(1 for n in facts.values() if shipped_rule().disputed(n, 0))
    return record


def shipped_rule() -> Any:
    """The product's dispute rule (read for the recount check only)."""
    from kgmind.tuning import DISPUTE_RULE

    return DISPUTE_RULE


# --- report -------------------------------------------------------------------------------------


def _pct(value: Any, digits: int = 1) -> str:
    return "–" if value is None else f"{value * 100:.{digits}f} %"


def _rel(value: Any, base: Any) -> str:
    if value is None or not base:
        return "–"
    return f"{(value - base) / base * 100:+.0f} %"


def _shown_count(point: dict[str, Any], kind: str) -> int:
    """Disputed edges among the ``kind`` (true/false) edges training showed (older records: by the share)."""
    found = point.get(f"disputed_{kind}_shown")
    if found is None:
        found = round(point[f"{kind}_disputed_share"] * point[f"trained_{kind}_edges"])
    return int(found)


def language_md(lang: str, rec: dict[str, Any]) -> list[str]:
    """One language's tables: before/after on test, the local model, the rule candidates."""
    src, clean = rec["source"], rec["clean"]
    base = rec["points"][0]
    md = [
        f"## {lang}: {src['path']} + {rec['false_edges']:,} false edges (5 % of {rec['facts']:,} facts) "
        f"on {src['dataset']} test",
        "",
        f"Training pool (non-test questions): {rec['pool']:,}; "
        f"increments {', '.join(map(str, rec['sizes']))}.",
        f"Clean KG on the same test questions: evidence recall {clean['evidence_recall']:.3f}, "
        f"false items {_pct(clean['false_item_share'], 2)} (names that happen to form a false pair).",
        "",
        "| trained on | shown items carrying a false edge (Δ vs before) | evidence recall (clean KG) "
        "| true edges training showed, left disputed | false edges training showed, disputed | verdicts |",
        "|---|---|---|---|---|---|",
    ]
    for p in rec["points"]:
        disputed_true = (
            f"{_pct(p['true_disputed_share'], 2)} ({_shown_count(p, 'true')} of {p['trained_true_edges']:,})"
            if p["trained_true_edges"] else "–"
        )  # fmt: skip
        disputed_false = (
            f"{_pct(p['false_disputed_share'])} ({_shown_count(p, 'false')} of {p['trained_false_edges']:,})"
            if p["trained_false_edges"] else "–"
        )  # fmt: skip
        md.append(
            f"| {p['trained']} | {_pct(p['false_item_share'], 2)} ({p['false_items']:,} of {p['items']:,}; "
            f"{_rel(p['false_item_share'], base['false_item_share'])}) "
            f"| {p['evidence_recall']:.3f} ({clean['evidence_recall']:.3f}) "
            f"| {disputed_true} | {disputed_false} "
            f"| {p.get('verdicts', 0):,} |"
        )
    if rec["llm"]:
        b = rec["llm"][0]
        md += ["", "Local model (`--llm local`), seeded test sample:", "",
               "| trained on | answers naming a false fact (Δ) | shown items carrying a false edge |",
               "|---|---|---|"]  # fmt: skip
        for p in rec["llm"]:
            md.append(
                f"| {p['trained']} | {p['naming_false']} of {p['answers']} ({_pct(p['share'])}; "
                f"{_rel(p['share'], b['share'])}) | {_pct(p['false_item_share'], 2)} |"
            )
    last = rec["points"][-1]
    if last.get("rules"):
        md += ["", f"Dispute rule candidates, recounted from the reviewer's verdicts after {last['trained']} "
               "training questions (non-test only; the reviewer never says `right`):", "",
               "| min_wrong, margin | false edges shown in training, disputed | true edges shown, disputed |",
               "|---|---|---|"]  # fmt: skip
        for r in last["rules"]:
            md.append(
                f"| {r['min_wrong']}, {r['margin']} | {_pct(r['false_disputed_share'])} "
                f"({r['false_disputed']} of {r['false_shown']}) | {_pct(r['true_disputed_share'], 2)} "
                f"({r['true_disputed']} of {r['true_shown']:,}) |"
            )
        md += ["", "The same per fact, as kgmind counts verdicts (a flag on one reading of a fact counts for "
               "its stored inverse too):", "",
               "| min_wrong, margin | false facts shown in training, disputed | true facts shown, disputed |",
               "|---|---|---|"]  # fmt: skip
        for r in last.get("rules_by_fact", []):
            md.append(
                f"| {r['min_wrong']}, {r['margin']} | {_pct(r['false_disputed_share'])} "
                f"({r['false_disputed']} of {r['false_shown']}) | {_pct(r['true_disputed_share'], 2)} "
                f"({r['true_disputed']} of {r['true_shown']:,}) |"
            )
        md.append(
            f"\nRecount under the shipped rule: {last['shipped_rule_recount']} facts; `kg disputed --json`: "
            f"{last.get('disputed_facts', '?')} facts ({last['disputed']} stored edges)."
        )
    return md


def write_report(out: Path, record: dict[str, Any]) -> str:
    """Write results.json and results.md (every language run so far); return the markdown."""
    md = [
        "# Wrong facts: false edges, a simulated reviewer, and what held-out questions see (issue 41)",
        "",
        f"- commit: `{record['commit']}`; CPU: {record['cpu']}",
    ]
    for lang, rec in record["languages"].items():
        md.append(f"- {lang}: `{rec['command']}` (started {rec['started']}, {rec['minutes']} min)")
    md += ["", "Commands each run made, with seconds (stores under the work folder):", ""]
    for lang, rec in record["languages"].items():
        md += [f"- {lang} ({c['seconds']} s): `{c['command']}`" for c in rec["commands"]]
    md.append("")
    for lang, rec in record["languages"].items():
        md += [*language_md(lang, rec), ""]
    text = "\n".join(md) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    (out / "results.md").write_text(text)
    return text


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line (see the module doc)."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--lang", choices=("en", "zh", "both"), default="both")
    ap.add_argument("--train", default="300,1000,3000", help="training sizes (capped at the non-test pool)")
    ap.add_argument("--out", type=Path, required=True, help="folder for results.json / results.md and rows")
    ap.add_argument(
        "--work", type=Path, default=None, help="folder for KG files and stores (default: temporary)"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--no-extra", dest="extra", action="store_false", help="train on the QA set's own non-test rows only"
    )
    ap.add_argument("--rate", type=float, default=0.05, help="false edges per true fact")
    ap.add_argument("--limit-test", type=int, default=None, help="a seeded sample of N test questions")
    ap.add_argument("--llm-questions", type=int, default=0, help="test questions the local model answers")
    ap.add_argument("--llm-after", type=int, default=1000, help="training size after which it answers again")
    ap.add_argument("--llm-langs", default="en", help="languages with local-model answers")
    ap.add_argument(
        "--rules", default="1,1;2,1;3,1;1,2;2,2", help="candidate MIN_WRONG,MARGIN rules (;-list)"
    )
    args = ap.parse_args(argv)
    args.train = [int(x) for x in args.train.split(",") if x.strip()]
    args.rules = [tuple(int(v) for v in r.split(",")) for r in args.rules.split(";") if r.strip()]
    args.llm_langs = [x.strip() for x in args.llm_langs.split(",")]
    args.work = (args.work or Path(tempfile.mkdtemp(prefix="wrong-facts-"))).resolve()
    args.out = args.out.resolve()
    return args


def _machine() -> tuple[str, str]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import cpu_model, git_commit

    return git_commit(), cpu_model()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark for each language and write the report (merging languages run before)."""
    args = parse_args(argv)
    data_dir, env = cli_env()
    commit, cpu = _machine()
    old = args.out / "results.json"
    record = json.loads(old.read_text()) if old.exists() else {}
    if record.get("benchmark") != "wrong_facts" or record.get("commit") != commit:
        record = {"benchmark": "wrong_facts", "commit": commit, "cpu": cpu, "languages": {}}
    command = shlex.join(["python", "benchmarks/wrong_facts.py", *(sys.argv[1:] if argv is None else argv)])
    for lang in ["en", "zh"] if args.lang == "both" else [args.lang]:
        t0, started = time.perf_counter(), datetime.now(UTC).isoformat(timespec="seconds")
        cli = Cli(env, args.out / lang / "logs")
        rec = run_language(lang, args, cli, data_dir)
        minutes = round((time.perf_counter() - t0) / 60, 1)
        rec.update(command=command, started=started, minutes=minutes, seed=args.seed,
                   limit_test=args.limit_test, work=str(args.work), commands=cli.commands)  # fmt: skip
        # another language may have been run into the same folder meanwhile: merge, do not overwrite
        now = json.loads(old.read_text()) if old.exists() else {}
        if now.get("benchmark") == "wrong_facts" and now.get("commit") == commit:
            record["languages"] = {**now.get("languages", {}), **record["languages"]}
        record["languages"][lang] = rec
        write_report(args.out, record)
    print(write_report(args.out, record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
