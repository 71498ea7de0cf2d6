"""``kgmind kg weights`` / ``kgmind kg reset-weights``: inspect and undo feedback-learned edge weights.

``weights`` summarises the audit log: every edge a feedback changed, its weight before the
first feedback and now, the change, and how many feedbacks touched it. ``reset-weights``
sets every weight back to 1.0 and drops the audit log.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from kgmind.cli._common import KgOption, console, handle_errors, pick_store
from kgmind.stores.protocol import GraphStore

__all__ = ["register", "weight_summary"]

StoreOpt = Annotated[
    str | None,
    typer.Option("--store", "-s", help="Store URI (ladybug:PATH, neo4j://HOST …); default the demo store."),
]


def weight_summary(store: GraphStore, top: int | None = None) -> list[dict[str, Any]]:
    """Summarise the feedback-changed edges of ``store`` from its audit log.

    Args:
        store: The graph store.
        top: Keep the ``top`` edges with the largest absolute change; ``None`` keeps all.

    Returns:
        One dict per changed edge, largest ``|delta|`` first (ties by relation id), with
        keys ``relation_id``, ``head``, ``head_name``, ``type``, ``tail``, ``tail_name``,
        ``old_weight`` (before its first feedback), ``weight`` (current), ``delta`` and
        ``feedbacks`` (number of distinct feedbacks that changed it). An edge no longer in
        the store reports its last audited weight and empty names.

    """
    first_old: dict[str, float] = {}
    last_new: dict[str, float] = {}
    feedbacks: dict[str, set[str]] = {}
    for change in store.weight_changes():
        first_old.setdefault(change.relation_id, change.old_weight)
        last_new[change.relation_id] = change.new_weight
        feedbacks.setdefault(change.relation_id, set()).add(change.feedback_id)
    if not first_old:
        return []
    ids = list(first_old)
    rels = {r.id: r for r in store.get_relations(ids)}
    ent_ids = sorted({x for r in rels.values() for x in (r.head, r.tail)})
    names = {e.id: e.name for e in store.get_entities(ent_ids)}
    rows: list[dict[str, Any]] = []
    for rid in ids:
        rel = rels.get(rid)
        current = rel.weight if rel is not None else last_new[rid]
        rows.append(
            {
                "relation_id": rid,
                "head": rel.head if rel else "",
                "head_name": names.get(rel.head, rel.head) if rel else "",
                "type": rel.type if rel else "",
                "tail": rel.tail if rel else "",
                "tail_name": names.get(rel.tail, rel.tail) if rel else "",
                "old_weight": first_old[rid],
                "weight": current,
                "delta": current - first_old[rid],
                "feedbacks": len(feedbacks[rid]),
            }
        )
    rows.sort(key=lambda r: (-abs(r["delta"]), r["relation_id"]))
    return rows if top is None else rows[:top]


def _edge_text(row: dict[str, Any]) -> Text:
    if not row["type"]:
        return Text(f"{row['relation_id']} (no longer in the store)", style="dim")
    return Text(f"{row['head_name']} -[{row['type']}]-> {row['tail_name']}")


def _table(rows: list[dict[str, Any]], uri: str) -> Table:
    table = Table(title=f"Feedback-changed edge weights ({uri})", title_justify="left")
    table.add_column("Edge", overflow="fold")
    table.add_column("Weight (old → current)", justify="right")
    table.add_column("Δ", justify="right")
    table.add_column("#Feedbacks", justify="right")
    for row in rows:
        delta = row["delta"]
        style = "green" if delta > 0 else "red" if delta < 0 else ""
        table.add_row(
            _edge_text(row),
            Text(f"{row['old_weight']:.4f} → {row['weight']:.4f}"),
            Text(f"{delta:+.4f}", style=style),
            Text(str(row["feedbacks"])),
        )
    return table


@handle_errors
def weights_cmd(
    top: Annotated[int, typer.Option("--top", "-n", min=1, help="Show the N most changed edges.")] = 20,
    store: StoreOpt = None,
    kg_name: KgOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
) -> None:
    """Show the edges whose weights feedback changed (largest change first)."""
    from kgmind.stores.factory import open_store

    kg = open_store(pick_store(store, kg_name))
    rows = weight_summary(kg, top=top)
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    if not rows:
        console.print(Text(f"No feedback has changed any edge weight in {kg.uri} yet."))
        return
    console.print(_table(rows, kg.uri))


@handle_errors
def reset_weights_cmd(
    store: StoreOpt = None,
    kg_name: KgOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Set every edge weight back to 1.0 and delete the feedback audit log."""
    from kgmind.stores.factory import open_store

    kg = open_store(pick_store(store, kg_name))
    if not yes:
        typer.confirm(
            f"Reset every edge weight of {kg.uri} to 1.0 and delete its feedback audit log?", abort=True
        )
    n = kg.reset_weights()
    console.print(Text(f"Reset {n} edge weight(s) to 1.0 in {kg.uri}; the audit log is empty."))


def register(kg_app: typer.Typer) -> None:
    """Add the ``weights`` and ``reset-weights`` commands to the ``kg`` typer app.

    Args:
        kg_app: The ``kgmind kg`` sub-application.

    """
    kg_app.command("weights")(weights_cmd)
    kg_app.command("reset-weights")(reset_weights_cmd)
