"""Every Cypher statement the LadybugDB backend runs, as named constants.

Values always travel as ``$parameters`` (bulk rows as a pyarrow table parameter for
``COPY … FROM $data``); no query text is ever built from values at run time. The one
completion is the hop bound of the shortest-path templates (see
:mod:`kgmind.stores.cypher`).

Schema (created idempotently when a store opens):

* ``Entity`` nodes: ``id`` (primary key), ``name``, ``key`` (normalised name),
  ``type``, ``aliases`` (JSON list), ``alias_keys`` (normalised aliases joined and
  framed by the unit separator U+001F, so ``contains`` of ``US + key + US`` finds one),
  ``description``, ``degree`` and ``degrees`` (kept by every write that changes the
  edges explorations see: :mod:`kgmind.stores.degrees`). Aliases are plain strings rather
  than ``STRING[]`` because a failing ``COPY`` of a list column from Arrow crashes
  LadybugDB 0.22.
* ``REL`` relationships ``Entity → Entity``: ``id``, ``type``, ``weight``, ``source``.
* ``Doc`` nodes: ``id``, ``entity_id``, ``text``.
* ``WeightAudit`` nodes: one row per audited weight change, ordered by a ``SERIAL``.
* ``Verdict`` nodes: one row per verdict on an edge (``wrong``, ``right``, ``restore``),
  ordered by a ``SERIAL``: the verdict log that dispute states are folded from.
* ``Meta`` nodes: ``key`` → ``version``; the ``load`` row changes on every load/clear
  and feeds :meth:`LadybugStore.fingerprint`.
* ``Kept`` nodes: ``node`` → ``groups``, a hub's bounded read as JSON, written by the writes
  that change it (:mod:`kgmind.stores.ladybug.kept`).
"""

from __future__ import annotations

__all__ = [
    "BEGIN",
    "BOUNDED_EDGES",
    "COMMIT",
    "COPY_DOCS",
    "COPY_ENTITIES",
    "COPY_RELATIONS",
    "COUNT_DOCS",
    "COUNT_ENTITIES",
    "COUNT_ENTITIES_BY_TYPE",
    "COUNT_RELATIONS",
    "DEGREES_IN_ALL",
    "DEGREES_IN_OF",
    "DEGREES_OUT_ALL",
    "DEGREES_OUT_OF",
    "DEGREE_VALUES",
    "DELETE_ALL_AUDIT",
    "DELETE_ALL_DOCS",
    "DELETE_ALL_ENTITIES",
    "DELETE_ALL_KEPT",
    "DELETE_ALL_VERDICTS",
    "DELETE_KEPT",
    "EDGES_BETWEEN",
    "EDGES_BOTH",
    "EDGES_IN",
    "EDGES_OUT",
    "END_IDS",
    "ENTITY_COLUMNS",
    "ENTITY_OFFSETS",
    "FEEDBACK_SEEN",
    "FIND_ENTITIES_BY_KEY",
    "GET_DEGREES",
    "GET_DOCS",
    "GET_DOCS_FOR",
    "GET_ENTITIES",
    "GET_KEPT",
    "GET_META",
    "GET_RELATIONS",
    "HUBS_NEXT_TO",
    "HUB_CANDIDATES",
    "INSERT_AUDIT",
    "INSERT_VERDICTS",
    "OUT_EDGES",
    "PATHS_DIRECTED",
    "PATHS_UNDIRECTED",
    "RELATION_HEADS",
    "RELATION_PROFILE",
    "RESET_WEIGHTS",
    "ROLLBACK",
    "SCAN_DOC_IDS",
    "SCAN_ENTITIES",
    "SCAN_ENTITIES_BETWEEN",
    "SCAN_ENTITY_IDS",
    "SCAN_RELATIONS",
    "SCAN_RELATION_SOURCES",
    "SCHEMA",
    "SCHEMA_DEGREES",
    "SET_DEGREES",
    "SET_KEPT",
    "SET_META",
    "SIBLING_EDGES",
    "TAILS_OF",
    "UPDATE_ENTITIES",
    "UPDATE_RELATION_SOURCES",
    "UPDATE_WEIGHTS",
    "VERDICTS_ALL",
    "VERDICTS_FOR",
    "VERDICT_SEEN",
    "WEIGHT_CHANGES",
    "WEIGHT_CHANGES_FOR",
    "WEIGHT_RANGE",
    "WHOLE_EDGES",
]

