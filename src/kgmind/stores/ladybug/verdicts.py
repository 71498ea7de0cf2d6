"""The verdict log on LadybugDB: the statements of per-claim verdicts and restores (issue 41).

Run inside a :class:`~kgmind.stores.ladybug.store.LadybugStore` write transaction, so a
verdict's rows, its weight updates (through the store's own feedback weight write) and
both version bumps land together or not at all; the store's write lock serialises
writers, so concurrent verdicts on one edge are a serial replay. Dispute states are
folded from the rows in Python (:mod:`kgmind.stores.disputes`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from kgmind.models import VerdictRecord, WeightChange
from kgmind.stores.disputes import RATING_OF_VERDICT, WeightVerdicts
from kgmind.stores.ladybug import queries as q
from kgmind.stores.protocol import RatingRules, StoreError, WeightRule

__all__ = ["META_DISPUTES", "LadybugWriter", "read_verdicts", "write_restore", "write_verdicts"]

#: The ``Meta`` key of the disputes version counter.
META_DISPUTES = "disputes"


class LadybugWriter(Protocol):
    """What these functions use of :class:`~kgmind.stores.ladybug.store.LadybugStore` (no import cycle)."""

    def _rows(
        self, query: str, params: dict[str, Any] | None = None, conn: Any = None
    ) -> list[list[Any]]: ...

    def _scalar(self, query: str, params: dict[str, Any] | None = None, conn: Any = None) -> Any: ...

    def _bump_counter(self, conn: Any, key: str) -> None: ...

    def _refresh_degrees_of(self, conn: Any, relation_ids: Sequence[str]) -> None: ...

    def _weights_in_tx(
        self, conn: Any, feedback_id: str, run_id: str, rating: str, rel_ids: list[str], rule: WeightRule
    ) -> list[WeightChange]: ...


def _record(row: Sequence[Any]) -> VerdictRecord:
    return VerdictRecord.model_validate(dict(zip(VerdictRecord.model_fields, row, strict=True)))


def write_verdicts(
    store: LadybugWriter,
    conn: Any,
    feedback_id: str,
    run_id: str,
    verdicts: WeightVerdicts,
    source: str,
    rule: RatingRules,
) -> list[WeightChange] | None:
    """One feedback's verdicts in the caller's transaction; ``None`` when it was recorded before.

    Bumps the disputes version; the caller bumps the weights version when weights moved.

    Raises:
        StoreError: An unknown relation id (the caller's transaction rolls back).

    """
    if int(store._scalar(q.VERDICT_SEEN, {"feedback_id": feedback_id}, conn) or 0) > 0:
        return None
    ids = verdicts.relation_ids()
    known = {rid for rid, _head in store._rows(q.RELATION_HEADS, {"ids": ids}, conn)}
    unknown = [rid for rid in ids if rid not in known]
    if unknown:
        raise StoreError(f"verdicts {feedback_id!r}: unknown relation ids: {', '.join(unknown)}")
    at = datetime.now(UTC).isoformat()
    common = {"feedback_id": feedback_id, "run_id": run_id, "source": source, "at": at}
    rows = [{**common, "relation_id": rid, "verdict": v} for rid, v in verdicts.rows()]
    conn.execute(q.INSERT_VERDICTS, {"rows": rows})
    changes: list[WeightChange] = []
    for verdict, rel_ids in (("wrong", verdicts.wrong), ("right", verdicts.right)):
        rating = RATING_OF_VERDICT[verdict]
        changes += store._weights_in_tx(conn, feedback_id, run_id, rating, rel_ids, rule(rating))
    store._bump_counter(conn, META_DISPUTES)
    store._refresh_degrees_of(conn, ids)  # a disputed edge leaves its ends' degrees
    return changes


def write_restore(
    store: LadybugWriter,
    conn: Any,
    relation_id: str,
    feedback_id: str,
    source: str,
    disputed: Callable[[list[VerdictRecord]], bool],
) -> bool:
    """Restore one edge in the caller's transaction if ``disputed`` says its rows dispute it."""
    if not disputed(read_verdicts(store, conn, [relation_id])):
        return False
    row = VerdictRecord(
        feedback_id=feedback_id,
        run_id="",
        relation_id=relation_id,
        verdict="restore",
        source=source,
        at=datetime.now(UTC).isoformat(),
    )
    conn.execute(q.INSERT_VERDICTS, {"rows": [row.model_dump()]})
    store._bump_counter(conn, META_DISPUTES)
    store._refresh_degrees_of(conn, [relation_id])  # shown again: back in its ends' degrees
    return True


def read_verdicts(store: LadybugWriter, conn: Any, relation_ids: list[str] | None) -> list[VerdictRecord]:
    """Verdict rows oldest first, of ``relation_ids`` or all (``conn`` None: the thread's reader)."""
    if relation_ids is None:
        return [_record(r) for r in store._rows(q.VERDICTS_ALL, None, conn)]
    return [_record(r) for r in store._rows(q.VERDICTS_FOR, {"ids": relation_ids}, conn)]
