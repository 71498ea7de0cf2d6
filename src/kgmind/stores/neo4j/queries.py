"""Every Cypher statement the Neo4j backend sends, as named module-level constants.

Rules: query text is fixed at import time and never built by formatting or
concatenation; every value travels as a ``$parameter``. The one exception is the hop
bound of the shortest-path templates (see :mod:`kgmind.stores.cypher`). Labels and relationship types
that depend on data use Cypher's dynamic labels/types (``SET n:$(expr)``,
``MERGE (a)-[r:$(expr)]->(b)``), which need **Neo4j 5.26 or newer** (Cypher 5 or 25).

Schema:

* ``(:Entity:<TypeLabel> {id, name, key, type, aliases, description})``: ``key`` is
  :func:`kgmind.models.normalize_name` of the name; ``TypeLabel`` is the entity type
  in PascalCase (``disease`` → ``Disease``). ``type`` keeps the exact type string.
* ``(:Alias {key, entity_id})``: one node per alias key of an entity, so that a name
  lookup by alias is index-backed. Aliases have no relationships, so graph
  traversals never pass through them.
* ``(:Entity)-[:<UPPER_SNAKE type> {id, weight, source}]->(:Entity)``: one relationship
  type per relation type; read back as ``toLower(type(r))``.
* ``(:Doc {id, entity_id, text})``: knowledge documents.
* ``(:Feedback {id, run_id, rating, at})-[:CHANGED]->(:WeightAudit {...})``: the
  audit log; the uniqueness constraint on ``Feedback.id`` makes feedback idempotent.
* ``(:Feedback)-[:JUDGED]->(:Verdict {feedback_id, run_id, relation_id, verdict, source, at, seq})``:
  the verdict log (a restore is a lone ``Verdict`` row); dispute states are folded from it.
* ``(:KgmindMeta {id, version, weights_version, disputes_version})``: ``version`` is bumped by every load
  and clear (for :meth:`Neo4jStore.fingerprint`), ``weights_version`` in the transaction
  of every weight change (for :meth:`Neo4jStore.weights_version`).
"""

from __future__ import annotations

# -- schema ------------------------------------------------------------------------

SCHEMA_ENTITY_ID = "CREATE CONSTRAINT kgmind_entity_id IF NOT EXISTS FOR (n:Entity) REQUIRE n.id IS UNIQUE"
SCHEMA_ENTITY_KEY = "CREATE INDEX kgmind_entity_key IF NOT EXISTS FOR (n:Entity) ON (n.key)"
SCHEMA_ALIAS_KEY = "CREATE INDEX kgmind_alias_key IF NOT EXISTS FOR (a:Alias) ON (a.key)"
SCHEMA_ALIAS_ENTITY = "CREATE INDEX kgmind_alias_entity IF NOT EXISTS FOR (a:Alias) ON (a.entity_id)"
SCHEMA_DOC_ID = "CREATE CONSTRAINT kgmind_doc_id IF NOT EXISTS FOR (d:Doc) REQUIRE d.id IS UNIQUE"
SCHEMA_DOC_ENTITY = "CREATE INDEX kgmind_doc_entity IF NOT EXISTS FOR (d:Doc) ON (d.entity_id)"
SCHEMA_FEEDBACK_ID = (
    "CREATE CONSTRAINT kgmind_feedback_id IF NOT EXISTS FOR (f:Feedback) REQUIRE f.id IS UNIQUE"
)
SCHEMA_AUDIT_FEEDBACK = (
    "CREATE INDEX kgmind_audit_feedback IF NOT EXISTS FOR (w:WeightAudit) ON (w.feedback_id)"
)
SCHEMA_VERDICT_RELATION = (
    "CREATE INDEX kgmind_verdict_relation IF NOT EXISTS FOR (v:Verdict) ON (v.relation_id)"
)
SCHEMA_META_ID = "CREATE CONSTRAINT kgmind_meta_id IF NOT EXISTS FOR (m:KgmindMeta) REQUIRE m.id IS UNIQUE"

