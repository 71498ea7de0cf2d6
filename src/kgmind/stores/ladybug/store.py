"""LadybugStore: the embedded, persistent GraphStore backend on LadybugDB (a Kùzu fork).

The store lives in a directory (``<dir>/graph.lbug`` plus LadybugDB's WAL files);
the schema (see :mod:`kgmind.stores.ladybug.queries`) is created idempotently on open.

Bulk load and atomicity
    ``bulk_load`` reads what the store already holds (entity rows, relation ids and
    doc ids: full column scans, cheap next to the load itself), merges the input
    with it in Python, checks every relation endpoint, and then writes inside ONE
    LadybugDB write transaction: ``COPY … FROM $data`` (a pyarrow table passed as a
    parameter, so no temp files and no query text built from paths) for the new
    entities, relations and docs, plus one ``UNWIND $rows … SET`` for merged entities
    and relation sources. LadybugDB supports ``COPY`` inside a manual transaction and
    rolls it back with the rest, so a load lands completely or not at all. Because
    everything is validated before the transaction starts, ``COPY`` never meets a
    duplicate key or a missing endpoint (on those error paths LadybugDB 0.22 may
    crash the process when the table has list columns, which is why aliases are
    stored as strings).

Concurrency
    LadybugDB allows one write transaction at a time per database and one process
    per directory. Writers (load, clear, feedback, reset) are serialised by a
    process-wide lock and use a dedicated writer connection, so concurrent feedback
    is exactly a serial replay. Readers come from a pool
    (:mod:`kgmind.stores.ladybug.connections`) and see the last committed snapshot.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from kgmind.models import (
    Entity,
    KnowledgeDoc,
    Relation,
    VerdictRecord,
    WeightChange,
)
from kgmind.stores import degrees as dg
from kgmind.stores.base import LoadInput, StoreBase
from kgmind.stores.columns import RelationColumns
from kgmind.stores.cypher import with_hop_bound
from kgmind.stores.disputes import WeightVerdicts
from kgmind.stores.ladybug import bulk as lb_bulk
from kgmind.stores.ladybug import degrees as ld
from kgmind.stores.ladybug import kept
from kgmind.stores.ladybug import queries as q
from kgmind.stores.ladybug import verdicts as lv
from kgmind.stores.ladybug import weights as lw
from kgmind.stores.ladybug.connections import Connections, page_cache_full, pools_readers
from kgmind.stores.ladybug.entity_cache import EntityCache
from kgmind.stores.ladybug.load_plan import LoadPlan, plan_load
from kgmind.stores.ladybug.profile import kept_profile
from kgmind.stores.ladybug.rows import (
    SEP,
    alias_keys,
    all_rows,
    change_from_row,
    chunked_scan,
    column_table,
    doc_from_row,
    doc_table,
    entities_from_table,
    entity_from_row,
    entity_table,
    relation_from_row,
    relation_table,
)
from kgmind.stores.protocol import (
    Direction,
    GraphPath,
    LoadReport,
    RatingRules,
    StoreError,
    StoreNotFoundError,
    StoreUnavailableError,
    WeightRule,
)
from kgmind.tuning import ENTITY_SCAN_ROWS, STORE_READ_THREADS

__all__ = ["DB_FILE", "MAX_PATH_HOPS", "LadybugStore"]

#: Name of the database file inside the store directory.
DB_FILE = "graph.lbug"

#: Longest shortest path :meth:`LadybugStore.paths` searches (LadybugDB's largest bound).
MAX_PATH_HOPS = 30

_META_LOAD = "load"
_META_SCHEMA = "relation_schema"  # the roles a user gave at import: JSON in Meta.version
_META_WEIGHTS = "weights"  # the weights version: a decimal counter in Meta.version
_META_DISPUTES = lv.META_DISPUTES  # the disputes version: likewise


T = TypeVar("T")


def _engine_error(exc: BaseException) -> str:
    """The engine's message, plus what to do when a bounded page cache was too small for the work."""
    text = str(exc)
    if page_cache_full(exc):
        text += " (the store's page cache is full: KGMIND_STORE_BUFFER_MB sets its size in MiB)"
    return text