# -- schema -------------------------------------------------------------------------
SCHEMA: tuple[str, ...] = (
    "CREATE NODE TABLE IF NOT EXISTS Entity(id STRING, name STRING, key STRING, type STRING, "
    "aliases STRING, alias_keys STRING, description STRING, degree INT64, degrees STRING, PRIMARY KEY (id))",
    "CREATE REL TABLE IF NOT EXISTS REL(FROM Entity TO Entity, id STRING, type STRING, "
    "weight DOUBLE, source STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Doc(id STRING, entity_id STRING, text STRING, PRIMARY KEY (id))",
    "CREATE NODE TABLE IF NOT EXISTS WeightAudit(seq SERIAL, feedback_id STRING, run_id STRING, "
    "relation_id STRING, old_weight DOUBLE, new_weight DOUBLE, rating STRING, at STRING, PRIMARY KEY (seq))",
    "CREATE NODE TABLE IF NOT EXISTS Meta(key STRING, version STRING, PRIMARY KEY (key))",
    "CREATE NODE TABLE IF NOT EXISTS Verdict(seq SERIAL, feedback_id STRING, run_id STRING, "
    "relation_id STRING, verdict STRING, source STRING, at STRING, PRIMARY KEY (seq))",
    "CREATE NODE TABLE IF NOT EXISTS Kept(node STRING, groups STRING, PRIMARY KEY (node))",
)

#: The degree columns a store made before them gets when it opens (its degrees are then counted once).
SCHEMA_DEGREES: tuple[str, ...] = (
    "ALTER TABLE Entity ADD IF NOT EXISTS degree INT64 DEFAULT 0",
    "ALTER TABLE Entity ADD IF NOT EXISTS degrees STRING",
)

#: Column order of the Arrow table that :data:`COPY_ENTITIES` reads.
ENTITY_COLUMNS: tuple[str, ...] = (
    "id",
    "name",
    "key",
    "type",
    "aliases",
    "alias_keys",
    "description",
    "degree",
    "degrees",
)

# -- transactions -------------------------------------------------------------------
BEGIN = "BEGIN TRANSACTION"
COMMIT = "COMMIT"
ROLLBACK = "ROLLBACK"

# -- bulk load ----------------------------------------------------------------------
COPY_ENTITIES = "COPY Entity FROM $data"
#: Arrow columns: from, to, id, type, weight, source.
COPY_RELATIONS = "COPY REL FROM $data"
COPY_DOCS = "COPY Doc FROM $data"

UPDATE_ENTITIES = (
    "UNWIND $rows AS row MATCH (e:Entity {id: row.id}) "
    "SET e.type = row.type, e.aliases = row.aliases, e.alias_keys = row.alias_keys, "
    "e.description = row.description"
)
UPDATE_RELATION_SOURCES = (
    "UNWIND $rows AS row MATCH (h:Entity {id: row.head})-[r:REL]->(:Entity) WHERE r.id = row.id "
    "SET r.source = row.source"
)

SCAN_ENTITIES = (
    "MATCH (e:Entity) RETURN e.id AS id, e.name AS name, e.type AS type, e.aliases AS aliases, "
    "e.description AS description ORDER BY id"
)
SCAN_ENTITY_IDS = "MATCH (e:Entity) RETURN e.id AS id ORDER BY id"
SCAN_ENTITIES_BETWEEN = (
    "MATCH (e:Entity) WHERE e.id >= $first AND e.id <= $last RETURN e.id AS id, e.name AS name, "
    "e.type AS type, e.aliases AS aliases, e.description AS description ORDER BY id"
)
SCAN_RELATION_SOURCES = "MATCH (:Entity)-[r:REL]->(:Entity) RETURN r.id AS id, r.source AS source"
SCAN_DOC_IDS = "MATCH (d:Doc) RETURN d.id AS id"

GET_META = "MATCH (m:Meta {key: $key}) RETURN m.version"
SET_META = "MERGE (m:Meta {key: $key}) SET m.version = $version"

