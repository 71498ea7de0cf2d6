"""Injection: hostile names and texts travel as data through import, lookup, linking, exploration, feedback.

LadybugDB runs for real; Neo4j is checked at the driver boundary (a recording mock).
The graph is compared as a canonical dump before and after; only intended weight
changes may differ. An AST scan fails if any module builds query text by formatting.
"""

from __future__ import annotations

import ast
import csv
import json
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

import neo4j
import pytest
from rel_harness import (
    BIG,
    HOSTILE_NAMES,
    HOSTILE_REL_TYPES,
    canonical_dump,
    hostile_kg,
    weights_of,
)

from kgmind.importers import import_kg
from kgmind.models import Entity, Relation, entity_id
from kgmind.retrievers import exploration
from kgmind.retrievers.graph_index_cache import get_graph_index
from kgmind.retrievers.linker import get_linker
from kgmind.retrievers.ner import extract_mentions
from kgmind.stores.factory import open_store
from kgmind.stores.feedback import apply_feedback
from kgmind.stores.protocol import GraphStore, StoreError
from kgmind.text import repair_escapes

SRC = Path(__file__).resolve().parents[2] / "src" / "kgmind"

#: Query payloads that are NOT in the KG: lookups must simply find nothing.
PAYLOADS = [
    "x') RETURN 1 //",
    "MATCH (n) DETACH DELETE n",
    "CALL db.clearQueryCaches()",
    "'; DROP TABLE Entity; --",
    "$ids",
    "\\",
    "}",
    "`",
]


@pytest.fixture
def hostile_store(tmp_path: Path) -> GraphStore:
    store = open_store(f"ladybug:{tmp_path / 'kg'}", create=True)
    ents, rels, docs = hostile_kg()
    store.bulk_load(ents, rels, docs)
    return store


def test_hostile_kg_round_trips_exactly(hostile_store: GraphStore) -> None:
    ents, rels, docs = hostile_kg()
    stored = {e.id: e for e in hostile_store.iter_entities()}
    assert len(stored) == len(ents)
    for e in ents:
        got = stored[e.id]
        assert got.name == e.name and got.description == e.description
        assert sorted(got.aliases) == sorted(e.aliases)
    assert {r.id: r.source for r in hostile_store.iter_relations()} == {r.id: r.source for r in rels}
    texts = {d.text for d in hostile_store.docs_for([e.id for e in ents])}
    assert BIG in texts and {d.text for d in docs} == texts


def test_lookups_with_hostile_values_change_nothing(hostile_store: GraphStore) -> None:
    before = canonical_dump(hostile_store)
    for name in [*HOSTILE_NAMES, BIG]:
        found = hostile_store.find_entities(name)
        assert [e.id for e in found] == [entity_id(name)], name
        eid = entity_id(name)
        assert hostile_store.get_entities([eid])[0].name == name.strip()
        assert hostile_store.neighbors([eid], direction="both")
        assert hostile_store.out_edges(eid)
        assert hostile_store.neighbors([eid], relation_types=[name], limit=3) == []
    for payload in PAYLOADS:
        assert hostile_store.find_entities(payload) == []
        assert hostile_store.get_entities([payload]) == []
        assert hostile_store.get_relations([payload]) == []
        assert hostile_store.get_docs([payload]) == []
        assert hostile_store.docs_for([payload]) == []
        assert hostile_store.neighbors([payload], direction="both") == []
        assert hostile_store.paths(payload, payload, 3) == []
        assert hostile_store.weight_changes(payload) == []
    a, b = entity_id(HOSTILE_NAMES[0]), entity_id(HOSTILE_NAMES[2])
    assert hostile_store.paths(a, b, 3, directed=False)
    assert hostile_store.stats().entities_total == len(HOSTILE_NAMES) + 2
    assert canonical_dump(hostile_store) == before


def test_confusables_do_not_collapse(hostile_store: GraphStore) -> None:
    """A Cyrillic 'е' is a different entity; full-width text folds as normalize_name says."""
    plain = hostile_store.find_entities("Fever")
    cyrillic = hostile_store.find_entities("Fеver")
    assert [e.name for e in plain] == ["Fever"]
    assert [e.name for e in cyrillic] == ["Fеver"]
    assert [e.id for e in hostile_store.find_entities("full\u3000width pain")] == [
        entity_id("ＦＵＬＬ　ｗｉｄｔｈ ｐａｉｎ")
    ]
    # zero-width characters are not whitespace: the name without them is another key
    assert hostile_store.find_entities("zerowidthjoiner") == []