#: Run in this order by :meth:`Neo4jStore.ensure_schema` (each is idempotent).
SCHEMA_STATEMENTS: tuple[str, ...] = (
    SCHEMA_ENTITY_ID,
    SCHEMA_ENTITY_KEY,
    SCHEMA_ALIAS_KEY,
    SCHEMA_ALIAS_ENTITY,
    SCHEMA_DOC_ID,
    SCHEMA_DOC_ENTITY,
    SCHEMA_FEEDBACK_ID,
    SCHEMA_AUDIT_FEEDBACK,
    SCHEMA_VERDICT_RELATION,
    SCHEMA_META_ID,
)

# -- bulk load (all run inside one write transaction) --------------------------------

#: Current state of the entities about to be upserted (merged in Python, then written).
ENTITIES_FOR_MERGE = """
UNWIND $ids AS id
MATCH (n:Entity {id: id})
RETURN n.id AS id, n.name AS name, n.type AS type, n.aliases AS aliases, n.description AS description
"""

#: Upsert merged entity rows: properties, type label (old one removed) and alias nodes.
#: Row: {id, name, key, type, aliases, alias_keys, description, label, remove_labels}.
MERGE_ENTITIES = """
UNWIND $rows AS row
MERGE (n:Entity {id: row.id})
SET n.name = row.name, n.key = row.key, n.type = row.type,
    n.aliases = row.aliases, n.description = row.description
REMOVE n:$(row.remove_labels)
SET n:$(row.label)
FOREACH (ak IN row.alias_keys | MERGE (:Alias {key: ak, entity_id: row.id}))
RETURN count(n) AS written
"""

#: Which of ``$ids`` exist as entities (relation endpoints check).
EXISTING_ENTITY_IDS = """
UNWIND $ids AS id
MATCH (n:Entity {id: id})
RETURN n.id AS id
"""

#: Upsert relation rows; an existing relation keeps its weight (and its source if set).
#: Row: {id, head, tail, rel_type (UPPER_SNAKE), weight, source}.
MERGE_RELATIONS = """
UNWIND $rows AS row
MATCH (h:Entity {id: row.head})
MATCH (t:Entity {id: row.tail})
MERGE (h)-[r:$(row.rel_type) {id: row.id}]->(t)
ON CREATE SET r.weight = row.weight, r.source = row.source
ON MATCH SET r.source = CASE WHEN coalesce(r.source, '') = '' THEN row.source ELSE r.source END
RETURN count(r) AS written
"""

#: Upsert document rows (a stored doc id is kept as it is). Row: {id, entity_id, text}.
MERGE_DOCS = """
UNWIND $rows AS row
MERGE (d:Doc {id: row.id})
ON CREATE SET d.entity_id = row.entity_id, d.text = row.text
RETURN count(d) AS written
"""

#: Bump the content version (fingerprint) in the same transaction as the change.
BUMP_VERSION = """
MERGE (m:KgmindMeta {id: $meta_id})
SET m.version = coalesce(m.version, 0) + 1
RETURN m.version AS version
"""

#: Run last in a weight-changing transaction (feedback, reset): other processes see weights moved.
BUMP_WEIGHTS_VERSION = """
MERGE (m:KgmindMeta {id: $meta_id})
SET m.weights_version = coalesce(m.weights_version, 0) + 1
RETURN m.weights_version AS weights_version
"""

#: Run in the transaction of every verdict, restore and clear: cached disputed sets are stale.
BUMP_DISPUTES_VERSION = """
MERGE (m:KgmindMeta {id: $meta_id})
SET m.disputes_version = coalesce(m.disputes_version, 0) + 1
RETURN m.disputes_version AS disputes_version
"""

# -- clear -----------------------------------------------------------------------------

#: Delete every kgmind node (and so every relationship) in batches of committed
#: transactions; must run in an auto-commit transaction (``session.run``).
CLEAR_ALL = """
MATCH (n)
WHERE n:Entity OR n:Alias OR n:Doc OR n:Feedback OR n:WeightAudit OR n:Verdict
CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS
"""

