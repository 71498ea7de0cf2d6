"""The ``kgmind`` command line: ``kg``, ``index``, ``ask``, ``show``, ``feedback``, ``learn``, ``eval``."""

from __future__ import annotations

from kgmind.cli import ask, eval_cmd, feedback, index, kg, learn, show, verdicts, weights
from kgmind.cli._app import KgmindTyper

app = KgmindTyper(
    name="kgmind",
    help="Answer domain questions by reasoning over a knowledge graph (HyKGE + MindMap + KGCoT).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
weights.register(kg.app)
verdicts.register(kg.app)
app.add_typer(kg.app, name="kg")
app.add_typer(index.app, name="index")
app.add_typer(eval_cmd.app, name="eval")
ask.register(app)
show.register(app)
feedback.register(app)
learn.register(app)


def main() -> None:
    """Entry point of the ``kgmind`` script: the process-wide thread settings are applied here only."""
    from kgmind.retrievers.embeddings.runtime import configure_threads

    configure_threads()
    app()


__all__ = ["app", "main"]
