"""Edge weights of a graph index as readers see them: one immutable state, swapped whole on each update.

Exploration (the KGCoT DFS, path and disease ranking) runs on many threads while feedback
changes weights on others (a server). A weight and the total of its head's out-weights
(KGCoT's normaliser ``Σ w``) must come from the same update, or ``p = w / Σ w`` no longer
sums to one. So the weights are never changed in place: a writer builds the next
:class:`WeightState` beside the current one, under the index's lock, and publishes it by
swapping one reference; a reader takes the state once per exploration call
(:class:`WeightSnapshot`) and reads every weight and total of that call from it
(``tests/reliability/test_weight_race.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import numpy as np

__all__ = ["WeightSnapshot", "WeightState"]


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@dataclass(frozen=True, eq=False)
class WeightState:
    """One published set of edge weights with, per node, the sum of its outgoing weights.

    Never changed once published. A pushed-down index that loads more edges publishes a
    state grown by them with the same ``generation``; a weight update or reload publishes
    the next generation.

    Attributes:
        weights: Per edge (read-only).
        totals: Per node, Σ weights of its outgoing edges (read-only).
        generation: Counts the weight updates published so far.
    """

    weights: np.ndarray
    totals: np.ndarray
    generation: int = 0

    @classmethod
    def build(
        cls,
        weights: np.ndarray,
        heads: np.ndarray,
        nodes: int,
        generation: int = 0,
        hidden: Collection[int] = (),
    ) -> WeightState:
        """The state of ``weights`` (edge ``e`` leaves node ``heads[e]``) over ``nodes`` nodes.

        Edges in ``hidden`` (disputed, :mod:`kgmind.retrievers.graph_hidden`) keep their
        weight but count in no total: no reader can draw them.
        """
        w = np.asarray(weights, dtype=np.float64)
        totals = np.zeros(nodes, dtype=np.float64)
        if len(w) and hidden:
            counted = np.ones(len(w), dtype=bool)
            counted[np.fromiter(hidden, dtype=np.int64, count=len(hidden))] = False
            np.add.at(totals, np.asarray(heads)[counted], w[counted])
        elif len(w):
            np.add.at(totals, heads, w)
        return cls(_frozen(w), _frozen(totals), generation)

    @cached_property
    def uniform(self) -> bool:
        """Whether every edge has the same weight (nothing learnt)."""
        w = self.weights
        return bool(len(w) == 0 or np.all(w == w[0]))

    def updated(
        self,
        changes: Sequence[tuple[int, float]],
        heads: Any,
        out_edges: Callable[[int], np.ndarray],
    ) -> WeightState:
        """The next generation: the changes applied to a copy, the totals of their heads summed again.

        Args:
            changes: ``(edge index, new weight)``; a later change of an edge wins.
            heads: ``heads[e]`` is the node edge ``e`` leaves.
            out_edges: A node's outgoing edge indices (as the readers list them).
        """
        w = self.weights.copy()
        for e, value in changes:
            w[e] = value
        t = self.totals.copy()
        for h in {int(heads[e]) for e, _ in changes}:
            t[h] = w[out_edges(h)].sum()
        return WeightState(_frozen(w), _frozen(t), self.generation + 1)

    def retotalled(self, nodes: Iterable[int], out_edges: Callable[[int], np.ndarray]) -> WeightState:
        """The next generation: the same weights, the totals of ``nodes`` summed again over ``out_edges``.

        Published when edges are hidden or restored: the weights stay, the lists change.
        """
        t = self.totals.copy()
        for n in nodes:
            t[n] = self.weights[out_edges(n)].sum()
        return WeightState(self.weights, _frozen(t), self.generation + 1)

    def with_totals(self, nodes: Iterable[int], out_edges: Callable[[int], np.ndarray]) -> WeightState:
        """This generation, the totals of ``nodes`` summed over ``out_edges`` (bounded nodes completed)."""
        t = self.totals.copy()
        for n in nodes:
            t[n] = self.weights[out_edges(n)].sum()
        return WeightState(self.weights, _frozen(t), self.generation)

    def grown(
        self,
        weights: Sequence[float],
        heads: Sequence[int],
        nodes: int,
        counted: Sequence[bool] | None = None,
    ) -> WeightState:
        """This generation with edges appended (``weights[i]`` leaves ``heads[i]``), over ``nodes`` nodes.

        ``counted[i]`` false: the new edge ``i`` is hidden and joins no total.
        """
        t = np.zeros(nodes, dtype=np.float64)
        t[: len(self.totals)] = self.totals
        if len(weights):
            new = np.asarray(weights, dtype=np.float64)
            keep = np.ones(len(new), dtype=bool) if counted is None else np.asarray(counted, dtype=bool)
            np.add.at(t, np.asarray(heads, dtype=np.int64)[keep], new[keep])
            w = np.concatenate([self.weights, new])
        else:
            w = self.weights
        return WeightState(_frozen(w), _frozen(t), self.generation)


class _Publisher(Protocol):
    """What a :class:`WeightSnapshot` reads from (a ``GraphIndex``)."""

    @property
    def num_nodes(self) -> int: ...

    @property
    def num_edges(self) -> int: ...

    def weight_state(self, held: WeightState | None = None) -> WeightState: ...

    @property
    def store_uniform(self) -> bool | None:
        """Whether the whole store's weights are uniform, for an index that holds part of it (else None)."""
        ...


class WeightSnapshot:
    """The weights one exploration call reads: the state published when the call started.

    An update published during the call is not seen by it. A pushed-down index grows
    while it is explored (a node's edges load when first read): the new edges join the
    snapshot with the weights they were loaded with, and no weight the call has read
    changes under it.
    """

    __slots__ = ("_source", "_state")

    def __init__(self, source: _Publisher) -> None:
        self._source = source
        self._state = source.weight_state()

    def _current(self) -> WeightState:
        st = self._state
        now = self._source.weight_state()
        if now is not st and now.generation == st.generation:  # grown (a pushed-down index read more)
            st = self._state = now
        elif len(st.weights) < self._source.num_edges or len(st.totals) < self._source.num_nodes:
            st = self._state = self._source.weight_state(st)
        return st

    @property
    def weights(self) -> np.ndarray:
        """Per edge (read-only)."""
        return self._current().weights

    @property
    def totals(self) -> np.ndarray:
        """Per node, Σ weights of its outgoing edges: KGCoT's normaliser (read-only)."""
        return self._current().totals

    def uniform(self) -> bool:
        """Whether every edge has the same weight (nothing learnt: every learnt lift is 0).

        A pushed-down index asks the store (the edges it has read may all be unlearnt while
        others are not), so it skips the lifts exactly when the whole index would.
        """
        known = self._source.store_uniform
        return self._current().uniform if known is None else known
