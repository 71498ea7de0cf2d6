"""Hand-made answers that must fail the grounding check, so that a clean report means something.

The ``fake:`` model fills any schema with valid values: the graph tests that run it prove
wiring only. Here each answer is written by hand to break grounding one way, and
:func:`kgmind.graphs.check_grounding.check_grounding` must say so: an id that was not shown
lowers the citation rate and is flagged; a shown id whose item does not name what the
step or node says lowers the citation support and is flagged.
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.runtime import Runtime

from evidence_fixtures import flu_case
from kgmind.graphs.check_grounding import check_grounding
from kgmind.graphs.context import Context

EVIDENCE = flu_case()  # P1: Fever -> Influenza; N1: Influenza -> Oseltamivir


def _check(chain: list[dict[str, Any]], children: list[dict[str, Any]]) -> dict[str, Any]:
    """Run the node on a hand-written answer to the flu case."""
    mind_map = {"label": "I have a fever", "evidence_ids": [], "children": children}
    state: Any = {"selected_evidence": EVIDENCE, "inference_chain": chain, "mind_map": mind_map}
    return check_grounding(state, Runtime(context=Context()))


def test_an_honest_answer_passes() -> None:
    """The counterpart of the failing cases below: every step and node cites an item that names it."""
    out = _check(
        [
            {"step": "Fever points to Influenza", "evidence_ids": ["P1"]},
            {"step": "Oseltamivir treats it", "evidence_ids": ["N1"]},
        ],
        [{"label": "Influenza", "evidence_ids": ["P1", "N1"], "children": []}],
    )
    report = out["grounding"]
    assert report["flagged"] == [] and report["grounded"] is True
    assert report["citation_rate"] == 1.0 and report["citation_support"] == 1.0
    assert out["flags"] == {"ungrounded": False}


def test_a_step_citing_an_id_that_was_not_shown_is_flagged() -> None:
    out = _check(
        [
            {"step": "Fever points to Influenza", "evidence_ids": ["P1"]},
            {"step": "Oseltamivir treats it", "evidence_ids": ["N7"]},  # N7 was never shown
        ],
        [{"label": "Influenza", "evidence_ids": ["P1"], "children": []}],
    )
    report = out["grounding"]
    assert report["unknown_ids"] == ["N7"] and report["flagged"] == ["N7"]
    assert report["citation_rate"] == 0.6667  # 2 of 3 steps and nodes cite a shown id
    assert report["citation_support"] == 1.0  # the shown ids it did cite support their steps
    assert report["grounded"] is False and out["flags"] == {"ungrounded": True}
    assert out["inference_chain"][1]["evidence_ids"] == []  # the unshown id never leaves the check


def test_a_node_citing_an_id_that_was_not_shown_is_flagged_with_its_label() -> None:
    out = _check(
        [{"step": "Fever points to Influenza", "evidence_ids": ["P1"]}],
        [{"label": "Malaria", "evidence_ids": ["P9"], "children": []}],  # neither id nor name is shown
    )
    report = out["grounding"]
    assert report["unknown_ids"] == ["P9"] and report["ungrounded_nodes"] == ["Malaria"]
    assert report["flagged"] == ["P9", "Malaria"]
    assert report["citation_rate"] == 0.5
    assert report["grounded"] is False and out["flags"] == {"ungrounded": True}
    assert out["mind_map"]["children"][0]["evidence_ids"] == []


@pytest.mark.parametrize(
    ("chain", "children", "unsupported"),
    [
        (  # a step about the drug cites the fever item
            [
                {"step": "Oseltamivir shortens the illness", "evidence_ids": ["P1"]},
                {"step": "Fever points to Influenza", "evidence_ids": ["P1"]},
            ],
            [],
            ["P1 (step: Oseltamivir shortens the illness)"],
        ),
        (  # a node about the symptom cites the drug item
            [{"step": "Fever points to Influenza", "evidence_ids": ["P1"]}],
            [{"label": "Fever", "evidence_ids": ["N1"], "children": []}],
            ["N1 (node: Fever)"],
        ),
    ],
    ids=["step", "node"],
)
def test_a_shown_id_that_does_not_support_what_cites_it_is_flagged(
    chain: list[dict[str, Any]], children: list[dict[str, Any]], unsupported: list[str]
) -> None:
    out = _check(chain, children)
    report = out["grounding"]
    assert report["unknown_ids"] == [] and report["ungrounded_nodes"] == []
    assert report["unsupported_citations"] == unsupported and report["flagged"] == unsupported
    assert report["citation_support"] == 0.5  # one of two citations names what cites it
    assert report["citation_rate"] == 1.0  # every item cites a shown id: only support catches it
    assert report["grounded"] is False and out["flags"] == {"ungrounded": True}