# -- reads -----------------------------------------------------------------------------

GET_ENTITIES = """
UNWIND $ids AS id
MATCH (n:Entity {id: id})
RETURN n.id AS id, n.name AS name, n.type AS type, n.aliases AS aliases, n.description AS description
"""

#: Entities whose name key or an alias key equals ``$key`` (both index-backed).
FIND_ENTITIES = """
MATCH (n:Entity {key: $key})
RETURN n.id AS id, n.name AS name, n.type AS type, n.aliases AS aliases,
       n.description AS description
UNION
MATCH (a:Alias {key: $key})
MATCH (n:Entity {id: a.entity_id})
RETURN n.id AS id, n.name AS name, n.type AS type, n.aliases AS aliases,
       n.description AS description
"""

ITER_ENTITIES = """
MATCH (n:Entity)
RETURN n.id AS id, n.name AS name, n.type AS type, n.aliases AS aliases, n.description AS description
ORDER BY id
"""

ITER_RELATIONS = """
MATCH (h:Entity)-[r]->(t:Entity)
RETURN r.id AS id, h.id AS head, toLower(type(r)) AS type, t.id AS tail, r.weight AS weight,
       r.source AS source
ORDER BY id
"""

#: The shared tail of the neighbor statements: one row per edge, in the protocol's order.
_NEIGHBORS_RETURN = """
RETURN r.id AS id, h.id AS head, toLower(type(r)) AS type, t.id AS tail, r.weight AS weight,
       r.source AS source
ORDER BY head, type, weight DESC, tail
LIMIT $limit
"""

#: Outgoing edges of ``$ids``; ``$types`` (lower snake) or null for all; at most ``$limit``.
NEIGHBORS_OUT = (
    "MATCH (h:Entity)-[r]->(t:Entity) WHERE h.id IN $ids AND ($types IS NULL OR toLower(type(r)) IN $types)"
    + _NEIGHBORS_RETURN
)

#: Incoming edges of ``$ids``.
NEIGHBORS_IN = (
    "MATCH (h:Entity)-[r]->(t:Entity) WHERE t.id IN $ids AND ($types IS NULL OR toLower(type(r)) IN $types)"
    + _NEIGHBORS_RETURN
)

#: Edges touching ``$ids`` in either direction (each edge once).
NEIGHBORS_BOTH = (
    """
MATCH (x:Entity)-[r]-(:Entity)
WHERE x.id IN $ids AND ($types IS NULL OR toLower(type(r)) IN $types)
WITH DISTINCT r
WITH r, startNode(r) AS h, endNode(r) AS t"""
    + _NEIGHBORS_RETURN
)

#: Every outgoing edge of one node (KGCoT's DFS step).
OUT_EDGES = """
MATCH (h:Entity {id: $id})-[r]->(t:Entity)
RETURN r.id AS id, h.id AS head, toLower(type(r)) AS type, t.id AS tail, r.weight AS weight,
       r.source AS source
ORDER BY type, weight DESC, tail
"""

#: Relations by id. Neo4j cannot index a property across all relationship types, so
#: this scans relationships; it serves feedback and evidence display only (retrieval
#: reads an in-memory index built from ITER_RELATIONS).
GET_RELATIONS = """
MATCH (h:Entity)-[r]->(t:Entity)
WHERE r.id IN $ids
RETURN r.id AS id, h.id AS head, toLower(type(r)) AS type, t.id AS tail, r.weight AS weight,
       r.source AS source
"""

DOCS_FOR = """
MATCH (d:Doc)
WHERE d.entity_id IN $ids
RETURN d.id AS id, d.entity_id AS entity_id, d.text AS text
ORDER BY entity_id, id
"""

GET_DOCS = """
UNWIND $ids AS id
MATCH (d:Doc {id: id})
RETURN d.id AS id, d.entity_id AS entity_id, d.text AS text
"""

