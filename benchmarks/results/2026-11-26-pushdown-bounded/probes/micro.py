import time

from kgmind.stores.factory import open_store
from kgmind.stores.ladybug import queries as q

s = open_store("ladybug:/tmp/home-bounded/eval-cmckg-recrawl")
vals = s._rows("MATCH (e:Entity) RETURN e.id, e.degree ORDER BY e.degree DESC LIMIT 3")
low = s._rows("MATCH (e:Entity) WHERE e.degree >= 3 AND e.degree <= 8 RETURN e.id, e.degree LIMIT 2")
print(vals, low)


def t(name, query, params, n=3):
    best = 1e9
    for _ in range(n):
        a = time.perf_counter()
        r = s._rows(query, params)
        best = min(best, time.perf_counter() - a)
    print(f"{best * 1000:9.1f} ms rows={len(r):6d} {name}")


for label, ids in (("hub", [vals[0][0]]), ("low", [low[0][0]]), ("low2", [low[0][0], low[1][0]])):
    p = {"ids": ids, "k": 20, "hidden": [], "rows": 1 << 62}
    print("==", label)
    t("BOUNDED_OUT", q.BOUNDED_OUT, p)
    t("BOUNDED_IN", q.BOUNDED_IN, p)
    t(
        "plain out",
        "UNWIND $ids AS x MATCH (n:Entity {id: x})-[r:REL]->(m:Entity) RETURN n.id, r.id, m.id",
        {"ids": ids},
    )
    t(
        "plain out m.degree",
        "UNWIND $ids AS x MATCH (n:Entity {id: x})-[r:REL]->(m:Entity) RETURN n.id, r.id, m.id, m.degree",
        {"ids": ids},
    )
    t("where x", "MATCH (n:Entity)-[r:REL]->(m:Entity) WHERE n.id IN $ids RETURN n.id, r.id", {"ids": ids})
    t(
        "ordered no hidden",
        "UNWIND $ids AS x MATCH (n:Entity {id: x})-[r:REL]->(m:Entity) WITH n, r, m ORDER BY n.id, r.type, r.weight DESC, m.degree, r.id LIMIT $rows RETURN n.id, r.id",  # noqa: E501
        {"ids": ids, "rows": 1 << 62},
    )
    t(
        "hidden only",
        "UNWIND $ids AS x MATCH (n:Entity {id: x})-[r:REL]->(m:Entity) WHERE NOT r.id IN $hidden RETURN n.id, r.id",  # noqa: E501
        {"ids": ids, "hidden": []},
    )
    t("match id literal", "MATCH (n:Entity {id: $x})-[r:REL]->(m:Entity) RETURN n.id, r.id", {"x": ids[0]})
