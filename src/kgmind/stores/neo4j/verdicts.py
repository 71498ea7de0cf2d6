"""The verdict log on Neo4j: the statements of per-claim verdicts and restores (issue 41).

Each function runs inside one managed write transaction of
:class:`~kgmind.stores.neo4j.store.Neo4jStore` (the store bumps the versions in the same
transaction). A verdict claims its ``(:Feedback {id})`` node first (the uniqueness
constraint makes a concurrent duplicate wait, then see it), then takes the write lock on
the head node of every judged edge before it reads the clock, so the verdict rows of one
edge are ordered as their transactions committed; a restore takes the same lock before it
reads the edge's verdicts. Concurrent verdicts on one edge therefore equal a serial run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

import neo4j

from kgmind.models import VerdictRecord, WeightChange
from kgmind.stores.disputes import RATING_OF_VERDICT, WeightVerdicts
from kgmind.stores.neo4j import queries as q
from kgmind.stores.protocol import RatingRules, StoreError, WeightRule

__all__ = ["CLAIM_RATING", "Neo4jWriter", "verdict_record", "write_restore", "write_verdicts"]

#: The ``rating`` a verdict's ``(:Feedback)`` claim node records (its verdicts are in its rows).
CLAIM_RATING = "verdicts"


class Neo4jWriter(Protocol):
    """What :func:`write_verdicts` uses of :class:`~kgmind.stores.neo4j.store.Neo4jStore` (no cycle)."""

    def _weights_tx(
        self,
        tx: neo4j.ManagedTransaction,
        feedback_id: str,
        run_id: str,
        rating: str,
        rel_ids: list[str],
        rule: WeightRule,
        seq_start: int = 0,
    ) -> list[WeightChange]: ...


def verdict_record(rec: Mapping[str, Any]) -> VerdictRecord:
    """A verdict row as read by ``q.VERDICTS``."""
    return VerdictRecord.model_validate({name: rec[name] for name in VerdictRecord.model_fields})


def ends_of(tx: neo4j.ManagedTransaction, relation_ids: list[str]) -> set[str]:
    """The head and tail ids of ``relation_ids`` (whose degrees a verdict or restore changes)."""
    return {x for rec in tx.run(q.GET_RELATIONS, {"ids": relation_ids}) for x in (rec["head"], rec["tail"])}


def _lock_heads(tx: neo4j.ManagedTransaction, relation_ids: list[str]) -> set[str]:
    """Take the write lock on the heads of ``relation_ids``; the ids found."""
    return {rid for rec in tx.run(q.LOCK_HEADS, {"relation_ids": relation_ids}) for rid in rec["rel_ids"]}


def write_verdicts(
    store: Neo4jWriter,
    tx: neo4j.ManagedTransaction,
    feedback_id: str,
    run_id: str,
    verdicts: WeightVerdicts,
    source: str,
    rule: RatingRules,
) -> list[WeightChange] | None:
    """Claim, lock, write the verdict rows and the weight updates; ``None`` when recorded before.

    Raises:
        StoreError: An unknown relation id (the transaction rolls back).

    """
    claim = tx.run(
        q.CLAIM_FEEDBACK,
        {
            "feedback_id": feedback_id,
            "run_id": run_id,
            "rating": CLAIM_RATING,
            "at": datetime.now(UTC).isoformat(),
        },
    ).single()
    if claim is None or not claim["created"]:
        return None
    ids = verdicts.relation_ids()
    found = _lock_heads(tx, ids)
    unknown = [rid for rid in ids if rid not in found]
    if unknown:
        raise StoreError(f"verdicts {feedback_id!r}: unknown relation ids: {', '.join(unknown)}")
    rows = [{"relation_id": rid, "verdict": v, "seq": seq} for seq, (rid, v) in enumerate(verdicts.rows())]
    params = {"feedback_id": feedback_id, "run_id": run_id, "source": source, "rows": rows}
    tx.run(q.WRITE_VERDICTS, {**params, "at": datetime.now(UTC).isoformat()}).consume()
    changes: list[WeightChange] = []
    for verdict, rel_ids in (("wrong", verdicts.wrong), ("right", verdicts.right)):
        rating = RATING_OF_VERDICT[verdict]
        changes += store._weights_tx(tx, feedback_id, run_id, rating, rel_ids, rule(rating), len(changes))
    return changes


def write_restore(
    tx: neo4j.ManagedTransaction,
    relation_id: str,
    feedback_id: str,
    source: str,
    disputed: Callable[[list[VerdictRecord]], bool],
) -> bool:
    """Restore one edge if ``disputed`` says its verdict rows (read under its head's lock) dispute it."""
    _lock_heads(tx, [relation_id])
    rows = [verdict_record(rec) for rec in tx.run(q.VERDICTS, {"ids": [relation_id]})]
    if not disputed(rows):
        return False
    tx.run(
        q.WRITE_RESTORE,
        {
            "feedback_id": feedback_id,
            "run_id": "",
            "relation_id": relation_id,
            "verdict": "restore",
            "source": source,
            "at": datetime.now(UTC).isoformat(),
        },
    ).consume()
    return True