class LadybugStore(ld.DegreeReads, ld.DegreeWrites, StoreBase):
    """A :class:`~kgmind.stores.protocol.GraphStore` in a LadybugDB directory.

    Args:
        path: The store directory.
        create: Create the directory and database if missing (importers); when False a
            missing database raises :class:`StoreNotFoundError` and nothing is written,
            so a mistyped path never becomes a new, empty store.

    Raises:
        StoreNotFoundError: ``create`` is False and ``path`` holds no database.
        StoreUnavailableError: The directory cannot be created or opened (it is a
            file, permissions, or another process holds the database lock).

    """

    max_path_hops = MAX_PATH_HOPS
    neighbor_queries: ClassVar[Mapping[Direction, str]] = {
        "out": q.EDGES_OUT,
        "in": q.EDGES_IN,
        "both": q.EDGES_BOTH,
    }

    def __init__(self, path: str | Path, *, create: bool = True, buffer_mb: int | None = None) -> None:
        """Open (or create) the store at ``path``.

        ``buffer_mb`` bounds LadybugDB's page cache. The engine's default is a share of
        the machine's RAM, which a worker answering question after question fills with
        every page it ever read (``KGMIND_STORE_BUFFER_MB`` sets it for
        :func:`~kgmind.stores.factory.open_store`).
        """
        import ladybug

        self.path = Path(path).expanduser().resolve()
        self.uri = f"ladybug:{self.path}"
        self.buffer_mb = buffer_mb
        self._counted: tuple[str, int, int] | None = None  # (load version, entities, relations)
        self._meta: dict[str, Any] = {}  # Meta versions read since the last write (_read_meta)
        self._meta_writes = 0
        self._meta_lock = threading.Lock()
        self._entities = EntityCache()  # entities looked up lately: questions ask for the same ones
        try:
            if self.path.exists() and not self.path.is_dir():
                raise StoreUnavailableError(f"cannot open LadybugDB store {self.path}: not a directory")
            if not create and not self.exists(self.path):
                raise StoreNotFoundError.for_uri(self.uri)
            self.path.mkdir(parents=True, exist_ok=True)
            pool = buffer_mb * 1024 * 1024 if buffer_mb else 0  # 0: the engine's default
            self._db = ladybug.Database(str(self.path / DB_FILE), buffer_pool_size=pool)
        except StoreUnavailableError:
            raise
        except (OSError, RuntimeError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise StoreUnavailableError(f"cannot open LadybugDB store {self.path}: {reason}") from exc
        self._ladybug = ladybug
        self._write_lock = threading.RLock()
        self._conns = Connections(  # a prepared EDGES_BETWEEN holds pages: not pooled (see the module)
            lambda: ladybug.Connection(self._db, num_threads=STORE_READ_THREADS),
            pooled=pools_readers(pool or None, (self.path / DB_FILE).stat().st_size),
            fresh_for=(q.EDGES_BETWEEN,),
        )
        self._closed = False
        self._writer = self._conns.new()
        self._writer.set_max_threads_for_exec(0)  # imports and counts: every core
        try:
            for stmt in (*q.SCHEMA, *q.SCHEMA_DEGREES):
                self._writer.execute(stmt)
        except RuntimeError as exc:
            self.close()
            raise StoreUnavailableError(f"cannot open LadybugDB store {self.path}: {exc}") from exc
        if not self._scalar(q.GET_META, {"key": ld.META_DEGREES}) and self._scalar(q.COUNT_ENTITIES):
            with self._transaction("count degrees") as conn:  # a store made before degrees were kept
                ld.refresh_degrees(self, conn, None)
        if self._scalar(q.GET_META, {"key": kept.META_KEPT}) != kept.wanted():
            self._keep_all()  # made before them, under another bound, or a write's rebuild did not finish

    @staticmethod
    def exists(path: str | Path) -> bool:
        """Whether ``path`` holds a LadybugDB store (its database file), without opening or creating it."""
        return (Path(path).expanduser() / DB_FILE).exists()

    # -- connections -------------------------------------------------------------
    def _rows(self, query: str, params: dict[str, Any] | None = None, conn: Any = None) -> list[list[Any]]:
        return self._read(query, params, conn, all_rows)

    def _table(
        self, query: str, params: dict[str, Any] | None = None, conn: Any = None
    ) -> dict[str, list[Any]]:
        return self._read(query, params, conn, column_table)

    def _read(
        self,
        query: str,
        params: dict[str, Any] | None,
        conn: Any,
        how: Callable[[Any, str, dict[str, Any]], T],
    ) -> T:
        """``how(conn, query, params)`` on ``conn``, or on a reader of the pool."""
        if conn is None and self._closed:
            raise StoreError(f"LadybugDB store {self.path} is closed")
        try:
            if conn is not None:
                return how(conn, query, params or {})
            return self._conns.run(query, lambda reader: how(reader, query, params or {}))
        except RuntimeError as exc:
            raise StoreError(f"LadybugDB query failed on {self.path}: {_engine_error(exc)}") from exc

    def _scalar(self, query: str, params: dict[str, Any] | None = None, conn: Any = None) -> Any:
        rows = self._rows(query, params, conn)
        return rows[0][0] if rows else None

    def _write_conn(self) -> Any:
        if self._closed:
            raise StoreError(f"LadybugDB store {self.path} is closed")
        return self._writer

    def _rollback(self, conn: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the engine may have aborted it already
            conn.execute(q.ROLLBACK)

    def _bump_version(self, conn: Any) -> None:
        conn.execute(q.SET_META, {"key": _META_LOAD, "version": uuid.uuid4().hex})

    def _bump_counter(self, conn: Any, key: str) -> None:
        """Add 1 to the ``Meta`` counter ``key`` (weights, disputes), in the caller's write transaction."""
        version = int(self._scalar(q.GET_META, {"key": key}, conn) or 0)
        conn.execute(q.SET_META, {"key": key, "version": str(version + 1)})

    @contextlib.contextmanager
    def _transaction(self, what: str) -> Iterator[Any]:
        """One write transaction on the writer connection, yielded for the block to use.

        Committed when the block returns; rolled back when it raises, so a failure
        never leaves part of a write behind. A :class:`StoreError` from the block keeps
        its message; any other error becomes one that says ``what`` was rolled back.
        Holds the write lock (re-entrant), so writers stay serialised.
        """
        with self._write_lock:
            conn = self._write_conn()
            try:
                conn.execute(q.BEGIN)
            except RuntimeError as exc:
                raise StoreError(f"{what} on {self.path}: cannot begin a transaction: {exc}") from exc
            try:
                yield conn
                conn.execute(q.COMMIT)
            except StoreError:
                self._rollback(conn)
                raise
            except Exception as exc:
                self._rollback(conn)
                raise StoreError(
                    f"{what} on {self.path} rolled back, nothing written: {_engine_error(exc)}"
                ) from exc
            finally:
                with self._meta_lock:
                    self._meta_writes += 1
                    self._meta.clear()

    def _read_meta(self, key: str) -> Any:
        """The ``Meta`` value ``key``, from memory when no write ran since it was read.

        A question asks ~36 times (~8 % of a pushed-down EMCKG question). Every write goes
        through :meth:`_transaction`, which forgets them; the file lock keeps other processes out.
        """
        with self._meta_lock:
            if key in self._meta:
                return self._meta[key]
            writes = self._meta_writes
        value = self._scalar(q.GET_META, {"key": key})
        with self._meta_lock:
            if writes == self._meta_writes:
                self._meta[key] = value
        return value

    # -- writing -----------------------------------------------------------------
    def _write_load(self, load: LoadInput) -> None:
        """LadybugDB's half of :meth:`bulk_load`: plan against the stored state, then one transaction.

        Docs with a known id are skipped. Everything is checked while planning, so the
        ``COPY`` statements never meet a duplicate key or a missing endpoint (see the
        module docstring).
        """
        with self._write_lock:
            plan = plan_load(functools.partial(self._table, conn=self._write_conn()), load)
            first = not int(self._scalar(q.COUNT_RELATIONS, None, self._write_conn()) or 0)
            changed = [*plan.new_relations, *(load.relations[u["id"]] for u in plan.source_updates)]
            ends = {x for r in changed for x in (r.head, r.tail)}
            every = bool(changed) and kept.rewrites_all(first, ends)
            with self._transaction("bulk_load") as conn:
                self._write_plan(conn, plan)
                if changed:
                    self._keep(conn, None if every else ends)
                self._bump_version(conn)
            if every:
                self._keep_all()

    def bulk_load_columns(self, entities: Iterable[Entity], relations: RelationColumns) -> LoadReport:
        """:meth:`bulk_load` of relations held as columns (:mod:`kgmind.stores.columns`), in one transaction.

        The relations are ``COPY``-ed a batch at a time (:mod:`kgmind.stores.ladybug.bulk`), so
        a 10M-relation load never holds its relations as Python objects; stored relations keep
        their weight, as in :meth:`bulk_load` (columns carry no ``source`` to fill).
        """
        load = LoadInput.merge(entities, (), ())
        if load.is_empty() and not len(relations):
            return LoadReport()
        with self._write_lock:
            conn = self._write_conn()
            plan = plan_load(functools.partial(self._table, conn=conn), load)
            lb_bulk.check_endpoints(functools.partial(self._rows, conn=conn), relations, load.entities)
            has_relations = len(relations) and int(self._scalar(q.COUNT_RELATIONS, None, conn) or 0)
            stored = set(self._table(q.SCAN_RELATION_SOURCES, None, conn)["id"]) if has_relations else set()
            # into a store without relations or verdicts, the degrees are the columns' own counts
            counted = None if has_relations or ld.disputed_in(self, conn) else relations.degrees()
            every = False  # whether every hub's kept read is written again after the commit
            with self._transaction("bulk_load") as tx:
                self._write_plan(tx, plan, counted)
                if lb_bulk.copy_relations(tx, relations, stored):
                    if counted is None:  # their ends' degrees, engine-counted
                        ld.refresh_degrees(self, tx, relations.entity_ids if has_relations else None)
                    else:  # stored entities new edges touch; the new ones got theirs in their COPY
                        new = {e.id for e in plan.new_entities}
                        ld.write_degrees(tx, {e: n for e, n in counted.items() if e not in new})
                    every = kept.rewrites_all(not has_relations, relations.entity_ids)
                    self._keep(tx, None if every else relations.entity_ids)
                self._bump_version(tx)
            if every:
                self._keep_all()
        return LoadReport(entities=len(load.entities), relations=len(relations), docs=0)

    def _write_plan(self, conn: Any, plan: LoadPlan, counted: dg.Degrees | None = None) -> None:
        """Run a load plan's statements on ``conn``, inside the caller's write transaction.

        ``counted``: the new entities' degrees when the caller counted them (a columnar load).
        """
        new_ids = {e.id for e in plan.new_entities}
        if plan.new_entities:
            counts = (
                counted
                if counted is not None
                else dg.count_degrees(
                    new_ids,
                    ((r.head, r.type, r.tail, r.id) for r in plan.new_relations),
                    ld.disputed_in(self, conn) if plan.new_relations else (),
                )
            )
            conn.execute(q.COPY_ENTITIES, {"data": entity_table(plan.new_entities, counts)})
        if plan.changed_entities:
            rows = [
                {
                    "id": e.id,
                    "type": e.type,
                    "aliases": json.dumps(e.aliases, ensure_ascii=False),
                    "alias_keys": alias_keys(e),
                    "description": e.description,
                }
                for e in plan.changed_entities
            ]
            conn.execute(q.UPDATE_ENTITIES, {"rows": rows})
        if plan.new_relations:
            conn.execute(q.COPY_RELATIONS, {"data": relation_table(plan.new_relations)})
            stored = {x for r in plan.new_relations for x in (r.head, r.tail)} - new_ids
            ld.refresh_degrees(self, conn, stored)
        if plan.source_updates:
            conn.execute(q.UPDATE_RELATION_SOURCES, {"rows": plan.source_updates})
        if plan.new_docs:
            conn.execute(q.COPY_DOCS, {"data": doc_table(plan.new_docs)})

    def clear(self) -> None:
        """Delete every entity, relation, doc, audit row and verdict."""
        with self._transaction("clear") as conn:
            conn.execute(q.DELETE_ALL_ENTITIES).close()
            conn.execute(q.DELETE_ALL_DOCS).close()
            conn.execute(q.DELETE_ALL_AUDIT).close()
            conn.execute(q.DELETE_ALL_VERDICTS).close()
            self._keep(conn, None)
            self._bump_version(conn)
            self._bump_counter(conn, _META_DISPUTES)

    # -- reading -----------------------------------------------------------------
    def _fetch_entities(self, ids: list[str]) -> Iterable[Entity]:
        return self._entities.fetch(ids, self._load_version(), self._read_entities)

    def _read_entities(self, ids: list[str]) -> Iterable[Entity]:
        return map(entity_from_row, self._rows(q.GET_ENTITIES, {"ids": ids}))

    def _load_version(self) -> object:
        """The load version (moved by every write that changes entities): what kept entities are keyed by."""
        return self._read_meta(_META_LOAD)

    def _fetch_relations(self, ids: list[str]) -> Iterable[Relation]:
        return map(relation_from_row, self._rows(q.GET_RELATIONS, {"ids": ids}))

    def _fetch_docs(self, ids: list[str]) -> Iterable[KnowledgeDoc]:
        return map(doc_from_row, self._rows(q.GET_DOCS, {"ids": ids}))

    def _fetch_by_key(self, key: str) -> list[Entity]:
        rows = self._rows(q.FIND_ENTITIES_BY_KEY, {"key": key, "framed": SEP + key + SEP})
        return [entity_from_row(r) for r in rows]

    def iter_entities(self) -> Iterator[Entity]:
        """Every entity, ordered by id, read one range of :data:`ENTITY_SCAN_ROWS` ids at a time.

        Only the ids are sorted whole. Sorting every entity's columns in one read filled a page
        cache bounded to 128 MiB on the generated 10M KG (495k entities) and peaked ~250 MB
        higher than the ranges. Each range is read whole before its entities are yielded, so no
        reader stays open while the caller works.
        """
        for first, last in self._entity_id_ranges():
            yield from entities_from_table(
                self._table(q.SCAN_ENTITIES_BETWEEN, {"first": first, "last": last})
            )

    def _entity_id_ranges(self) -> list[tuple[str, str]]:
        """The first and last id of each run of :data:`ENTITY_SCAN_ROWS` entities in id order."""
        ids = self._table(q.SCAN_ENTITY_IDS)["id"]
        n, step = len(ids), ENTITY_SCAN_ROWS
        return [(ids[start], ids[min(start + step, n) - 1]) for start in range(0, n, step)]

    def iter_relations(self) -> Iterator[Relation]:
        """Every relation with its current weight, ordered by id, made into objects a chunk at a time."""
        for t in self._chunks(q.SCAN_RELATIONS):
            for row in zip(t["head"], t["id"], t["type"], t["tail"], t["weight"], t["source"], strict=True):
                yield relation_from_row(row)

    def _chunks(self, query: str) -> Iterator[dict[str, list[Any]]]:
        """A scan's columns a chunk at a time (:func:`~kgmind.stores.ladybug.rows.arrow_chunks`)."""
        yield from self._read(query, None, None, chunked_scan)  # read whole: the reader goes back first

    def _fetch_neighbors(
        self, query: str, ids: list[str], types: list[str] | None, limit: int
    ) -> list[Relation]:
        params = {"ids": ids, "any_type": types is None, "types": types or [], "limit": limit}
        return [relation_from_row(r) for r in self._rows(query, params)]

    def _shortest_paths(
        self, source: str, target: str, hops: int, directed: bool, limit: int
    ) -> list[GraphPath]:
        """LadybugDB's native ``ALL SHORTEST`` search, then one lookup of the relations walked.

        Faster than the breadth-first search driven from Python (one query per level)
        that it replaced. Parallel edges give distinct paths. :data:`MAX_PATH_HOPS`
        (30) is LadybugDB's largest bound.
        """
        query = with_hop_bound(q.PATHS_DIRECTED if directed else q.PATHS_UNDIRECTED, hops, most=MAX_PATH_HOPS)
        rows = self._rows(query, {"source": source, "target": target})
        found = sorted(([source, *inner, target], list(rel_ids)) for inner, rel_ids in rows)[:limit]
        rels = {r.id: r for r in self.get_relations(sorted({i for _, ids in found for i in ids}))}
        return [GraphPath(nodes=nodes, relations=[rels[i] for i in ids]) for nodes, ids in found]

    def out_edges(self, entity_id: str) -> list[Relation]:
        """Every outgoing edge of one node with its weight, by type, descending weight, tail."""
        return [relation_from_row(r) for r in self._rows(q.OUT_EDGES, {"id": entity_id})]

    def _fetch_docs_for(self, entity_ids: list[str]) -> list[KnowledgeDoc]:
        return [doc_from_row(r) for r in self._rows(q.GET_DOCS_FOR, {"ids": entity_ids})]

    # -- degrees and bounded reads (issue 42): ld.DegreeReads, kept current by ld.DegreeWrites --
    def _counts(self) -> tuple[dict[str, int], dict[str, int], int]:
        entities = {str(t): int(n) for t, n in self._rows(q.COUNT_ENTITIES_BY_TYPE)}
        relations: dict[str, int] = {}
        for rtype, _head, _tail, n in self._relation_profile():  # kept per load: no scan of every edge
            relations[rtype] = relations.get(rtype, 0) + n
        return entities, relations, int(self._scalar(q.COUNT_DOCS) or 0)

    def _relation_profile(self) -> Iterable[tuple[str, str, str, int]]:
        return kept_profile(self, self._read_meta(_META_LOAD))  # load version read before any scan

    def _read_schema(self) -> str:
        return str(self._read_meta(_META_SCHEMA) or "")

    def _write_schema(self, text: str) -> None:
        with self._transaction("set_schema_overrides") as conn:
            conn.execute(q.SET_META, {"key": _META_SCHEMA, "version": text})
            conn.execute(q.SET_META, {"key": _META_LOAD, "version": uuid.uuid4().hex})

    def fingerprint(self) -> str:
        """Load version plus entity and relation counts; weight changes leave it alone.

        The counts are taken again only when the load version moved: every write that
        changes them bumps it, and the store's file lock keeps other processes out while
        this one has it open. A question asks for the fingerprint ~16 times, and counting
        is a scan (~4 ms at 2M relations), the version one lookup.
        """
        version = str(self._read_meta(_META_LOAD) or "0")
        counted = self._counted
        if counted is None or counted[0] != version:
            n_ent = int(self._scalar(q.COUNT_ENTITIES) or 0)
            n_rel = int(self._scalar(q.COUNT_RELATIONS) or 0)
            counted = self._counted = (version, n_ent, n_rel)
        return f"{version}:{counted[1]}:{counted[2]}"

    # -- feedback ------------------------------------------------------------------
    def _apply_feedback(
        self, feedback_id: str, run_id: str, rating: str, rel_ids: list[str], rule: WeightRule
    ) -> list[WeightChange]:
        """Check the feedback id against the audit log and write, in one transaction.

        The write lock makes concurrent feedbacks a serial replay.
        """
        with self._transaction(f"feedback {feedback_id!r}") as conn:
            if int(self._scalar(q.FEEDBACK_SEEN, {"feedback_id": feedback_id}, conn) or 0) > 0:
                return []
            changes = self._weights_in_tx(conn, feedback_id, run_id, rating, rel_ids, rule)
            if changes:
                self._bump_counter(conn, _META_WEIGHTS)
            return changes

    def _weights_in_tx(
        self, conn: Any, feedback_id: str, run_id: str, rating: str, rel_ids: list[str], rule: WeightRule
    ) -> list[WeightChange]:
        """The audited weight write of one rating, in the caller's transaction (``ladybug.weights``)."""
        return lw.write_weights(self, conn, feedback_id, run_id, rating, rel_ids, rule)

    def weight_changes(self, feedback_id: str | None = None) -> list[WeightChange]:
        """Audit rows, oldest first; only those of ``feedback_id`` when given."""
        if feedback_id is None:
            rows = self._rows(q.WEIGHT_CHANGES)
        else:
            rows = self._rows(q.WEIGHT_CHANGES_FOR, {"feedback_id": feedback_id})
        return [change_from_row(r) for r in rows]

    def reset_weights(self) -> int:
        """Set every weight back to 1.0 and drop the weight audit log (the verdict log and disputes stay).

        Returns:
            The number of edges whose weight was not 1.0.

        """
        with self._transaction("reset_weights") as conn:
            conn.execute(q.DELETE_ALL_AUDIT).close()
            rows = self._rows(q.RESET_WEIGHTS, None, conn)
            self._keep(conn, None)
            self._bump_counter(conn, _META_WEIGHTS)
        self._keep_all()
        return int(rows[0][0]) if rows else 0

    def weights_version(self) -> int:
        """See :meth:`GraphStore.weights_version`."""
        return int(self._read_meta(_META_WEIGHTS) or 0)

    # -- per-claim verdicts (the log's statements: kgmind.stores.ladybug.verdicts) ------------
    def _write_verdicts(
        self, feedback_id: str, run_id: str, verdicts: WeightVerdicts, source: str, rule: RatingRules
    ) -> list[WeightChange] | None:
        with self._transaction(f"verdicts {feedback_id!r}") as conn:
            changes = lv.write_verdicts(self, conn, feedback_id, run_id, verdicts, source, rule)
            if changes:
                self._bump_counter(conn, _META_WEIGHTS)
        return changes

    def _write_restore(
        self, relation_id: str, feedback_id: str, source: str, disputed: Callable[[list[VerdictRecord]], bool]
    ) -> bool:
        with self._transaction(f"restore {relation_id!r}") as conn:
            return lv.write_restore(self, conn, relation_id, feedback_id, source, disputed)

    def _read_verdicts(self, relation_ids: list[str] | None) -> list[VerdictRecord]:
        return lv.read_verdicts(self, None, relation_ids)

    def disputes_version(self) -> int:
        """See :meth:`GraphStore.disputes_version`."""
        return int(self._read_meta(_META_DISPUTES) or 0)

    # -- lifecycle -------------------------------------------------------------------
    def close(self) -> None:
        """Close every connection and the database, releasing the directory lock."""
        with self._write_lock:
            if self._closed:
                return
            self._closed = True
            self._conns.close()
            self._db.close()

    def __repr__(self) -> str:
        return f"LadybugStore({str(self.path)!r})"
