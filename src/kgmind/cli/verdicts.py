"""``kgmind kg flag`` / ``kg disputed`` / ``kg restore``: verdicts on KG facts, in bulk, listed and undone.

``flag --file verdicts.jsonl`` takes one ``{"head", "relation", "tail", "verdict", "source"}``
object per line (names as in the KG, the relation as stored) for a curation team. Every line
is checked first, and a file with any bad line writes nothing; then each line is one verdict
transaction whose feedback id is derived from its content and source, so running the file
again changes nothing. ``disputed`` lists the edges the dispute rule marks disputed (the
explorations no longer show them); ``restore HEAD RELATION TAIL`` undoes a dispute, audited.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from kgmind.cli._common import CliError, KgOption, console, err_console, handle_errors, pick_store
from kgmind.models import VERDICTS
from kgmind.stores.disputes import edges_named
from kgmind.stores.feedback import restore_dispute
from kgmind.stores.protocol import GraphStore

__all__ = ["FlagLine", "disputed_rows", "flag_feedback_id", "read_flag_file", "register"]

StoreOpt = Annotated[
    str | None,
    typer.Option("--store", "-s", help="Store URI (ladybug:PATH, neo4j://HOST …); default the demo store."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]

_FIELDS = ("head", "relation", "tail", "verdict", "source")


@dataclass(frozen=True)
class FlagLine:
    """One checked line of a ``kg flag`` file, with the edges it names."""

    number: int
    head: str
    relation: str
    tail: str
    verdict: str
    source: str
    relation_ids: tuple[str, ...]


def flag_feedback_id(line: FlagLine) -> str:
    """The feedback id of a flag line: a hash of its content and source (re-running the file is a no-op)."""
    h = hashlib.blake2b(digest_size=12)
    for part in (line.head, line.relation, line.tail, line.verdict, line.source):
        h.update(part.encode("utf-8"))
        h.update(b"\x1f")
    return "flag" + h.hexdigest()


def _check_line(store: GraphStore, number: int, text: str, default_source: str | None) -> FlagLine:
    """One line of a flag file as a :class:`FlagLine`, or a ValueError saying what is wrong with it."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg}") from None
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    extra = sorted(set(obj) - set(_FIELDS))
    if extra:
        raise ValueError(f"unknown field(s) {', '.join(extra)}; expected {', '.join(_FIELDS)}")
    if obj.get("source") is None and default_source:
        obj["source"] = default_source
    values: dict[str, str] = {}
    for name in _FIELDS:
        value = obj.get(name)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name} must be a non-blank string")
        values[name] = value.strip()
    verdict = values["verdict"].lower()
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be {' or '.join(VERDICTS)}, not {values['verdict']!r}")
    found = edges_named(store, values["head"], values["relation"], values["tail"])
    if not found:
        raise ValueError(f"no edge {values['head']} -[{values['relation']}]-> {values['tail']} in the KG")
    return FlagLine(
        number, values["head"], values["relation"], values["tail"], verdict, values["source"],
        tuple(r.id for r in found),
    )  # fmt: skip


def read_flag_file(store: GraphStore, path: Path, default_source: str | None = None) -> list[FlagLine]:
    """Check every line of a flag file against ``store`` (blank lines skipped), writing nothing.

    Raises:
        CliError: One message listing every bad line as ``FILE:LINE: why`` (exit 2).
        FileNotFoundError: No such file.

    """
    lines: list[FlagLine] = []
    errors: list[str] = []
    with path.open(encoding="utf-8-sig") as fh:  # a BOM, as the importers and --schema accept
        for number, text in enumerate(fh, 1):
            if not text.strip():
                continue
            try:
                lines.append(_check_line(store, number, text, default_source))
            except ValueError as exc:
                errors.append(f"{path}:{number}: {exc}")
    if errors:
        shown = "\n  ".join(errors[:20]) + (f"\n  … {len(errors) - 20} more" if len(errors) > 20 else "")
        raise CliError(f"{len(errors)} bad line(s) in {path}, nothing written:\n  {shown}", 2)
    if not lines:
        raise CliError(f"{path} holds no verdict", 2)
    return lines


def _edge_names(store: GraphStore, relation_ids: list[str]) -> dict[str, tuple[str, str, str]]:
    rels = {r.id: r for r in store.get_relations(relation_ids)}
    names = {
        e.id: e.name for e in store.get_entities(sorted({x for r in rels.values() for x in (r.head, r.tail)}))
    }
    return {rid: (names.get(r.head, r.head), r.type, names.get(r.tail, r.tail)) for rid, r in rels.items()}


