"""Shared CLI helpers: one-line errors, exit codes, console objects."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, NoReturn, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

__all__ = [
    "CheckpointOption",
    "CliError",
    "console",
    "err_console",
    "fail",
    "handle_errors",
    "load_stored_run",
]

console = Console()
err_console = Console(stderr=True)

#: ``--checkpoint URI`` of ``ask``, ``show`` and ``feedback`` (one place for its help and env var).
CheckpointOption = Annotated[
    str | None,
    typer.Option(
        "--checkpoint",
        help="Where runs are stored: sqlite:PATH or postgresql://USER@HOST:PORT/DB; "
        "default: $KGMIND_CHECKPOINT_URI, else $KGMIND_HOME/checkpoints.sqlite.",
        show_default=False,
    ),
]

P = ParamSpec("P")
R = TypeVar("R")


class CliError(Exception):
    """An error to show to the user as one line, with an exit code."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code``."""
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def handle_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn expected exceptions into one-line errors and a non-zero exit."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        from kgmind.stores.protocol import StoreError

        try:
            return func(*args, **kwargs)
        except typer.Exit:
            raise
        except CliError as exc:
            fail(str(exc), exc.code)
        except FileNotFoundError as exc:
            fail(f"file not found: {exc.filename or exc}")
        except StoreError as exc:
            fail(str(exc))
        except ValueError as exc:
            fail(str(exc), 2)
        except RuntimeError as exc:  # the checkpoint database (its module is loaded if it raised)
            from kgmind.graphs.checkpoint import CheckpointUnavailableError

            if isinstance(exc, CheckpointUnavailableError):
                fail(str(exc))
            raise

    return wrapper


def load_stored_run(run_id: str, checkpoints: str | None = None) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The stored state of CLI run ``run_id`` and the nodes it waits before (``show``, ``feedback``).

    Args:
        run_id: The run id.
        checkpoints: Checkpoint URI (default ``$KGMIND_CHECKPOINT_URI`` or the SQLite file).

    Raises:
        CliError: No run with that id in the checkpoint database (the message names it).

    """
    from kgmind.graphs.checkpoint import load_run_state, parse_checkpoint_uri

    try:
        return load_run_state(run_id, checkpoints)
    except KeyError:
        raise CliError(
            f"unknown run id {run_id!r}: no run with that id in {parse_checkpoint_uri(checkpoints).display}"
        ) from None
