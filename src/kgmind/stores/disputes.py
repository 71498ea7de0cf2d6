"""Per-claim verdicts on KG edges, as pure functions every backend shares (issue 41).

A person says an edge behind a claim is ``wrong`` or ``right``; a store keeps every
verdict as an audited row (:class:`kgmind.models.VerdictRecord`) and never a running
count, so concurrent verdicts cannot lose one another and a restore is one more row.
This module turns those rows into each edge's :class:`~kgmind.models.DisputeState`
under a :class:`~kgmind.tuning.DisputeRule`, and checks a verdict list before any store
work. The rule is applied here, in Python, never in Cypher, so changing it needs no
migration and both backends agree by construction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kgmind.models import VERDICTS, DisputeState, Relation, VerdictRecord
from kgmind.settings import get_settings
from kgmind.stores.protocol import GraphStore
from kgmind.tuning import DISPUTE_RULE, DisputeRule

__all__ = [
    "RATING_OF_VERDICT",
    "WeightVerdicts",
    "active_rule",
    "check_verdicts",
    "dispute_states",
    "edges_named",
    "require_text",
]

#: The KGCoT rating each verdict applies to its edges (KGCoT §2.4): a wrong edge gets the
#: bounded "poor" update, a confirmed one the "excellent" update.
RATING_OF_VERDICT: dict[str, str] = {"wrong": "poor", "right": "excellent"}


class WeightVerdicts:
    """A checked verdict list, split by verdict: the edges called wrong and those called right.

    Attributes:
        wrong: Distinct relation ids called wrong, in the order given.
        right: Distinct relation ids called right, in the order given.
    """

    def __init__(self, wrong: list[str], right: list[str]) -> None:
        self.wrong = wrong
        self.right = right

    def rows(self) -> list[tuple[str, str]]:
        """``(relation_id, verdict)`` for every edge, wrong ones first."""
        return [(rid, "wrong") for rid in self.wrong] + [(rid, "right") for rid in self.right]

    def relation_ids(self) -> list[str]:
        """Every judged edge, wrong ones first."""
        return [*self.wrong, *self.right]


def require_text(name: str, value: object) -> str:
    """``value`` stripped, or a ValueError naming ``name`` when it is not a non-blank string."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-blank string, got {value!r}")
    return value.strip()


def check_verdicts(verdicts: Iterable[Sequence[str]]) -> WeightVerdicts:
    """Check ``(relation_id, verdict)`` pairs and split them by verdict.

    A repeated pair counts once; one edge called both wrong and right in the same
    feedback is a contradiction, not a verdict, and is refused.

    Raises:
        ValueError: A pair that is not ``(non-blank id, "wrong" | "right")``, or an edge
            with both verdicts.

    """
    by_id: dict[str, str] = {}
    for pair in verdicts:
        if isinstance(pair, str) or len(pair) != 2:
            raise ValueError(f"a verdict is a (relation_id, 'wrong' | 'right') pair, got {pair!r}")
        rid = require_text("relation id", pair[0])
        verdict = str(pair[1]).strip().lower()
        if verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}, got {pair[1]!r}")
        if by_id.setdefault(rid, verdict) != verdict:
            raise ValueError(f"relation {rid} is called both wrong and right in one feedback")
    return WeightVerdicts(
        [rid for rid, v in by_id.items() if v == "wrong"], [rid for rid, v in by_id.items() if v == "right"]
    )


def active_rule(rule: DisputeRule | None = None) -> DisputeRule:
    """``rule``, else the deployment's (``KGMIND_DISPUTE_RULE``), else the fitted default.

    Which edges a flag hides is a curation policy (one flag, or two independent ones), so a
    deployment may set it; every reader of dispute states asks here, so all agree.
    """
    if rule is not None:
        return rule
    given = get_settings().dispute_rule
    return DisputeRule(*given) if given else DISPUTE_RULE


def dispute_states(
    records: Iterable[VerdictRecord], rule: DisputeRule | None = None, relation_ids: Iterable[str] = ()
) -> dict[str, DisputeState]:
    """Fold verdict rows (oldest first) into each edge's dispute state under ``rule``.

    A ``restore`` row forgets the edge's earlier verdicts; ``wrong`` and ``right`` count
    distinct run ids after it.

    Args:
        records: Verdict rows in commit order.
        rule: The dispute rule.
        relation_ids: Edges to report even without a verdict (a clean state each).

    Returns:
        ``{relation_id: DisputeState}`` for every edge in ``records`` or ``relation_ids``.

    """
    rule = active_rule(rule)
    wrong: dict[str, dict[str, None]] = {rid: {} for rid in relation_ids}
    right: dict[str, set[str]] = {rid: set() for rid in wrong}
    for rec in records:
        runs_wrong = wrong.setdefault(rec.relation_id, {})
        runs_right = right.setdefault(rec.relation_id, set())
        if rec.verdict == "restore":
            runs_wrong.clear()
            runs_right.clear()
        elif rec.verdict == "wrong":
            runs_wrong.setdefault(rec.run_id, None)
        else:
            runs_right.add(rec.run_id)
    return {
        rid: DisputeState(
            relation_id=rid,
            wrong=len(runs),
            right=len(right[rid]),
            runs=list(runs),
            disputed=rule.disputed(len(runs), len(right[rid])),
        )
        for rid, runs in wrong.items()
    }


def edges_named(store: GraphStore, head: str, relation: str, tail: str) -> list[Relation]:
    """The stored edges ``head -[relation]-> tail``, found by entity names as in the KG (and aliases).

    Names are matched as the store's name lookup matches them (normalised), the relation
    as a stored type key (``"Has Symptom"`` finds ``has_symptom``), in the stored direction.
    Two entities sharing a name give every matching edge.
    """
    heads = [e.id for e in store.find_entities(head)]
    tails = {e.id for e in store.find_entities(tail)}
    if not heads or not tails or not relation.strip():
        return []
    return [r for r in store.neighbors(heads, "out", [relation]) if r.tail in tails]
