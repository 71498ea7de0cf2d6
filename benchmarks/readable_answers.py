"""What a reader is shown of a grounded answer: mind-map size, readable steps, summaries agreeing with lists.

The ``grounded_answers`` run (``kgmind eval``, local model, LLM cache off) of kgmind as
shipped, on a seeded sample of GenMedGPT-5k test-split questions, with every graph output
kept (the compiled graph the eval builds is wrapped to record what ``invoke`` returns;
nothing else changes). Besides the eval's answer recall/precision and citation rate/support:

- ``mind_map_nodes_p50``: nodes of the mind map, root included (median over answers);
- ``diagnosis_finding_share``: share of the mind maps' diagnosis branches (``diagnoses`` of
  them) holding at least one of the question's findings (a disease the patient names and
  nothing they state points to has none to hold);
- ``step_sentence_share``: share of inference steps that are sentences naming a cited
  entity — at least 3 words (4 CJK characters) and naming an entity of an item the step
  cites (the grounding check's :func:`~kgmind.graphs.check_grounding.names_in`);
- ``step_fact_share``: the stricter share whose text names both ends of a cited triple;
- ``summary_contradicts``: answers whose summary names a disease of the evidence other than
  the first chosen diagnosis first (``summary_names_none``: it names no disease at all);
- ``summary_copies_question``: answers whose summary holds a run of the question verbatim, of
  at least :data:`COPY_CJK` CJK characters or :data:`COPY_WORDS` words (punctuation skipped):
  the patient's words pasted into the advice, or a long restatement of them.

The metrics are computed here from the graph's output only, so the same script measures
any commit (run it with that commit's ``src`` on ``PYTHONPATH``).

Usage::

    python benchmarks/readable_answers.py --limit 10 --out benchmarks/results/DIR
    python benchmarks/readable_answers.py --dataset cmcqa --limit 50 --out benchmarks/results/DIR
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
from collections.abc import Mapping, Sequence
from datetime import date
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from _common import answer_eval_config, cpu_model, git_commit

os.environ.setdefault("HF_HUB_OFFLINE", "1")

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
#: A summary copying this many CJK characters or words of the question in a row counts as copying it.
COPY_CJK = 20
COPY_WORDS = 12
_UNIT = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]|[A-Za-z0-9']+")


def _nodes(tree: Any) -> int:
    if not isinstance(tree, Mapping):
        return 0
    return 1 + sum(_nodes(c) for c in tree.get("children") or [])


def _diagnoses(tree: Any) -> tuple[int, int]:
    """``(diagnosis branches, those holding a finding)`` of a mind map."""
    if not isinstance(tree, Mapping):
        return 0, 0
    branches = [c for c in tree.get("children") or [] if c.get("kind") == "diagnosis"]
    held = sum(any(k.get("kind") == "finding" for k in b.get("children") or []) for b in branches)
    return len(branches), held


def _long_enough(text: str) -> bool:
    if _CJK.search(text):
        return len(_CJK.findall(text)) >= 4
    return len(re.findall(r"\w+", text)) >= 3


def _position(text: str, name: str) -> int:
    from kgmind.models import normalize_name

    low, key = normalize_name(text), normalize_name(name)
    if not key:
        return -1
    shortest = 2 if _CJK.search(key) else 3
    return 0 if low == key else (low.find(key) if len(key) >= shortest else -1)


def _steps(chain: Sequence[Mapping[str, Any]], by_id: Mapping[str, Any]) -> tuple[int, int, int]:
    """``(steps, sentences naming a cited entity, sentences naming both ends of a cited triple)``."""
    from kgmind.graphs.check_grounding import names_in

    sentences = facts = 0
    for step in chain:
        text = str(step.get("step") or "")
        triples = [t for i in step.get("evidence_ids") or [] if i in by_id for t in by_id[i].triples]
        names = [n for h, _r, t in triples for n in (h, t)]
        sentences += bool(_long_enough(text) and names and names_in([text], names))
        facts += any(_position(text, h) >= 0 and _position(text, t) >= 0 for h, _r, t in triples)
    return len(chain), sentences, facts


def _summary_check(out: Mapping[str, Any]) -> tuple[bool, bool]:
    """``(contradicts, names none)``: does the summary name another disease before the first diagnosis?"""
    from kgmind.models import normalize_name

    diagnoses = list((out.get("conclusions") or {}).get("diagnoses") or [])
    if not diagnoses:
        return False, False
    answer = str(out.get("answer") or "")
    summary = answer.rsplit("\n", 1)[0] if "\n" in answer else answer
    diseases = {
        n: None
        for ev in out.get("selected_evidence") or []
        for n, kind in ev.entity_types.items()
        if kind == "disease"
    }
    names = list(dict.fromkeys([*diagnoses, *diseases]))
    found = sorted((p, -len(n), n) for n in names if (p := _position(summary, n)) >= 0)
    if not found:
        return False, True
    return normalize_name(found[0][2]) != normalize_name(diagnoses[0]), False


def longest_copy(text: str, question: str) -> int:
    """The longest run of ``question``'s units (CJK characters, words) that ``text`` holds, in units."""
    a = [u.lower() for u in _UNIT.findall(text)]
    b = [u.lower() for u in _UNIT.findall(question)]
    return SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b)).size


