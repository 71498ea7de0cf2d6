"""``kgmind eval DATASET``: run retrieval methods side by side and write results.json/.md/.png.

Example::

    kgmind eval genmedgpt5k --methods all --entities chatgpt --llm none --budget 800 --out DIR --json
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kgmind.cli._common import CliError, err_console, handle_errors

__all__ = ["app", "eval_command"]

app = typer.Typer(
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


@app.callback(invoke_without_command=True)
@handle_errors
def eval_command(
    dataset: Annotated[str, typer.Argument(help="genmedgpt5k, cmcqa, explaincpe or medical_dialogue_zh.")],
    methods: Annotated[
        str, typer.Option(help="'all' or a comma list, e.g. bm25_doc,mindmap,kgmind.")
    ] = "all",
    entities: Annotated[
        str, typer.Option(help="chatgpt (stored NER / question_kg) or own (kgmind NER).")
    ] = "chatgpt",
    llm: Annotated[str, typer.Option(help="none, local, local-1.5b or an init_chat_model string.")] = "none",
    budget: Annotated[
        int | None,
        typer.Option(min=1, help="Evidence token budget per question (default: the Context default)."),
    ] = None,
    split: Annotated[
        str,
        typer.Option(help="GenMedGPT-5k split: test (reported), calib (tuning), dev (both), gold203 or all."),
    ] = "dev",
    limit: Annotated[int | None, typer.Option(min=1, help="Evaluate a seeded sample of N items.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the sample and of KGCoT's DFS.")] = 0,
    ids: Annotated[
        Path | None,
        typer.Option(help="File of item ids, one per line: evaluate only these (within --split)."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Folder for results.json, results.md, results.png.")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print results.json to stdout.")] = False,
    rows: Annotated[
        bool, typer.Option(help="Keep every item's scores in results.json (under 'rows'), for breakdowns.")
    ] = False,
    dialogues: Annotated[Path | None, typer.Option(help="GenMedGPT-5k dialogues.json.")] = None,
    ner: Annotated[Path | None, typer.Option(help="ner_chatgpt.jsonl.")] = None,
    gold: Annotated[Path | None, typer.Option(help="gold_kg_entities.jsonl.")] = None,
    qa: Annotated[
        Path | None, typer.Option(help="CMCQA qa_ner.jsonl / ExplainCPE split / medical_dialogue_zh CSV.")
    ] = None,
    docs: Annotated[
        Path | None, typer.Option(help="Folder of *.txt documents for bm25_doc/embedding_doc.")
    ] = None,
    vocab: Annotated[Path | None, typer.Option(help="EMCKG format_dataset.csv (gold vocabulary).")] = None,
    store: Annotated[
        str | None,
        typer.Option(
            help="KG store URI (default ladybug:$KGMIND_HOME/eval-emckg-full; cmcqa: eval-cmckg-recrawl)."
        ),
    ] = None,
    kg: Annotated[Path | None, typer.Option(help="KG file imported into an empty store.")] = None,
    kg_format: Annotated[
        str | None, typer.Option(help="Importer format of --kg (default chatdoctor).")
    ] = None,
    memory_sample: Annotated[int, typer.Option(min=0, help="Items in the tracemalloc memory pass.")] = 20,
    bertscore: Annotated[bool, typer.Option(help="Compute BERTScore (local MiniLM) when an LLM ran.")] = True,
    progress: Annotated[bool, typer.Option(help="Show a progress bar on stderr.")] = True,
    threads: Annotated[
        int | None, typer.Option(min=1, help="torch intra-op threads (default: torch's).")
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(min=1, help="Most tokens the LLM generates per call (default: the model's)."),
    ] = None,
    interleave: Annotated[
        bool,
        typer.Option(help="Run every method on an item before the next item (fair wall-time ratios)."),
    ] = False,
    llm_cache: Annotated[
        str | None,
        typer.Option(
            help="SQLite LLM cache file (default $KGMIND_HOME/llm_cache/langchain.sqlite), or 'off' "
            "so that every call runs and is timed."
        ),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="FIELD=VALUE: a Context setting for every graph run (repeatable; an ablation), "
            "e.g. --set hub_percentile=99.5 --set embedding_spans=never. VALUE is JSON, else text.",
        ),
    ] = None,
) -> None:
    """Run the evaluation of DATASET and write/print the results."""
    from kgmind.eval.config import EvalConfig
    from kgmind.eval.items import DATASETS
    from kgmind.eval.report import to_json, write_results
    from kgmind.eval.runner import run_eval
    from kgmind.graphs.context import Context

    if dataset not in DATASETS:
        raise CliError(f"unknown dataset {dataset!r}; choose from {', '.join(DATASETS)}", 2)

    def s(p: Path | None) -> str | None:
        return str(p) if p is not None else None

    cfg = EvalConfig(
        dataset=dataset,
        methods=methods,
        entities=entities,
        llm=llm,
        budget=budget if budget is not None else Context().budget_tokens,  # what users get
        split=split,
        limit=limit,
        seed=seed,
        ids=s(ids),
        dialogues=s(dialogues),
        ner=s(ner),
        gold=s(gold),
        qa=s(qa),
        docs=s(docs),
        vocab=s(vocab),
        store=store,
        kg=s(kg),
        kg_format=kg_format,
        memory_sample=memory_sample,
        bertscore=bertscore,
        threads=threads,
        max_tokens=max_tokens,
        llm_cache=llm_cache,
        interleave=interleave,
        context=context_settings(set_ or []),
    )
    if progress:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(
            TextColumn("{task.description:>16}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err_console,
            transient=False,
        )
        tasks: dict[str, object] = {}

        def on_start(name: str, total: int) -> None:
            tasks[name] = bar.add_task(name, total=total)

        def on_advance(name: str) -> None:
            bar.advance(tasks[name])  # type: ignore[arg-type]

        with bar:
            results = run_eval(cfg, on_start=on_start, on_advance=on_advance, keep_rows=rows)
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