# -- clearing -----------------------------------------------------------------------
DELETE_ALL_ENTITIES = "MATCH (e:Entity) DETACH DELETE e"
DELETE_ALL_DOCS = "MATCH (d:Doc) DELETE d"
DELETE_ALL_AUDIT = "MATCH (a:WeightAudit) DELETE a"
DELETE_ALL_VERDICTS = "MATCH (v:Verdict) DELETE v"

# -- reading ------------------------------------------------------------------------
_ENTITY_RETURN = "e.id, e.name, e.type, e.aliases, e.description"
_REL_RETURN = "h.id, r.id, r.type, t.id, r.weight, r.source"

GET_ENTITIES = "UNWIND $ids AS x MATCH (e:Entity {id: x}) RETURN " + _ENTITY_RETURN
FIND_ENTITIES_BY_KEY = (
    "MATCH (e:Entity) WHERE e.key = $key OR contains(e.alias_keys, $framed) RETURN "
    + _ENTITY_RETURN
    + " ORDER BY e.id"
)
SCAN_RELATIONS = (
    "MATCH (h:Entity)-[r:REL]->(t:Entity) RETURN h.id AS head, r.id AS id, r.type AS type, "
    "t.id AS tail, r.weight AS weight, r.source AS source ORDER BY id"
)

_REL_ORDER = " ORDER BY h.id, r.type, r.weight DESC, t.id, r.id LIMIT $limit"
EDGES_OUT = (
    "MATCH (h:Entity)-[r:REL]->(t:Entity) WHERE h.id IN $ids AND ($any_type OR r.type IN $types) RETURN "
    + _REL_RETURN
    + _REL_ORDER
)
EDGES_IN = (
    "MATCH (h:Entity)-[r:REL]->(t:Entity) WHERE t.id IN $ids AND ($any_type OR r.type IN $types) RETURN "
    + _REL_RETURN
    + _REL_ORDER
)
EDGES_BOTH = (
    "MATCH (h:Entity)-[r:REL]->(t:Entity) WHERE (h.id IN $ids OR t.id IN $ids) "
    "AND ($any_type OR r.type IN $types) RETURN " + _REL_RETURN + _REL_ORDER
)
OUT_EDGES = (
    "MATCH (h:Entity {id: $id})-[r:REL]->(t:Entity) RETURN "
    + _REL_RETURN
    + " ORDER BY r.type, r.weight DESC, t.id, r.id"
)
# Shortest paths: LadybugDB's native ALL SHORTEST search. The bound cannot be a
# parameter, so these are templates whose ``__MAX_HOPS__`` token
# :func:`kgmind.stores.cypher.with_hop_bound` replaces by a validated int. Each row is
# one path: the ids of its inner nodes and of its relations, in path order.
_PATH_IDS = " RETURN properties(nodes(r), 'id'), properties(rels(r), 'id')"
#: All shortest directed paths ``$source`` → ``$target`` (template: hop bound).
PATHS_DIRECTED = (
    "MATCH (a:Entity {id: $source})-[r:REL* ALL SHORTEST 1..__MAX_HOPS__]->(b:Entity {id: $target})"
    + _PATH_IDS
)
#: All shortest paths between ``$source`` and ``$target`` ignoring direction (template).
PATHS_UNDIRECTED = (
    "MATCH (a:Entity {id: $source})-[r:REL* ALL SHORTEST 1..__MAX_HOPS__]-(b:Entity {id: $target})"
    + _PATH_IDS
)
GET_RELATIONS = "MATCH (h:Entity)-[r:REL]->(t:Entity) WHERE r.id IN $ids RETURN " + _REL_RETURN
GET_DOCS = "UNWIND $ids AS x MATCH (d:Doc {id: x}) RETURN d.id, d.entity_id, d.text"
GET_DOCS_FOR = (
    "MATCH (d:Doc) WHERE d.entity_id IN $ids RETURN d.id, d.entity_id, d.text ORDER BY d.entity_id, d.id"
)