def test_reloading_the_same_hostile_kg_is_idempotent(hostile_store: GraphStore) -> None:
    before = json.loads(canonical_dump(hostile_store))
    ents, rels, docs = hostile_kg()
    hostile_store.bulk_load(ents, rels, docs)
    assert json.loads(canonical_dump(hostile_store)) == before


def test_triples_importer_keeps_hostile_names_and_rejects_hostile_types(tmp_path: Path) -> None:
    path = tmp_path / "hostile.csv"
    names = [*HOSTILE_NAMES, BIG]
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["head", "relation", "tail", "weight"])
        for i, name in enumerate(names):
            w.writerow([name, "has_symptom", names[(i + 1) % len(names)], "1.5"])
        for bad in HOSTILE_REL_TYPES:
            w.writerow(["Flu", bad, "Fever", "1"])
    store = open_store(f"ladybug:{tmp_path / 'kg'}", create=True)
    summary = import_kg(path, "triples", store, progress=False)
    assert summary.rows == len(names)
    assert summary.skipped == len(HOSTILE_REL_TYPES)
    assert all("relation type" in e.reason for e in summary.errors)
    stored = {e.name for e in store.iter_entities()}
    # stored as data, only cleaned the way every import cleans text (a backslash before a quote goes)
    assert stored == {repair_escapes(n.strip()) for n in names}
    assert "back\\slash ' escape" in stored  # the other backslash is kept
    assert {r.type for r in store.iter_relations()} == {"has_symptom"}
    assert all(r.weight == 1.5 for r in store.iter_relations())
    assert store.find_entities("Flu") == []  # rows with a hostile relation type wrote nothing


def test_linking_and_ner_with_hostile_text(hostile_store: GraphStore) -> None:
    before = canonical_dump(hostile_store)
    linker = get_linker(hostile_store)
    for name in HOSTILE_NAMES:
        linked = linker.link([name], top_k=3)
        assert linked and linked[0].entity_id == entity_id(name), name
    assert all(le.entity_id for le in linker.link(PAYLOADS, top_k=3, threshold=None))
    question = "Does " + " and ".join(HOSTILE_NAMES[:6]) + " cause " + BIG[:3000] + "?"
    mentions = extract_mentions(question, hostile_store)
    ids = {m.entity_id for m in mentions if m.entity_id}
    assert entity_id(HOSTILE_NAMES[0]) in ids
    assert canonical_dump(hostile_store) == before


def test_exploration_and_feedback_on_hostile_kg(hostile_store: GraphStore) -> None:
    before = canonical_dump(hostile_store, weights=False)
    w0 = weights_of(hostile_store)
    gi = get_graph_index(hostile_store)
    ids = [entity_id(n) for n in HOSTILE_NAMES[:8]]
    produced = [
        *exploration.path_evidence(gi, ids, max_hops=3),
        *exploration.neighbor_evidence(gi, ids),
        *exploration.hykge_chains(gi, ids),
        *exploration.weighted_dfs_chains(gi, ids, store=hostile_store),
    ]
    assert produced
    kinds = {e.kind for e in produced}
    assert kinds >= {"path", "neighbor", "chain", "kgcot"}
    names = {t for e in produced for tr in e.triples for t in (tr[0], tr[2])}
    assert names & set(HOSTILE_NAMES)  # names are rendered verbatim, not escaped or mangled
    rel_ids = sorted({r for e in produced for r in e.relation_ids})[:4]
    changes = apply_feedback(hostile_store, "run-'}) DETACH DELETE n //", "excellent", rel_ids)
    assert changes
    assert canonical_dump(hostile_store, weights=False) == before
    w1 = weights_of(hostile_store)
    changed = {rid for rid in w0 if w0[rid] != w1[rid]}
    assert changed == {c.relation_id for c in changes}
    rels = {r.id: r for r in hostile_store.iter_relations()}
    heads = {rels[r].head for r in rel_ids}
    assert all(rels[rid].head in heads for rid in changed)  # only siblings of the rated edges
    assert [c.run_id for c in hostile_store.weight_changes()] == ["run-'}) DETACH DELETE n //"] * len(changes)