STATS_ENTITIES = """
MATCH (n:Entity)
RETURN n.type AS type, count(*) AS count
"""

STATS_RELATIONS = """
MATCH (:Entity)-[r]->(:Entity)
RETURN toLower(type(r)) AS type, count(*) AS count
"""

#: Relation type × entity types of its ends: what role inference reads (kgmind.relations).
RELATION_PROFILE = """
MATCH (h:Entity)-[r]->(t:Entity)
RETURN toLower(type(r)) AS type, h.type AS head_type, t.type AS tail_type, count(*) AS count
ORDER BY type, head_type, tail_type
"""

#: The relation roles a user gave at import (JSON text), "" when none.
GET_SCHEMA = """
OPTIONAL MATCH (m:KgmindMeta {id: $meta_id})
RETURN coalesce(m.relation_schema, "") AS schema
"""

#: Keep the relation roles a user gave and bump the content version, so indexes rebuild.
SET_SCHEMA = """
MERGE (m:KgmindMeta {id: $meta_id})
SET m.relation_schema = $schema, m.version = coalesce(m.version, 0) + 1
RETURN m.version AS version
"""

STATS_DOCS = """
MATCH (d:Doc)
RETURN count(d) AS count
"""

#: Content version and counts (entity and relation counts come from the count store).
WEIGHTS_VERSION = """
OPTIONAL MATCH (m:KgmindMeta {id: $meta_id})
RETURN coalesce(m.weights_version, 0) AS weights_version
"""

FINGERPRINT = """
OPTIONAL MATCH (m:KgmindMeta {id: $meta_id})
WITH coalesce(m.version, 0) AS version
CALL () { MATCH (n:Entity) RETURN count(n) AS entities }
CALL () { MATCH (:Entity)-[r]->() RETURN count(r) AS relations }
RETURN version, entities, relations
"""

#: The labels of one entity node (diagnostics and the live tests).
ENTITY_LABELS = """
MATCH (n:Entity {id: $id})
RETURN labels(n) AS labels
"""

# -- shortest paths ----------------------------------------------------------------------
# The variable-length bound cannot be a parameter: these are templates whose
# ``__MAX_HOPS__`` token :func:`kgmind.stores.cypher.with_hop_bound` replaces by a
# validated int (the only run-time completion of query text).

_PATHS_RETURN = """
WITH p, [n IN nodes(p) | n.id] AS node_ids, [r IN relationships(p) | r.id] AS rel_ids
ORDER BY node_ids, rel_ids
LIMIT $limit
RETURN node_ids AS nodes,
       [r IN relationships(p) | {id: r.id, head: startNode(r).id, type: toLower(type(r)),
        tail: endNode(r).id, weight: r.weight, source: r.source}] AS relations
"""

#: All shortest directed paths ``$source`` → ``$target`` (template: hop bound).
PATHS_DIRECTED = (
    "MATCH p = allShortestPaths((a:Entity {id: $source})-[*..__MAX_HOPS__]->(b:Entity {id: $target}))"
    + _PATHS_RETURN
)

#: All shortest paths between ``$source`` and ``$target`` ignoring direction (template).
PATHS_UNDIRECTED = (
    "MATCH p = allShortestPaths((a:Entity {id: $source})-[*..__MAX_HOPS__]-(b:Entity {id: $target}))"
    + _PATHS_RETURN
)

# -- feedback (all run inside one write transaction) ------------------------------------

#: Claim the feedback id; ``created`` is false when it was already applied.
CLAIM_FEEDBACK = """
MERGE (f:Feedback {id: $feedback_id})
ON CREATE SET f.run_id = $run_id, f.rating = $rating, f.at = $at, f.claiming = true
WITH f, f.claiming IS NOT NULL AS created
REMOVE f.claiming
RETURN created
"""

