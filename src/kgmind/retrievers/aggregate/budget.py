"""Spending a token budget: keep items while they fit, cut neighbor lines at the edge, pay for a fact once.

An item that does not fit is skipped, so later, shorter ones may still fit; a neighbor
line (one head, many tails) that does not fit is cut to the tails that do. A fact is paid
for once (:class:`ShownFacts`): an item loses the triples whose two entities an item kept
before it already joins (a relation and its inverse are one fact) and the descriptions
or sources already shown, and is dropped when nothing new is left (five shortest paths
that share their first hops otherwise repeat them five times).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kgmind.models import Evidence, normalize_name
from kgmind.retrievers.aggregate.render import Tokenizer, count_tokens, is_zh, render_evidence

__all__ = ["ID_OVERHEAD", "ShownFacts", "fit_budget", "longest_fitting_line"]

#: Tokens added per item for its citation id (``"N12: "``).
ID_OVERHEAD = 2


def _cut_line(ev: Evidence, n: int) -> Evidence:
    """The neighbor line ``ev`` (one head, many tails) cut to its first ``n`` tails."""
    cut = ev.model_copy(
        update={
            "triples": ev.triples[:n],
            "relation_ids": ev.relation_ids[:n],
            "entity_ids": ev.entity_ids[: n + 1],
            "meta": {**ev.meta, "truncated_from": len(ev.triples)},
        }
    )
    return cut.model_copy(update={"text": render_evidence(cut)})


def _cuttable(ev: Evidence) -> bool:
    return (
        ev.kind == "neighbor"
        and len(ev.triples) > 1
        and len({h for h, _, _ in ev.triples}) == 1
        and len(ev.entity_ids) == len(ev.triples) + 1
    )


def fit_budget(
    evidence: Sequence[Evidence],
    budget_tokens: int,
    *,
    render: Callable[[Evidence], str] | None = None,
    tokenizer: Tokenizer | None = None,
    id_overhead: int = ID_OVERHEAD,
    stop_at_first_miss: bool = False,
    truncate: bool = True,
    share_facts: bool = False,
) -> list[Evidence]:
    """Keep items in order while their rendered total fits the token budget.

    Each item costs ``count_tokens(render(item)) + id_overhead``. An item that does
    not fit is skipped, so later, shorter ones may still fit; ``stop_at_first_miss``
    keeps only the leading run instead (the evaluation's baselines, whose units are
    ordered documents). With ``truncate``:

    * a neighbor line (one head, many tails) that does not fit is first cut to the
      longest prefix of its tails that does;
    * if nothing at all fits, the first item is kept with its rendered text cut to
      the longest run of whole words (Chinese: characters) that fits, marked
      ``meta["truncated"] = True``, so a caller never gets nothing only because its
      first unit is long. Its ``text`` is then that cut rendering.

    Args:
        evidence: Items in rank order.
        budget_tokens: Token budget for all items together.
        render: The text the LLM sees for an item (default: its ``text``).
        tokenizer: Optional exact tokenizer for :func:`count_tokens`.
        id_overhead: Tokens added per item for its citation id (``"N12: "``).
        stop_at_first_miss: Stop at the first item that does not fit.
        truncate: Cut neighbor lines at the budget edge, and the first item when
            nothing fits.
        share_facts: Show each fact once (:meth:`ShownFacts.without_shown`): items lose what
            the items kept before them already show, and are re-rendered by template.

    Returns:
        The kept (possibly cut) items, in order.
    """
    show = render or _text_of

    def cost(ev: Evidence) -> int:
        return count_tokens(show(ev), tokenizer) + id_overhead

    out: list[Evidence] = []
    used = 0
    shown = ShownFacts()
    for item in evidence:
        ev = shown.without_shown(item) if share_facts else item
        if ev is None:
            continue
        kept: Evidence | None = None
        if used + cost(ev) <= budget_tokens:
            kept = ev
        elif truncate:
            kept = longest_fitting_line(ev, budget_tokens - used, cost)
        if kept is not None:
            out.append(kept)
            used += cost(kept)
            if share_facts:
                shown.add(kept)
        if kept is not ev and stop_at_first_miss:
            break
    if not out and evidence and truncate:
        first = _cut_to_words(evidence[0], show(evidence[0]), budget_tokens - id_overhead, tokenizer)
        if first is not None:
            out.append(first)
    return out


def _text_of(ev: Evidence) -> str:
    return ev.text


def _fact(head: str, tail: str) -> frozenset[str]:
    """The pair of entities a triple joins: ``A has_symptom B`` and ``B possible_disease A`` are one fact."""
    return frozenset((normalize_name(head), normalize_name(tail)))


class ShownFacts:
    """The facts, descriptions and sources the evidence kept so far already shows."""

    def __init__(self) -> None:
        self.facts: set[frozenset[str]] = set()
        self.notes: set[str] = set()
        # an item asked for again with the same part left shown is not copied and re-rendered
        # again (value packing re-asks for each item after every keep)
        self._cut: dict[tuple[Any, ...], Evidence] = {}

    def add(self, ev: Evidence) -> None:
        """Record what ``ev`` shows."""
        self.facts.update(_fact(h, t) for h, _r, t in ev.triples)
        self.notes.update(normalize_name(n) for n in (ev.meta.get("descriptions") or {}))
        self.notes.update(normalize_name(k) for k in ev.meta.get("knowledge") or [] if k)

    def without_shown(self, ev: Evidence) -> Evidence | None:
        """``ev`` without the triples and notes already shown; ``None`` when nothing new is left.

        The kept triples keep their relation ids (feedback credits what was shown), and
        the item is re-rendered by template. Items without triples (documents) pass.
        """
        if not ev.triples:
            return ev
        n = len(ev.triples)
        keep = [i for i, (h, _r, t) in enumerate(ev.triples) if _fact(h, t) not in self.facts]
        if not keep:
            return None
        meta = dict(ev.meta)
        descriptions = meta.get("descriptions") or {}
        fresh = {name: d for name, d in descriptions.items() if normalize_name(name) not in self.notes}
        # one source per edge stays one per kept edge; a source shown before becomes "" (not rendered)
        knowledge = list(meta.get("knowledge") or [])
        fresh_knowledge = [
            k if not k or normalize_name(k) not in self.notes else ""
            for k in ([knowledge[i] for i in keep] if len(knowledge) == n else knowledge)
        ]
        if len(keep) == n and fresh == descriptions and fresh_knowledge == knowledge:
            return ev
        memo = (ev.kind, ev.text, tuple(ev.relation_ids), tuple(keep), tuple(fresh), tuple(fresh_knowledge))
        if memo in self._cut:
            return self._cut[memo]
        if descriptions:
            meta["descriptions"] = fresh
        if "knowledge" in meta:
            meta["knowledge"] = fresh_knowledge
        if len(keep) < n:
            meta["facts_shown_before"] = n - len(keep)
        self._cut[memo] = kept_triples(ev, keep, meta)
        return self._cut[memo]


def kept_triples(ev: Evidence, keep: Sequence[int], meta: Mapping[str, Any] | None = None) -> Evidence:
    """``ev`` cut to its triples ``keep``, re-rendered by template.

    The kept triples keep their relation ids (feedback credits what was shown), the entity
    ids they still show and their per-edge ``meta`` values.

    Args:
        ev: The item.
        keep: Indexes of the triples to keep, in order.
        meta: The cut item's ``meta`` (``None``: ``ev``'s).
    """
    n = len(ev.triples)
    meta = dict(ev.meta if meta is None else meta)
    for key in ("probabilities",):  # per-edge lists follow the kept edges
        values = meta.get(key)
        if isinstance(values, list) and len(values) == n:
            meta[key] = [values[i] for i in keep]
    cut = ev.model_copy(
        update={
            "triples": [ev.triples[i] for i in keep],
            "relation_ids": [ev.relation_ids[i] for i in keep]
            if len(ev.relation_ids) == n
            else ev.relation_ids,
            "entity_ids": _kept_entity_ids(ev, keep),
            "meta": meta,
        }
    )
    return cut.model_copy(update={"text": render_evidence(cut)})


def _kept_entity_ids(ev: Evidence, keep: Sequence[int]) -> list[str]:
    """The entity ids of ``ev`` that its kept triples still show.

    Neighbor lines list ``[head, *tails]`` (one head) or ``[*heads, tail]`` (one tail, the
    symptoms voting for a disease): the shared end and the kept others stay, so a line can
    still be cut at the budget edge. Paths and chains list their nodes in order, edge ``i``
    joining nodes ``i`` and ``i + 1``: both ends of each kept edge stay. Any other shape
    keeps its ids.
    """
    ids, n = list(ev.entity_ids), len(ev.triples)
    if len(ids) != n + 1:
        return ids
    if ev.kind == "neighbor":
        if len({h for h, _r, _t in ev.triples}) == 1:
            return [ids[0], *(ids[i + 1] for i in keep)]
        if len({t for _h, _r, t in ev.triples}) == 1:
            return [*(ids[i] for i in keep), ids[-1]]
        return ids
    return list(dict.fromkeys(e for i in keep for e in (ids[i], ids[i + 1])))


def longest_fitting_line(ev: Evidence, room: int, cost: Callable[[Evidence], int]) -> Evidence | None:
    """``ev`` cut to the most tails whose cost fits ``room`` (neighbor lines only), else None."""
    if not _cuttable(ev):
        return None
    lo, hi, best = 1, len(ev.triples) - 1, None
    while lo <= hi:  # longest prefix that fits
        mid = (lo + hi) // 2
        cand = _cut_line(ev, mid)
        if cost(cand) <= room:
            best, lo = cand, mid + 1
        else:
            hi = mid - 1
    return best


def _cut_to_words(ev: Evidence, text: str, room: int, tokenizer: Tokenizer | None) -> Evidence | None:
    """A copy of ``ev`` whose text is the longest whole-word prefix of ``text`` within ``room`` tokens."""
    zh = is_zh(text)
    units = [c for c in text if not c.isspace()] if zh else text.split()
    sep = "" if zh else " "
    lo, hi = 0, len(units)
    while lo < hi:  # the longest prefix within the room
        mid = (lo + hi + 1) // 2
        if count_tokens(sep.join(units[:mid]), tokenizer) <= room:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        return None
    return ev.model_copy(update={"text": sep.join(units[:lo]), "meta": {**ev.meta, "truncated": True}})