def test_failed_load_with_unknown_endpoint_writes_nothing(hostile_store: GraphStore) -> None:
    before = canonical_dump(hostile_store)
    bad = Relation(head=entity_id(HOSTILE_NAMES[0]), type="has_symptom", tail="e'}) DETACH DELETE n //")
    with pytest.raises(StoreError, match="unknown"):
        hostile_store.bulk_load([Entity(name="new one ' }")], [bad])
    assert canonical_dump(hostile_store) == before


# -- Neo4j at the driver boundary -----------------------------------------------------------


class RecordingDriver:
    """A neo4j.Driver mock that records every (query, params) and answers from simple rules."""

    def __init__(self, known_ids: set[str]) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.known_ids = known_ids
        self.driver = MagicMock(spec=neo4j.Driver)
        session = MagicMock(spec=neo4j.Session)
        session.__enter__.return_value = session
        session.__exit__.return_value = None
        self.driver.session.return_value = session
        tx = MagicMock(spec=neo4j.ManagedTransaction)
        tx.run.side_effect = self._run
        session.run.side_effect = self._run
        session.execute_write.side_effect = lambda fn, *a, **k: fn(tx, *a, **k)
        session.execute_read.side_effect = lambda fn, *a, **k: fn(tx, *a, **k)
        self.driver.execute_query.side_effect = self._execute_query

    def _answer(self, query: str, params: Any) -> list[dict[str, Any]]:
        from kgmind.stores.neo4j import queries as q

        params = params or {}
        if query == q.EXISTING_ENTITY_IDS:
            return [{"id": i} for i in params["ids"] if i in self.known_ids]
        if query == q.CLAIM_FEEDBACK:
            return [{"created": True}]
        return []

    def _run(self, query: str, params: Any = None, **kwargs: Any) -> Any:
        self.calls.append((query, params))
        rows = self._answer(query, params)
        result = MagicMock()
        result.__iter__.side_effect = lambda: iter(rows)
        result.single.return_value = rows[0] if rows else None
        return result

    def _execute_query(self, query: str, params: Any = None, **kwargs: Any) -> neo4j.EagerResult:
        self.calls.append((query, params))
        return neo4j.EagerResult(records=self._answer(query, params), summary=MagicMock(), keys=[])  # type: ignore[arg-type]


def _neo4j_constants() -> set[str]:
    """Every queries.py statement; a hop-bound template with each bound the store may use."""
    from kgmind.stores.cypher import HOPS, with_hop_bound
    from kgmind.stores.neo4j import queries as q
    from kgmind.stores.neo4j.store import MAX_PATH_HOPS

    out: set[str] = set()
    for value in vars(q).values():
        if isinstance(value, str) and HOPS in value:
            out.update(with_hop_bound(value, h, most=MAX_PATH_HOPS) for h in range(1, MAX_PATH_HOPS + 1))
        elif isinstance(value, str):
            out.add(value)
        elif isinstance(value, tuple | list):
            out.update(v for v in value if isinstance(v, str))
        elif isinstance(value, dict):
            out.update(v for v in value.values() if isinstance(v, str))
    return out


def _strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings_in(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings_in(v)]
    return []


def test_neo4j_hostile_values_travel_only_as_parameters() -> None:
    from kgmind.stores.neo4j import Neo4jStore

    ents, rels, docs = hostile_kg()
    # entity types become labels: a hostile type must also arrive as a parameter
    ents[1] = ents[1].model_copy(update={"type": "disease`) DETACH DELETE n //"})
    rec = RecordingDriver({e.id for e in ents})
    store = Neo4jStore("neo4j://example:7687", driver=rec.driver)
    store.bulk_load(ents, rels, docs)
    for name in [*HOSTILE_NAMES, *PAYLOADS]:
        store.find_entities(name)
        store.get_entities([name])
        store.neighbors([name], direction="both", relation_types=["has_symptom"])
        store.out_edges(name)
        store.docs_for([name])
        store.get_docs([name])
        store.get_relations([name])
        store.weight_changes(name)
        store.paths(name, entity_id("Fever"), 3, directed=False)
    constants = _neo4j_constants()
    assert rec.calls
    hostile = [*HOSTILE_NAMES, *PAYLOADS, BIG, "disease`) DETACH DELETE n //"]
    distinctive = [h for h in hostile if not any(h in c for c in constants)]  # not "$ids", "}" …
    assert len(distinctive) >= len(HOSTILE_NAMES)
    seen_in_params: set[str] = set()
    for query, params in rec.calls:
        assert query in constants, f"query text is not a queries.py constant: {query[:120]!r}"
        for h in distinctive:
            assert h not in query
        param_strings = _strings_in(params)
        for h in hostile:
            if any(h in s for s in param_strings):
                seen_in_params.add(h)
    # every hostile value reached the server, as a parameter
    assert set(HOSTILE_NAMES) | {BIG} <= seen_in_params
    labels = {row["label"] for _, p in rec.calls if p and "rows" in p for row in p["rows"] if "label" in row}
    assert any("DETACH" in label for label in labels)  # the hostile type became a label *parameter*