#: Resolve relation ids to their heads and take the write lock on each head node
#: (a property write locks the node until commit; ordered by id against deadlocks).
LOCK_HEADS = """
MATCH (h:Entity)-[r]->(:Entity)
WHERE r.id IN $relation_ids
WITH h, collect(r.id) AS rel_ids
ORDER BY h.id
SET h.kgmind_lock = true
REMOVE h.kgmind_lock
RETURN h.id AS head, rel_ids
"""

#: Every outgoing edge (id, weight) of the locked heads: the rule's siblings.
SIBLING_WEIGHTS = """
MATCH (h:Entity)-[r]->(:Entity)
WHERE h.id IN $heads
RETURN h.id AS head, r.id AS id, r.weight AS weight
ORDER BY head, id
"""

#: Write new weights and one audit node per change.
#: Row: {head, id, old_weight, new_weight, seq}.
WRITE_WEIGHTS = """
MATCH (f:Feedback {id: $feedback_id})
UNWIND $rows AS row
MATCH (h:Entity {id: row.head})-[r]->(:Entity)
WHERE r.id = row.id
SET r.weight = row.new_weight
CREATE (f)-[:CHANGED]->(:WeightAudit {feedback_id: $feedback_id, run_id: $run_id,
    relation_id: row.id, old_weight: row.old_weight, new_weight: row.new_weight,
    rating: $rating, at: $at, seq: row.seq})
RETURN count(r) AS written
"""

#: Audit rows, oldest first; ``$feedback_id`` null for all.
WEIGHT_CHANGES = """
MATCH (w:WeightAudit)
WHERE $feedback_id IS NULL OR w.feedback_id = $feedback_id
RETURN w.feedback_id AS feedback_id, w.run_id AS run_id, w.relation_id AS relation_id,
       w.old_weight AS old_weight, w.new_weight AS new_weight, w.rating AS rating, w.at AS at
ORDER BY w.at, w.seq
"""

#: Set every weight back to 1.0; returns how many edges had another weight.
RESET_WEIGHTS = """
MATCH (:Entity)-[r]->(:Entity)
WHERE r.weight <> 1.0
SET r.weight = 1.0
RETURN count(r) AS reset
"""

#: Drop the weight audit log (run in the same transaction as RESET_WEIGHTS). The verdict log
#: stays, with the Feedback nodes that claimed its verdicts, so a repeated verdict stays a no-op.
DROP_AUDIT = """
MATCH (n)
WHERE n:WeightAudit OR (n:Feedback AND NOT (n)-[:JUDGED]->(:Verdict))
DETACH DELETE n
RETURN count(n) AS deleted
"""

# -- per-claim verdicts (run inside one write transaction, after CLAIM_FEEDBACK and LOCK_HEADS) --

#: One verdict node per judged edge, under the claimed feedback. Row: {relation_id, verdict, seq}.
WRITE_VERDICTS = """
MATCH (f:Feedback {id: $feedback_id})
UNWIND $rows AS row
CREATE (f)-[:JUDGED]->(:Verdict {feedback_id: $feedback_id, run_id: $run_id, relation_id: row.relation_id,
    verdict: row.verdict, source: $source, at: $at, seq: row.seq})
RETURN count(*) AS written
"""

#: A restore row: the edge's earlier verdicts stop counting (after LOCK_HEADS on its head).
WRITE_RESTORE = """
CREATE (v:Verdict {feedback_id: $feedback_id, run_id: $run_id, relation_id: $relation_id,
    verdict: $verdict, source: $source, at: $at, seq: 0})
RETURN v.at AS at
"""

#: Verdict rows oldest first; ``$ids`` null for every edge.
VERDICTS = """
MATCH (v:Verdict)
WHERE $ids IS NULL OR v.relation_id IN $ids
RETURN v.feedback_id AS feedback_id, v.run_id AS run_id, v.relation_id AS relation_id,
       v.verdict AS verdict, v.source AS source, v.at AS at
ORDER BY v.at, v.seq
"""

DISPUTES_VERSION = """
OPTIONAL MATCH (m:KgmindMeta {id: $meta_id})
RETURN coalesce(m.disputes_version, 0) AS disputes_version
"""

