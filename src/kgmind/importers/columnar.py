"""Import big triple files as columns: a 10M-relation file streamed, typed and loaded without objects.

The ``triples`` and ``mindmap-tsv`` formats are read row by row
(:func:`kgmind.importers.triples.valid_triples`, the same rows, errors and names as the
object parsers) into a :class:`ColumnarResult`: entities as :class:`~kgmind.models.Entity`
objects (a KG has far fewer entities than relations), relations as integer columns
(:class:`~kgmind.stores.columns.RelationColumns`, about 20 bytes a relation). Typing by
relation roles runs the passes of :func:`kgmind.importers.roles.type_by_roles` on the columns,
and the store loads them in batches in one transaction
(:func:`kgmind.stores.columns.load_columns`). An import of these formats gives the store the
same entities, relations and schema as parsing to objects would
(``tests/unit/test_importers_columnar.py``).

One difference at scale: the inverse-pair cue (:func:`kgmind.relations.infer_schema`) compares
every edge's ends. Above :data:`PAIR_CUE_EDGES` relations the cue reads a sample of the facts,
the same facts in every relation (picked by a hash of the unordered pair of ends), so the
share of flipped pairs it measures is an estimate of the same share rather than 10M tuples.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kgmind.importers.base import GraphBuilder, ProgressTracker, RowError, check_path, iter_csv_records
from kgmind.importers.roles import infer_and_type, typed_before
from kgmind.importers.triples import mindmap_format, triples_format, valid_triples
from kgmind.importers.vocab import infer_types
from kgmind.models import TYPE_PRIORITY, Entity, Relation
from kgmind.relations import RelationSchema, RelationStats
from kgmind.stores.columns import RelationColumns

__all__ = ["COLUMNAR_FORMATS", "PAIR_CUE_EDGES", "ColumnarResult", "parse_columns", "type_columns"]

#: Formats read as columns by ``kgmind kg import`` and :func:`kgmind.importers.import_kg`.
COLUMNAR_FORMATS: frozenset[str] = frozenset({"triples", "mindmap-tsv"})

#: Relations up to which the inverse-pair cue reads every fact (above: a hash sample of this many).
PAIR_CUE_EDGES = 1_000_000


@dataclass
class ColumnarResult:
    """What a columnar parse read (the fields of :class:`~kgmind.importers.base.ImportResult` it needs).

    Attributes:
        format: The importer (``triples``, ``mindmap-tsv``).
        source: The path parsed.
        entities: Entities by id (typed in place by :func:`type_columns`).
        relations: The distinct relations (first occurrence of each kept, as the object parse does).
        errors: One entry per malformed row.
        rows: Rows read successfully.
        repaired: Distinct names whose escaping was repaired.
    """

    format: str
    source: str
    entities: dict[str, Entity]
    relations: RelationColumns
    errors: list[RowError] = field(default_factory=list)
    rows: int = 0
    repaired: int = 0
    roles_schema: RelationSchema | None = None
    roles_overrides: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def skipped(self) -> int:
        """Rows skipped because they were malformed."""
        return len(self.errors)

    def relation_counts(self) -> dict[str, int]:
        """Relations per type, sorted by type."""
        cols = self.relations
        counts = np.bincount(cols.types, minlength=len(cols.type_names))
        return dict(sorted((cols.type_names[k], int(n)) for k, n in enumerate(counts) if n))

    def entity_counts(self) -> dict[str, int]:
        """Entities per type, sorted by type."""
        return dict(sorted(Counter(e.type for e in self.entities.values()).items()))


def parse_columns(path: str | Path, fmt: str, tracker: ProgressTracker | None = None) -> ColumnarResult:
    """Stream a ``triples`` / ``mindmap-tsv`` file into columns (same rows and errors as its object parser).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: ``fmt`` is not columnar, or the file cannot be read as CSV.
    """
    if fmt not in COLUMNAR_FORMATS:
        raise ValueError(
            f"{fmt!r} is not read as columns; columnar formats: {', '.join(sorted(COLUMNAR_FORMATS))}"
        )
    p = check_path(path)
    spec = mindmap_format() if fmt == "mindmap-tsv" else triples_format(p)
    builder, errors = GraphBuilder(), list[RowError]()
    index: dict[str, int] = {}  # entity id -> index
    known: dict[tuple[str, str], int] = {}  # (name as written, type) -> index
    type_index: dict[str, int] = {}
    ends: dict[str, tuple[str, str]] = {}
    heads, types, tails, weights = array("i"), array("i"), array("i"), array("d")
    records = iter_csv_records(p, spec.delimiter)
    for head, rtype, tail, weight in valid_triples(
        p, spec, records, errors, tracker or ProgressTracker(False)
    ):
        k = type_index.get(rtype)
        if k is None:  # validated once per type, as GraphBuilder does
            rtype = Relation(head="h", type=rtype, tail="t").type
            k = type_index.setdefault(rtype, len(type_index))
            ends[rtype] = infer_types(rtype)
        if weight != 1.0:
            weight = Relation(head="h", type=rtype, tail="t", weight=weight).weight
        head_type, tail_type = ends[rtype]
        h = known.get((head, head_type))
        if h is None:  # a name seen again with the same type changes nothing in the builder
            h = known[head, head_type] = index.setdefault(builder.entity(head, head_type), len(index))
        t = known.get((tail, tail_type))
        if t is None:
            t = known[tail, tail_type] = index.setdefault(builder.entity(tail, tail_type), len(index))
        heads.append(h)
        tails.append(t)
        types.append(k)
        weights.append(weight)
    relations = _distinct(list(index), heads, types, tails, weights, list(type_index))
    return ColumnarResult(fmt, str(p), builder.entities, relations, errors, len(heads), builder.repaired)


def _distinct(
    ids: list[str], heads: array, types: array, tails: array, weights: array, names: list[str]
) -> RelationColumns:
    """The columns with each ``(head, type, tail)`` once, its first occurrence kept, in file order."""
    h = np.frombuffer(heads, dtype=np.int32) if len(heads) else np.zeros(0, np.int32)
    r = np.frombuffer(types, dtype=np.int32) if len(types) else np.zeros(0, np.int32)
    t = np.frombuffer(tails, dtype=np.int32) if len(tails) else np.zeros(0, np.int32)
    w = np.frombuffer(weights, dtype=np.float64) if len(weights) else np.zeros(0, np.float64)
    order = np.lexsort((np.arange(len(h)), t, r, h))
    hs, rs, ts = h[order], r[order], t[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (hs[1:] != hs[:-1]) | (rs[1:] != rs[:-1]) | (ts[1:] != ts[:-1])
    keep = np.sort(order[first])
    return RelationColumns(ids, h[keep].copy(), r[keep].copy(), t[keep].copy(), w[keep].copy(), names)


class _Typing:
    """The ends' entity types as an array over the entity index, for the passes of ``infer_and_type``."""

    def __init__(self, result: ColumnarResult) -> None:
        self.result = result
        cols = result.relations
        ents = result.entities
        self.type_names: list[str] = sorted({e.type for e in ents.values()} | set(TYPE_PRIORITY))
        at = {t: i for i, t in enumerate(self.type_names)}
        self.etype = np.array([at[ents[eid].type] for eid in cols.entity_ids], dtype=np.int32)
        self.rank = np.array([_rank(t) for t in self.type_names], dtype=np.int32)
        self._at = at

    def stats(self, cues: bool) -> list[RelationStats]:
        """:func:`kgmind.importers.roles.relation_stats` of the columns (pairs sampled above the bound)."""
        cols, names = self.result.relations, self.type_names
        ids = cols.entity_ids
        sample = _pair_sample(cols) if cues else None
        out = []
        for k in np.unique(cols.types).tolist():
            sel = cols.types == k
            h, t = cols.heads[sel], cols.tails[sel]
            st = RelationStats(
                cols.type_names[k],
                int(sel.sum()),
                _type_counts(self.etype[h], names),
                _type_counts(self.etype[t], names),
            )
            if cues and sample is not None:
                st.heads = {ids[i] for i in np.unique(h).tolist()}
                st.tails = {ids[i] for i in np.unique(t).tolist()}
                s = sample[sel]
                st.pairs = {(ids[a], ids[b]) for a, b in zip(h[s].tolist(), t[s].tolist(), strict=True)}
            out.append(st)
        return sorted(out, key=lambda st: st.relation)

    def retype(self, ends: Mapping[str, tuple[str, str]]) -> int:
        """Give the ends of each relation in ``ends`` its types where they rank higher; returns how many."""
        cols = self.result.relations
        changed = 0
        for k, rel in enumerate(cols.type_names):
            pair = ends.get(rel)
            if pair is None:
                continue
            sel = cols.types == k
            for side, etype in ((cols.heads[sel], pair[0]), (cols.tails[sel], pair[1])):
                if etype not in self._at:
                    self._at[etype] = len(self.type_names)
                    self.type_names.append(etype)
                    self.rank = np.append(self.rank, _rank(etype)).astype(np.int32)
                nodes = np.unique(side)
                better = nodes[self.rank[self.etype[nodes]] > _rank(etype)]
                self.etype[better] = self._at[etype]
                changed += len(better)
        return changed

    def write_back(self) -> None:
        """Set each entity's type to the one the passes gave it."""
        ents, ids, names = self.result.entities, self.result.relations.entity_ids, self.type_names
        for i, k in enumerate(self.etype.tolist()):
            ents[ids[i]].type = names[k]


