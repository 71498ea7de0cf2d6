"""benchmarks/big_kg.py: the generated big KG is deterministic for a seed and keeps the base KG's shape.

A hand-made base KG stands in for the re-crawl (each fact with its inverse, a symmetric
complication stored both ways, hubs shared by many diseases); no store, no data files.
"""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "big_kg.py"
_spec = importlib.util.spec_from_file_location("big_kg", _PATH)
assert _spec is not None and _spec.loader is not None
bk = importlib.util.module_from_spec(_spec)
sys.modules["big_kg"] = bk
_spec.loader.exec_module(bk)

INVERSE = {
    "has_symptom": "possible_disease",
    "need_medical_test": "can_check_disease",
    "has_complication": "has_complication",
}


def _base() -> object:
    rows = []
    for d in range(30):
        disease = f"disease{d}"
        facts = [
            ("has_symptom", "fever"),
            ("has_symptom", f"symptom{d % 7}"),
            ("need_medical_test", f"test{d % 11}"),
        ]
        if d % 3 == 0:
            facts.append(("has_complication", f"disease{(d + 1) % 30}"))
        for rel, other in facts:
            rows += [(disease, rel, other), (other, INVERSE[rel], disease)]
    return bk.BaseKG.from_triples(rows)


def _rows(relations: int, seed: int, **kw: float) -> list[tuple[str, str, str]]:
    return [r for batch in bk.Generator(_base(), relations, seed, **kw).rows() for r in batch]


def test_same_seed_same_rows_other_seed_other_rows() -> None:
    a, b, c = _rows(700, 1), _rows(700, 1), _rows(700, 2)
    assert a == b
    assert a != c and sorted(a) != sorted(c)


def test_exactly_the_relations_asked_all_distinct() -> None:
    base = _base()
    for n in (1, 100, len(base.heads), 5 * len(base.heads) + 3):
        rows = _rows(n, 7)
        assert len(rows) == n == len(set(rows))


def test_shards_keep_the_mix_hubs_and_inverses() -> None:
    base = _base()
    gen = bk.Generator(base, 4 * len(base.heads), 5, hub_share=0.05, cross_share=0.2)
    rows = [r for batch in gen.rows() for r in batch]
    assert gen.shards >= 4
    # every fact keeps its inverse, cross-linked or not
    assert all((t, INVERSE[r], h) in set(rows) for h, r, t in rows if r in INVERSE)
    # the relation-type mix of the base, shard for shard
    mix = Counter(r for _, r, _ in rows)
    base_mix = Counter(base.rel_types[k] for k in base.types.tolist())
    for rel, n in base_mix.items():
        assert abs(mix[rel] / len(rows) - n / len(base.heads)) < 0.02
    # the hub ("fever", the top degree) keeps its name: its degree grows with the KG
    assert gen.hub[base.names.index("fever")]
    fever = sum(1 for h, _, t in rows if "fever" in (h, t))
    assert fever > 3 * sum(
        1 for k in range(len(base.heads)) if "fever" in (base.names[base.heads[k]], base.names[base.tails[k]])
    )
    # cross-links join shards: some rows have ends of two different shards
    shard = lambda name: name.rsplit(" #", 1)[1] if " #" in name else "0"  # noqa: E731
    assert any(
        shard(h) != shard(t)
        for h, _, t in rows
        if not gen.hub[base.names.index(h.split(" #")[0])] and not gen.hub[base.names.index(t.split(" #")[0])]
    )


def test_bad_size_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        bk.Generator(_base(), 0, 1)
