"""The mind map as the reasoning, readable steps and a consistent summary, from hand-made answers.

The answers are written by hand (English and Chinese) as the grounded schema lets the model
write them, fragments included; ``reason_mindmap`` turns them into what a reader sees, and
the grounding check must find every node and step supported.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda
from langgraph.runtime import Runtime
from rich.console import Console

from evidence_fixtures import evidence_item
from evidence_roles import FITTED_READINGS
from kgmind.cli.ask import mind_map_tree, print_result, result_dict
from kgmind.graphs import services
from kgmind.graphs.check_grounding import grounding_report, iter_mind_map, names_in
from kgmind.graphs.context import Context
from kgmind.graphs.mind_map import build_mind_map, question_findings
from kgmind.graphs.readable import consistent_summary, evidence_sentence, first_named, is_fragment
from kgmind.graphs.reason_mindmap import reason_mindmap, root_label
from kgmind.graphs.render import mind_map_mermaid, mind_map_svg, run_html
from kgmind.models import MIND_MAP_ONLY, MIND_MAP_ONLY_NOTE, SUPPORT_RELATION, Evidence, LinkedEntity
from kgmind.prompts.grounded import evidence_names
from kgmind.prompts.schemas import GroundedAnswer

SVG = "{http://www.w3.org/2000/svg}"

EN_TYPES = {
    "Fever": "symptom",
    "Cough": "symptom",
    "Influenza": "disease",
    "Pneumonia": "disease",
    "Rapid influenza test": "test",
    "Influenza PCR test": "test",
    "Chest X-ray": "test",
    "Oseltamivir": "medication",
    "Amoxicillin": "medication",
}


def _typed(ev: Evidence, types: dict[str, str]) -> Evidence:
    ev.entity_types = {n: types[n] for n in evidence_names(ev) if n in types}
    return ev


def en_case() -> list[Evidence]:
    """Fever → influenza (P1); cough → pneumonia → fever (P2); each disease's tests and drugs (N1, N2)."""
    items = [
        evidence_item("P1", "Fever may be a sign of Influenza.", ("Fever", "possible_disease", "Influenza")),
        evidence_item(
            "P2",
            "Cough may be a sign of Pneumonia, and Pneumonia may present with Fever.",
            ("Cough", "possible_disease", "Pneumonia"),
            ("Pneumonia", "has_symptom", "Fever"),
        ),
        evidence_item(
            "N1",
            "Influenza can be checked with Rapid influenza test and Influenza PCR test, treated with "
            "Oseltamivir.",
            ("Influenza", "need_medical_test", "Rapid influenza test"),
            ("Influenza", "need_medical_test", "Influenza PCR test"),
            ("Influenza", "need_medication", "Oseltamivir"),
        ),
        evidence_item(
            "N2",
            "Pneumonia can be checked with Chest X-ray, treated with Amoxicillin.",
            ("Pneumonia", "need_medical_test", "Chest X-ray"),
            ("Pneumonia", "need_medication", "Amoxicillin"),
        ),
    ]
    return [_typed(ev, EN_TYPES) for ev in items]


ZH_TYPES = {"发热": "symptom", "咳嗽": "symptom", "流感": "disease", "肺炎": "disease"}
ZH_TYPES |= {"血常规": "test", "胸部X线": "test", "奥司他韦": "medication", "阿莫西林": "medication"}


def zh_case() -> list[Evidence]:
    """The same case in Chinese (发热 → 流感, 咳嗽 → 肺炎 → 发热, each disease's workup)."""
    items = [
        evidence_item("P1", "发热可能提示流感。", ("发热", "possible_disease", "流感")),
        evidence_item(
            "P2", "咳嗽可能提示肺炎；肺炎的症状包括发热。",
            ("咳嗽", "possible_disease", "肺炎"), ("肺炎", "has_symptom", "发热"),
        ),
        evidence_item(
            "N1", "流感可做的检查包括血常规；流感的常用药物包括奥司他韦。",
            ("流感", "need_medical_test", "血常规"), ("流感", "need_medication", "奥司他韦"),
        ),
        evidence_item(
            "N2", "肺炎可做的检查包括胸部X线；肺炎的常用药物包括阿莫西林。",
            ("肺炎", "need_medical_test", "胸部X线"), ("肺炎", "need_medication", "阿莫西林"),
        ),
    ]  # fmt: skip
    return [_typed(ev, ZH_TYPES) for ev in items]