def _rank(entity_type: str) -> int:
    return TYPE_PRIORITY.get(entity_type, len(TYPE_PRIORITY))


def _type_counts(types: np.ndarray, names: list[str]) -> Counter[str]:
    counts = np.bincount(types, minlength=len(names))
    return Counter({names[i]: int(n) for i, n in enumerate(counts.tolist()) if n})


def _pair_sample(cols: RelationColumns) -> np.ndarray:
    """Which relations the inverse-pair cue reads: all, or above :data:`PAIR_CUE_EDGES` a sample of facts."""
    n = len(cols)
    if n <= PAIR_CUE_EDGES:
        return np.ones(n, dtype=bool)
    lo = np.minimum(cols.heads, cols.tails).astype(np.uint64)
    hi = np.maximum(cols.heads, cols.tails).astype(np.uint64)
    with np.errstate(over="ignore"):
        z = lo * np.uint64(0x9E3779B97F4A7C15) ^ hi * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(31))) * np.uint64(0x94D049BB133111EB)
    return (z >> np.uint64(11)) < np.uint64(int(PAIR_CUE_EDGES / n * 2**53))


def type_columns(
    result: ColumnarResult, overrides: Mapping[str, Mapping[str, str]] | None = None
) -> RelationSchema:
    """:func:`kgmind.importers.roles.type_by_roles` of a columnar result (entities typed in place, once).

    Raises:
        ValueError: ``result`` was already typed with other overrides.
    """
    given = {k: dict(v) for k, v in (overrides or {}).items()}
    before = typed_before(result, given)
    if before is not None:
        return before
    typing = _Typing(result)
    schema = infer_and_type(typing.stats(cues=True), given, typing.retype, lambda: typing.stats(cues=False))
    typing.write_back()
    result.roles_schema, result.roles_overrides = schema, given
    return schema
