"""The bounded reads kept across questions (issue 42): served again only for the same store state.

A counting stand-in for the store's ``bounded_edges`` (wiring); the real store's reads
through the cache are covered by ``tests/integration/test_pushdown_bounded.py``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from kgmind.models import Relation
from kgmind.retrievers.graph_bounds import BoundedReads


class CountingStore:
    """Two edges per node; counts which nodes each read asked for."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def bounded_edges(self, ids: Sequence[str], k: int, hidden: Collection[str]) -> list[Any]:
        self.asked.append(list(ids))
        return [
            (n, Relation(head=n, type="has_symptom", tail=f"{n}-{i}"), "out", 1, False)
            for n in ids
            for i in range(2)
            if f"{n}-{i}" not in hidden
        ][: 2 * len(ids)]


def test_a_read_is_kept_for_its_store_state_only() -> None:
    store, reads = CountingStore(), BoundedReads()
    first = reads.read(store, ["a", "b"], 5, (), state=("kg", "fp1", 0))
    again = reads.read(store, ["b", "a", "c"], 5, (), state=("kg", "fp1", 0))
    assert store.asked == [["a", "b"], ["c"]]  # a and b served from the kept reads
    assert sorted(r[1].id for r in again) == sorted([r[1].id for r in first] + [r[1].id for r in again[-2:]])
    reads.read(store, ["a"], 5, (), state=("kg", "fp1", 1))  # weights moved: read again
    reads.read(store, ["a"], 7, (), state=("kg", "fp1", 1))  # another bound: read again
    assert store.asked[2:] == [["a"], ["a"]]


def test_at_most_max_rows_are_held_least_recently_used_first_out() -> None:
    store, reads = CountingStore(), BoundedReads(max_rows=4)
    reads.read(store, ["a", "b"], 5, (), state=1)  # 4 rows
    reads.read(store, ["a"], 5, (), state=1)  # a is now the most recent
    reads.read(store, ["c"], 5, (), state=1)  # 6 rows: b goes
    store.asked.clear()
    reads.read(store, ["a", "b", "c"], 5, (), state=1)
    assert store.asked == [["b"]]


def test_the_edges_between_two_sets_are_read_from_the_side_with_fewer_edges() -> None:
    """A cut hub's votes read a side's lists whole (issue 42): the hubs' while they hold fewer
    edges than the candidates, the candidates' once a big KG's shared hubs outgrow them."""
    from kgmind.retrievers.graph_bounds import reads_second_side

    hubs, candidates = [0, 1], [2, 3, 4]
    small_hubs = {0: 40, 1: 30, 2: 50, 3: 20, 4: 10}
    assert not reads_second_side(hubs, candidates, small_hubs)
    big_hubs = {0: 90_000, 1: 40_000, 2: 50, 3: 20, 4: 10}
    assert reads_second_side(hubs, candidates, big_hubs)
    assert not reads_second_side(hubs, candidates, {0: 90_000, 1: 40_000, 2: 50, 3: 20})  # 4 unknown
    assert not reads_second_side(hubs, candidates, {0: 50, 1: 30, 2: 40, 3: 30, 4: 10})  # a tie: the first
