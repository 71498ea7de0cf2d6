"""Shared CLI helpers: one-line errors, exit codes, console objects, progress bars, options as settings."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = [
    "DATASET_HELP",
    "CheckpointOption",
    "CliError",
    "KgOption",
    "ProgressBars",
    "StoreOption",
    "check_run_store",
    "config_from_options",
    "console",
    "err_console",
    "fail",
    "handle_errors",
    "load_stored_run",
    "named_store_uri",
    "pick_store",
    "progress_bars",
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

#: ``--kg NAME`` of the commands that read a store: the KG imported with ``kg import … --name NAME``.
KgOption = Annotated[
    str | None,
    typer.Option(
        "--kg",
        help="The KG imported with `kgmind kg import FILE --name NAME` (ladybug:$KGMIND_HOME/NAME); "
        "not with --store.",
        show_default=False,
    ),
]

#: ``--store URI`` of ``show`` and ``feedback``, which check it against the stored run's store.
StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store", help="Store URI of the run (checked against the one it was asked on).", show_default=False
    ),
]

_KG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

#: Help of the options that the data-set commands (``eval``, ``learn``) share.
DATASET_HELP = {
    "dialogues": "GenMedGPT-5k dialogues.json.",
    "kg": "KG file imported into an empty store.",
    "progress": "Show a progress bar on stderr.",
}

P = ParamSpec("P")
R = TypeVar("R")
C = TypeVar("C")


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
        from kgmind.stores.protocol import StoreError, StoreNotFoundError

        try:
            return func(*args, **kwargs)
        except typer.Exit:
            raise
        except CliError as exc:
            fail(str(exc), exc.code)
        except FileNotFoundError as exc:
            fail(f"file not found: {exc.filename or exc}")
        except StoreNotFoundError as exc:  # a mistyped store: bad input, like a bad option value
            fail(str(exc), 2)
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


def named_store_uri(name: str) -> str:
    """The embedded store of the KG called ``name``: ``ladybug:$KGMIND_HOME/<name>``.

    Raises:
        ValueError: ``name`` is not a plain name (letters, digits, ``.``, ``_``, ``-``), so it
            cannot leave ``$KGMIND_HOME``.
    """
    from kgmind.settings import default_store_uri

    if not _KG_NAME.match(name):
        raise ValueError(f"bad KG name {name!r}: use letters, digits, '.', '_' or '-'")
    return default_store_uri(name)


def pick_store(store: str | None, kg: str | None, *, must_exist: bool = True) -> str | None:
    """The store URI a reading command uses: ``--store URI``, ``--kg NAME``, or None (the demo store).

    A reader never creates a store: with ``must_exist`` a missing embedded store is an
    error before any work, so a typo cannot answer from an empty KG.

    Raises:
        CliError: Both ``--store`` and ``--kg`` were given (exit 2).
        ValueError: A bad KG name or store URI.
        StoreNotFoundError: The store does not exist.
    """
    from kgmind.stores.factory import require_store

    store = store.strip() if store and store.strip() else None
    if store and kg:
        raise CliError("give --store URI or --kg NAME, not both", 2)
    uri = named_store_uri(kg) if kg else store
    if uri is not None and must_exist:
        require_store(uri)
    return uri


def check_run_store(run_id: str, values: Mapping[str, Any], uri: str | None) -> None:
    """Check a stored run's store against the ``--store`` / ``--kg`` given to ``show`` or ``feedback``.

    The run's store is the one its evidence came from; naming another is a mistake to
    report, not a store to switch to (feedback would move edges of another KG).

    Args:
        run_id: The run id (for the message).
        values: The run's stored state.
        uri: What :func:`pick_store` made of the options (None: nothing to check).

    Raises:
        CliError: A store other than the run's (exit 2).
    """
    from kgmind.stores.factory import parse_store_uri

    if uri is None:
        return
    asked = parse_store_uri(values.get("store_uri") or None).uri
    if parse_store_uri(uri).uri != asked:
        raise CliError(f"run {run_id} was asked on {asked}, not on {parse_store_uri(uri).uri}", 2)


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


def config_from_options(cls: type[C], options: Mapping[str, Any], **overrides: Any) -> C:
    """A settings dataclass built from the command options of the same names, plus ``overrides``.

    The commands name their options after the settings they set, so a command passes
    its ``locals()`` instead of listing every field twice. Paths become strings (the
    settings hold file names); options that are not fields (``--json``, ``--progress``)
    are left out.
    """
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    values = {k: str(v) if isinstance(v, Path) else v for k, v in options.items() if k in names}
    return cls(**{**values, **overrides})


class ProgressBars:
    """Named rich progress bars, fed by a long run's start/advance callbacks (see :func:`progress_bars`)."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._tasks: dict[str, TaskID] = {}

    def start(self, name: str, total: int) -> None:
        """Add the bar of task ``name``, of ``total`` steps."""
        self._tasks[name] = self._progress.add_task(name, total=total)

    def advance(self, name: str) -> None:
        """Advance task ``name`` by one step."""
        self._progress.advance(self._tasks[name])


@contextlib.contextmanager
def progress_bars(label: str = "{task.description}") -> Iterator[ProgressBars]:
    """Draw progress bars on stderr while the block runs; ``label`` is the text left of each bar."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=False,
    )
    with progress:
        yield ProgressBars(progress)