EN_QUESTION = "I have had a fever and a cough for three days. What could it be?"
EN_ANSWER = {
    "inference_chain": [
        {"evidence_ids": ["P2"], "about": "Pneumonia", "step": "present with fever and cough"},
        {"evidence_ids": ["P1"], "about": "Influenza", "step": "Fever may point to Influenza here."},
    ],
    "mind_map": {
        "label": "Patient's problem as the root", "children": [{"label": "Fever", "evidence_ids": ["P1"]}],
    },
    "diagnoses": [
        {
            "disease": "Influenza",
            "tests": ["Rapid influenza test", "Influenza PCR test"],
            "medications": ["Oseltamivir"],
        },
        {"disease": "Pneumonia"},
    ],
    "own_knowledge": [],
    "summary": "Fever and cough are a sign of pneumonia. Rest and drink fluids.",
}  # fmt: skip
ZH_QUESTION = "我最近一直咳嗽、发烧，怎么回事？"
ZH_ANSWER = {
    "inference_chain": [
        {"evidence_ids": ["P1"], "about": "流感", "step": "诊断"},
        {"evidence_ids": ["N1"], "about": "奥司他韦", "step": "1"},
    ],
    "mind_map": {"label": "x", "children": [{"label": "流感", "evidence_ids": ["P1"]}]},
    "diagnoses": [{"disease": "流感", "tests": ["血常规"], "medications": ["奥司他韦"]}, {"disease": "肺炎"}],
    "own_knowledge": [],
    "summary": "多休息，多喝水。",
}
#: 发烧 (the lay word in the question) was linked to the KG's 发热.
ZH_LINKED = [LinkedEntity(mention="发烧", entity_id="e-fever", name="发热", type="symptom")]


def _answer(
    monkeypatch: pytest.MonkeyPatch, written: dict[str, Any], state: dict[str, Any]
) -> dict[str, Any]:
    reply = GroundedAnswer.model_validate(written)
    monkeypatch.setattr(
        services, "get_llm", lambda ctx, purpose="reason", **kw: RunnableLambda(lambda _m: reply)
    )
    return reason_mindmap(state, Runtime(context=Context()))


def _shape(node: dict[str, Any]) -> list[Any]:
    """``[(kind, label, ids, children…)]`` of the nodes below ``node``."""
    return [(c.get("kind"), c["label"], c["evidence_ids"], _shape(c)) for c in node.get("children") or []]


def _every_node_cites_an_item_naming_it(mind_map: dict[str, Any], evidence: list[Evidence]) -> None:
    by_id = {ev.id: ev for ev in evidence}
    for depth, node in iter_mind_map(mind_map):
        if depth:
            assert node["evidence_ids"], node
            assert all(names_in([node["label"]], evidence_names(by_id[i])) for i in node["evidence_ids"]), (
                node
            )


def test_english_tree_is_the_reasoning(monkeypatch: pytest.MonkeyPatch) -> None:
    evidence = en_case()
    state = {"question": EN_QUESTION, "language": "en", "selected_evidence": evidence}
    out = _answer(monkeypatch, EN_ANSWER, state)
    tree = out["mind_map"]
    assert tree["label"] == root_label(EN_QUESTION) and tree["evidence_ids"] == []
    assert _shape(tree) == [
        (
            "diagnosis",
            "Influenza",
            ["P1"],
            [
                ("finding", "Fever", ["P1"], []),
                ("test", "Rapid influenza test", ["N1"], []),
                ("test", "Influenza PCR test", ["N1"], []),
                ("medication", "Oseltamivir", ["N1"], []),
            ],
        ),
        (
            "diagnosis",
            "Pneumonia",
            ["P2"],
            [("finding", "Fever", ["P2"], []), ("finding", "Cough", ["P2"], [])],
        ),
    ]
    _every_node_cites_an_item_naming_it(tree, evidence)
    report = grounding_report(evidence, out["inference_chain"], tree)
    assert report["flagged"] == [] and report["citation_rate"] == 1.0 and report["citation_support"] == 1.0
    # the fragment shows its cited sentence; the model's sentence stays
    assert [s["step"] for s in out["inference_chain"]] == [
        "Cough may be a sign of Pneumonia, and Pneumonia may present with Fever.",
        "Fever may point to Influenza here.",
    ]
    assert out["answer"].startswith(
        "The most likely diagnosis is Influenza; Pneumonia is also considered. Rest and drink fluids.\n"
    )
    assert "Likely diagnoses: Influenza, Pneumonia." in out["answer"]


