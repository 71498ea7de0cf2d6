"""Evidence packing by value: spend the token budget where it is expected to show what an answer needs.

The explorations return far more evidence than an answer can use: paths between the
question's symptoms, each candidate disease's tests, medications and symptoms, HyKGE
chains, KGCoT's random walks with their source texts. Measured on the calibration
splits, what a medical answer names (its gold: diseases, tests, medications) sits in
a few of them: the names of the diseases the symptoms vote for, and the tests and
medications of the best-voted one. A symptom line, a food list or a walk's source text
adds almost none of it per token.

So each item is valued by the answer entities it would add that nothing kept before
shows, each weighted by the chance that it is one an answer needs:

- a candidate disease at vote rank ``r``: :attr:`~kgmind.tuning.EvidenceValue.disease_by_rank`;
- a tail of a ranked disease's line (its tests, medications, complications):
  the disease's chance times :attr:`EvidenceValue.tail_given_disease` of the tail's type;
- any other answer entity (on a path, a chain, a walk): :attr:`EvidenceValue.other`;
- entities of other types (symptoms, foods, departments): nothing.

Items are taken greedily by value per token, lazily re-valued: what is already shown
only lowers an item's value, but it can also shorten the item (the facts already shown
are left out), so a queued density is an estimate rather than a bound and the order is
greedy up to that; each fact is paid for once (:class:`ShownFacts`);
packing stops at the budget or when the best item left is worth less than
:attr:`EvidenceValue.min_density` per token, so a question whose answer needs little
evidence gets little. Only the last item may be cut (a neighbor line to the tails that
fit); every other group is kept whole or left out.

The numbers are measured, not chosen: ``benchmarks/fit_evidence_value.py`` fits them
on the calibration split of each language's data set (GenMedGPT-5k for English, CMCQA
for Chinese) and :data:`kgmind.tuning.EVIDENCE_VALUES` holds what it printed.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence, Set

from kgmind.models import Evidence, normalize_name
from kgmind.tuning import EvidenceValue

__all__ = [
    "ANSWER_TYPES",
    "disease_ranks",
    "entity_values",
    "item_value",
    "line_disease",
    "new_value",
    "pack_by_value",
]

#: Entity types a medical answer concludes with (what evidence is valued for).
ANSWER_TYPES: frozenset[str] = frozenset({"disease", "test", "medication"})


def disease_ranks(evidence: Sequence[Evidence]) -> dict[str, int]:
    """``normalize_name(disease) -> vote rank`` from the ranked neighbor lines' ``meta`` (best rank kept)."""
    ranks: dict[str, int] = {}
    for ev in evidence:
        name, rank = ev.meta.get("disease"), ev.meta.get("disease_rank")
        if isinstance(name, str) and isinstance(rank, int):
            key = normalize_name(name)
            ranks[key] = min(rank, ranks.get(key, rank))
    return ranks


def line_disease(ev: Evidence, ranks: Mapping[str, int]) -> str | None:
    """The ranked disease a neighbor line lists the tails of (its one head), if any."""
    heads = {normalize_name(h) for h, _r, _t in ev.triples}
    if ev.kind != "neighbor" or len(heads) != 1:
        return None
    head = next(iter(heads))
    return head if head in ranks else None


def entity_values(
    ev: Evidence, value: EvidenceValue, types: Mapping[str, str], ranks: Mapping[str, int]
) -> dict[str, float]:
    """``normalize_name(name) -> chance it is needed`` for every entity ``ev`` names (first-seen order).

    Args:
        ev: The item (its triples name its entities).
        value: The fitted chances.
        types: ``normalize_name(name) -> entity type``.
        ranks: ``normalize_name(disease) -> vote rank`` (:func:`disease_ranks`).

    """
    head = line_disease(ev, ranks)
    head_p = value.disease(ranks[head]) if head is not None else 0.0
    out: dict[str, float] = {}
    for h, _r, t in ev.triples:
        for name in (h, t):
            key = normalize_name(name)
            if not key or key in out:
                continue
            kind = types.get(key, "")
            if kind not in ANSWER_TYPES:
                out[key] = 0.0
            elif key in ranks:
                out[key] = value.disease(ranks[key])
            elif head is not None and key != head:
                out[key] = head_p * value.tail_given_disease.get(kind, 0.0)
            else:
                out[key] = value.other.get(kind, 0.0)
    return out


def item_value(
    ev: Evidence,
    value: EvidenceValue,
    types: Mapping[str, str],
    ranks: Mapping[str, int],
    shown: Set[str] = frozenset(),
) -> tuple[float, set[str]]:
    """Expected needed entities ``ev`` adds beyond the names in ``shown``, and the names it adds."""
    return new_value(entity_values(ev, value, types, ranks), shown)


def new_value(values: Mapping[str, float], shown: Set[str]) -> tuple[float, set[str]]:
    """The part of an item's :func:`entity_values` not in ``shown``: its sum and its names."""
    new = {k for k in values if k not in shown}
    return sum(values[k] for k in new), new


def pack_by_value(
    evidence: Sequence[Evidence],
    budget_tokens: int,
    value: EvidenceValue,
    types: Mapping[str, str],
    *,
    cost: Callable[[Evidence], int],
    without_shown: Callable[[Evidence], Evidence | None],
    on_keep: Callable[[Evidence], None],
    cut_to: Callable[[Evidence, int], Evidence | None],
) -> list[Evidence]:
    """Choose items by expected value per token, within the budget (see the module docstring).

    Args:
        evidence: Candidate items (rendered), ties broken by their order here.
        budget_tokens: Most tokens for all kept items.
        value: The fitted chances and the density floor.
        types: ``normalize_name(name) -> entity type``.
        cost: Tokens of an item as shown (its id included).
        without_shown: The item without what kept items already show (``None``: nothing new).
        on_keep: Called with each kept item (records what it shows).
        cut_to: The item cut to fit ``room`` tokens (neighbor lines), or ``None``.

    Returns:
        The kept items, best value per token first.
    """
    ranks = disease_ranks(evidence)
    # an item's entities keep their chances whatever is kept before it; only which are new changes
    worth = [entity_values(ev, value, types, ranks) for ev in evidence]
    costs: dict[int, tuple[Evidence, int]] = {}

    def cost_of(i: int, ev: Evidence) -> int:
        """``cost(ev)`` for item ``i`` as it now stands, counted again only when it changed."""
        if i not in costs or costs[i][0] is not ev:
            costs[i] = (ev, cost(ev))
        return costs[i][1]

    shown: set[str] = set()
    heap: list[tuple[float, int]] = []
    for i, ev in enumerate(evidence):
        heapq.heappush(heap, (-sum(worth[i].values()) / max(cost_of(i, ev), 1), i))
    kept: list[Evidence] = []
    used = 0
    while heap:
        _stale, i = heapq.heappop(heap)
        fresh = without_shown(evidence[i])
        if fresh is None:
            continue
        ev = fresh
        v, new = new_value(worth[i], shown)
        density = v / max(cost_of(i, ev), 1)
        if heap and density < -heap[0][0]:  # worth less than it was: back in line
            heapq.heappush(heap, (-density, i))
            continue
        if density < value.min_density or v <= 0.0:
            break
        room = budget_tokens - used
        if cost_of(i, ev) > room:
            part = cut_to(ev, room)
            if part is not None:  # the last group, cut to what fits; nothing comes after it
                kept.append(part)
                on_keep(part)
                break
            continue
        kept.append(ev)
        on_keep(ev)
        shown |= new
        used += cost_of(i, ev)
    return kept