COUNT_ENTITIES = "MATCH (e:Entity) RETURN count(e)"
COUNT_RELATIONS = "MATCH (:Entity)-[r:REL]->(:Entity) RETURN count(r)"
COUNT_DOCS = "MATCH (d:Doc) RETURN count(d)"
COUNT_ENTITIES_BY_TYPE = "MATCH (e:Entity) RETURN e.type, count(e) ORDER BY e.type"
#: Relation type × entity types of its ends: what role inference reads (kgmind.relations).
RELATION_PROFILE = (
    "MATCH (h:Entity)-[r:REL]->(t:Entity) RETURN r.type, h.type, t.type, count(r) "
    "ORDER BY r.type, h.type, t.type"
)

# -- degrees (kgmind.stores.degrees) and bounded reads --------------------------------
#: Per entity of ``$ids`` and relation type, its edges that are not disputed (``$hidden``), counted in
#: the engine: a refresh reads one row per (entity, type), never the edges (10M at the big KG's import).
DEGREES_OUT_OF = (
    "MATCH (e:Entity)-[r:REL]->(:Entity) WHERE e.id IN $ids AND NOT r.id IN $hidden"
    " RETURN e.id, r.type, count(*)"
)
DEGREES_IN_OF = (
    "MATCH (:Entity)-[r:REL]->(e:Entity) WHERE e.id IN $ids AND NOT r.id IN $hidden"
    " RETURN e.id, r.type, count(*)"
)
#: The same for every entity (a store counted whole: one made before degrees, a fresh bulk load).
DEGREES_OUT_ALL = (
    "MATCH (e:Entity)-[r:REL]->(:Entity) WHERE NOT r.id IN $hidden RETURN e.id, r.type, count(*)"
)
DEGREES_IN_ALL = "MATCH (:Entity)-[r:REL]->(e:Entity) WHERE NOT r.id IN $hidden RETURN e.id, r.type, count(*)"
SET_DEGREES = (
    "UNWIND $rows AS row MATCH (e:Entity {id: row.id}) SET e.degree = row.degree, e.degrees = row.degrees"
)
GET_DEGREES = "UNWIND $ids AS x MATCH (e:Entity {id: x}) RETURN e.id, e.degree, e.degrees"
DEGREE_VALUES = "MATCH (e:Entity) RETURN e.degree"
# Bounded reads: per node of $ids and relation type, the first $k edges by weight (heaviest
# first), then specificity (the other end's degree, lowest first), then id; disputed ids
# ($hidden) left out. LadybugDB has no CALL subquery: the edges are ordered, collected per
# (node, type) and cut in the engine, so only the kept ones reach Python. $rows bounds the
# ordered rows (a WITH … ORDER BY needs a LIMIT).
# How the nodes are found decides the cost on a big KG. ``WHERE n.id IN $ids`` scans every entity
# (7 ms a read on the generated 2M KG, five times that at 10M); ``UNWIND $ids … MATCH (n {id: x})-[r]->``
# is planned as a scan of every edge (~300 ms). ``UNWIND $ids AS x MATCH (n:Entity {id: x})`` (a
# primary-key lookup) followed by an ``OPTIONAL MATCH`` of the edges is planned as lookup, then
# extend: only the nodes' own edge lists are read. A node without edges gives one row with a null
# edge, dropped by ``r IS NOT NULL``.
_NODES = "UNWIND $ids AS x MATCH (n:Entity {id: x}) OPTIONAL MATCH "
_BOUNDED_KEEP = (
    " WITH n, r, m WHERE r IS NOT NULL AND NOT r.id IN $hidden"
    " WITH n, r, m ORDER BY n.id, r.type, r.weight DESC, m.degree, r.id LIMIT $rows"
    " WITH n.id AS node, r.type AS rtype, collect(r.id) AS rids, collect(m.id) AS others,"
    " collect(r.weight) AS ws, collect(r.source) AS srcs, collect(m.degree) AS degs"
)
_BOUNDED_RETURN = (
    " node, rtype, rids[1:$k], others[1:$k], ws[1:$k], srcs[1:$k], degs[1:$k] ORDER BY node, rtype"
)
#: Per node and type, its first ``$k`` outgoing edges, then its first ``$k`` incoming ones (see above):
#: one statement for both directions (a hub and five small nodes of the re-crawl: 33 ms against 21 + 20).
BOUNDED_EDGES = (
    _NODES
    + "(n)-[r:REL]->(m:Entity)"
    + _BOUNDED_KEEP
    + " RETURN 'out' AS side,"
    + _BOUNDED_RETURN
    + " UNION ALL "
    + _NODES
    + "(m:Entity)-[r:REL]->(n)"
    + _BOUNDED_KEEP
    + " RETURN 'in' AS side,"
    + _BOUNDED_RETURN
)
_WHOLE_GROUPS = (
    " WITH n, r, m WITH n.id AS node, r.type AS rtype, collect(r.id) AS rids, collect(m.id) AS others,"
    " collect(r.weight) AS ws, collect(r.source) AS srcs, collect(m.degree) AS degs RETURN "
)
_WHOLE_RETURN = " AS side, node, rtype, rids, others, ws, srcs, degs"
#: Every stored edge of the nodes ``$ids``, disputed ones included, grouped per node, type and
#: direction, in no order: the read of nodes whose every group holds at most ``k`` visible edges
#: (their kept degrees say so before the read). Nothing is cut, so the engine need not order
#: them, and a node's lists are whole, so the ways back are found in them without ``END_IDS``
#: (EMCKG-full, two nodes: ~4 ms against ~15 ms for ``BOUNDED_EDGES`` and ~4 ms for the ways back).
#: A node without edges gives a row with a null type and empty lists.
WHOLE_EDGES = (
    _NODES
    + "(n)-[r:REL]->(m:Entity)"
    + _WHOLE_GROUPS
    + "'out'"
    + _WHOLE_RETURN
    + " UNION ALL "
    + _NODES
    + "(m:Entity)-[r:REL]->(n)"
    + _WHOLE_GROUPS
    + "'in'"
    + _WHOLE_RETURN
)
#: The offsets of the entities ``$ids`` in their table: what ``EDGES_BETWEEN`` tests the other ends by.
ENTITY_OFFSETS = "UNWIND $ids AS x MATCH (e:Entity {id: x}) RETURN offset(id(e))"
#: The stored edges joining a node of ``$a`` to an entity at one of the offsets ``$offs``, either way,
#: disputed ones included (rows: head, id, type, tail, weight, source): a question's cut hubs and
#: its candidate diseases, or the other way round. ``$a``'s edge lists are read and each other end
#: is tested by its offset, which is in the list itself, not by its ``id``: an ``IN`` over a list
#: parameter compares each row with every element, and the ids are strings read from the entity
#: table (captured calls of the generated 10M KG, a hub side of ~90,000 edges against ~500
#: candidates: 6.4 s against 4.1 s over 32 reads; ``benchmarks/results/2026-11-29-votes-offsets``).
EDGES_BETWEEN = (
    "UNWIND $a AS x MATCH (n:Entity {id: x}) OPTIONAL MATCH (n)-[r:REL]->(m:Entity) "
    "WITH n, r, m WHERE r IS NOT NULL AND offset(id(m)) IN $offs "
    "RETURN n.id AS head, r.id AS id, r.type AS type, m.id AS tail, r.weight AS weight, r.source AS source"
    " UNION ALL "
    "UNWIND $a AS x MATCH (n:Entity {id: x}) OPTIONAL MATCH (m:Entity)-[r:REL]->(n) "
    "WITH n, r, m WHERE r IS NOT NULL AND offset(id(m)) IN $offs "
    "RETURN m.id AS head, r.id AS id, r.type AS type, n.id AS tail, r.weight AS weight, r.source AS source"
)
# -- each hub's kept edges (kgmind.stores.ladybug.kept) --------------------------------
#: The entities that may hold a group over ``$k`` (their degree says so): the hubs among them are
#: those whose kept degrees per type say so.
HUB_CANDIDATES = "MATCH (e:Entity) WHERE e.degree > $k RETURN e.id, e.degrees"
#: The possible hubs next to ``$ids`` (their lists hold edges to them, ordered by their degrees).
HUBS_NEXT_TO = (
    "UNWIND $ids AS x MATCH (n:Entity {id: x}) OPTIONAL MATCH (n)-[:REL]-(h:Entity) "
    "WITH h WHERE h.degree > $k RETURN DISTINCT h.id, h.degrees"
)
#: The tails of edges given as ``{head, id}`` rows (a weight write's edges, found from their heads).
TAILS_OF = (
    "UNWIND $rows AS row MATCH (h:Entity {id: row.head})-[r:REL]->(t:Entity) WHERE r.id = row.id RETURN t.id"
)
GET_KEPT = "UNWIND $ids AS x MATCH (k:Kept {node: x}) RETURN k.node, k.groups"
SET_KEPT = "UNWIND $rows AS row MERGE (k:Kept {node: row.node}) SET k.groups = row.groups"
DELETE_KEPT = "UNWIND $ids AS x MATCH (k:Kept {node: x}) DELETE k"
DELETE_ALL_KEPT = "MATCH (k:Kept) DELETE k"
#: The lightest and heaviest weight (equal: nothing learnt, what a pushed-down index cannot see itself).
WEIGHT_RANGE = "MATCH (:Entity)-[r:REL]->(:Entity) RETURN min(r.weight), max(r.weight)"
#: Every stored edge of the nodes ``$ids``, disputed ones included, as the other ends' ids and the
#: relation ids per node and direction: what the ways back of a bounded read and the disputed edges
#: it left out are found in (in Python). The other ends filtered in the engine (``a.id IN $others``)
#: cost a comparison per edge and other end: 50 hubs of the generated 2M KG 5.9 s against 0.3 s.
END_IDS = (
    _NODES
    + "(n)-[r:REL]->(b:Entity) RETURN 'out', n.id, collect(b.id), collect(r.id) UNION ALL "
    + _NODES
    + "(a:Entity)-[r:REL]->(n) RETURN 'in', n.id, collect(a.id), collect(r.id)"
)