def test_chinese_tree_reaches_lay_words_through_linking(monkeypatch: pytest.MonkeyPatch) -> None:
    evidence = zh_case()
    state = {
        "question": ZH_QUESTION,
        "language": "zh",
        "selected_evidence": evidence,
        "linked_entities": ZH_LINKED,
    }
    out = _answer(monkeypatch, ZH_ANSWER, state)
    assert _shape(out["mind_map"]) == [
        (
            "diagnosis",
            "流感",
            ["P1"],
            [
                ("finding", "发热", ["P1"], []),
                ("test", "血常规", ["N1"], []),
                ("medication", "奥司他韦", ["N1"], []),
            ],
        ),
        ("diagnosis", "肺炎", ["P2"], [("finding", "咳嗽", ["P2"], []), ("finding", "发热", ["P2"], [])]),
    ]
    _every_node_cites_an_item_naming_it(out["mind_map"], evidence)
    assert [s["step"] for s in out["inference_chain"]] == [
        "发热可能提示流感。",
        "流感的常用药物包括奥司他韦。",
    ]
    assert out["answer"].startswith("最可能的诊断是流感。多休息，多喝水。\n")
    assert grounding_report(evidence, out["inference_chain"], out["mind_map"])["flagged"] == []


def test_a_non_medical_kg_gets_one_branch_per_conclusion() -> None:
    evidence = [
        evidence_item("P1", "Pandas is a library of Python.", ("Pandas", "library_of", "Python")),
        evidence_item("N1", "Rust is used for systems.", ("Rust", "used_for", "Systems")),
    ]
    findings = question_findings("Which language do I need for Pandas?", evidence)
    assert findings == ["Pandas"]
    tree = build_mind_map("q", {"conclusions": ["Python", "Rust"]}, evidence, findings)
    assert tree is not None
    assert _shape(tree) == [
        ("conclusion", "Python", ["P1"], [("finding", "Pandas", ["P1"], [])]),
        ("conclusion", "Rust", ["N1"], []),
    ]


def test_untied_tests_and_medications_are_branches_of_their_own() -> None:
    evidence = [
        evidence_item("P1", "Fever may be a sign of Influenza.", ("Fever", "possible_disease", "Influenza")),
        evidence_item(
            "N1", "Fever can be checked with Thermometer.", ("Fever", "need_medical_test", "Thermometer")
        ),
    ]
    chosen = {
        "diagnoses": ["Influenza"],
        "tests": ["Thermometer"],
        "medications": ["Aspirin"],
    }  # Aspirin: not shown
    tree = build_mind_map("q", chosen, evidence, ["Fever"])
    assert tree is not None
    assert _shape(tree) == [
        ("diagnosis", "Influenza", ["P1"], [("finding", "Fever", ["P1"], [])]),
        ("test", "Thermometer", ["N1"], []),
    ]
    assert build_mind_map("q", {"diagnoses": ["Gout"]}, evidence) is None  # nothing shown: keep the model's


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("present with fever and cough", True),  # names the symptoms, not what they point to
        ("used to check for influenza", True),
        ("1", True),
        ("诊断", True),
        ("Fever", True),  # too short to be a sentence
        ("Fever may point to Influenza here.", False),
        ("The fever suggests influenza.", False),
        ("发热提示流感", False),
    ],
)
def test_fragment_rule(text: str, fragment: bool) -> None:
    cited = [
        evidence_item("P1", "", ("Fever", "possible_disease", "Influenza")),
        evidence_item("P2", "", ("发热", "possible_disease", "流感")),
    ]
    assert is_fragment(text, cited) is fragment


def test_a_fragment_citing_a_document_is_judged_by_length_only() -> None:
    doc = [Evidence(readings=FITTED_READINGS, id="D1", kind="doc", text="Influenza is a viral infection.")]
    assert is_fragment("flu", doc) and not is_fragment("A viral infection is likely.", doc)
    assert evidence_sentence(doc[0]) == "Influenza is a viral infection."


def test_evidence_sentence_keeps_the_triples_about_the_step() -> None:
    ev = en_case()[2]
    assert evidence_sentence(ev, "Oseltamivir") == "Influenza can be treated with Oseltamivir."
    assert evidence_sentence(ev, "Nothing").startswith("Influenza can be checked with Rapid influenza test")
    # a long list is cut to what the model's words name, else to its first facts
    long = evidence_item("N3", "", *[("Influenza", "need_medical_test", f"Test {n}") for n in range(1, 8)])
    named = evidence_sentence(long, "Influenza", "checked with test 5")
    assert named == "Influenza can be checked with Test 5."
    cut = evidence_sentence(long, "Influenza", "can be checked with")
    assert cut == "Influenza can be checked with Test 1, Test 2 and Test 3."


