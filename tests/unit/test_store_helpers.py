"""The protocol behaviour the GraphStore backends share through :mod:`kgmind.stores.base`."""

from __future__ import annotations

from typing import Any

import pytest

from kgmind.models import Entity, KnowledgeDoc, Relation
from kgmind.stores.base import (
    LoadInput,
    NeighborArgs,
    SiblingEdges,
    in_id_order,
    neighbor_args,
    unknown_endpoints_error,
)
from kgmind.stores.protocol import StoreError


def test_neighbor_args_normalises_types_and_limit() -> None:
    assert neighbor_args(("a", "b"), "in", [" Has Symptom "], 7.0) == NeighborArgs(  # type: ignore[arg-type]
        ["a", "b"], ["has_symptom"], 7
    )
    assert neighbor_args(["a"], "out", None, None) == NeighborArgs(["a"], None, None)


def test_neighbor_args_needs_no_query_for_an_empty_answer() -> None:
    assert neighbor_args([], "both", None, None) is None
    assert neighbor_args(["a"], "out", None, 0) is None


def test_neighbor_args_rejects_a_bad_direction_even_without_ids() -> None:
    with pytest.raises(ValueError, match="direction"):
        neighbor_args([], "sideways", None, None)


def test_in_id_order_keeps_the_order_asked_and_skips_unknown_ids() -> None:
    docs = {d: KnowledgeDoc(id=d, entity_id="e", text=d) for d in ("x", "y")}
    asked: list[list[str]] = []

    def fetch(ids: list[str]) -> list[KnowledgeDoc]:
        asked.append(ids)
        return [docs[i] for i in sorted(ids) if i in docs]

    assert [d.id for d in in_id_order(("y", "nope", "x"), fetch)] == ["y", "x"]
    assert in_id_order([], fetch) == []
    assert asked == [["y", "nope", "x"]]


def test_load_input_merges_repeats_by_id() -> None:
    flu = Entity(name="flu", type="disease")
    fever = Entity(name="fever", type="symptom")
    rel = Relation(head=flu.id, type="has_symptom", tail=fever.id)
    load = LoadInput.merge(
        [flu, fever, flu.model_copy(update={"aliases": ["influenza"]})],
        [rel, rel.model_copy(update={"source": "doc-1"}), rel.model_copy(update={"source": "doc-2"})],
        [
            KnowledgeDoc(id="d", entity_id=flu.id, text="old"),
            KnowledgeDoc(id="d", entity_id=flu.id, text="new"),
        ],
    )
    assert load.entities[flu.id].aliases == ["influenza"]
    assert load.relations[rel.id].source == "doc-1"
    assert load.docs["d"].text == "new"
    assert load.report().model_dump() == {"entities": 2, "relations": 1, "docs": 1}
    assert not load.is_empty()
    assert LoadInput.merge([], [], []).is_empty()


def test_unknown_endpoints_error_shows_the_first_five() -> None:
    err = unknown_endpoints_error([f"e{i}" for i in range(7)])
    assert isinstance(err, StoreError)
    assert str(err) == "bulk_load: 7 relation endpoint(s) are unknown entities: e0, e1, e2, e3, e4 …"


def _siblings() -> SiblingEdges:
    return SiblingEdges.collect(["h2", "h1"], [("h1", "r1", 1), ("h1", "r2", 2.0), ("h2", "r3", "1.5")])


def test_sibling_edges_collects_rows_under_their_heads() -> None:
    siblings = _siblings()
    assert siblings.by_head == {"h1": [("r1", 1.0), ("r2", 2.0)], "h2": [("r3", 1.5)]}
    assert siblings.head_of == {"r1": "h1", "r2": "h1", "r3": "h2"}


def test_sibling_edges_updates_keep_changed_weights_by_id() -> None:
    siblings = _siblings()
    seen: list[Any] = []

    def rule(by_head: Any, rel_ids: Any) -> dict[str, float]:
        seen.append((by_head, rel_ids))
        return {"r3": 3, "r2": 2.0, "r1": 0.5}

    updates = siblings.updates("fb", rule, ("r1",))
    assert updates == [("r1", 0.5), ("r3", 3.0)]
    assert seen == [(siblings.by_head, ["r1"])]
    changes = siblings.changes("fb", "run", "poor", "t0", updates)
    assert [(c.relation_id, c.old_weight, c.new_weight, c.at) for c in changes] == [
        ("r1", 1.0, 0.5, "t0"),
        ("r3", 1.5, 3.0, "t0"),
    ]


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ({"r9": 1.0}, "not a sibling"),
        ({"r1": True}, "not a number"),
        ({"r1": float("nan")}, "finite and > 0"),
        ({"r1": 0}, "finite and > 0"),
    ],
)
def test_sibling_edges_updates_reject_bad_rule_output(result: dict[str, Any], message: str) -> None:
    with pytest.raises(StoreError, match=message):
        _siblings().updates("fb", lambda by_head, ids: result, ["r1"])


def test_sibling_edges_updates_wrap_a_failing_rule() -> None:
    def boom(by_head: Any, ids: Any) -> dict[str, float]:
        raise ZeroDivisionError("p = 1")

    with pytest.raises(StoreError, match="feedback 'fb': the weight rule failed: p = 1"):
        _siblings().updates("fb", boom, ["r1"])
