"""The audited weight write on LadybugDB: KGCoT's bounded rule applied to a rating's edges.

Runs inside a :class:`~kgmind.stores.ladybug.store.LadybugStore` write transaction, which
the store's write lock serialises, so concurrent feedback is a serial replay: the edges'
sibling weights are read, the rule moves the rated ones, the new weights and one audit row
per change are written, and the moved nodes' kept hub reads are written again (their order
changed). Ratings and per-claim verdicts both come here, so they move weights the same way.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any, Protocol

from kgmind.models import WeightChange
from kgmind.stores.base import SiblingEdges
from kgmind.stores.ladybug import queries as q
from kgmind.stores.protocol import StoreError, WeightRule

__all__ = ["WeightWriter", "write_weights"]


class WeightWriter(Protocol):
    """What :func:`write_weights` uses of :class:`~kgmind.stores.ladybug.store.LadybugStore` (no cycle)."""

    def _rows(
        self, query: str, params: dict[str, Any] | None = None, conn: Any = None
    ) -> list[list[Any]]: ...

    def _keep(self, conn: Any, ends: Collection[str] | None, *, next_to: bool = True) -> None: ...


def write_weights(
    store: WeightWriter,
    conn: Any,
    feedback_id: str,
    run_id: str,
    rating: str,
    rel_ids: list[str],
    rule: WeightRule,
) -> list[WeightChange]:
    """The audited weight write of one rating in the caller's transaction (no version bump).

    Raises:
        StoreError: An unknown relation id (the caller's transaction rolls back).
    """
    if not rel_ids:
        return []
    head_of = {rid: head for rid, head in store._rows(q.RELATION_HEADS, {"ids": rel_ids}, conn)}
    unknown = [rid for rid in rel_ids if rid not in head_of]
    if unknown:
        raise StoreError(f"feedback {feedback_id!r}: unknown relation ids: {', '.join(unknown)}")
    heads = sorted(set(head_of.values()))
    siblings = SiblingEdges.collect(heads, store._rows(q.SIBLING_EDGES, {"heads": heads}, conn))
    updates = siblings.updates(feedback_id, rule, rel_ids)
    if not updates:
        return []
    changes = siblings.changes(feedback_id, run_id, rating, datetime.now(UTC).isoformat(), updates)
    rows = [{"head": siblings.head_of[rid], "id": rid, "weight": new} for rid, new in updates]
    conn.execute(q.UPDATE_WEIGHTS, {"rows": rows})
    tails = {str(t) for (t,) in store._rows(q.TAILS_OF, {"rows": rows}, conn)}
    store._keep(conn, tails | {str(r["head"]) for r in rows}, next_to=False)  # their order moved
    conn.execute(q.INSERT_AUDIT, {"rows": [c.model_dump() for c in changes]})
    return changes
