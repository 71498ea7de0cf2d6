"""Entities a LadybugDB store looked up lately, kept for its current load version (issue 42).

A pushed-down question completes ~30 (EMCKG-full) to ~80 (re-crawl) nodes, and after each
it asks the store for the new ends' entities: one more round trip per node. The same
entities come back question after question (common symptoms, the diseases around them), so
``get_entities`` asks the engine only for the ids it has not seen under this version.
(Returning the ends' fields with the bounded reads instead made every read dearer than the
lookups it saved: the engine collected the names and texts of a hub's whole edge list.)

An entity changes only in a write that moves the store's load version (an import, schema
roles, a clear), and the file lock keeps other processes from writing while the store is
open; so the kept entities are those of one version, and a new version forgets them all.
The version is read before the engine is asked, so a lookup racing a write is kept, at
most, under the older version.

Each entity is kept as a plain tuple of its fields and made an :class:`Entity` again when
asked for: a model holds three objects the cyclic GC tracks (itself, its ``__dict__``, its
fields set), so 50,000 kept models were 150,000 objects every full collection walked, while
exact tuples of strings are untracked at the collector's first look (issue 42).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kgmind.models import Entity
from kgmind.tuning import KEPT_ENTITIES

__all__ = ["EntityCache"]


class EntityCache:
    """At most ``size`` entities of one load version, least recently used dropped first."""

    def __init__(self, size: int = KEPT_ENTITIES) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, tuple[Any, ...]] = OrderedDict()
        self._version: object = None

    def remember(self, entities: Iterable[Entity], version: object) -> None:
        """Keep ``entities`` as read under load version ``version``."""
        with self._lock:
            self._at(version)
            for ent in entities:
                self._kept[ent.id] = (ent.id, ent.name, ent.type, tuple(ent.aliases), ent.description)
                self._kept.move_to_end(ent.id)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)

    def fetch(
        self, ids: Sequence[str], version: object, read: Callable[[list[str]], Iterable[Entity]]
    ) -> list[Entity]:
        """The entities among ``ids``: kept ones, and ``read`` (one engine query) for the rest."""
        found: list[Entity] = []
        missing: list[str] = []
        with self._lock:
            self._at(version)
            for eid in dict.fromkeys(ids):
                kept = self._kept.get(eid)
                if kept is None:
                    missing.append(eid)
                else:
                    self._kept.move_to_end(eid)
                    found.append(_entity(kept))
        if missing:
            fresh = list(read(missing))
            self.remember(fresh, version)
            found += fresh
        return found

    def clear(self) -> None:
        """Forget every kept entity."""
        with self._lock:
            self._kept.clear()
            self._version = None

    def _at(self, version: object) -> None:
        """Forget the kept entities when the load version moved (caller holds the lock)."""
        if version != self._version:
            self._kept.clear()
            self._version = version


def _entity(kept: tuple[Any, ...]) -> Entity:
    """The :class:`Entity` a kept tuple was made from (its fields were validated when it was read)."""
    eid, name, etype, aliases, description = kept
    return Entity.model_construct(
        id=eid, name=name, type=etype, aliases=list(aliases), description=description
    )