def _copies_question(out: Mapping[str, Any]) -> bool:
    answer = str(out.get("answer") or "")
    summary = answer.rsplit("\n", 1)[0] if out.get("conclusions") and "\n" in answer else answer
    question = str(out.get("question") or "")
    run = longest_copy(summary, question)
    return run >= (COPY_CJK if _CJK.search(question) else COPY_WORDS)


def readability(outs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The reader-facing figures over the recorded graph outputs."""
    nodes = [_nodes(o.get("mind_map")) for o in outs]
    steps = sentences = facts = contradicts = none = diagnoses = held = 0
    for out in outs:
        d, h = _diagnoses(out.get("mind_map"))
        diagnoses, held = diagnoses + d, held + h
        by_id = {ev.id: ev for ev in out.get("selected_evidence") or [] if ev.id}
        n, s, f = _steps(out.get("inference_chain") or [], by_id)
        steps, sentences, facts = steps + n, sentences + s, facts + f
        c, z = _summary_check(out)
        contradicts, none = contradicts + c, none + z
    return {
        "answers": len(outs),
        "mind_map_nodes_p50": statistics.median(nodes) if nodes else None,
        "mind_map_nodes": nodes,
        "diagnoses": diagnoses,
        "diagnosis_finding_share": round(held / diagnoses, 4) if diagnoses else None,
        "steps": steps,
        "step_sentence_share": round(sentences / steps, 4) if steps else None,
        "step_fact_share": round(facts / steps, 4) if steps else None,
        "summary_contradicts": contradicts,
        "summary_names_none": none,
        "summary_copies_question": sum(_copies_question(o) for o in outs),
    }


def _recording(outs: list[dict[str, Any]], partial: Path | None = None) -> None:
    """Wrap the eval's compiled graph so every ``invoke`` output is kept in ``outs``.

    With ``partial`` each output is also appended there as it comes (its evidence in full), so
    a run stopped early still leaves the answers it gave (``--from-partial`` scores them).
    """
    from kgmind.eval.resources import Resources

    built = Resources.graph

    class Recorder:
        def __init__(self, graph: Any) -> None:
            self.graph = graph

        def invoke(self, *args: Any, **kwargs: Any) -> Any:
            out = self.graph.invoke(*args, **kwargs)
            outs.append(dict(out))
            if partial is not None:
                rec = _record(out)
                rec["selected_evidence"] = [ev.model_dump() for ev in out.get("selected_evidence") or []]
                with partial.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
            return out

    def graph(self: Any) -> Any:
        return Recorder(built(self))

    Resources.graph = graph  # type: ignore[method-assign]


def _record(out: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("question", "answer", "conclusions", "inference_chain", "mind_map", "grounding")
    rec = {k: out.get(k) for k in keys}
    rec["evidence"] = [f"{ev.id}: {ev.text}" for ev in out.get("selected_evidence") or []]
    return rec


def score_partial(path: Path, cfg: Any, first: int | None = None) -> dict[str, Any]:
    """Score the answers a run appended to ``partial.jsonl`` (finished or stopped early), as the eval would.

    The items are rebuilt from ``cfg`` (same data set, split, seed and limit) and matched by
    question; the first record is the eval's warm-up (the first item again) and is skipped.
    ``first`` scores only the first that many answers (two stopped runs on the same questions).
    Answer recall and precision use the eval's own metrics and vocabulary, citation rate and
    support the graph's grounding report; the reader-facing figures are :func:`readability`.
    So the code doing the scoring is the same whatever commit wrote the answers.
    """
    from kgmind.eval import metrics as mt
    from kgmind.eval.items import build_items
    from kgmind.eval.scoring import scoring_vocabulary
    from kgmind.models import Evidence

    items, _info = build_items(cfg)
    by_question = {item.question: item for item in items}
    vocab = scoring_vocabulary(cfg)
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows: list[dict[str, Any]] = []
    outs: list[dict[str, Any]] = []
    for line in lines[1:][:first]:
        rec = json.loads(line)
        item = by_question[rec["question"]]
        answer = str(rec.get("answer") or "")
        found = [e.name for e in vocab.matcher.find(answer)] if vocab is not None else []
        grounding = rec.get("grounding") or {}
        rows.append(
            {
                "answer_entity_recall": mt.answer_entity_recall(answer, item.gold),
                "answer_precision": mt.evidence_precision(found, item.gold_names)
                if item.gold_names
                else None,
                "citation_rate": grounding.get("citation_rate"),
                "citation_support": grounding.get("citation_support"),
            }
        )
        evidence = [Evidence.model_validate(e) for e in rec.get("selected_evidence") or []]
        outs.append({**rec, "selected_evidence": evidence})
    summary: dict[str, Any] = {"answered": len(rows), "of": len(items)}
    for key in ("answer_entity_recall", "answer_precision", "citation_rate", "citation_support"):
        summary[key] = mt.summarize(rows, key)
    summary.update(readability(outs))
    summary["per_question"] = [
        {"question": o["question"][:60], **row} for o, row in zip(outs, rows, strict=True)
    ]
    return summary


def main() -> int:
    from kgmind.tuning import DEFAULT_MODEL

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", default=DEFAULT_MODEL, help="chat model (default: the shipped default)")
    ap.add_argument("--split", default="test")
    ap.add_argument(
        "--dataset",
        default="genmedgpt5k",
        choices=("genmedgpt5k", "cmcqa"),
        help="genmedgpt5k (English, EMCKG-full) or cmcqa (Chinese, the CMCKG re-crawl)",
    )
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument(
        "--from-partial",
        action="store_true",
        help="run nothing: score OUT/partial.jsonl (a finished or stopped run) into OUT/summary-partial.json",
    )
    ap.add_argument("--first", type=int, help="with --from-partial: score only the first N answers")
    args = ap.parse_args()
    cfg = answer_eval_config("kgmind", args.model, args.split, args.limit, args.seed, dataset=args.dataset)
    if args.from_partial:
        scored = score_partial(args.out / "partial.jsonl", cfg, args.first)
        name = f"summary-first{args.first}.json" if args.first else "summary-partial.json"
        (args.out / name).write_text(json.dumps(scored, indent=2, ensure_ascii=False))
        print(
            json.dumps(
                {k: v for k, v in scored.items() if k not in ("per_question", "mind_map_nodes")}, indent=2
            )
        )
        return 0

    from kgmind.eval.report import write_results
    from kgmind.eval.runner import run_eval

    outs: list[dict[str, Any]] = []
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "partial.jsonl").unlink(missing_ok=True)
    _recording(outs, args.out / "partial.jsonl")
    results = run_eval(cfg, on_advance=lambda name: print(f"  {name}", file=sys.stderr, flush=True))
    scored = outs[1:]  # the first invoke is the eval's warm-up run
    results["benchmark"] = "readable_answers"
    results["commit"] = git_commit()
    results["cpu"] = cpu_model()
    results["command"] = "python " + " ".join(sys.argv)
    results["run_date"] = date.today().isoformat()
    results["readability"] = readability(scored)
    args.out.mkdir(parents=True, exist_ok=True)
    write_results(results, args.out)
    with (args.out / "answers.jsonl").open("w", encoding="utf-8") as fh:
        for out in scored:
            fh.write(json.dumps(_record(out), ensure_ascii=False) + "\n")
    k = results["methods"]["kgmind"]
    keys = ("answer_entity_recall", "answer_precision", "citation_rate", "citation_support")
    summary = {**{key: k.get(key) for key in keys}, **results["readability"]}
    summary.pop("mind_map_nodes")
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
