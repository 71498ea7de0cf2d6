"""Property tests of KGCoT's bounded weight-update rule (kgmind.stores.weights)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgmind.stores.weights import (
    ALPHA_CAP,
    apply_rule,
    check_rate,
    effective_alpha,
    make_rule,
    updated_weight,
)

weight = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False, allow_infinity=False)
weights_list = st.lists(weight, min_size=2, max_size=8)
rate = st.floats(min_value=1e-3, max_value=0.999, allow_nan=False)
maybe_alpha = st.one_of(st.none(), rate)


def _p(ws: list[float], i: int) -> float:
    return ws[i] / math.fsum(ws)


@settings(max_examples=300, deadline=None)
@given(ws=weights_list, data=st.data(), alpha=maybe_alpha)
def test_excellent_moves_p_by_alpha_one_minus_p_squared(
    ws: list[float], data: st.DataObject, alpha: float | None
) -> None:
    i = data.draw(st.integers(0, len(ws) - 1))
    p = _p(ws, i)
    a = effective_alpha(math.fsum(ws), alpha)
    new = updated_weight("excellent", ws, i, alpha=alpha)
    after = [*ws[:i], new, *ws[i + 1 :]]
    p2 = _p(after, i)
    assert new > ws[i] > 0
    assert 0 < p2 < 1
    assert p2 - p == pytest.approx(a * (1 - p) ** 2, rel=1e-9, abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(ws=weights_list, data=st.data(), beta=rate)
def test_poor_moves_p_by_minus_beta_p_squared(ws: list[float], data: st.DataObject, beta: float) -> None:
    i = data.draw(st.integers(0, len(ws) - 1))
    p = _p(ws, i)
    new = updated_weight("poor", ws, i, beta=beta)
    after = [*ws[:i], new, *ws[i + 1 :]]
    p2 = _p(after, i)
    assert 0 < new < ws[i]
    assert 0 < p2 < 1
    assert p2 - p == pytest.approx(-beta * p * p, rel=1e-9, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(
    ws=weights_list,
    data=st.data(),
    rating=st.sampled_from(["excellent", "poor"]),
    alpha=maybe_alpha,
    beta=rate,
)
def test_siblings_probabilities_move_opposite_way(
    ws: list[float], data: st.DataObject, rating: str, alpha: float | None, beta: float
) -> None:
    i = data.draw(st.integers(0, len(ws) - 1))
    new = updated_weight(rating, ws, i, alpha=alpha, beta=beta)
    after = [*ws[:i], new, *ws[i + 1 :]]
    # a rated edge with a tiny probability may move by less than a float can show in its
    # siblings' probabilities (p = 1e-6, beta = 1e-3: a shift of 1e-15): then they must not move
    # the wrong way; otherwise they move strictly
    visible = abs(new - ws[i]) > 1e-9 * math.fsum(ws)
    for j in range(len(ws)):
        if j == i:
            continue
        before, moved = _p(ws, j), _p(after, j)
        if rating == "excellent":
            assert moved < before if visible else moved <= before
        else:
            assert moved > before if visible else moved >= before
        assert after[j] == ws[j]


@settings(max_examples=100, deadline=None)
@given(w=weight, rating=st.sampled_from(["excellent", "poor"]), alpha=maybe_alpha, beta=rate)
def test_single_outgoing_edge_is_unchanged(w: float, rating: str, alpha: float | None, beta: float) -> None:
    assert updated_weight(rating, [w], 0, alpha=alpha, beta=beta) == w
    rule = make_rule(rating, alpha=alpha, beta=beta)
    assert dict(rule({"h": [("r1", w)]}, ["r1"])) == {}


@settings(max_examples=100, deadline=None)
@given(ws=weights_list, rating=st.sampled_from(["excellent", "poor"]), n=st.integers(1, 60))
def test_repeated_feedback_keeps_weights_positive_and_p_inside(ws: list[float], rating: str, n: int) -> None:
    edges = [(f"r{k}", w) for k, w in enumerate(ws)]
    rule = make_rule(rating)
    for _ in range(n):
        changed = rule({"h": edges}, ["r0"])
        edges = [(rid, changed.get(rid, w)) for rid, w in edges]
    cur = [w for _, w in edges]
    assert all(w > 0 and math.isfinite(w) for w in cur)
    assert 0 < _p(cur, 0) < 1
    if rating == "excellent":
        assert _p(cur, 0) > _p(ws, 0)
    else:
        assert _p(cur, 0) < _p(ws, 0)


@settings(max_examples=100, deadline=None)
@given(
    ws=st.lists(weight, min_size=3, max_size=6),
    rating=st.sampled_from(["excellent", "poor"]),
    alpha=maybe_alpha,
    beta=rate,
)
def test_several_targets_under_one_head_apply_sequentially_in_sorted_id_order(
    ws: list[float], rating: str, alpha: float | None, beta: float
) -> None:
    ids = [f"r{k}" for k in range(len(ws))]
    edges = list(zip(ids, ws, strict=True))
    targets = [ids[2], ids[0]]  # deliberately unsorted
    got = make_rule(rating, alpha=alpha, beta=beta)({"h": edges}, targets)
    # manual sequential replay in sorted id order, recomputing S and p each step
    cur = list(ws)
    for rid in sorted(targets):
        k = ids.index(rid)
        cur[k] = updated_weight(rating, cur, k, alpha=alpha, beta=beta)
    assert set(got) == {ids[0], ids[2]}
    assert got[ids[0]] == cur[0] and got[ids[2]] == cur[2]
    # the caller's order does not matter: targets are sorted inside the rule
    assert got == make_rule(rating, alpha=alpha, beta=beta)({"h": edges}, list(reversed(targets)))


def test_targets_under_different_heads_are_independent() -> None:
    sib = {"a": [("ra1", 1.0), ("ra2", 1.0)], "b": [("rb1", 2.0), ("rb2", 1.0), ("rb3", 1.0)]}
    got = make_rule("poor")(sib, ["rb1", "ra1"])
    alone_a = make_rule("poor")({"a": sib["a"]}, ["ra1"])
    alone_b = make_rule("poor")({"b": sib["b"]}, ["rb1"])
    assert got == {**alone_a, **alone_b}
    assert got["ra1"] < 1.0 and got["rb1"] < 2.0


def test_hand_computed_two_edge_node() -> None:
    # S = 2, p = 1/2, α = 1/S = 1/2: Δp = 1/2 · 1/4 = 1/8 → p' = 5/8 → w' = 5/3 (sibling 1).
    assert updated_weight("excellent", [1.0, 1.0], 0) == pytest.approx(5 / 3, rel=1e-12)
    # β = 1/2: Δp = −1/2 · 1/4 = −1/8 → p' = 3/8 → w' = 3/5.
    assert updated_weight("poor", [1.0, 1.0], 0) == pytest.approx(3 / 5, rel=1e-12)


def test_default_alpha_is_one_over_s_clamped() -> None:
    assert effective_alpha(4.0) == pytest.approx(0.25)
    assert effective_alpha(2.0) == pytest.approx(0.5)
    assert effective_alpha(0.2) == ALPHA_CAP < 1
    assert effective_alpha(1.0) == ALPHA_CAP
    assert effective_alpha(123.0, alpha=0.3) == 0.3


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, float("nan"), float("inf"), "x"])
def test_invalid_alpha_beta_are_rejected(bad: object) -> None:
    with pytest.raises(ValueError):
        make_rule("excellent", alpha=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        make_rule("poor", beta=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        check_rate("alpha", bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("rating", ["neutral", "", "Excellent ", None])
def test_invalid_rating_rejected(rating: object) -> None:
    with pytest.raises(ValueError):
        make_rule(rating)  # type: ignore[arg-type]


def test_unknown_relation_id_raises_so_store_rolls_back() -> None:
    with pytest.raises(ValueError, match="r-missing"):
        make_rule("excellent")({"h": [("r1", 1.0), ("r2", 1.0)]}, ["r1", "r-missing"])


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_stored_weight_raises(bad: float) -> None:
    with pytest.raises(ValueError):
        apply_rule({"h": [("r1", 1.0), ("r2", bad)]}, ["r1"], "poor")


def test_duplicate_targets_count_once() -> None:
    sib = {"h": [("r1", 1.0), ("r2", 1.0)]}
    assert make_rule("excellent")(sib, ["r1", "r1"]) == make_rule("excellent")(sib, ["r1"])


@settings(max_examples=50, deadline=None)
@given(
    tiny=st.floats(min_value=1e-300, max_value=1e-12),
    big=st.floats(min_value=1.0, max_value=1e12),
    rating=st.sampled_from(["excellent", "poor"]),
)
def test_extreme_ratios_never_produce_non_positive_weights(tiny: float, big: float, rating: str) -> None:
    for ws in ([big, tiny], [tiny, big]):
        for i in range(2):
            new = updated_weight(rating, ws, i)
            assert new > 0 and math.isfinite(new)
