"""Neo4jStore: the server GraphStore backend, over the official ``neo4j`` Python driver.

Needs **Neo4j 5.26 or newer** (Community or Enterprise, no APOC): labels and
relationship types that come from data are written with Cypher's dynamic labels and
types (``SET n:$(row.label)``, ``MERGE (h)-[r:$(row.rel_type)]->(t)``). The schema and
every statement are in :mod:`kgmind.stores.neo4j.queries`; values always travel as
parameters.

Transactions
    Reads go through ``driver.execute_query(..., routing_=READ)`` (or a streaming READ
    session for the two ``iter_*`` scans). Writes go through
    ``session.execute_write(fn)``, so the driver retries transient failures
    (deadlocks, leader changes) by re-running ``fn`` from the start; every ``fn``
    here is therefore free of side effects outside the transaction.

Bulk load
    The input is materialised and merged in Python first; then ONE write transaction
    runs every ``UNWIND $rows`` batch (:data:`BATCH_SIZE` rows each): entities (their
    stored state is read in the same transaction and merged by the protocol's rules),
    an endpoint check, relations, docs and the version bump. An import therefore
    lands completely or not at all; the price is that the server must hold the
    whole import in transaction memory (``db.memory.transaction.total.max``), which
    is a few hundred MB for the largest KG here (~420k relations).

Feedback
    ``apply_weight_updates`` runs in one write transaction: it MERGEs the
    ``(:Feedback {id})`` node (uniqueness constraint, so a concurrent duplicate waits
    and then sees it), takes the write lock on every head node (a property write,
    in id order) BEFORE reading the sibling weights, calls the pure rule, writes the
    weights and one ``(:WeightAudit)`` per change. Two concurrent feedbacks touching
    the same head are serialised by that lock, so no update is lost.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

import neo4j
from neo4j.exceptions import AuthError, ConfigurationError, DriverError, Neo4jError, ServiceUnavailable

from kgmind.models import (
    Entity,
    KnowledgeDoc,
    Relation,
    VerdictRecord,
    WeightChange,
    merge_entities,
    normalize_name,
)
from kgmind.stores.base import LoadInput, SiblingEdges, StoreBase, unknown_endpoints_error
from kgmind.stores.cypher import with_hop_bound
from kgmind.stores.disputes import WeightVerdicts
from kgmind.stores.neo4j import degrees as nd
from kgmind.stores.neo4j import queries as q
from kgmind.stores.neo4j import verdicts as nv
from kgmind.stores.neo4j.degrees import Neo4jDegrees
from kgmind.stores.neo4j.records import relation_from_record
from kgmind.stores.protocol import (
    Direction,
    GraphPath,
    RatingRules,
    StoreError,
    StoreUnavailableError,
    WeightRule,
)

__all__ = ["BATCH_SIZE", "MAX_PATH_HOPS", "Neo4jStore", "type_label"]

#: Rows per ``UNWIND $rows`` statement in a bulk load.
BATCH_SIZE = 5000

#: Longest shortest path :meth:`Neo4jStore.paths` searches (a longer bound is clamped).
MAX_PATH_HOPS = 6

#: Id of the single ``(:KgmindMeta)`` node that holds the content version.
META_ID = "kgmind"

#: How long the driver keeps retrying a transaction that failed transiently.
MAX_RETRY_SECONDS = 10.0

#: Seconds to wait for a TCP connection to the server.
CONNECT_TIMEOUT_SECONDS = 5.0

#: Labels the store uses for its own nodes; an entity type that maps to one of them
#: gets a ``Type`` suffix so that, say, type ``doc`` never makes an entity a ``:Doc``.
_RESERVED_LABELS = frozenset({"Alias", "Doc", "Feedback", "WeightAudit", "Verdict", "KgmindMeta"})

_T = TypeVar("_T")


def type_label(entity_type: str) -> str:
    """Return the node label for an entity type: PascalCase of its words.

    ``disease`` → ``Disease``, ``side_effect`` → ``SideEffect``, ``entity`` (or blank)
    → ``Entity`` (the common label, so no extra label). Names of the store's own
    labels get a ``Type`` suffix (``doc`` → ``DocType``).

    Args:
        entity_type: The entity's ``type``.

    Returns:
        The label (never empty).

    """
    words = entity_type.replace("-", " ").replace("_", " ").split()
    label = "".join(w[:1].upper() + w[1:] for w in words) or "Entity"
    return label + "Type" if label in _RESERVED_LABELS else label


def _entity_row(entity: Entity, old_type: str | None) -> dict[str, Any]:
    label = type_label(entity.type)
    remove: list[str] = []
    if old_type is not None:
        old_label = type_label(old_type)
        if old_label not in (label, "Entity"):
            remove.append(old_label)
    return {
        "id": entity.id,
        "name": entity.name,
        "key": normalize_name(entity.name),
        "type": entity.type,
        "aliases": list(entity.aliases),
        "alias_keys": sorted({normalize_name(a) for a in entity.aliases}),
        "description": entity.description,
        "label": label,
        "remove_labels": remove,
    }


def _entity(rec: Mapping[str, Any]) -> Entity:
    return Entity.model_construct(
        id=rec["id"],
        name=rec["name"],
        type=rec["type"] or "entity",
        aliases=list(rec["aliases"] or []),
        description=rec["description"] or "",
    )


def _doc(rec: Mapping[str, Any]) -> KnowledgeDoc:
    return KnowledgeDoc.model_construct(id=rec["id"], entity_id=rec["entity_id"], text=rec["text"])


def _change(rec: Mapping[str, Any]) -> WeightChange:
    return WeightChange.model_validate({name: rec[name] for name in WeightChange.model_fields})


def _batches(rows: Sequence[_T]) -> Iterator[list[_T]]:
    size = BATCH_SIZE
    for start in range(0, len(rows), size):
        yield list(rows[start : start + size])


def _one_line(exc: BaseException, max_chars: int = 240) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


class Neo4jStore(Neo4jDegrees, StoreBase):
    """A :class:`~kgmind.stores.protocol.GraphStore` in a Neo4j (5.26+) database.

    Creating the store does not contact the server; the schema is created by
    :meth:`ensure_schema`, which the first write calls once.

    Args:
        uri: Server URI (``neo4j://``, ``neo4j+s://``, ``bolt://`` …).
        user: User name.
        password: Password.
        database: Database name; ``None`` is the user's home database.
        driver: An existing driver to use instead of creating one (not closed by
            :meth:`close`: its owner closes it).

    Raises:
        StoreUnavailableError: The URI or configuration is invalid.

    """

    max_path_hops = MAX_PATH_HOPS
    neighbor_queries: ClassVar[Mapping[Direction, str]] = {
        "out": q.NEIGHBORS_OUT,
        "in": q.NEIGHBORS_IN,
        "both": q.NEIGHBORS_BOTH,
    }

    def __init__(
        self,
        uri: str,
        user: str = "neo4j",
        password: str = "",
        database: str | None = None,
        driver: neo4j.Driver | None = None,
    ) -> None:
        self.uri = uri
        self.database = database
        self._owns_driver = driver is None
        if driver is None:
            try:
                driver = neo4j.GraphDatabase.driver(
                    uri,
                    auth=(user, password),
                    max_transaction_retry_time=MAX_RETRY_SECONDS,
                    connection_timeout=CONNECT_TIMEOUT_SECONDS,
                )
            except (ConfigurationError, ValueError) as exc:
                raise StoreUnavailableError(f"cannot open Neo4j store {uri}: {_one_line(exc)}") from exc
        self._driver: neo4j.Driver = driver
        self._schema_lock = threading.Lock()
        self._schema_ready = False
        self._connected = False

    def __repr__(self) -> str:
        return f"Neo4jStore({self.uri!r}, database={self.database!r})"

    # -- driver boundary -------------------------------------------------------------
    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """Translate driver exceptions into StoreUnavailableError / StoreError."""
        try:
            yield
        except StoreError:
            raise
        except (ServiceUnavailable, AuthError) as exc:
            raise StoreUnavailableError(
                f"Neo4j store {self.uri} unavailable during {what}: {_one_line(exc)}"
            ) from exc
        except (Neo4jError, DriverError) as exc:
            raise StoreError(f"Neo4j {what} failed on {self.uri}: {_one_line(exc)}") from exc

    def _connect(self, what: str) -> None:
        """Check once that the server answers, so a down server fails fast (no retries)."""
        if self._connected:
            return
        with self._errors(what):
            self._driver.verify_connectivity()
        self._connected = True

    def _read(self, query: str, params: dict[str, Any], what: str) -> list[Any]:
        """Run one read statement through ``execute_query`` and return its records."""
        self._connect(what)
        with self._errors(what):
            result = self._driver.execute_query(
                query, params, database_=self.database, routing_=neo4j.RoutingControl.READ
            )
        return list(result.records)

    def _stream(self, query: str, what: str) -> Iterator[Any]:
        """Stream the records of one read statement from a READ session."""
        self._connect(what)
        with (
            self._errors(what),
            self._driver.session(database=self.database, default_access_mode=neo4j.READ_ACCESS) as session,
        ):
            yield from session.run(query)

    def _write(self, fn: Callable[[neo4j.ManagedTransaction], _T], what: str) -> _T:
        """Run ``fn`` in one retried write transaction."""
        self._connect(what)
        with self._errors(what), self._driver.session(database=self.database) as session:
            return session.execute_write(fn)

    def ensure_schema(self) -> None:
        """Create the constraints and indexes (idempotent ``IF NOT EXISTS`` statements).

        Raises:
            StoreUnavailableError: The server cannot be reached.
            StoreError: A statement failed (e.g. the server is older than 5.26).

        """
        with self._schema_lock:
            if self._schema_ready:
                return
            self._connect("ensure_schema")
            for stmt in q.SCHEMA_STATEMENTS:
                with self._errors("ensure_schema"):
                    self._driver.execute_query(stmt, None, database_=self.database)
            self._schema_ready = True

    # -- writing -------------------------------------------------------------------
    def _write_load(self, load: LoadInput) -> None:
        """Neo4j's half of :meth:`bulk_load`: every ``UNWIND $rows`` batch in one write transaction.

        Stored entities are read in the same transaction and merged (the type label
        follows the merged type); docs with a known id are kept as stored.
        """
        in_entities, in_relations, in_docs = load.entities, load.relations, load.docs
        entity_list = list(in_entities.values())
        rel_rows = [
            {
                "id": r.id,
                "head": r.head,
                "tail": r.tail,
                "rel_type": r.type.upper(),
                "weight": float(r.weight),
                "source": r.source,
            }
            for r in in_relations.values()
        ]
        doc_rows = [{"id": d.id, "entity_id": d.entity_id, "text": d.text} for d in in_docs.values()]
        outside = sorted({e for r in in_relations.values() for e in (r.head, r.tail) if e not in in_entities})

        def write(tx: neo4j.ManagedTransaction) -> None:
            for batch in _batches(entity_list):
                stored = {
                    rec["id"]: _entity(rec)
                    for rec in tx.run(q.ENTITIES_FOR_MERGE, {"ids": [e.id for e in batch]})
                }
                rows = []
                for ent in batch:
                    old = stored.get(ent.id)
                    merged = ent if old is None else merge_entities(old, ent)
                    rows.append(_entity_row(merged, None if old is None else old.type))
                tx.run(q.MERGE_ENTITIES, {"rows": rows}).consume()
            if outside:
                found: set[str] = set()
                for batch_ids in _batches(outside):
                    found.update(rec["id"] for rec in tx.run(q.EXISTING_ENTITY_IDS, {"ids": batch_ids}))
                missing = [e for e in outside if e not in found]
                if missing:
                    raise unknown_endpoints_error(missing)
            for rel_batch in _batches(rel_rows):
                tx.run(q.MERGE_RELATIONS, {"rows": rel_batch}).consume()
            for doc_batch in _batches(doc_rows):
                tx.run(q.MERGE_DOCS, {"rows": doc_batch}).consume()
            nd.refresh_in_tx(tx, {e for r in in_relations.values() for e in (r.head, r.tail)})
            tx.run(q.BUMP_VERSION, {"meta_id": META_ID}).consume()

        self.ensure_schema()
        self._write(write, "bulk_load")

    def clear(self) -> None:
        """Delete every entity, relation, doc, audit row and verdict (in committed batches)."""
        self._connect("clear")
        with self._errors("clear"), self._driver.session(database=self.database) as session:
            session.run(q.CLEAR_ALL).consume()

        def bump(tx: neo4j.ManagedTransaction) -> None:
            tx.run(q.BUMP_VERSION, {"meta_id": META_ID}).consume()
            tx.run(q.BUMP_DISPUTES_VERSION, {"meta_id": META_ID}).consume()

        self._write(bump, "clear")

    # -- reading -------------------------------------------------------------------
    def _fetch_entities(self, ids: list[str]) -> Iterable[Entity]:
        return map(_entity, self._read(q.GET_ENTITIES, {"ids": ids}, "get_entities"))

    def _fetch_relations(self, ids: list[str]) -> Iterable[Relation]:
        return map(relation_from_record, self._read(q.GET_RELATIONS, {"ids": ids}, "get_relations"))

    def _fetch_docs(self, ids: list[str]) -> Iterable[KnowledgeDoc]:
        return map(_doc, self._read(q.GET_DOCS, {"ids": ids}, "get_docs"))

    def _fetch_by_key(self, key: str) -> list[Entity]:
        recs = self._read(q.FIND_ENTITIES, {"key": key}, "find_entities")
        found = {rec["id"]: _entity(rec) for rec in recs}
        return [found[i] for i in sorted(found)]

    def iter_entities(self) -> Iterator[Entity]:
        """Every entity, ordered by id (streamed)."""
        for rec in self._stream(q.ITER_ENTITIES, "iter_entities"):
            yield _entity(rec)

    def iter_relations(self) -> Iterator[Relation]:
        """Every relation with its current weight, ordered by id (streamed)."""
        for rec in self._stream(q.ITER_RELATIONS, "iter_relations"):
            yield relation_from_record(rec)

    def _fetch_neighbors(
        self, query: str, ids: list[str], types: list[str] | None, limit: int
    ) -> list[Relation]:
        params = {"ids": ids, "types": types, "limit": limit}
        return [relation_from_record(rec) for rec in self._read(query, params, "neighbors")]

    def _shortest_paths(
        self, source: str, target: str, hops: int, directed: bool, limit: int
    ) -> list[GraphPath]:
        """One ``allShortestPaths`` statement; :data:`MAX_PATH_HOPS` (6) bounds the search."""
        query = with_hop_bound(q.PATHS_DIRECTED if directed else q.PATHS_UNDIRECTED, hops, most=MAX_PATH_HOPS)
        recs = self._read(query, {"source": source, "target": target, "limit": int(limit)}, "paths")
        return [
            GraphPath(nodes=list(rec["nodes"]), relations=[relation_from_record(r) for r in rec["relations"]])
            for rec in recs
        ]

    def out_edges(self, entity_id: str) -> list[Relation]:
        """Every outgoing edge of one node with its weight, by type, descending weight, tail."""
        return [relation_from_record(rec) for rec in self._read(q.OUT_EDGES, {"id": entity_id}, "out_edges")]

    def _fetch_docs_for(self, entity_ids: list[str]) -> list[KnowledgeDoc]:
        return [_doc(rec) for rec in self._read(q.DOCS_FOR, {"ids": entity_ids}, "docs_for")]

    def _counts(self) -> tuple[dict[str, int], dict[str, int], int]:
        entities = {str(r["type"]): int(r["count"]) for r in self._read(q.STATS_ENTITIES, {}, "stats")}
        relations = {str(r["type"]): int(r["count"]) for r in self._read(q.STATS_RELATIONS, {}, "stats")}
        docs = self._read(q.STATS_DOCS, {}, "stats")
        return entities, relations, int(docs[0]["count"]) if docs else 0

    def _relation_profile(self) -> Iterable[tuple[str, str, str, int]]:
        for r in self._read(q.RELATION_PROFILE, {}, "relation_schema"):
            yield str(r["type"]), str(r["head_type"] or ""), str(r["tail_type"] or ""), int(r["count"])

    def _read_schema(self) -> str:
        recs = self._read(q.GET_SCHEMA, {"meta_id": META_ID}, "relation_schema")
        return str(recs[0]["schema"]) if recs else ""

    def _write_schema(self, text: str) -> None:
        def write(tx: neo4j.ManagedTransaction) -> None:
            tx.run(q.SET_SCHEMA, {"meta_id": META_ID, "schema": text}).consume()

        self.ensure_schema()
        self._write(write, "set_schema_overrides")

    def fingerprint(self) -> str:
        """Content version plus entity and relation counts; weight changes leave it alone."""
        recs = self._read(q.FINGERPRINT, {"meta_id": META_ID}, "fingerprint")
        if not recs:
            return "0:0:0"
        rec = recs[0]
        return f"{int(rec['version'])}:{int(rec['entities'])}:{int(rec['relations'])}"

    def labels_of(self, entity_id: str) -> list[str]:
        """Return the node labels of one entity, sorted (``[]`` if unknown).

        Not part of the GraphStore protocol: it shows the label schema
        (``Entity`` plus the type label).
        """
        recs = self._read(q.ENTITY_LABELS, {"id": entity_id}, "labels_of")
        return sorted(recs[0]["labels"]) if recs else []

    # -- feedback ------------------------------------------------------------------
    def _apply_feedback(
        self, feedback_id: str, run_id: str, rating: str, rel_ids: list[str], rule: WeightRule
    ) -> list[WeightChange]:
        """Claim the feedback, lock the heads, apply the rule and audit, in one write transaction.

        A ``(:Feedback {id})`` node claimed in the transaction makes it idempotent, and
        write locks on the head nodes, taken before the sibling weights are read,
        serialise concurrent feedbacks on the same edges.

        Raises:
            StoreUnavailableError: The server cannot be reached.

        """

        def apply(tx: neo4j.ManagedTransaction) -> list[WeightChange]:
            claimed_at = datetime.now(UTC).isoformat()
            claim = tx.run(
                q.CLAIM_FEEDBACK,
                {"feedback_id": feedback_id, "run_id": run_id, "rating": rating, "at": claimed_at},
            ).single()
            if claim is None or not claim["created"]:
                return []
            changes = self._weights_tx(tx, feedback_id, run_id, rating, rel_ids, rule)
            if changes:
                tx.run(q.BUMP_WEIGHTS_VERSION, {"meta_id": META_ID}).consume()
            return changes

        self.ensure_schema()
        return self._write(apply, "apply_weight_updates")

    def _weights_tx(
        self,
        tx: neo4j.ManagedTransaction,
        feedback_id: str,
        run_id: str,
        rating: str,
        rel_ids: list[str],
        rule: WeightRule,
        seq_start: int = 0,
    ) -> list[WeightChange]:
        """The audited weight write of one rating inside ``tx`` (no version bump): lock, read, rule, write.

        Shared by ratings and per-claim verdicts, so both move weights the same way; the
        ``(:Feedback {id: feedback_id})`` node must be claimed in ``tx`` already.
        """
        if not rel_ids:
            return []
        heads: list[str] = []
        head_of: dict[str, str] = {}
        for rec in tx.run(q.LOCK_HEADS, {"relation_ids": rel_ids}):
            heads.append(rec["head"])
            for rid in rec["rel_ids"]:
                head_of[rid] = rec["head"]
        unknown = [rid for rid in rel_ids if rid not in head_of]
        if unknown:
            raise StoreError(f"feedback {feedback_id!r}: unknown relation ids: {', '.join(unknown)}")
        # Taken while holding the head locks, so audit times follow the commit order
        # of feedbacks on the same edges (weight_changes() replays serially).
        at = datetime.now(UTC).isoformat()
        siblings = SiblingEdges.collect(
            heads,
            (
                (rec["head"], rec["id"], rec["weight"])
                for rec in tx.run(q.SIBLING_WEIGHTS, {"heads": sorted(heads)})
            ),
        )
        updates = siblings.updates(feedback_id, rule, rel_ids)
        if not updates:
            return []
        rows = [
            {
                "head": siblings.head_of[rid],
                "id": rid,
                "old_weight": siblings.weight[rid],
                "new_weight": new,
                "seq": seq_start + seq,
            }
            for seq, (rid, new) in enumerate(updates)
        ]
        tx.run(
            q.WRITE_WEIGHTS,
            {"feedback_id": feedback_id, "run_id": run_id, "rating": rating, "at": at, "rows": rows},
        ).consume()
        return siblings.changes(feedback_id, run_id, rating, at, updates)

    def weight_changes(self, feedback_id: str | None = None) -> list[WeightChange]:
        """Audit rows, oldest first; only those of ``feedback_id`` when given."""
        recs = self._read(q.WEIGHT_CHANGES, {"feedback_id": feedback_id}, "weight_changes")
        return [_change(rec) for rec in recs]

    def reset_weights(self) -> int:
        """Set every weight back to 1.0 and drop the weight audit log (the verdict log and disputes stay).

        Returns:
            The number of edges whose weight was not 1.0.

        """

        def reset(tx: neo4j.ManagedTransaction) -> int:
            rec = tx.run(q.RESET_WEIGHTS).single()
            tx.run(q.DROP_AUDIT).consume()
            tx.run(q.BUMP_WEIGHTS_VERSION, {"meta_id": META_ID}).consume()
            return int(rec["reset"]) if rec is not None else 0

        return self._write(reset, "reset_weights")

    def weights_version(self) -> int:
        """See :meth:`GraphStore.weights_version`."""
        recs = self._read(q.WEIGHTS_VERSION, {"meta_id": META_ID}, "weights_version")
        return int(recs[0]["weights_version"]) if recs else 0

    # -- per-claim verdicts (their statements: kgmind.stores.neo4j.verdicts) --------------
    def _write_verdicts(
        self, feedback_id: str, run_id: str, verdicts: WeightVerdicts, source: str, rule: RatingRules
    ) -> list[WeightChange] | None:
        def write(tx: neo4j.ManagedTransaction) -> list[WeightChange] | None:
            changes = nv.write_verdicts(self, tx, feedback_id, run_id, verdicts, source, rule)
            if changes is not None:  # a disputed edge leaves its ends' degrees
                nd.refresh_in_tx(tx, nv.ends_of(tx, verdicts.relation_ids()))
            if changes:
                tx.run(q.BUMP_WEIGHTS_VERSION, {"meta_id": META_ID}).consume()
            if changes is not None:
                tx.run(q.BUMP_DISPUTES_VERSION, {"meta_id": META_ID}).consume()
            return changes

        self.ensure_schema()
        return self._write(write, "record_verdicts")

    def _write_restore(
        self, relation_id: str, feedback_id: str, source: str, disputed: Callable[[list[VerdictRecord]], bool]
    ) -> bool:
        def write(tx: neo4j.ManagedTransaction) -> bool:
            restored = nv.write_restore(tx, relation_id, feedback_id, source, disputed)
            if restored:  # shown again: back in its ends' degrees
                nd.refresh_in_tx(tx, nv.ends_of(tx, [relation_id]))
                tx.run(q.BUMP_DISPUTES_VERSION, {"meta_id": META_ID}).consume()
            return restored

        self.ensure_schema()
        return self._write(write, "restore")

    def _read_verdicts(self, relation_ids: list[str] | None) -> list[VerdictRecord]:
        recs = self._read(q.VERDICTS, {"ids": relation_ids}, "verdict_log")
        return [nv.verdict_record(rec) for rec in recs]

    def disputes_version(self) -> int:
        """See :meth:`GraphStore.disputes_version`."""
        recs = self._read(q.DISPUTES_VERSION, {"meta_id": META_ID}, "disputes_version")
        return int(recs[0]["disputes_version"]) if recs else 0

    # -- lifecycle -------------------------------------------------------------------
    def close(self) -> None:
        """Close the driver's connection pool (only a driver this store created)."""
        if self._owns_driver:
            self._driver.close()