def test_neo4j_feedback_with_hostile_ids_is_parameterised() -> None:
    from kgmind.stores.neo4j import Neo4jStore
    from kgmind.stores.neo4j import queries as q

    rec = RecordingDriver(set())
    store = Neo4jStore("neo4j://example:7687", driver=rec.driver)
    store._schema_ready = True
    bad_id = "r'}) MATCH (n) DETACH DELETE n //"
    with pytest.raises(StoreError, match="unknown relation ids"):
        store.apply_weight_updates("fb-`$", "run-\\", "excellent", [bad_id], lambda s, i: {})
    queries = [c[0] for c in rec.calls]
    assert queries == [q.CLAIM_FEEDBACK, q.LOCK_HEADS]
    assert rec.calls[1][1] == {"relation_ids": [bad_id]}


# -- static guarantees: no query text is ever built from values --------------------------------

_QUERY_METHODS = {"execute", "run", "execute_query"}

#: The one audited completion of query text (kgmind/stores/cypher.py): it puts a
#: validated int hop bound into a queries.py template (see the tests below).
_AUDITED_BUILDERS = {"with_hop_bound"}


def _queries_modules() -> list[Path]:
    return sorted(SRC.rglob("queries.py"))


def _const_names(mod: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in mod.body:
        if isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _is_literal_expr(node: ast.AST, consts: set[str]) -> bool:
    """A string literal, a module constant, ``+`` of those, or a tuple/dict/comprehension-free container."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str | int | float | bool) or node.value is None
    if isinstance(node, ast.Name):
        return node.id in consts
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _is_literal_expr(node.left, consts) and _is_literal_expr(node.right, consts)
    if isinstance(node, ast.Tuple | ast.List):
        return all(_is_literal_expr(e, consts) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_literal_expr(k, consts) for k in node.keys) and all(
            _is_literal_expr(v, consts) for v in node.values
        )
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("frozenset", "tuple")
    ):
        return all(_is_literal_expr(a, consts) for a in node.args)
    return False


def test_queries_modules_hold_only_literal_constants() -> None:
    mods = _queries_modules()
    assert len(mods) >= 2, mods  # ladybug + neo4j
    for path in mods:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        consts = _const_names(tree)
        for node in tree.body:
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue  # docstring
            if isinstance(node, ast.ImportFrom | ast.Import):
                continue
            assert isinstance(node, ast.Assign | ast.AnnAssign), (
                f"{path}:{node.lineno}: only constant assignments are allowed in a queries module"
            )
            value = node.value
            assert value is not None
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(target, ast.Name) and target.id == "__all__":
                continue
            assert _is_literal_expr(value, consts - {getattr(target, "id", "")}), (
                f"{path}:{node.lineno}: {ast.unparse(target)} is not built from literals only"
            )


def _query_modules_aliases(tree: ast.Module) -> set[str]:
    """Names bound to a queries module in this file (``from … import queries as q``)."""
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            aliases.update(a.asname or a.name for a in node.names if a.name == "queries")
    return aliases


def _imported_query_constants(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith(".queries"):
            names.update(a.asname or a.name for a in node.names)
    return names


def _query_arg(call: ast.Call) -> ast.AST | None:
    if call.args:
        return call.args[0]
    for kw in call.keywords:
        if kw.arg in ("query", "query_", "cypher", "statement"):
            return kw.value
    return None


def _ok_query_expr(node: ast.AST, mod_aliases: set[str], const_names: set[str], local_ok: set[str]) -> bool:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _AUDITED_BUILDERS:
        template = node.args[0] if node.args else None  # with_hop_bound(q.A if directed else q.B, hops, …)
        parts = [template.body, template.orelse] if isinstance(template, ast.IfExp) else [template]
        return all(p is not None and _ok_query_expr(p, mod_aliases, const_names, local_ok) for p in parts)
    if isinstance(node, ast.Attribute):
        return isinstance(node.value, ast.Name) and node.value.id in mod_aliases
    if isinstance(node, ast.Subscript):  # q.PATHS_DIRECTED[hops]
        return _ok_query_expr(node.value, mod_aliases, const_names, local_ok)
    if isinstance(node, ast.Name):
        return node.id in const_names or node.id in local_ok
    return False


def _is_store_call(call: ast.Call) -> bool:
    f = call.func
    if not isinstance(f, ast.Attribute) or f.attr not in _QUERY_METHODS:
        return False
    recv = f.value
    text = ast.unparse(recv).lower()
    return any(k in text for k in ("conn", "session", "tx", "driver"))


def _query_assigned(node: ast.AST, mod_aliases: set[str], const_names: set[str]) -> str | None:
    """The name ``node`` assigns if it is ``name = <query constant>`` (or a dict, .get, if of them)."""
    if not isinstance(node, ast.Assign) or len(node.targets) != 1:
        return None
    target, v = node.targets[0], node.value
    if not isinstance(target, ast.Name):
        return None
    if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "get":
        v = v.func.value
    if isinstance(v, ast.IfExp):
        vals = [v.body, v.orelse]
    elif isinstance(v, ast.Dict):
        vals = list(v.values)
    else:
        vals = [v]
    return target.id if all(_ok_query_expr(x, mod_aliases, const_names, set()) for x in vals) else None


def _violations(path: Path) -> list[str]:
    """Store calls in ``path`` whose query is not a queries.py constant.

    Graph backends (``kgmind/stores/…``) must use constants; elsewhere (e.g. the eval LLM
    cache on SQLite) a plain string literal is accepted. Formatting is never accepted.
    """
    literal_ok = "stores" not in path.relative_to(SRC).parts
    tree = ast.parse(path.read_text(encoding="utf-8"))
    mod_aliases = _query_modules_aliases(tree)
    const_names = _imported_query_constants(tree)
    bad: list[str] = []
    top_level = ast.Module(
        body=[
            n for n in tree.body if not isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        ],
        type_ignores=[],
    )
    scopes: list[ast.AST] = [top_level, *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))]
    for func in scopes:
        # local names that only ever hold query constants (e.g. ``query = {...}.get(d)``, ``stmt`` loops)
        local_ok: set[str] = set()
        for node in ast.walk(func):
            if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
                it = node.iter
                if _ok_query_expr(it, mod_aliases, const_names, set()) or (
                    isinstance(it, ast.Name) and it.id in ("statements",)
                ):
                    local_ok.add(node.target.id)
            if isinstance(node, ast.For) and isinstance(node.target, ast.Tuple) and node.target.elts:
                first = node.target.elts[0]
                if (
                    isinstance(first, ast.Name)
                    and isinstance(node.iter, ast.Name)
                    and node.iter.id == "statements"
                ):
                    local_ok.add(first.id)
            name = _query_assigned(node, mod_aliases, const_names)
            if name:
                local_ok.add(name)
        # parameters of helpers that receive a query (``def _rows(self, query, …)``) are checked
        # at their call sites (see _helper_call_violations)
        params = {a.arg for a in func.args.args} if isinstance(func, ast.FunctionDef) else set()
        for node in ast.walk(func):
            if not (isinstance(node, ast.Call) and _is_store_call(node)):
                continue
            arg = _query_arg(node)
            if arg is None:
                continue
            if _ok_query_expr(arg, mod_aliases, const_names, local_ok) or (
                isinstance(arg, ast.Name) and arg.id in params & {"query", "stmt", "statement", "cypher"}
            ):
                continue
            if literal_ok and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                continue  # a fixed SQL literal of a non-graph SQLite cache (values as ? parameters)
            if isinstance(arg, ast.Constant) and arg.value is None:
                continue  # no query text at all: ONNX Runtime's ``session.run(None, inputs)``
            bad.append(f"{path.relative_to(SRC.parent)}:{node.lineno}: {ast.unparse(node)[:120]}")
    return sorted(set(bad))


def _helper_call_violations(path: Path) -> list[str]:
    """Calls of query-taking helpers (``self._rows(q.X, …)``) must pass a constant too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    mod_aliases = _query_modules_aliases(tree)
    const_names = _imported_query_constants(tree)
    helpers = {
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and n.args.args[1:2] and n.args.args[1].arg in ("query", "stmt")
    }
    bad: list[str] = []
    for func in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
        local_ok = {
            name for node in ast.walk(func) if (name := _query_assigned(node, mod_aliases, const_names))
        }
        own = {a.arg for a in func.args.args}
        for node in ast.walk(func):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in helpers
                and node.args
            ):
                arg = node.args[0]
                parts = [arg.body, arg.orelse] if isinstance(arg, ast.IfExp) else [arg]
                if all(
                    _ok_query_expr(p, mod_aliases, const_names, local_ok)
                    or (isinstance(p, ast.Name) and p.id in own & {"query", "stmt"})
                    for p in parts
                ):
                    continue
                bad.append(f"{path.relative_to(SRC.parent)}:{node.lineno}: {ast.unparse(node)[:120]}")
    return bad