@pytest.mark.parametrize(
    ("summary", "expected"),
    [
        ("Influenza is likely; pneumonia is possible.", "Influenza is likely; pneumonia is possible."),
        (
            "This is a sign of pneumonia. Take rest. Influenza is less likely.",
            "The most likely diagnosis is Influenza; Pneumonia is also considered."
            " Take rest. Influenza is less likely.",
        ),
        (
            "Take rest and drink fluids.",
            "The most likely diagnosis is Influenza. Take rest and drink fluids.",
        ),
    ],
)
def test_summary_names_the_first_diagnosis_first(summary: str, expected: str) -> None:
    fixed = consistent_summary(summary, ["Influenza", "Pneumonia"], ["Common cold"], "en")
    assert fixed == expected
    assert first_named(fixed, ["Influenza", "Pneumonia", "Common cold"]) == "Influenza"


def test_chinese_summary_is_made_consistent() -> None:
    fixed = consistent_summary("可能是肺炎。注意休息。", ["流感", "肺炎"], [], "zh")
    assert fixed == "最可能的诊断是流感，也考虑肺炎。注意休息。"
    assert (
        consistent_summary("不用担心。", [], ["肺炎"], "zh") == "不用担心。"
    )  # no list: nothing to agree with


def test_replaced_sentence_keeps_the_models_other_candidates() -> None:
    """A reordered summary still names every disease the model gave, once each (a name inside a longer one
    is that mention): only the order changes, so the answer loses none of the model's candidates."""
    summary = "Could be viral warts or common cold, even influenza. Rest."
    fixed = consistent_summary(
        summary, ["Molluscum contagiosum"], ["Viral warts", "Cold", "Common cold"], "en"
    )
    assert fixed == (
        "The most likely diagnosis is Molluscum contagiosum;"
        " Viral warts and Common cold are also considered. Rest."
    )
    assert consistent_summary("可能是病毒性感冒。", ["肺炎"], ["感冒", "病毒性感冒"], "zh") == (
        "最可能的诊断是肺炎，也考虑病毒性感冒。"
    )


DEEP = {
    "label": "I have a fever",
    "evidence_ids": [],
    "children": [
        {
            "label": "Influenza",
            "evidence_ids": ["P1"],
            "kind": "diagnosis",
            "children": [
                {"label": "Fever", "evidence_ids": ["P1"], "kind": "finding", "children": []},
                {"label": "Oseltamivir", "evidence_ids": ["N1"], "kind": "medication", "children": []},
            ],
        },
        {"label": "肺炎", "evidence_ids": ["P2"], "kind": "diagnosis", "children": []},
    ],
}


def test_depth_three_tree_in_terminal_mermaid_and_svg() -> None:
    console = Console(record=True, width=100, color_system=None)
    console.print(mind_map_tree(DEEP))
    lines = console.export_text().splitlines()
    assert lines[0] == "I have a fever"
    assert lines[1].endswith("diagnosis Influenza (P1)")
    assert lines[2].endswith("finding Fever (P1)") and lines[2].index("finding") > lines[1].index("diagnosis")
    assert lines[3].endswith("medication Oseltamivir (N1)")
    assert lines[4].endswith("诊断 肺炎 (P2)")

    mermaid = mind_map_mermaid(DEEP)
    assert 'm1["diagnosis: Influenza (P1)"]' in mermaid and 'm2["finding: Fever (P1)"]' in mermaid
    assert (
        "m0 --> m1" in mermaid
        and "m1 --> m2" in mermaid
        and "m1 --> m3" in mermaid
        and "m0 --> m4" in mermaid
    )

    svg = ET.fromstring(mind_map_svg(DEEP))
    nodes = [g for g in svg.iter(f"{SVG}g") if "node" in (g.get("class") or "").split()]
    texts = {"".join(g.find(f"{SVG}text").itertext()): g for g in nodes}  # type: ignore[union-attr]
    assert set(texts) == {"I have a fever", "Influenza", "Fever", "Oseltamivir", "肺炎"}
    cites = ["".join(t.itertext()) for t in texts["Fever"].iter(f"{SVG}text") if t.get("class") == "cite"]
    assert cites == ["finding · P1"]
    xs = {label: float(g.find(f"{SVG}rect").get("x") or "nan") for label, g in texts.items()}  # type: ignore[union-attr]
    assert xs["I have a fever"] < xs["Influenza"] < xs["Fever"] == xs["Oseltamivir"]
    assert len([p for p in svg.iter(f"{SVG}path") if p.get("class") == "edge"]) == 4


