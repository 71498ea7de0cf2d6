"""Write feedback on an answer back into the KG's edge weights (KGCoT §2.4).

Three pieces:

* :func:`cited_relation_ids` picks the edges to rate: those behind the evidence items
  the answer cited (not everything retrieved).
* :func:`apply_feedback` applies one rating to those edges through
  :meth:`GraphStore.apply_weight_updates <kgmind.stores.protocol.GraphStore.apply_weight_updates>`
  (one transaction, idempotent by feedback id, audited), then tells the cached graph
  index about the committed changes.
* :func:`apply_verdicts` records per-claim verdicts (this edge is wrong / right) through
  :meth:`GraphStore.record_verdicts <kgmind.stores.protocol.GraphStore.record_verdicts>`
  with the same bounded rule, and tells the graph index likewise.

The same operation as a LangChain tool is :mod:`kgmind.tools.feedback`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kgmind.models import Evidence, WeightChange
from kgmind.stores.protocol import GraphStore, StoreError, VerdictResult, WeightRule
from kgmind.stores.weights import DEFAULT_BETA, RATINGS, check_rate, make_rule

__all__ = [
    "NEUTRAL_RATINGS",
    "apply_feedback",
    "apply_verdicts",
    "cited_relation_ids",
    "feedback_key",
    "normalize_rating",
    "on_disputes_changes",
    "on_weight_changes",
    "restore_dispute",
]

#: Ratings that mean "no feedback": they change nothing.
NEUTRAL_RATINGS: frozenset[str] = frozenset({"", "neutral", "none", "skip"})

_CITE_NOISE = re.compile(r"[^0-9A-Za-z]+")


def _cite_key(cid: str) -> str:
    return _CITE_NOISE.sub("", cid).upper()


def cited_relation_ids(
    evidence: Sequence[Evidence | Mapping[str, Any]], cited_ids: Iterable[str]
) -> list[str]:
    """Return the KG edges behind the evidence items an answer cited.

    An item counts when its id (``P1``, ``N3``, ``C2``, ``K1``…) is among ``cited_ids``;
    ids are compared ignoring case and surrounding punctuation (``[p1]`` matches ``P1``).
    For each cited item its ``relation_ids`` are taken; for a cited KGCoT chain (kind
    ``kgcot``) also every edge id the chain lists in ``meta["relation_ids"]`` or
    ``meta["edges"]`` (the whole walked chain). Evidence that was retrieved but not
    cited contributes nothing; cited ids that match no evidence are ignored.

    Args:
        evidence: The numbered evidence the answer was generated from (``Evidence``
            objects or their dicts, e.g. from a deserialised checkpoint).
        cited_ids: The evidence ids the answer cites (mind map and inference chain).

    Returns:
        Relation ids, without duplicates, in evidence order.

    """
    wanted = {_cite_key(c) for c in cited_ids if isinstance(c, str)}
    wanted.discard("")
    out: dict[str, None] = {}
    for item in evidence:
        ev = item if isinstance(item, Evidence) else Evidence.model_validate(item)
        if not ev.id or _cite_key(ev.id) not in wanted:
            continue
        ids: list[str] = list(ev.relation_ids)
        if ev.kind == "kgcot":
            for key in ("relation_ids", "edges"):
                extra = ev.meta.get(key)
                if isinstance(extra, list | tuple):
                    ids.extend(x for x in extra if isinstance(x, str))
        for rid in ids:
            if rid:
                out.setdefault(rid, None)
    return list(out)


def normalize_rating(rating: str | None) -> str | None:
    """Return ``excellent``, ``poor`` or ``None`` (neutral / no rating).

    Args:
        rating: The rating as given (case and surrounding spaces are ignored).

    Returns:
        The canonical rating, or ``None`` for ``None``, ``""``, ``neutral``.

    Raises:
        ValueError: Any other value.

    """
    if rating is None:
        return None
    if not isinstance(rating, str):
        raise ValueError(f"rating must be one of {RATINGS} or neutral, got {rating!r}")
    r = rating.strip().lower()
    if r in NEUTRAL_RATINGS:
        return None
    if r not in RATINGS:
        raise ValueError(f"rating must be one of {RATINGS} or neutral, got {rating!r}")
    return r


def feedback_key(run_id: str, rating: str, relation_ids: Iterable[str]) -> str:
    """Return the deterministic feedback id of (run, rating, set of edges).

    Submitting the same rating of the same run's edges again yields the same id, so the
    store applies it once.

    Args:
        run_id: The pipeline run rated.
        rating: ``excellent`` or ``poor``.
        relation_ids: The rated edges (order and duplicates do not matter).

    Returns:
        ``"fb"`` + 24 hex digits.

    """
    h = hashlib.blake2b(digest_size=12)
    for part in (run_id, rating, *sorted(set(relation_ids))):
        h.update(part.encode("utf-8"))
        h.update(b"\x1f")
    return "fb" + h.hexdigest()


WeightListener = Callable[[str, Sequence[WeightChange], "int | None"], None]

#: Called with (store URI, committed changes, the store's weights version read after the
#: commit, or None if it could not be read) after every feedback commit. Caches built
#: from edge weights in higher layers (the retrievers' graph index) register here, so
#: this module imports nothing above it.
_weight_listeners: list[WeightListener] = []
#: Called with a store URI after a verdict or restore commits (the index cache re-reads disputes).
_dispute_listeners: list[Callable[[str], None]] = []


def on_weight_changes(listener: WeightListener) -> WeightListener:
    """Register ``listener`` to hear of committed weight changes (once; returns it, usable as a decorator)."""
    if listener not in _weight_listeners:
        _weight_listeners.append(listener)
    return listener


def on_disputes_changes(listener: Callable[[str], None]) -> Callable[[str], None]:
    """Register ``listener`` (called with the store URI) to hear of committed verdicts and restores."""
    if listener not in _dispute_listeners:
        _dispute_listeners.append(listener)
    return listener


def _notify_disputes(store: GraphStore) -> None:
    for listener in list(_dispute_listeners):
        listener(store.uri)


def restore_dispute(store: GraphStore, relation_id: str, *, source: str) -> bool:
    """Undo the dispute of one edge (audited), and tell this process's caches.

    Returns:
        Whether the edge was disputed (``False``: nothing written).
    """
    restored = store.restore(relation_id, source=source)
    if restored:
        _notify_disputes(store)
    return restored


def _notify(store: GraphStore, changes: Sequence[WeightChange]) -> None:
    try:
        version: int | None = store.weights_version()
    except StoreError:  # committed already; listeners then re-read the weights on next use
        version = None
    for listener in list(_weight_listeners):
        listener(store.uri, changes, version)


def apply_feedback(
    store: GraphStore,
    run_id: str,
    rating: str | None,
    relation_ids: Iterable[str],
    *,
    feedback_id: str | None = None,
    alpha: float | None = None,
    beta: float = DEFAULT_BETA,
) -> list[WeightChange]:
    """Apply one rating to the given edges, in one store transaction.

    Args:
        store: The graph store to update.
        run_id: The pipeline run the feedback is about (audited).
        rating: ``excellent`` or ``poor``; ``None``/``neutral`` changes nothing.
        relation_ids: The edges to rate (see :func:`cited_relation_ids`); duplicates once.
        feedback_id: Idempotency key; default :func:`feedback_key` of run, rating and edges,
            so submitting the same feedback twice changes the weights once.
        alpha: α of the excellent update in (0, 1); ``None`` = min(1/S, 0.5) per node.
        beta: β of the poor update in (0, 1).

    Returns:
        The committed changes (one per changed edge); ``[]`` for a neutral rating, no
        edges, an already applied feedback id, or edges whose nodes have one out-edge.

    Raises:
        ValueError: Bad rating, α or β, or an empty run id.
        StoreError: The store rejected the feedback (e.g. an unknown relation id); no
            weight changed.

    """
    canon = normalize_rating(rating)
    if alpha is not None:
        check_rate("alpha", alpha)
    check_rate("beta", beta)
    if canon is None:
        return []
    if not run_id or not run_id.strip():
        raise ValueError("run_id must not be blank")
    ids = sorted({rid for rid in relation_ids if rid})
    if not ids:
        return []
    fid = feedback_id or feedback_key(run_id, canon, ids)
    changes = store.apply_weight_updates(fid, run_id, canon, ids, make_rule(canon, alpha=alpha, beta=beta))
    if changes:
        _notify(store, changes)
    return changes


def apply_verdicts(
    store: GraphStore,
    feedback_id: str,
    run_id: str,
    verdicts: Sequence[tuple[str, str]],
    *,
    source: str,
    alpha: float | None = None,
    beta: float = DEFAULT_BETA,
) -> VerdictResult:
    """Record one feedback's verdicts on edges, moving their weights by KGCoT's bounded rule.

    Args:
        store: The graph store to update.
        feedback_id: Idempotency key (e.g. ``RUN:N3:wrong``): a repeat changes nothing.
        run_id: Who judged (the run; ``flag:SOURCE`` for a bulk file).
        verdicts: ``(relation_id, "wrong" | "right")`` pairs.
        source: Where the verdicts came from (audited).
        alpha: α of the excellent update (a confirmed edge); ``None`` = min(1/S, 0.5).
        beta: β of the poor update (an edge called wrong).

    Returns:
        What the store did (:class:`~kgmind.stores.protocol.VerdictResult`).

    Raises:
        ValueError: Bad verdicts, α or β.
        StoreError: Unknown relation ids or a failed write; nothing changed.

    """
    if alpha is not None:
        check_rate("alpha", alpha)
    check_rate("beta", beta)

    def rules(rating: str) -> WeightRule:
        return make_rule(rating, alpha=alpha, beta=beta)

    result = store.record_verdicts(feedback_id, run_id, verdicts, source=source, rule=rules)
    if result.changes:
        _notify(store, result.changes)
    if not result.already_applied:
        _notify_disputes(store)
    return result
