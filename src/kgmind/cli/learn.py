"""``kgmind learn DATASET --store URI``: one pass of automatic feedback from reference answers.

Example::

    kgmind learn genmedgpt5k --store ladybug:./kg-learnt --limit 1000
    kgmind eval genmedgpt5k --store ladybug:./kg-learnt --methods kgmind --split test
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from kgmind.cli._common import CliError, err_console, handle_errors

__all__ = ["learn", "register"]


@handle_errors
def learn(
    dataset: Annotated[str, typer.Argument(help="genmedgpt5k or cmcqa (data sets with reference answers).")],
    store: Annotated[
        str,
        typer.Option(help="Store whose weights learn (an empty one gets the data set's KG imported first)."),
    ],
    split: Annotated[
        str, typer.Option(help="GenMedGPT-5k split to learn from (dev, calib, test, all).")
    ] = "dev",
    limit: Annotated[
        int | None, typer.Option(min=1, help="Learn from the first N questions of the seeded order.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the order (prefixes nest: 300 ⊂ 1000).")] = 0,
    ids: Annotated[
        Path | None, typer.Option(help="File of item ids, one per line: learn from these, in this order.")
    ] = None,
    exclude: Annotated[
        Path | None, typer.Option(help="File of item ids never learnt from (a held-out test set).")
    ] = None,
    credit: Annotated[
        str, typer.Option(help="reference (edges to the reference's entities, shown or not) or shown.")
    ] = "reference",
    poor: Annotated[
        str, typer.Option(help="none, outranked (diseases ranked above the gold one) or shown.")
    ] = "none",
    beta: Annotated[float, typer.Option(help="β of the poor update, in (0, 1).")] = 0.5,
    budget: Annotated[
        int | None, typer.Option(min=1, help="Evidence token budget of the runs (default: the Context's).")
    ] = None,
    kg: Annotated[Path | None, typer.Option(help="KG file imported into an empty store.")] = None,
    kg_format: Annotated[str | None, typer.Option(help="Importer format of --kg.")] = None,
    dialogues: Annotated[Path | None, typer.Option(help="GenMedGPT-5k dialogues.json.")] = None,
    ner: Annotated[
        Path | None, typer.Option(help="ner_chatgpt.jsonl (the stored question entities).")
    ] = None,
    qa: Annotated[Path | None, typer.Option(help="CMCQA qa_ner.jsonl.")] = None,
    vocab: Annotated[Path | None, typer.Option(help="Gold vocabulary (EMCKG format_dataset.csv).")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar on stderr.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Rate every question's edges against its reference answer, through the audited feedback path.

    Feedback ids come from the item ids: a second pass, or a pass resumed after an
    interruption, applies nothing twice.
    """
    from kgmind.eval.learn import LEARN_DATASETS, LearnConfig, run_learn, summary_line
    from kgmind.graphs.context import Context

    if dataset not in LEARN_DATASETS:
        raise CliError(f"unknown dataset {dataset!r}; choose from {', '.join(LEARN_DATASETS)}", 2)

    def s(p: Path | None) -> str | None:
        return str(p) if p is not None else None

    cfg = LearnConfig(
        dataset=dataset,
        split=split,
        limit=limit,
        seed=seed,
        ids=s(ids),
        exclude=s(exclude),
        store=store,
        kg=s(kg),
        kg_format=kg_format,
        dialogues=s(dialogues),
        ner=s(ner),
        qa=s(qa),
        vocab=s(vocab),
        budget=budget if budget is not None else Context().budget_tokens,
        credit=credit,
        poor=poor,
        beta=beta,
    )
    cfg.check()
    if progress:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(
            TextColumn("learn"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err_console
        )
        task: list[object] = []
        with bar:
            out = run_learn(
                cfg,
                on_start=lambda n: task.append(bar.add_task("learn", total=n)),
                on_advance=lambda: bar.advance(task[0]),  # type: ignore[arg-type]
            )
    else:
        out = run_learn(cfg)
    if as_json:
        typer.echo(json.dumps(out, ensure_ascii=False, indent=2))
    else:
        typer.echo(summary_line(out))


def register(app: typer.Typer) -> None:
    """Add the ``learn`` command to ``app``."""
    app.command("learn")(learn)