def test_no_query_text_is_built_by_formatting() -> None:
    files = sorted(p for p in SRC.rglob("*.py") if p.name != "queries.py")
    checked = 0
    bad: list[str] = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        if not any(k in text for k in (".execute(", ".run(", ".execute_query(")):
            continue
        checked += 1
        bad += _violations(path)
        bad += _helper_call_violations(path)
    assert checked >= 2
    assert not bad, "query text not taken from a queries.py constant:\n" + "\n".join(bad)


def test_the_scanner_catches_formatted_queries(tmp_path: Path) -> None:
    """The scan above is not vacuous: each way of building query text is reported."""
    src = tmp_path / "kgmind" / "bad.py"
    src.parent.mkdir()
    src.write_text(
        "from kgmind.stores.ladybug import queries as q\n"
        "def f(conn, session, tx, name):\n"
        "    conn.execute(f\"MATCH (e {{name: '{name}'}}) RETURN e\")\n"
        "    session.run('MATCH (e) WHERE e.name = %s' % name)\n"
        "    tx.run('MATCH (e) WHERE e.name = {}'.format(name))\n"
        "    conn.execute(q.GET_ENTITIES + ' WHERE x = ' + name)\n"
        "    conn.execute(q.GET_ENTITIES, {'ids': [name]})\n"
        "    conn.execute(with_hop_bound(f'MATCH ({name}) -[*..__MAX_HOPS__]-()', 2, most=6))\n"
        "    conn.execute(with_hop_bound(q.PATHS_DIRECTED, 2, most=6) + name)\n"
        "    conn.execute(other_builder(q.PATHS_DIRECTED, name))\n"
        "    conn.execute(with_hop_bound(q.PATHS_DIRECTED, 2, most=6))\n"
        "NAME = 'x'\n"
        "driver.execute_query('MATCH (n {name: \"' + NAME + '\"}) RETURN n')\n",
        encoding="utf-8",
    )
    global SRC
    old = SRC
    SRC = tmp_path / "kgmind"
    try:
        bad = _violations(src)
    finally:
        SRC = old
    assert len(bad) == 8, bad


def test_the_audited_hop_builder_only_takes_a_small_int() -> None:
    """``with_hop_bound`` is the scan's one exception: it must refuse anything but an int bound."""
    from kgmind.stores.cypher import HOPS, with_hop_bound
    from kgmind.stores.ladybug import queries as lq
    from kgmind.stores.neo4j import queries as nq

    templates = [v for m in (lq, nq) for v in vars(m).values() if isinstance(v, str) and HOPS in v]
    assert len(templates) == 4
    for template in templates:
        filled = with_hop_bound(template, 3, most=6)
        assert filled == template.replace(HOPS, "3") and HOPS not in filled
        for bad in ["3", "1]-() DETACH DELETE n //", 3.0, True, 0, 7, -1, None]:
            with pytest.raises(ValueError):
                with_hop_bound(template, bad, most=6)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        with_hop_bound("MATCH (n) RETURN n", 3, most=6)  # not a template
    tree = ast.parse((SRC / "stores" / "cypher.py").read_text(encoding="utf-8"))
    (builder,) = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    returns = [ast.unparse(n.value) for n in ast.walk(builder) if isinstance(n, ast.Return) and n.value]
    assert returns == ["template.replace(HOPS, str(max_hops))"]  # the only text it produces