# -- feedback -----------------------------------------------------------------------
FEEDBACK_SEEN = "MATCH (a:WeightAudit) WHERE a.feedback_id = $feedback_id RETURN count(a)"
RELATION_HEADS = "MATCH (h:Entity)-[r:REL]->(:Entity) WHERE r.id IN $ids RETURN r.id, h.id"
SIBLING_EDGES = (
    "UNWIND $heads AS x MATCH (h:Entity {id: x})-[r:REL]->(:Entity) RETURN h.id, r.id, r.weight "
    "ORDER BY h.id, r.id"
)
UPDATE_WEIGHTS = (
    "UNWIND $rows AS row MATCH (h:Entity {id: row.head})-[r:REL]->(:Entity) WHERE r.id = row.id "
    "SET r.weight = row.weight"
)
INSERT_AUDIT = (
    "UNWIND $rows AS row CREATE (:WeightAudit {feedback_id: row.feedback_id, run_id: row.run_id, "
    "relation_id: row.relation_id, old_weight: row.old_weight, new_weight: row.new_weight, "
    "rating: row.rating, at: row.at})"
)
_AUDIT_RETURN = "a.feedback_id, a.run_id, a.relation_id, a.old_weight, a.new_weight, a.rating, a.at"
WEIGHT_CHANGES = "MATCH (a:WeightAudit) RETURN " + _AUDIT_RETURN + " ORDER BY a.seq"
WEIGHT_CHANGES_FOR = (
    "MATCH (a:WeightAudit) WHERE a.feedback_id = $feedback_id RETURN " + _AUDIT_RETURN + " ORDER BY a.seq"
)
RESET_WEIGHTS = "MATCH (:Entity)-[r:REL]->(:Entity) WHERE r.weight <> 1.0 SET r.weight = 1.0 RETURN count(r)"


# -- per-claim verdicts -------------------------------------------------------------
VERDICT_SEEN = "MATCH (v:Verdict) WHERE v.feedback_id = $feedback_id RETURN count(v)"
INSERT_VERDICTS = (
    "UNWIND $rows AS row CREATE (:Verdict {feedback_id: row.feedback_id, run_id: row.run_id, "
    "relation_id: row.relation_id, verdict: row.verdict, source: row.source, at: row.at})"
)
_VERDICT_RETURN = "v.feedback_id, v.run_id, v.relation_id, v.verdict, v.source, v.at"
VERDICTS_ALL = "MATCH (v:Verdict) RETURN " + _VERDICT_RETURN + " ORDER BY v.seq"
VERDICTS_FOR = "MATCH (v:Verdict) WHERE v.relation_id IN $ids RETURN " + _VERDICT_RETURN + " ORDER BY v.seq"