def disputed_rows(store: GraphStore) -> list[dict[str, Any]]:
    """The disputed edges with their names, verdict counts and flagging runs (most flagged first)."""
    states = store.disputed_relations()
    names = _edge_names(store, sorted(states))
    rows = [
        {
            "relation_id": rid,
            "head": names.get(rid, ("", "", ""))[0],
            "relation": names.get(rid, ("", "", ""))[1],
            "tail": names.get(rid, ("", "", ""))[2],
            "wrong": st.wrong,
            "right": st.right,
            "runs": st.runs,
        }
        for rid, st in states.items()
    ]
    return sorted(rows, key=lambda r: (-r["wrong"], r["right"], r["head"], r["relation"], r["tail"]))


@handle_errors
def flag_cmd(
    file: Annotated[
        Path, typer.Option("--file", "-f", help="JSON lines: {head, relation, tail, verdict, source}.")
    ],
    source: Annotated[
        str | None,
        typer.Option(help="Source of lines that name none (e.g. the curator).", show_default=False),
    ] = None,
    store: StoreOpt = None,
    kg_name: KgOption = None,
    as_json: JsonOpt = False,
) -> None:
    """Record curators' verdicts on KG facts from a JSON-lines file; a file with a bad line writes nothing."""
    from kgmind.stores.factory import open_store
    from kgmind.stores.feedback import apply_verdicts

    kg = open_store(pick_store(store, kg_name))
    lines = read_flag_file(kg, file, source)
    done: list[dict[str, Any]] = []
    for line in lines:
        result = apply_verdicts(
            kg,
            flag_feedback_id(line),
            f"flag:{line.source}",
            [(rid, line.verdict) for rid in line.relation_ids],
            source=line.source,
        )
        done.append(
            {
                "line": line.number,
                "feedback_id": result.feedback_id,
                "already_applied": result.already_applied,
                "changes": len(result.changes),
                "disputed": [rid for rid, st in result.states.items() if st.disputed],
            }
        )
    if as_json:
        typer.echo(json.dumps(done, ensure_ascii=False, indent=2))
        return
    new = [d for d in done if not d["already_applied"]]
    disputed = {rid for d in done for rid in d["disputed"]}
    console.print(
        Text(
            f"{len(new)} of {len(done)} line(s) recorded ({len(done) - len(new)} already applied), "
            f"{sum(d['changes'] for d in new)} weight(s) changed; {len(disputed)} of their edges disputed "
            f"in {kg.uri} (kgmind kg disputed)"
        )
    )


@handle_errors
def disputed_cmd(store: StoreOpt = None, kg_name: KgOption = None, as_json: JsonOpt = False) -> None:
    """List the disputed edges (no exploration shows them), their verdict counts and who flagged them."""
    from kgmind.stores.factory import open_store

    kg = open_store(pick_store(store, kg_name))
    rows = disputed_rows(kg)
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    if not rows:
        console.print(Text(f"No disputed edges in {kg.uri}."))
        return
    table = Table(title=f"Disputed edges ({kg.uri})", title_justify="left")
    for column in ("Edge", "Wrong", "Right", "Flagged by"):
        table.add_column(column, overflow="fold", justify="right" if column in ("Wrong", "Right") else "left")
    for r in rows:
        table.add_row(
            Text(f"{r['head']} -[{r['relation']}]-> {r['tail']}"),
            str(r["wrong"]),
            str(r["right"]),
            Text(", ".join(r["runs"])),
        )
    console.print(table)


@handle_errors
def restore_cmd(
    head: Annotated[str, typer.Argument(help="Head entity name, as in the KG.")],
    relation: Annotated[str, typer.Argument(help="Relation type, as stored.")],
    tail: Annotated[str, typer.Argument(help="Tail entity name, as in the KG.")],
    source: Annotated[str, typer.Option(help="Who restores it (audited).")] = "cli",
    store: StoreOpt = None,
    kg_name: KgOption = None,
) -> None:
    """Undo the dispute of the edge HEAD RELATION TAIL (audited; its earlier verdicts stop counting)."""
    from kgmind.stores.factory import open_store

    kg = open_store(pick_store(store, kg_name))
    edges = edges_named(kg, head, relation, tail)
    if not edges:
        raise CliError(f"no edge {head} -[{relation}]-> {tail} in {kg.uri}", 2)
    restored = [r for r in edges if restore_dispute(kg, r.id, source=source)]
    if restored:
        console.print(
            Text(f"restored {head} -[{relation}]-> {tail}: shown again; its earlier verdicts no longer count")
        )
    else:
        err_console.print(Text(f"{head} -[{relation}]-> {tail} is not disputed; nothing changed"))


def register(kg_app: typer.Typer) -> None:
    """Add ``flag``, ``disputed`` and ``restore`` to the ``kg`` typer app."""
    kg_app.command("flag")(flag_cmd)
    kg_app.command("disputed")(disputed_cmd)
    kg_app.command("restore")(restore_cmd)
