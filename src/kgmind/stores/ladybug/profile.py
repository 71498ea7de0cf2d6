"""The whole-KG relation profile kept in the store (issue 42), read once per load instead of per process.

The relation roles (:meth:`kgmind.stores.base.StoreBase.relation_schema`) are inferred from one
aggregate over every edge: relation type × the entity types of its ends. On the generated 10M
KG that join and grouping needs more of the engine's page cache than a worker bounded to 512 MiB
has (``KGMIND_STORE_BUFFER_MB``), so a bounded worker failed its first question. Only a load
changes the profile (it adds edges and sets entity types; disputes hide edges but the profile
counts every edge, and weights do not enter it), so the first read after a load keeps the rows
in ``Meta``, keyed by the load version read before the scan; every later read, in any process,
is one ``Meta`` lookup. ``kgmind kg import`` reads the roles for its report, so an import
leaves the profile kept.
"""

from __future__ import annotations

import json
import logging
from contextlib import AbstractContextManager
from typing import Any, Protocol

from kgmind.stores.ladybug import queries as q
from kgmind.stores.protocol import StoreError

__all__ = ["META_PROFILE", "ProfileRow", "kept_profile"]

_log = logging.getLogger(__name__)

#: The ``Meta`` key of the kept profile, JSON: ``{"load": <load version>, "rows": [[type, head, tail, n]]}``.
META_PROFILE = "relation_profile"

#: ``(relation type, head entity type, tail entity type, edges)``.
ProfileRow = tuple[str, str, str, int]


class ProfileStore(Protocol):
    """What :func:`kept_profile` needs from a ``LadybugStore``."""

    def _rows(
        self, query: str, params: dict[str, Any] | None = None, conn: Any = None
    ) -> list[list[Any]]: ...

    def _read_meta(self, key: str) -> Any: ...

    def _transaction(self, what: str) -> AbstractContextManager[Any]: ...


def kept_profile(store: ProfileStore, load: object) -> list[ProfileRow]:
    """The relation profile of the store at load version ``load``: kept, or scanned once and kept.

    A failed write of the kept rows is logged, not raised: the rows read are right, and the
    next process scans again.
    """
    raw = store._read_meta(META_PROFILE)
    if raw:
        kept = json.loads(raw)
        if kept.get("load") == load:
            return [(str(t), str(h), str(tt), int(n)) for t, h, tt, n in kept["rows"]]
    rows = [(str(t), str(h or ""), str(tt or ""), int(n)) for t, h, tt, n in store._rows(q.RELATION_PROFILE)]
    text = json.dumps({"load": load, "rows": rows}, ensure_ascii=False)
    try:
        with store._transaction("keep the relation profile") as conn:
            conn.execute(q.SET_META, {"key": META_PROFILE, "version": text})
    except StoreError as exc:
        _log.warning("relation profile not kept (it is read again next time): %s", exc)
    return rows