# -- degrees (kgmind.stores.degrees) and bounded reads (issue 42) -------------------------

#: The edges touching ``$ids`` as head, type, tail, id (what their degrees count).
DEGREE_EDGES = """
UNWIND $ids AS x
MATCH (e:Entity {id: x})-[r]-(:Entity)
WITH DISTINCT r
RETURN startNode(r).id AS head, toLower(type(r)) AS type, endNode(r).id AS tail, r.id AS id
"""

#: Write counted degrees. Row: {id, degree, degrees (JSON {type: [out, in]})}.
SET_DEGREES = """
UNWIND $rows AS row
MATCH (e:Entity {id: row.id})
SET e.degree = row.degree, e.degrees = row.degrees
"""

#: The kept degrees of ``$ids`` (an entity no import counted reads as 0).
GET_DEGREES = """
UNWIND $ids AS x
MATCH (e:Entity {id: x})
RETURN e.id AS id, coalesce(e.degree, 0) AS degree, e.degrees AS degrees
"""

#: Every entity's degree (a hub percentile is taken over them).
DEGREE_VALUES = """
MATCH (e:Entity)
RETURN coalesce(e.degree, 0) AS degree
"""

#: The relationship types the database holds (a bounded read runs one subquery per type).
RELATIONSHIP_TYPES = """
CALL db.relationshipTypes() YIELD relationshipType
RETURN toLower(relationshipType) AS type
"""

#: Per node of ``$ids``, relation type (of ``$types``) and direction, its first ``$k`` edges: the
#: heaviest, then the most specific (the other end's kept degree, lowest first), then by id;
#: ``$hidden`` (disputed) ids left out. Each row says whether the KG stores a way back.
BOUNDED_EDGES = """
UNWIND $ids AS x
MATCH (n:Entity {id: x})
UNWIND $types AS rtype
CALL (n, rtype) {
  MATCH (n)-[r]->(m:Entity)
  WHERE toLower(type(r)) = rtype AND NOT r.id IN $hidden
  RETURN true AS outgoing, r, m
  ORDER BY r.weight DESC, coalesce(m.degree, 0), r.id
  LIMIT $k
  UNION ALL
  MATCH (m:Entity)-[r]->(n)
  WHERE toLower(type(r)) = rtype AND NOT r.id IN $hidden
  RETURN false AS outgoing, r, m
  ORDER BY r.weight DESC, coalesce(m.degree, 0), r.id
  LIMIT $k
}
WITH n, rtype, outgoing, r, m, startNode(r) AS h, endNode(r) AS t
RETURN n.id AS node, outgoing, r.id AS id, h.id AS head, rtype AS type, t.id AS tail, r.weight AS weight,
       r.source AS source, coalesce(m.degree, 0) AS degree, EXISTS { (t)-->(h) } AS back
"""

#: The stored edges joining a node of ``$a`` to a node of ``$b``, either way, disputed ones included:
#: a question's cut hubs and its candidate diseases (the votes of a hub for the diseases its bounded read
#: left out), read from ``$a``'s side: the side with fewer edges, the hubs on a KG of the re-crawl's size,
#: the candidates once shared hubs outgrow them. ``DISTINCT``: an edge with both ends in both sets
#: matches from each end.
EDGES_BETWEEN = """
UNWIND $a AS x
MATCH (n:Entity {id: x})-[r]-(m:Entity)
WHERE m.id IN $b
WITH DISTINCT r
RETURN r.id AS id, startNode(r).id AS head, toLower(type(r)) AS type, endNode(r).id AS tail,
       r.weight AS weight, r.source AS source
"""

#: The lightest and heaviest weight (equal: nothing learnt, what a pushed-down index cannot see itself).
WEIGHT_RANGE = """
MATCH (:Entity)-[r]->(:Entity)
RETURN min(r.weight) AS lightest, max(r.weight) AS heaviest
"""
