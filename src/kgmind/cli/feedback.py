"""``kgmind feedback RUN_ID [--rating R] [--wrong ID,…] [--right ID,…]``: rate a stored run, flag its claims.

A rating moves the weights of the edges the answer cited; ``--wrong`` / ``--right`` say
that one claim (an evidence id ``N3``, an inference step ``S2``, a mind-map node ``M1``,
as ``kgmind show`` prints them) is wrong or right, which moves exactly the edges behind it
and counts towards disputing them (:mod:`kgmind.graphs.claims`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import typer

from kgmind.cli._common import (
    CheckpointOption,
    CliError,
    KgOption,
    StoreOption,
    check_run_store,
    err_console,
    handle_errors,
    load_stored_run,
    pick_store,
)

__all__ = [
    "feedback",
    "feedback_message",
    "grounding_warning",
    "register",
    "submit_feedback",
    "verdict_lines",
]

#: ``--wrong`` / ``--right``: repeatable, each a claim id or a comma-separated list of them.
ClaimOption = Annotated[
    list[str] | None,
    typer.Option(
        help="Claim id(s) of the run (N3, S2, M1 …, comma-separated or repeated).", show_default=False
    ),
]

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
    rating: str | None,
    checkpoints: str | None = None,
    warn: Callable[[str], None] | None = None,
    store: str | None = None,
    kg: str | None = None,
    wrong: Sequence[str] = (),
    right: Sequence[str] = (),
) -> dict[str, Any]:
    """Apply ``rating`` to the edges cited by the stored run ``run_id``, and verdicts to its claims.

    A run paused for human feedback is resumed (``Command(resume=…)``); a finished run
    gets the rating and verdicts applied and recorded in its state. Every claim id is
    checked before anything is written.

    Args:
        run_id: The run (= thread) id.
        rating: ``excellent``, ``poor`` or None (verdicts only).
        checkpoints: Checkpoint URI (default ``$KGMIND_CHECKPOINT_URI`` or
            ``$KGMIND_HOME/checkpoints.sqlite``).
        warn: Called with :func:`grounding_warning` before a rating is applied, so the
            warning comes first, not after the weights have moved.
        store: ``--store``: must be the run's store (checked, never switched to).
        kg: ``--kg``: the name of the run's store (checked likewise).
        wrong: Claim ids called wrong (``--wrong``).
        right: Claim ids called right (``--right``).

    Returns:
        The feedback record (rating, relation ids, number of weight changes, ``verdicts``).

    Raises:
        CliError: Unknown run id, no rating and no verdict, both --store and --kg, or a
            store other than the run's.
        ValueError: Bad rating or claim ids (nothing written).
        StoreNotFoundError: The run's (or the named) store no longer exists.

    """
    from kgmind.graphs.claims import parse_claim_ids, resolve_claims
    from kgmind.graphs.context import Context

    rating = rating.strip().lower() if rating is not None else None
    if rating is not None and rating not in RATINGS:
        raise ValueError(f"rating must be one of {', '.join(RATINGS)}, got {rating!r}")
    wrong_ids, right_ids = parse_claim_ids(list(wrong)), parse_claim_ids(list(right))
    if rating is None and not (wrong_ids or right_ids):
        raise CliError("give --rating excellent|poor and/or --wrong ID / --right ID", 2)
    named = pick_store(store, kg)  # a missing store is an error before the run is read
    values, next_nodes = load_stored_run(run_id, checkpoints)
    check_run_store(run_id, values, named)
    resolve_claims(values, wrong_ids, right_ids)  # every id checked before anything is written
    store_uri = values.get("store_uri") or None
    warning = grounding_warning(values) if rating else None
    if warning and warn is not None:
        warn(warning)
    if "request_feedback" in next_nodes:
        from langgraph.types import Command

        from kgmind.graphs.checkpoint import compile_persistent

        out = compile_persistent(checkpoints).invoke(
            Command(resume={"rating": rating, "wrong": wrong_ids, "right": right_ids}),
            {"configurable": {"thread_id": run_id}},
            context=Context(store=store_uri, feedback="human"),
        )
        result = dict(out.get("feedback") or {})
    else:
        result = _apply_to_finished_run(run_id, values, rating, wrong_ids, right_ids, checkpoints)
    if warning:
        result["warning"] = warning
    return result


def _apply_to_finished_run(
    run_id: str,
    values: dict[str, Any],
    rating: str | None,
    wrong: list[str],
    right: list[str],
    checkpoints: str | None,
) -> dict[str, Any]:
    """Rate and flag a finished run, then record what changed in its state (``feedback``)."""
    from kgmind.graphs.apply_feedback import apply_rating, apply_verdicts
    from kgmind.graphs.checkpoint import compile_persistent
    from kgmind.stores.factory import open_store

    kg = open_store(values.get("store_uri") or None)
    before = dict(values.get("feedback") or {})
    result: dict[str, Any] = apply_rating(kg, values, rating) if rating else {"rating": None}
    result["source"] = "cli"
    rated = bool(rating) and not result.get("already_applied")
    verdicts = apply_verdicts(kg, values, wrong, right, source="cli") if wrong or right else []
    if verdicts:
        result["verdicts"] = verdicts
    new = [v for v in verdicts if not v["already_applied"]]
    if rated or new:
        record = result if rated else {**before, "source": "cli"}
        record = {**record, "verdicts": [*(before.get("verdicts") or []), *new]}
        config: Any = {"configurable": {"thread_id": run_id}}
        compile_persistent(checkpoints).update_state(config, {"feedback": record}, as_node="apply_feedback")
    return result


@handle_errors
def feedback(
    run_id: Annotated[str, typer.Argument(help="Run id printed by `kgmind ask`.")],
    rating: Annotated[str | None, typer.Option(help="excellent | poor", show_default=False)] = None,
    wrong: ClaimOption = None,
    right: ClaimOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    checkpoint: CheckpointOption = None,
    store: StoreOption = None,
    kg: KgOption = None,
) -> None:
    """Rate the answer of run RUN_ID and/or flag its claims (ids as `kgmind show` prints them).

    A rating moves the weights of the edges the answer cited. --wrong N3 says the claim N3
    (an evidence item, an inference step S1… or a mind-map node M1…) is wrong: exactly the
    edges behind it are pushed down, and an edge that enough runs call wrong is disputed and
    no longer shown (see `kgmind kg disputed`). --right confirms a claim.
    """
    result = submit_feedback(
        run_id,
        rating,
        checkpoint,
        warn=lambda text: err_console.print(
            f"warning: {text}", highlight=False, markup=False, soft_wrap=True
        ),
        store=store,
        kg=kg,
        wrong=wrong or [],
        right=right or [],
    )
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False, indent=2))
        return
    if result.get("rating"):
        typer.echo(feedback_message(result))
    for line in verdict_lines(result.get("verdicts") or []):
        typer.echo(line)


def verdict_lines(verdicts: Sequence[dict[str, Any]]) -> list[str]:
    """One line per flagged claim: what it moved, or that it was applied before."""
    lines: list[str] = []
    for v in verdicts:
        head = f"claim {v['claim']} {v['verdict']}"
        if v.get("already_applied"):
            lines.append(f"{head}: already applied (feedback id {v['feedback_id']}); nothing changed")
            continue
        edges = len(v.get("relation_ids") or [])
        disputed = v.get("disputed") or []
        tail = f"; {len(disputed)} now disputed (kgmind kg disputed)" if disputed else ""
        lines.append(f"{head}: {edges} edge(s), {v.get('changes', 0)} weight(s) changed{tail}")
    return lines


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
