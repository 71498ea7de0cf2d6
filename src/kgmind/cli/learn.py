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

from kgmind.cli._common import (
    DATASET_HELP,
    CliError,
    config_from_options,
    handle_errors,
    progress_bars,
)

__all__ = ["learn", "register"]


#: Help of each option, by name: the signature stays one line per option.
_HELP = {
    **DATASET_HELP,
    "dataset": "genmedgpt5k or cmcqa (data sets with reference answers).",
    "store": "Store whose weights learn (an empty one gets the data set's KG imported first).",
    "split": "GenMedGPT-5k split to learn from (dev, calib, test, all).",
    "limit": "Learn from the first N questions of the seeded order.",
    "seed": "Seed of the order (prefixes nest: 300 ⊂ 1000).",
    "ids": "File of item ids, one per line: learn from these, in this order.",
    "exclude": "File of item ids never learnt from (a held-out test set).",
    "credit": "reference (edges to the reference's entities, shown or not) or shown.",
    "poor": "none, outranked (diseases ranked above the gold one) or shown.",
    "beta": "β of the poor update, in (0, 1).",
    "budget": "Evidence token budget of the runs (default: the Context's).",
    "kg_format": "Importer format of --kg.",
    "ner": "ner_chatgpt.jsonl (the stored question entities).",
    "qa": "CMCQA qa_ner.jsonl.",
    "vocab": "Gold vocabulary (EMCKG format_dataset.csv).",
    "json": "Print the summary as JSON.",
}


@handle_errors
def learn(
    dataset: Annotated[str, typer.Argument(help=_HELP["dataset"])],
    store: Annotated[str, typer.Option(help=_HELP["store"])],
    split: Annotated[str, typer.Option(help=_HELP["split"])] = "dev",
    limit: Annotated[int | None, typer.Option(min=1, help=_HELP["limit"])] = None,
    seed: Annotated[int, typer.Option(help=_HELP["seed"])] = 0,
    ids: Annotated[Path | None, typer.Option(help=_HELP["ids"])] = None,
    exclude: Annotated[Path | None, typer.Option(help=_HELP["exclude"])] = None,
    credit: Annotated[str, typer.Option(help=_HELP["credit"])] = "reference",
    poor: Annotated[str, typer.Option(help=_HELP["poor"])] = "none",
    beta: Annotated[float, typer.Option(help=_HELP["beta"])] = 0.5,
    budget: Annotated[int | None, typer.Option(min=1, help=_HELP["budget"])] = None,
    kg: Annotated[Path | None, typer.Option(help=_HELP["kg"])] = None,
    kg_format: Annotated[str | None, typer.Option(help=_HELP["kg_format"])] = None,
    dialogues: Annotated[Path | None, typer.Option(help=_HELP["dialogues"])] = None,
    ner: Annotated[Path | None, typer.Option(help=_HELP["ner"])] = None,
    qa: Annotated[Path | None, typer.Option(help=_HELP["qa"])] = None,
    vocab: Annotated[Path | None, typer.Option(help=_HELP["vocab"])] = None,
    progress: Annotated[bool, typer.Option(help=_HELP["progress"])] = True,
    as_json: Annotated[bool, typer.Option("--json", help=_HELP["json"])] = False,
) -> None:
    """Rate every question's edges against its reference answer, through the audited feedback path.

    Feedback ids come from the item ids: a second pass, or a pass resumed after an
    interruption, applies nothing twice.
    """
    options = dict(locals())  # the options named as LearnConfig's fields become its values
    from kgmind.eval.learn import LEARN_DATASETS, LearnConfig, run_learn, summary_line
    from kgmind.graphs.context import Context

    if dataset not in LEARN_DATASETS:
        raise CliError(f"unknown dataset {dataset!r}; choose from {', '.join(LEARN_DATASETS)}", 2)
    cfg = config_from_options(
        LearnConfig, options, budget=budget if budget is not None else Context().budget_tokens
    )
    cfg.check()
    if progress:
        with progress_bars("learn") as bars:
            out = run_learn(
                cfg, on_start=lambda n: bars.start("learn", n), on_advance=lambda: bars.advance("learn")
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
