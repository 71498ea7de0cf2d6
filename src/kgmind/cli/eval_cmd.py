"""``kgmind eval DATASET``: run retrieval methods side by side and write results.json/.md/.png.

Example::

    kgmind eval genmedgpt5k --methods all --entities chatgpt --llm none --budget 800 --out DIR --json
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kgmind.cli._app import KgmindTyper
from kgmind.cli._common import (
    DATASET_HELP,
    CliError,
    config_from_options,
    err_console,
    handle_errors,
    pick_store,
    progress_bars,
)

__all__ = ["app", "eval_command"]

app = KgmindTyper(
    help="Evaluate retrieval and answers against the papers' baselines.",
    no_args_is_help=True,
    add_completion=False,
    # a group with a positional argument: let options follow DATASET (`kgmind eval genmedgpt5k --json`)
    context_settings={"allow_interspersed_args": True},
)


def context_settings(pairs: list[str]) -> dict[str, Any]:
    """``FIELD=VALUE`` pairs as :class:`Context` overrides (VALUE parsed as JSON, else kept as text).

    Raises:
        CliError: A pair without ``=``, or a field the Context does not have.
    """
    import dataclasses
    import json

    from kgmind.graphs.context import Context

    known = {f.name for f in dataclasses.fields(Context)}
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            raise CliError(f"--set needs FIELD=VALUE, not {pair!r}", 2)
        if name not in known:
            raise CliError(f"--set: Context has no field {name!r}; fields: {', '.join(sorted(known))}", 2)
        try:
            out[name] = json.loads(raw)
        except ValueError:
            out[name] = raw
    return out


#: Help of each option, by name: the signature stays one line per option.
_HELP = {
    **DATASET_HELP,
    "dataset": "genmedgpt5k, cmcqa, explaincpe or medical_dialogue_zh.",
    "methods": "'all' or a comma list, e.g. bm25_doc,mindmap,kgmind.",
    "entities": "chatgpt (stored NER / question_kg) or own (kgmind NER).",
    "llm": "none, local, local-1.5b or an init_chat_model string.",
    "budget": "Evidence token budget per question (default: the Context default).",
    "split": "GenMedGPT-5k split: test (reported), calib (tuning), dev (both), gold203 or all.",
    "limit": "Evaluate a seeded sample of N items.",
    "seed": "Seed of the sample and of KGCoT's DFS.",
    "ids": "File of item ids, one per line: evaluate only these (within --split).",
    "out": "Folder for results.json, results.md, results.png.",
    "json": "Print results.json to stdout.",
    "rows": "Keep every item's scores in results.json (under 'rows'), for breakdowns, with the KG triples "
    "behind each evidence item it was shown ('shown').",
    "ner": "ner_chatgpt.jsonl.",
    "gold": "gold_kg_entities.jsonl.",
    "qa": "CMCQA qa_ner.jsonl / ExplainCPE split / medical_dialogue_zh CSV.",
    "docs": "Folder of *.txt documents for bm25_doc/embedding_doc.",
    "vocab": "EMCKG format_dataset.csv (gold vocabulary).",
    "store": "KG store URI (default ladybug:$KGMIND_HOME/eval-emckg-full; cmcqa: eval-cmckg-recrawl).",
    "kg_name": "The KG imported with `kgmind kg import FILE --name NAME` (instead of --store).",
    "kg_format": "Importer format of --kg (default chatdoctor).",
    "memory_sample": "Items in the tracemalloc memory pass.",
    "bertscore": "Compute BERTScore (local MiniLM) when an LLM ran.",
    "threads": "torch intra-op threads (default: torch's).",
    "max_tokens": "Most tokens the LLM generates per call (default: the model's).",
    "interleave": "Run every method on an item before the next item (fair wall-time ratios).",
    "llm_cache": "SQLite LLM cache file (default $KGMIND_HOME/llm_cache/langchain.sqlite), or 'off' "
    "so that every call runs and is timed.",
    "set": "FIELD=VALUE: a Context setting for every graph run (repeatable; an ablation), "
    "e.g. --set hub_percentile=99.5 --set embedding_spans=never. VALUE is JSON, else text.",
}


@app.callback(invoke_without_command=True)
@handle_errors
def eval_command(
    dataset: Annotated[str, typer.Argument(help=_HELP["dataset"])],
    methods: Annotated[str, typer.Option(help=_HELP["methods"])] = "all",
    entities: Annotated[str, typer.Option(help=_HELP["entities"])] = "chatgpt",
    llm: Annotated[str, typer.Option(help=_HELP["llm"])] = "none",
    budget: Annotated[int | None, typer.Option(min=1, help=_HELP["budget"])] = None,
    split: Annotated[str, typer.Option(help=_HELP["split"])] = "dev",
    limit: Annotated[int | None, typer.Option(min=1, help=_HELP["limit"])] = None,
    seed: Annotated[int, typer.Option(help=_HELP["seed"])] = 0,
    ids: Annotated[Path | None, typer.Option(help=_HELP["ids"])] = None,
    out: Annotated[Path | None, typer.Option(help=_HELP["out"])] = None,
    json_out: Annotated[bool, typer.Option("--json", help=_HELP["json"])] = False,
    rows: Annotated[bool, typer.Option(help=_HELP["rows"])] = False,
    dialogues: Annotated[Path | None, typer.Option(help=_HELP["dialogues"])] = None,
    ner: Annotated[Path | None, typer.Option(help=_HELP["ner"])] = None,
    gold: Annotated[Path | None, typer.Option(help=_HELP["gold"])] = None,
    qa: Annotated[Path | None, typer.Option(help=_HELP["qa"])] = None,
    docs: Annotated[Path | None, typer.Option(help=_HELP["docs"])] = None,
    vocab: Annotated[Path | None, typer.Option(help=_HELP["vocab"])] = None,
    store: Annotated[str | None, typer.Option(help=_HELP["store"])] = None,
    kg_name: Annotated[str | None, typer.Option(help=_HELP["kg_name"])] = None,
    kg: Annotated[Path | None, typer.Option(help=_HELP["kg"])] = None,
    kg_format: Annotated[str | None, typer.Option(help=_HELP["kg_format"])] = None,
    memory_sample: Annotated[int, typer.Option(min=0, help=_HELP["memory_sample"])] = 20,
    bertscore: Annotated[bool, typer.Option(help=_HELP["bertscore"])] = True,
    progress: Annotated[bool, typer.Option(help=_HELP["progress"])] = True,
    threads: Annotated[int | None, typer.Option(min=1, help=_HELP["threads"])] = None,
    max_tokens: Annotated[int | None, typer.Option(min=1, help=_HELP["max_tokens"])] = None,
    interleave: Annotated[bool, typer.Option(help=_HELP["interleave"])] = False,
    llm_cache: Annotated[str | None, typer.Option(help=_HELP["llm_cache"])] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help=_HELP["set"])] = None,
) -> None:
    """Run the evaluation of DATASET and write/print the results."""
    options = dict(locals())  # the options named as EvalConfig's fields become its values
    from kgmind.eval.config import EvalConfig
    from kgmind.eval.items import DATASETS
    from kgmind.eval.report import to_json, write_results
    from kgmind.eval.runner import run_eval
    from kgmind.graphs.context import Context

    if dataset not in DATASETS:
        raise CliError(f"unknown dataset {dataset!r}; choose from {', '.join(DATASETS)}", 2)
    cfg = config_from_options(
        EvalConfig,
        options,
        store=pick_store(store, kg_name, must_exist=kg is None),  # only --kg FILE may fill a new store
        budget=budget if budget is not None else Context().budget_tokens,  # what users get
        context=context_settings(set_ or []),
    )
    if progress:
        with progress_bars("{task.description:>16}") as bars:
            results = run_eval(cfg, on_start=bars.start, on_advance=bars.advance, keep_rows=rows)
    else:
        results = run_eval(cfg, keep_rows=rows)
    for name, why in results.get("disabled", {}).items():
        err_console.print(f"[yellow]method {name} disabled:[/] {why}", highlight=False, soft_wrap=True)
    if out is not None:
        paths = write_results(results, out)
        err_console.print(f"wrote {paths['json']}, {paths['md'].name}, {paths['png'].name}", highlight=False)
    if json_out:
        typer.echo(to_json(results))
    elif out is None:
        from kgmind.eval.report import markdown_table

        typer.echo(markdown_table(results))
