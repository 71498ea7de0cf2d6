"""KGCoT's bounded edge-weight update rule (Luan et al. 2024, §2.4), as pure functions.

An edge l_i leaves node e with weight w_i; S = Σ_j w_j over the outgoing edges of e, and
p_i = w_i / S is the probability that KGCoT's weighted DFS takes l_i. A feedback moves p_i:

* ``excellent``: w_i += α(1−p_i) / (1−α(1−p_i)) · S, so that Δp_i = +α(1−p_i)²;
* ``poor``:      w_i −= β p_i² / (1−p_i+β p_i²) · S, so that Δp_i = −β p_i².

Derivation (write the change as δ = k·S; the siblings are unchanged, so S' = S ± δ):

* excellent: p' = (p+k)/(1+k), so p'−p = k(1−p)/(1+k). With k = α(1−p)/(1−α(1−p)) we
  get k/(1+k) = α(1−p), hence Δp = α(1−p)².
* poor: p' = (p−k)/(1−k), so p'−p = −k(1−p)/(1−k). With k = βp²/(1−p+βp²) we get
  1−k = (1−p)/(1−p+βp²) and k/(1−k) = βp²/(1−p), hence Δp = −βp².

**Deviation from the paper:** the paper prints the ``poor`` update without the factor S
(``w_i −= β p_i² / (1 − p_i + β p_i²)``). Without it the stated Δp = −β p_i² only holds
when S = 1, so this module multiplies by S (as the paper's own ``excellent`` update does)
and the identity holds for every S.

Bounds: for α, β in (0, 1) and 0 < p < 1 the new probability stays in (0, 1), because
1−p' = (1−p)(1−α(1−p)) > 0 and p' = p(1−βp) > 0; so every weight stays > 0. The code
computes 1−p as R/S with R the exactly summed sibling weights (not as 1 − w/S), so tiny
siblings do not cancel to zero, and writes the poor update as the product of positives
w' = w(1−p)(1−βp)/(1−p+βp²).

Choices:

* ``alpha=None`` means the paper's recommended α = 1/S (it bounds the growth of S: with
  S ≥ 2 an excellent step adds (1−p)/(1−(1−p)/S) < 2 to S). α must be < 1, so it is
  clamped: α = min(1/S, ALPHA_CAP) with ALPHA_CAP = 0.5. That is exactly the paper's
  value for every node whose out-weights sum to at least 2 (every fresh node with two or
  more edges, since weights start at 1.0), is continuous in S, and stays well below 1
  once poor feedback has driven S under 2.
* A node with a single outgoing edge (p = 1) is left unchanged.
* Several target edges under the same head in one feedback are updated one after the
  other in sorted relation-id order; S, p (and the default α) are recomputed from the
  current weights before each step.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from kgmind.stores.protocol import WeightRule

__all__ = [
    "ALPHA_CAP",
    "DEFAULT_BETA",
    "RATINGS",
    "Rating",
    "apply_rule",
    "check_rate",
    "effective_alpha",
    "make_rule",
    "updated_weight",
]

Rating = Literal["excellent", "poor"]

#: The ratings that change weights.
RATINGS: tuple[str, ...] = ("excellent", "poor")

#: Upper bound of the default α = 1/S (α must stay < 1).
ALPHA_CAP = 0.5

#: Default β of the poor update (the paper's recommendation).
DEFAULT_BETA = 0.5


def check_rate(name: str, value: float) -> float:
    """Validate a learning rate α or β: a finite number strictly between 0 and 1.

    Args:
        name: ``alpha`` or ``beta`` (for the error message).
        value: The rate.

    Returns:
        The rate as a float.

    Raises:
        ValueError: The rate is not in the open interval (0, 1).

    """
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}") from exc
    if not (0.0 < v < 1.0):
        raise ValueError(f"{name} must be in the open interval (0, 1), got {value!r}")
    return v


def effective_alpha(total: float, alpha: float | None = None) -> float:
    """Return the α used for a node whose outgoing weights sum to ``total``.

    Args:
        total: S, the sum of the node's outgoing edge weights (> 0).
        alpha: A fixed α in (0, 1), or ``None`` for min(1/S, ALPHA_CAP).

    Returns:
        α in (0, 1).

    Raises:
        ValueError: ``alpha`` is given and not in (0, 1), or ``total`` is not > 0.

    """
    if alpha is not None:
        return check_rate("alpha", alpha)
    if not (total > 0 and math.isfinite(total)):
        raise ValueError(f"the sum of outgoing weights must be finite and > 0, got {total!r}")
    return min(1.0 / total, ALPHA_CAP)


def _check_weights(weights: Sequence[float]) -> None:
    for w in weights:
        if not (w > 0 and math.isfinite(w)):
            raise ValueError(f"edge weights must be finite and > 0, got {w!r}")


def updated_weight(
    rating: str,
    weights: Sequence[float],
    index: int,
    *,
    alpha: float | None = None,
    beta: float = DEFAULT_BETA,
) -> float:
    """Return the new weight of edge ``index`` among a node's outgoing edges after one feedback.

    Args:
        rating: ``excellent`` or ``poor``.
        weights: Current weights of *all* outgoing edges of the head node.
        index: Position of the rated edge in ``weights``.
        alpha: Fixed α in (0, 1); ``None`` = min(1/S, ALPHA_CAP).
        beta: β in (0, 1) for ``poor``.

    Returns:
        The new weight (> 0). Unchanged when the edge is the node's only outgoing edge
        (p = 1), or in the degenerate float case where the update would not be a
        finite positive number.

    Raises:
        ValueError: Unknown rating, α/β outside (0, 1), or a weight that is not finite and > 0.
        IndexError: ``index`` is out of range.

    """
    if rating not in RATINGS:
        raise ValueError(f"rating must be one of {RATINGS}, got {rating!r}")
    _check_weights(weights)
    w = float(weights[index])
    rest = math.fsum(float(x) for i, x in enumerate(weights) if i != index)
    total = w + rest
    a = effective_alpha(total, alpha)
    b = check_rate("beta", beta)
    if rest <= 0.0:
        return w  # single outgoing edge: p = 1, nothing to move
    p = w / total
    q = rest / total  # 1 - p, computed without cancellation
    if q <= 0.0:
        return w
    if rating == "excellent":
        new = w + a * q / (1.0 - a * q) * total
    else:
        # w - k S with k = β p² / (1 - p + β p²), rewritten as a product of positives:
        # S (p - k) = w (1 - p)(1 - β p) / (1 - p + β p²)
        new = w * q * (1.0 - b * p) / (q + b * p * p)
    if not (new > 0.0 and math.isfinite(new)):
        return w
    return new


def apply_rule(
    siblings: Mapping[str, Sequence[tuple[str, float]]],
    relation_ids: Iterable[str],
    rating: str,
    *,
    alpha: float | None = None,
    beta: float = DEFAULT_BETA,
) -> dict[str, float]:
    """Apply one feedback to the outgoing edges of the touched head nodes.

    Target edges are processed in sorted relation-id order (duplicates once); for each,
    S and p are recomputed from the weights as updated by the earlier
    steps, so several targets under one head compound deterministically.

    Args:
        siblings: ``{head_id: [(relation_id, weight), ...]}``, every outgoing edge of
            every head node of ``relation_ids``.
        relation_ids: The rated edges.
        rating: ``excellent`` or ``poor``.
        alpha: Fixed α in (0, 1); ``None`` = min(1/S, ALPHA_CAP) per step.
        beta: β in (0, 1).

    Returns:
        ``{relation_id: new_weight}`` for the edges whose weight changed.

    Raises:
        ValueError: Unknown rating, invalid α/β or weights, or a relation id that is not
            among ``siblings`` (so the store rolls the whole feedback back).

    """
    if rating not in RATINGS:
        raise ValueError(f"rating must be one of {RATINGS}, got {rating!r}")
    if alpha is not None:
        check_rate("alpha", alpha)
    check_rate("beta", beta)
    where: dict[str, tuple[str, int]] = {}
    current: dict[str, list[float]] = {}
    ids_of: dict[str, list[str]] = {}
    for head, edges in siblings.items():
        ids_of[head] = [rid for rid, _ in edges]
        current[head] = [float(w) for _, w in edges]
        _check_weights(current[head])
        for i, (rid, _) in enumerate(edges):
            where[rid] = (head, i)
    targets = sorted(set(relation_ids))
    unknown = [rid for rid in targets if rid not in where]
    if unknown:
        raise ValueError(f"relation ids not among the given outgoing edges: {unknown}")
    original = {rid: current[h][i] for rid, (h, i) in where.items()}
    for rid in targets:
        head, i = where[rid]
        current[head][i] = updated_weight(rating, current[head], i, alpha=alpha, beta=beta)
    out: dict[str, float] = {}
    for head, ids in ids_of.items():
        for rid, w in zip(ids, current[head], strict=True):
            if w != original[rid]:
                out[rid] = w
    return out


def make_rule(rating: str, alpha: float | None = None, beta: float = DEFAULT_BETA) -> WeightRule:
    """Build the :data:`~kgmind.stores.protocol.WeightRule` a store calls inside its transaction.

    Args:
        rating: ``excellent`` or ``poor``.
        alpha: Fixed α in (0, 1), or ``None`` for the paper's 1/S (clamped, see module doc).
        beta: β in (0, 1), default 0.5.

    Returns:
        A pure function ``rule(siblings, relation_ids) -> {relation_id: new_weight}``.

    Raises:
        ValueError: Unknown rating or α/β outside (0, 1) (checked here, before any store work).

    """
    if rating not in RATINGS:
        raise ValueError(f"rating must be one of {RATINGS}, got {rating!r}")
    if alpha is not None:
        alpha = check_rate("alpha", alpha)
    beta = check_rate("beta", beta)

    def rule(
        siblings: Mapping[str, Sequence[tuple[str, float]]], relation_ids: Sequence[str]
    ) -> Mapping[str, float]:
        return apply_rule(siblings, relation_ids, rating, alpha=alpha, beta=beta)

    rule.__name__ = f"kgcot_{rating}_rule"
    return rule
