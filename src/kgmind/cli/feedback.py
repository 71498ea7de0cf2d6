"""``kgmind feedback RUN_ID --rating excellent|poor``: rate a stored run and update edge weights."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

import typer

from kgmind.cli._common import (
    CheckpointOption,
    KgOption,
    StoreOption,
    check_run_store,
    err_console,
    handle_errors,
    load_stored_run,
    pick_store,
)

__all__ = ["feedback", "feedback_message", "grounding_warning", "register", "submit_feedback"]

RATINGS = ("excellent", "poor")


def grounding_warning(values: dict[str, Any]) -> str | None:
    """Why rating this run may teach the graph the wrong thing, or None when its answer is grounded.

    A rating moves the weights of the edges the answer cites whether or not the answer
    was supported by them, so the user should know before rating a flagged answer.
    """
    grounding = values.get("grounding") or {}
    flagged = [str(f) for f in grounding.get("flagged") or []]
    reasons: list[str] = []
    if flagged:
        reasons.append(f"flagged as not grounded ({len(flagged)} items): " + "; ".join(flagged[:5]))
    if grounding.get("derived") or (values.get("flags") or {}).get("fallback_parse"):
        reasons.append("rebuilt from free text")
    if not reasons:
        return None
    return "the rated answer was " + ", and ".join(reasons)


def submit_feedback(
    run_id: str,
    rating: str,
    checkpoints: str | None = None,
    warn: Callable[[str], None] | None = None,
    store: str | None = None,
    kg: str | None = None,
) -> dict[str, Any]:
    """Apply ``rating`` to the edges cited by the stored run ``run_id``.

    A run paused for human feedback is resumed (``Command(resume=…)``); a finished run
    gets the rating applied to its cited edges and recorded in its state.

    Args:
        run_id: The run (= thread) id.
        rating: ``excellent`` or ``poor``.
        checkpoints: Checkpoint URI (default ``$KGMIND_CHECKPOINT_URI`` or
            ``$KGMIND_HOME/checkpoints.sqlite``).
        warn: Called with :func:`grounding_warning` before the rating is applied, so the
            warning comes first, not after the weights have moved.
        store: ``--store``: must be the run's store (checked, never switched to).
        kg: ``--kg``: the name of the run's store (checked likewise).

    Returns:
        The feedback record (rating, relation ids, number of weight changes).

    Raises:
        CliError: Unknown run id, both --store and --kg, or a store other than the run's.
        ValueError: Bad rating.
        StoreNotFoundError: The run's (or the named) store no longer exists.

    """
    from langgraph.types import Command

    from kgmind.graphs.apply_feedback import apply_rating
    from kgmind.graphs.checkpoint import compile_persistent
    from kgmind.graphs.context import Context
    from kgmind.stores.factory import open_store

    rating = rating.strip().lower()
    if rating not in RATINGS:
        raise ValueError(f"rating must be one of {', '.join(RATINGS)}, got {rating!r}")
    named = pick_store(store, kg)  # a missing store is an error before the run is read
    values, next_nodes = load_stored_run(run_id, checkpoints)
    check_run_store(run_id, values, named)
    store_uri = values.get("store_uri") or None
    g = compile_persistent(checkpoints)
    config: Any = {"configurable": {"thread_id": run_id}}
    warning = grounding_warning(values)
    if warning and warn is not None:
        warn(warning)
    if "request_feedback" in next_nodes:
        out = g.invoke(
            Command(resume={"rating": rating}), config, context=Context(store=store_uri, feedback="human")
        )
        result = dict(out.get("feedback") or {})
    else:
        result = apply_rating(open_store(store_uri), values, rating)
        result["source"] = "cli"
        if not result.get("already_applied"):
            g.update_state(config, {"feedback": result}, as_node="apply_feedback")
    if warning:
        result["warning"] = warning
    return result


@handle_errors
def feedback(
    run_id: Annotated[str, typer.Argument(help="Run id printed by `kgmind ask`.")],
    rating: Annotated[str, typer.Option(help="excellent | poor")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    checkpoint: CheckpointOption = None,
    store: StoreOption = None,
    kg: KgOption = None,
) -> None:
    """Rate the answer of run RUN_ID; the edges it cited get KGCoT weight updates."""
    result = submit_feedback(
        run_id,
        rating,
        checkpoint,
        warn=lambda text: err_console.print(
            f"warning: {text}", highlight=False, markup=False, soft_wrap=True
        ),
        store=store,
        kg=kg,
    )
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False, indent=2))
        return
    typer.echo(feedback_message(result))


def feedback_message(result: dict[str, Any]) -> str:
    """One line saying what the rating did to which edges, and why."""
    rating = result.get("rating")
    edges = len(result.get("relation_ids") or [])
    if result.get("already_applied"):
        return f"rating {rating}: {result.get('reason')}; no weight changed"
    if result.get("applied"):
        unchanged = len(result.get("unchanged_ids") or [])
        kept = (
            f"; {unchanged} unchanged (each is the only out-edge of its head node, which KGCoT's "
            "walk already takes with probability 1)"
            if unchanged
            else ""
        )
        return (
            f"rating {rating} on {edges} edges of {result.get('reason')}: "
            f"{result.get('changes', 0)} weights changed{kept}"
        )
    return f"rating {rating}: no weight changed: {result.get('reason') or 'nothing to rate'}"


def register(app: typer.Typer) -> None:
    """Add the ``feedback`` command to ``app``."""
    app.command("feedback")(feedback)
