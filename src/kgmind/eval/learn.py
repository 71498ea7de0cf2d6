"""``kgmind learn``: one pass of automatic feedback over questions with reference answers.

Every training question runs through the compiled graph (the ``kgmind`` method of the
evaluation, no LLM, the data set's stored question entities), its reference answer is
turned into a gold set (the KG entities it names, :func:`kgmind.eval.gold.derive_gold`),
and the rating goes through :func:`kgmind.stores.feedback.apply_feedback`, the audited,
transactional, idempotent path a user's ``kgmind feedback`` takes. So a learnt store is an
ordinary store: ``kgmind eval --store URI`` measures it, ``kgmind kg weights`` shows it.

What gets rated (:func:`credit_edges`); each choice was measured on the calibration split
and the default is the best of them (README, "Learning from feedback"):

* ``excellent``, credit ``reference`` (the default): the edges of each disease the
  reference answer names toward the entities the patient reported (``has_symptom`` to the
  linked question entities) and toward the answer's other entities (its tests and
  medications), *whether or not the evidence showed them* (counterfactual credit). It
  learns p(symptom | disease), which new patients with the same disease share; the
  ranking uses it only to order diseases the question cannot otherwise tell apart
  (:func:`kgmind.retrievers.exploration.rank_diseases`).
* credit ``question``: the edges from the linked question entities toward the
  reference's entities (p(disease | symptom)), plus the shown edges to gold. It learns
  which diseases were frequent in training, which does not carry over to new patients.
* credit ``shown``: the shown edges whose tail is gold (what KGCoT can rate).
* ``poor`` (off by default): ``outranked`` lowers the edges from linked entities to the
  non-gold diseases that the current weights rank above the best gold disease (a ranking
  mistake); ``shown`` lowers every shown edge that leads to no gold entity (the
  2026-11-21 benchmark, which made held-out recall worse).

Feedback ids derive from the data set and the item id only, so a repeated pass, or a pass
resumed after an interruption, applies nothing twice: an item whose feedback is already in
the store's audit log is skipped before its retrieval runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from kgmind.eval.config import EvalConfig, ItemSource
from kgmind.eval.items import EvalItem, build_items, read_ids
from kgmind.eval.kg import default_kg, prepare_store
from kgmind.eval.methods import METHODS
from kgmind.eval.resources import Resources
from kgmind.models import Evidence, normalize_name
from kgmind.relations import DISEASE
from kgmind.retrievers.exploration import rank_diseases
from kgmind.retrievers.graph_index import GraphIndex
from kgmind.stores.feedback import apply_feedback
from kgmind.stores.weights import DEFAULT_BETA, check_rate

__all__ = [
    "CREDITS",
    "LEARN_DATASETS",
    "POOR_MODES",
    "Credit",
    "LearnConfig",
    "credit_edges",
    "learn_feedback_id",
    "learning_order",
    "run_learn",
    "summary_line",
]

#: Data sets with a reference answer from which a gold set is derived.
LEARN_DATASETS: tuple[str, ...] = ("genmedgpt5k", "cmcqa")
#: What ``excellent`` credits (see :func:`credit_edges`).
CREDITS: tuple[str, ...] = ("reference", "question", "shown")
#: What ``poor`` lowers: nothing, the ranking mistakes, or every shown edge without gold.
POOR_MODES: tuple[str, ...] = ("none", "outranked", "shown")


@dataclass
class LearnConfig(ItemSource):
    """Settings of one ``kgmind learn`` pass (the command's options).

    Attributes:
        limit: Learn from the first this many questions of the seeded order.
        seed: Seed of the order (prefixes nest).
        exclude: A file of item ids never learnt from (a held-out test set).
        credit: What ``excellent`` credits (:data:`CREDITS`).
        poor: What ``poor`` lowers (:data:`POOR_MODES`).
        beta: β of the poor update, in (0, 1).
    """

    limit: int | None = None
    seed: int = 0
    exclude: str | None = None
    credit: str = "reference"
    poor: str = "none"
    beta: float = DEFAULT_BETA

    def check(self) -> None:
        """Reject bad settings before anything is read or written.

        Raises:
            ValueError: Unknown data set, credit or poor mode, β outside (0, 1), or no store.

        """
        if self.dataset not in LEARN_DATASETS:
            raise ValueError(
                f"kgmind learn needs reference answers; choose a data set from {', '.join(LEARN_DATASETS)}"
            )
        if self.credit not in CREDITS:
            raise ValueError(f"--credit must be one of {', '.join(CREDITS)}, got {self.credit!r}")
        if self.poor not in POOR_MODES:
            raise ValueError(f"--poor must be one of {', '.join(POOR_MODES)}, got {self.poor!r}")
        check_rate("beta", self.beta)
        if not self.store:
            raise ValueError(
                "kgmind learn changes the weights of the store it is given: pass --store URI "
                "(an empty store gets the data set's KG imported first)"
            )

    def eval_config(self) -> EvalConfig:
        """The evaluation settings that build the same items and open the same store.

        Without ``kg`` the data set's default KG file is named, so that an empty store
        gets it imported (a store that holds a KG is used as it is).
        """
        shared = {f.name: getattr(self, f.name) for f in fields(ItemSource)}
        shared["kg"], shared["kg_format"] = default_kg(self)
        return EvalConfig(**shared, methods="kgmind")


@dataclass(frozen=True)
class Credit:
    """The edges one training question rates, and why each set was chosen."""

    excellent: list[str]
    poor: list[str]
    gold_nodes: int
    gold_diseases: int


def learning_order(items: Sequence[EvalItem], seed: int) -> list[EvalItem]:
    """The items in a seeded order whose prefixes nest: ``--limit 300`` learns a prefix of ``--limit 1000``.

    The order is by ``sha256("kgmind-learn:<seed>:<id>")``, so an item's place depends on
    its id and the seed only, not on which other rows a file holds.
    """

    def key(item: EvalItem) -> bytes:
        return hashlib.sha256(f"kgmind-learn:{seed}:{item.id}".encode()).digest()

    return sorted(items, key=key)


def learn_feedback_id(dataset: str, item_id: str, rating: str) -> str:
    """The feedback id of a learn pass's rating of one item: the same on every pass."""
    digest = hashlib.blake2b(f"{dataset}\x1f{item_id}\x1f{rating}".encode(), digest_size=12).hexdigest()
    return f"learn-{digest}"


def _name_index(gi: GraphIndex) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, name in enumerate(gi.names):
        out.setdefault(normalize_name(name), []).append(i)
    return out


def _disease_like(gi: GraphIndex, node: int) -> bool:
    return gi.types[node] == DISEASE


def credit_edges(
    gi: GraphIndex,
    linked: Sequence[str],
    evidence: Iterable[Evidence],
    gold_names: Iterable[str],
    *,
    credit: str = "reference",
    poor: str = "none",
    names: dict[str, list[int]] | None = None,
) -> Credit:
    """Choose the edges one training question rates ``excellent`` and ``poor``.

    Args:
        gi: The graph index (current weights; ``poor="outranked"`` reads the ranking).
        linked: Entity ids the run linked.
        evidence: The evidence the run selected.
        gold_names: Names of the reference answer's KG entities.
        credit: ``reference``, ``question`` or ``shown`` (see the module doc).
        poor: ``none``, ``outranked`` or ``shown``.
        names: A prebuilt ``normalize_name(name) -> node indices`` map (built when ``None``).

    Returns:
        The rated relation ids (sorted, disjoint: an edge never gets both ratings).

    """
    names = names if names is not None else _name_index(gi)
    gold: set[int] = set()
    for n in gold_names:
        gold.update(names.get(normalize_name(n), ()))
    linked_nodes = [gi.index_of[e] for e in linked if e in gi.index_of]
    shown: set[int] = set()
    for ev in evidence:
        for rid in ev.relation_ids:
            e = gi.edge_index_of.get(rid)
            if e is not None:
                shown.add(e)
    gold_diseases = [g for g in gold if _disease_like(gi, g)]
    good: set[int] = set()
    if credit == "reference":
        # the reference's diseases, toward what the patient reported and what the answer named
        targets = gold | set(linked_nodes)
        for node in gold_diseases:
            good.update(e for e in gi.out_adj[node] if gi.edge_tail[e] in targets and gi.edge_tail[e] != node)
    elif credit == "question":
        # the question's entities toward the reference's, and the reference's diseases toward the rest
        good.update(e for e in shown if gi.edge_tail[e] in gold)
        for node in (*linked_nodes, *gold_diseases):
            good.update(e for e in gi.out_adj[node] if gi.edge_tail[e] in gold and gi.edge_tail[e] != node)
    else:
        good.update(e for e in shown if gi.edge_tail[e] in gold)
    bad: set[int] = set()
    if poor == "shown":
        bad = {e for e in shown if gi.edge_tail[e] not in gold} - good
    elif poor == "outranked" and gold_diseases:
        ranking = rank_diseases(gi, linked, weight_aware=True)
        above: set[int] = set()
        for did, _, _ in ranking:
            d = gi.index_of[did]
            if d in gold:
                break
            above.add(d)
        for node in linked_nodes:
            bad.update(
                e for e in gi.out_adj[node] if gi.edge_tail[e] in above and gi.schema.votes(gi.edge_type[e])
            )
        bad -= good
    return Credit(
        excellent=sorted(gi.edge_id[e] for e in good),
        poor=sorted(gi.edge_id[e] for e in bad),
        gold_nodes=len(gold),
        gold_diseases=len(gold_diseases),
    )


def _select(cfg: LearnConfig) -> tuple[list[EvalItem], dict[str, Any]]:
    items, info = build_items(cfg.eval_config())
    items = [it for it in items if it.gold_names]
    if not cfg.ids:
        items = learning_order(items, cfg.seed)
    if cfg.exclude:
        held_out = set(read_ids(cfg.exclude))
        items = [it for it in items if it.id not in held_out]
    if cfg.limit:
        items = items[: cfg.limit]
    return items, info


def _learn_item(
    item: EvalItem,
    cfg: LearnConfig,
    res: Resources,
    gi: GraphIndex,
    names: dict[str, list[int]],
    fids: dict[str, str],
    stats: dict[str, int],
) -> None:
    """Run one question, rate its edges, and count what moved in ``stats``.

    ``gi`` is the pass's cached index (committed feedback updates its weights in place)
    and ``names`` its name map, built once per pass.
    """
    result = METHODS["kgmind"].func(item.question, item.entities, res, cfg.budget)
    credit = credit_edges(
        gi, result.linked, result.evidence, item.gold_names, credit=cfg.credit, poor=cfg.poor, names=names
    )
    run_id = f"learn:{cfg.dataset}:{item.id}"
    moved = 0
    for rating, rids in (("excellent", credit.excellent), ("poor", credit.poor)):
        if not rids:
            continue
        changes = apply_feedback(res.store(), run_id, rating, rids, feedback_id=fids[rating], beta=cfg.beta)
        if changes:
            stats["feedbacks"] += 1
            moved += len(changes)
            up = sum(1 for c in changes if c.new_weight > c.old_weight)
            stats["edges_up"] += up
            stats["edges_down"] += len(changes) - up
    stats["learnt" if moved else "no_credit"] += 1


def run_learn(
    cfg: LearnConfig,
    *,
    on_start: Callable[[int], None] | None = None,
    on_advance: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Run one learn pass: rate every selected question's edges, one feedback per rating.

    Args:
        cfg: The pass's settings.
        on_start: Called with the number of questions before the first (progress bars).
        on_advance: Called after each question.

    Returns:
        A JSON-able summary: the store, the questions done and skipped (already learnt),
        the feedbacks applied, the edges moved up and down, and the settings.

    Raises:
        ValueError: Bad settings or ids (nothing written).

    """
    cfg.check()
    items, _ = _select(cfg)
    uri = prepare_store(cfg.eval_config())
    if uri is None:
        raise ValueError(f"no KG store for {cfg.dataset}; pass --store URI")
    res = Resources(store_uri=uri, seed=cfg.seed)
    store = res.store()
    gi = res.graph_index()
    names = _name_index(gi)
    stats = dict.fromkeys(
        ("questions", "learnt", "skipped_already_learnt", "no_credit", "feedbacks", "edges_up", "edges_down"),
        0,
    )
    stats["questions"] = len(items)
    applied = {c.feedback_id for c in store.weight_changes()}  # one read of the audit log, not one per item
    if on_start:
        on_start(len(items))
    for item in items:
        fids = {r: learn_feedback_id(cfg.dataset, item.id, r) for r in ("excellent", "poor")}
        if applied.intersection(fids.values()):
            stats["skipped_already_learnt"] += 1
        else:
            _learn_item(item, cfg, res, gi, names, fids, stats)
        if on_advance:
            on_advance()
    return {"store": uri, **stats, "weights_version": store.weights_version(), "config": asdict(cfg)}


def summary_line(out: dict[str, Any]) -> str:
    """One line for the terminal: what the pass did."""
    return (
        f"{out['questions']} questions: {out['learnt']} learnt, "
        f"{out['skipped_already_learnt']} already learnt, "
        f"{out['no_credit']} without a rated edge; {out['feedbacks']} feedbacks, "
        f"{out['edges_up']} edges up, {out['edges_down']} down ({out['store']})"
    )
