"""Entity degrees kept in the store: per relation type, out and in, over the edges explorations see.

A hub must be known before any of its edges are read (issue 42): a pushed-down
exploration asks the store for a node's degree to skip a hub's interior and to order a
bounded read by specificity (lower degree first). So every write that changes which
edges an exploration sees keeps them current, in its own transaction: an import (new
edges), a verdict that disputes an edge (hidden from every exploration) and a restore
(shown again). Feedback moves weights only and leaves them alone.

A degree counts the edges touching the entity that are not disputed under the shipped
rule in force (:func:`kgmind.stores.disputes.active_rule`, what the graph indexes hide): ``out`` where it
is the head, ``in`` where it is the tail (a loop counts in both). ``degree`` is their sum
over every type. Backends store both on the entity: ``degree`` (an integer the queries
order by) and ``degrees`` (JSON ``{type: [out, in]}``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from kgmind.models import VerdictRecord
from kgmind.stores.disputes import dispute_states

__all__ = ["Degrees", "count_degrees", "degree_rows", "degrees_from_counts", "disputed_ids", "parse_degrees"]

#: Per entity id, per relation type, ``[out, in]``.
Degrees = dict[str, dict[str, list[int]]]


def count_degrees(ids: Iterable[str], edges: Iterable[Sequence[Any]], hidden: Collection[str]) -> Degrees:
    """The degrees of ``ids`` from ``edges`` rows ``(head, type, tail, relation id)``; ``hidden`` ids skipped.

    Every id gets an entry (``{}`` when nothing touches it), so a write also clears the
    degrees of an entity whose last visible edge went.
    """
    out: Degrees = {i: {} for i in ids}
    for head, rtype, tail, rid in edges:
        if rid in hidden:
            continue
        for end, side in ((head, 0), (tail, 1)):
            per = out.get(end)
            if per is not None:
                per.setdefault(rtype, [0, 0])[side] += 1
    return out


def degrees_from_counts(
    ids: Iterable[str] | None, out_rows: Iterable[Sequence[Any]], in_rows: Iterable[Sequence[Any]]
) -> Degrees:
    """Degrees from a store's own counts, rows ``(entity id, type, n)`` per side.

    ``ids`` are the entities asked for: each gets an entry, so one whose last visible edge
    went is cleared (``None``: only the entities the rows name).
    """
    out: Degrees = {i: {} for i in ids} if ids is not None else {}
    for rows, side in ((out_rows, 0), (in_rows, 1)):
        for eid, rtype, n in rows:
            out.setdefault(eid, {}).setdefault(rtype, [0, 0])[side] += int(n)
    return out


def degree_rows(degrees: Degrees) -> list[dict[str, Any]]:
    """``{"id", "degree", "degrees"}`` rows for the backends' ``SET_DEGREES``, sorted by id."""
    return [
        {
            "id": eid,
            "degree": sum(o + i for o, i in per.values()),
            "degrees": json.dumps(dict(sorted(per.items())), ensure_ascii=False),
        }
        for eid, per in sorted(degrees.items())
    ]


def parse_degrees(text: str | None) -> dict[str, tuple[int, int]]:
    """A stored ``degrees`` JSON as ``{type: (out, in)}`` (``{}`` for none)."""
    return {t: (int(v[0]), int(v[1])) for t, v in json.loads(text or "{}").items()}


def disputed_ids(rows: Sequence[VerdictRecord]) -> set[str]:
    """The relation ids the rule in force marks disputed in a verdict log (what the indexes hide)."""
    return {rid for rid, st in dispute_states(rows).items() if st.disputed}
