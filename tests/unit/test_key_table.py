"""The gazetteer's key table: a ``{key: ids}`` map held in arrays (issue 42)."""

from __future__ import annotations

import random

import pytest

from kgmind.retrievers.key_table import KeyTable
from kgmind.retrievers.packed import KeyedRuns

ITEMS = [
    ("fever", ("e1",)),
    ("发热", ("e2", "e1")),
    ("chest pain", ("e3",)),
    ("感冒 #3", ("e4",)),
    ("pain", ("e3", "e5", "e2")),
]


class _FewHashRuns(KeyedRuns):
    _hash = staticmethod(len)


class FewHashes(KeyTable):
    """Every key of one length hashes alike, so nearly every lookup meets other keys' hashes."""

    _runs_type = _FewHashRuns


@pytest.mark.parametrize("table_type", [KeyTable, FewHashes])
def test_a_key_table_maps_each_key_to_its_ids_and_nothing_else(table_type):
    table = table_type(ITEMS)
    assert len(table) == 5
    assert list(table) == [k for k, _ in ITEMS]
    assert dict(table.items()) == dict(ITEMS)
    for key, ids in ITEMS:
        assert table[key] == ids
    for absent in ("feve", "fevers", "Fever", "发", "感冒 #", "", "pain "):
        assert absent not in table
        assert table.get(absent) is None
    assert table.find(["pain", "nope", "发热", "fever"]) == [4, None, 1, 0]


def test_a_key_table_equals_a_dict_on_many_keys_and_probes():
    rng = random.Random(3)
    alphabet = "abc发热咳 #"
    wanted = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(3000)}
    items = {k: tuple(f"id{rng.randrange(500)}" for _ in range(rng.randint(1, 3))) for k in sorted(wanted)}
    for table in (KeyTable(items.items()), FewHashes(items.items())):
        probes = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(2000)]
        found = table.find(probes)
        assert [None if i is None else table.ids(i) for i in found] == [items.get(p) for p in probes]
        assert [table.position(p) for p in probes] == found  # one text at a time: the same numbers


def test_an_empty_key_table_finds_nothing():
    table = KeyTable([])
    assert len(table) == 0 and table.find(["a", "b"]) == [None, None] and table.get("a") is None
    assert table.position("a") is None


def test_a_key_with_a_lone_surrogate_is_kept_and_found():
    """Any ``str`` is a key (``json.loads('"\\ud800"')`` makes one); strict UTF-8 cannot encode it."""
    odd = "fever\ud800"
    table = KeyTable([(odd, ("e\udc00",)), ("cough", ("e2",))])
    assert table[odd] == ("e\udc00",) and list(table) == [odd, "cough"] and "fever" not in table
