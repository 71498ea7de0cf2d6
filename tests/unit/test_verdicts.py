"""Per-claim verdicts without a store: the dispute rule, the log folded, a run's claim ids, payloads."""

from __future__ import annotations

from typing import Any

import pytest

from kgmind.graphs.claims import claim_edges, mind_map_ids, parse_claim_ids, resolve_claims
from kgmind.graphs.request_feedback import human_reply
from kgmind.models import Evidence, VerdictRecord
from kgmind.stores.disputes import check_verdicts, dispute_states
from kgmind.tuning import DISPUTE_RULE, DisputeRule


def rec(run: str, verdict: str, rid: str = "r1") -> VerdictRecord:
    return VerdictRecord(feedback_id=f"{run}:{verdict}", run_id=run, relation_id=rid, verdict=verdict)  # type: ignore[arg-type]


# -- the dispute rule ---------------------------------------------------------------------------


def test_one_flag_disputes_an_unconfirmed_edge_and_a_confirmation_outweighs_it() -> None:
    assert DISPUTE_RULE.disputed(1, 0)  # one flag pulls an unconfirmed fact from view
    assert not DISPUTE_RULE.disputed(1, 1)  # a single mistaken flag never hides a confirmed edge
    assert not DISPUTE_RULE.disputed(0, 0)
    assert DISPUTE_RULE.disputed(2, 1)
    assert not DISPUTE_RULE.disputed(2, 2)  # as many confirmations as flags keep it shown
    two = DisputeRule(min_wrong=2, margin=1)
    assert not two.disputed(1, 0) and two.disputed(2, 0)
    strict = DisputeRule(min_wrong=3, margin=2)
    assert not strict.disputed(3, 2) and strict.disputed(4, 2)


@pytest.mark.parametrize("kw", [{"min_wrong": 0}, {"margin": 0}])
def test_a_rule_that_would_hide_unflagged_edges_is_refused(kw: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="min_wrong >= 1"):
        DisputeRule(**kw)


# -- folding the verdict log ----------------------------------------------------------------------


def test_states_count_distinct_runs_and_a_restore_forgets_earlier_verdicts() -> None:
    log = [
        rec("a", "wrong"),
        rec("a", "wrong"),
        rec("b", "wrong"),
        rec("c", "right"),
        rec("a", "wrong", "r2"),
    ]
    states = dispute_states(log, DISPUTE_RULE, ["r3"])
    assert (states["r1"].wrong, states["r1"].right, states["r1"].runs) == (2, 1, ["a", "b"])
    two = DisputeRule(min_wrong=2, margin=1)
    assert states["r1"].disputed and states["r2"].disputed  # r2: one unconfirmed flag
    assert not dispute_states(log, two)["r2"].disputed
    assert states["r3"].wrong == 0 and not states["r3"].disputed  # asked about, never judged
    after = dispute_states([*log, rec("", "restore"), rec("d", "wrong")], two)
    assert (after["r1"].wrong, after["r1"].right, after["r1"].runs, after["r1"].disputed) == (
        1,
        0,
        ["d"],
        False,
    )