def _support(disease: str, *findings: str) -> Evidence:
    """A ranked neighbor support line: the findings pointing to ``disease`` (as the exploration makes it)."""
    ev = evidence_item("N0", "", *((f, "possible_disease", disease) for f in findings))
    ev.id = ""  # the exploration's items are numbered only when selected
    ev.meta = {"disease": disease, "relation": SUPPORT_RELATION, "disease_rank": 2}
    ev.relation_ids = [f"r-{f}-{disease}" for f in findings]
    ev.entity_ids = [f"e-{f}" for f in findings] + [f"e-{disease}"]
    return _typed(ev, {**ZH_TYPES, "胸痛": "symptom", "血常规": "test"})


def test_a_diagnosis_the_read_evidence_ties_to_no_finding_gets_its_support_line_after_the_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Wiring with a fake chat model: 肺炎's findings come from the exploration's support line."""
    read = [ev for ev in zh_case() if ev.id != "P2"]  # nothing the model read joins 肺炎 to a finding
    pool = [_support("肺炎", "咳嗽", "胸痛", "血常规"), _support("流感", "发热")]
    state = {
        "question": ZH_QUESTION,
        "language": "zh",
        "selected_evidence": read,
        "linked_entities": ZH_LINKED,
        "neighbor_evidence": pool,
    }
    out = _answer(monkeypatch, ZH_ANSWER, state)
    shown = out["selected_evidence"]
    assert shown[: len(read)] == read  # what the model read, unchanged and first
    (added,) = shown[len(read) :]  # 流感 has 发热 from P1: no line for it
    assert added.id == "N3" and added.meta[MIND_MAP_ONLY] is True
    # only the finding the question states: 胸痛 is not stated, 血常规 is a test (advice)
    assert added.triples == [("咳嗽", "possible_disease", "肺炎")]
    assert added.relation_ids == pool[0].relation_ids[:1] and added.entity_ids == ["e-咳嗽", "e-肺炎"]
    assert added.text == "咳嗽可能提示肺炎。"
    branches = {b["label"]: _shape(b) for b in out["mind_map"]["children"]}
    assert ("finding", "咳嗽", ["N3"], []) in branches["肺炎"]
    assert grounding_report(shown, out["inference_chain"], out["mind_map"])["flagged"] == []
    # the model's steps cite only what it read
    assert all(i in {ev.id for ev in read} for s in out["inference_chain"] for i in s["evidence_ids"])


def test_no_line_is_added_where_the_read_evidence_already_ties_a_finding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    evidence = zh_case()  # P2 joins 咳嗽 and 发热 to 肺炎, P1 发热 to 流感
    state = {
        "question": ZH_QUESTION,
        "language": "zh",
        "selected_evidence": evidence,
        "linked_entities": ZH_LINKED,
        "neighbor_evidence": [_support("肺炎", "咳嗽"), _support("流感", "发热")],
    }
    out = _answer(monkeypatch, ZH_ANSWER, state)
    assert "selected_evidence" not in out  # the state's evidence stays as it was


def test_the_evidence_table_marks_an_item_the_model_did_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    read = [ev for ev in zh_case() if ev.id != "P2"]
    state = {
        "question": ZH_QUESTION,
        "language": "zh",
        "selected_evidence": read,
        "linked_entities": ZH_LINKED,
        "neighbor_evidence": [_support("肺炎", "咳嗽")],
    }
    out = _answer(monkeypatch, ZH_ANSWER, state)
    result = result_dict({**state, **out, "run_id": "r1"})
    assert [e.get("meta") for e in result["selected_evidence"]] == [None, None, None, {MIND_MAP_ONLY: True}]
    page = run_html(result)
    assert "N3</td><td>neighbor †</td>" in page and MIND_MAP_ONLY_NOTE in page
    console = Console(record=True, width=120)
    monkeypatch.setattr("kgmind.cli.ask.console", console)
    print_result(result)
    text = console.export_text()
    assert "neighbor †" in text and MIND_MAP_ONLY_NOTE in text


def test_the_eval_scores_only_the_evidence_the_model_read() -> None:
    """Wiring: ``kgmind eval``'s evidence metrics leave out an item added for the mind map."""
    from types import SimpleNamespace

    from kgmind.eval.methods import run_graph

    read = zh_case()
    added = _support("肺炎", "咳嗽").model_copy(update={"id": "N3", "meta": {MIND_MAP_ONLY: True}})
    graph = SimpleNamespace(invoke=lambda *a, **k: {"selected_evidence": [*read, added], "answer": "x"})
    res = SimpleNamespace(graph=lambda: graph, callbacks=[], context=lambda *a, **k: None, model=object())
    assert run_graph("full", ZH_QUESTION, [], res, 300).evidence == read