def test_the_same_log_under_another_rule_gives_other_flags() -> None:
    log = [rec("a", "wrong"), rec("b", "wrong"), rec("c", "right")]
    assert dispute_states(log)["r1"].disputed
    assert not dispute_states(log, DisputeRule(min_wrong=2, margin=2))["r1"].disputed


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        ([("r1", "maybe")], "verdict must be one of wrong, right"),
        ([("", "wrong")], "relation id must be a non-blank"),
        ([("r1", "wrong"), ("r1", "right")], "both wrong and right"),
        (["r1"], "pair"),
    ],
)
def test_bad_verdicts_are_refused(pairs: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_verdicts(pairs)


def test_verdicts_are_split_and_deduplicated() -> None:
    v = check_verdicts([("r1", "wrong"), ("r2", "Right"), ("r1", "wrong")])
    assert (v.wrong, v.right, v.rows()) == (["r1"], ["r2"], [("r1", "wrong"), ("r2", "right")])


# -- claims of a run ------------------------------------------------------------------------------

N1 = Evidence(
    id="N1",
    kind="neighbor",
    text="Pneumonia can be treated with Ceftriaxone and Doxycycline.",
    triples=[("Pneumonia", "has_drug", "Ceftriaxone"), ("Pneumonia", "has_drug", "Doxycycline")],
    relation_ids=["r-ceft", "r-doxy"],
)
N2 = Evidence(
    id="N2",
    kind="neighbor",
    text="Pneumonia can be checked with Chest X-ray and CRP.",
    triples=[("Pneumonia", "need_medical_test", "Chest X-ray"), ("Pneumonia", "need_medical_test", "CRP")],
    relation_ids=["r-xray", "r-crp"],
)
K1 = Evidence(
    id="K1",
    kind="kgcot",
    text="Cough may be a sign of Asthma.",
    triples=[("Cough", "~has_symptom", "Asthma")],
    relation_ids=["r-cough"],
    meta={"relation_ids": ["r-cough", "r-asthma-test"]},
)
DOC = Evidence(id="D1", kind="doc", text="A leaflet.")
RUN: dict[str, Any] = {
    "run_id": "run-7",
    "selected_evidence": [e.model_dump() for e in (N1, N2, K1, DOC)],
    "inference_chain": [
        {"step": "Pneumonia is treated with Ceftriaxone.", "evidence_ids": ["N1"], "about": "Pneumonia"},
        {"step": "Something vague.", "evidence_ids": ["n2"]},
    ],
    "mind_map": {
        "label": "I cough",
        "children": [
            {
                "label": "Pneumonia",
                "evidence_ids": ["N1", "N2"],
                "children": [{"label": "Chest X-ray", "evidence_ids": ["N2"], "children": []}],
            },
            {"label": "Asthma", "evidence_ids": [], "children": []},
        ],
    },
}


def test_every_claim_id_resolves_to_the_edges_that_state_it() -> None:
    edges = claim_edges(RUN)
    assert list(edges) == ["N1", "N2", "K1", "D1", "S1", "S2", "M1", "M2", "M3"]
    assert edges["N1"] == ["r-ceft", "r-doxy"]
    assert edges["K1"] == ["r-cough", "r-asthma-test"]  # a KGCoT chain: the whole walked chain
    assert edges["D1"] == []
    assert edges["S1"] == ["r-ceft"]  # the edge naming both of the step's entities, not Doxycycline's
    assert edges["S2"] == ["r-xray", "r-crp"]  # names nothing: every edge of the item it cites
    assert edges["M1"] == ["r-ceft", "r-doxy", "r-xray", "r-crp"]  # a diagnosis: its edges in its items
    assert edges["M2"] == ["r-xray"]  # Chest X-ray under Pneumonia: that one test edge
    assert edges["M3"] == []  # cites nothing


def test_mind_map_ids_number_the_nodes_below_the_root_depth_first() -> None:
    mm = RUN["mind_map"]
    ids = mind_map_ids(mm)
    assert id(mm) not in ids
    assert [
        ids[id(mm["children"][0])],
        ids[id(mm["children"][0]["children"][0])],
        ids[id(mm["children"][1])],
    ] == [
        "M1",
        "M2",
        "M3",
    ]


def test_unknown_contradictory_and_edgeless_claims_are_refused_with_the_valid_ids() -> None:
    with pytest.raises(
        ValueError, match=r"unknown claim id\(s\) X9; this run's ids: N1, N2, K1, D1, S1, S2, M1"
    ):
        resolve_claims(RUN, ["X9"], [])
    with pytest.raises(ValueError, match="N1 called both wrong and right"):
        resolve_claims(RUN, ["N1"], ["N1"])
    with pytest.raises(ValueError, match="M3 rest on no KG edge"):
        resolve_claims(RUN, ["M3"], [])
    assert resolve_claims(RUN, ["S1"], ["M2"]) == {"S1": ["r-ceft"], "M2": ["r-xray"]}


def test_claim_ids_parse_lists_commas_and_case() -> None:
    assert parse_claim_ids(["n3, S1", "[m2]", "N3"]) == ["N3", "S1", "M2"]
    assert parse_claim_ids("N1") == ["N1"] and parse_claim_ids(None) == []
    with pytest.raises(ValueError, match="empty claim id"):
        parse_claim_ids(["N1,,S1"])
    with pytest.raises(ValueError, match="strings"):
        parse_claim_ids([3])


# -- the human-feedback resume payload ---------------------------------------------------------------


def test_resume_payloads() -> None:
    assert human_reply({"rating": "Poor", "wrong": ["N1"], "right": "S1"}, RUN) == {
        "rating": "poor",
        "wrong": ["N1"],
        "right": ["S1"],
    }
    assert human_reply("excellent", RUN) == {"rating": "excellent", "wrong": [], "right": []}
    assert human_reply({"wrong": ["M2"]}, RUN)["rating"] is None


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"rating": "great"}, "rating must be"),
        ({"wrong": ["Z1"]}, "unknown claim id"),
        ({"wrong": "N1", "right": "N1"}, "both wrong and right"),
        ({"rating": "poor", "because": "x"}, "unknown feedback key"),
        (["N1"], "feedback must be a rating"),
    ],
)
def test_bad_resume_payloads_are_clear_errors(payload: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        human_reply(payload, RUN)
