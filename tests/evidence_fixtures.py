"""Hand-made evidence shared by the answer-schema, reasoning and grounding tests: a flu and a pneumonia case.

The items are worded as kgmind's explorations word them and numbered as aggregation numbers them
(``P`` path, ``N`` neighbour, ``C`` chain, ``K`` KGCoT, ``D`` document). Each call returns new
objects (``Evidence`` is mutable), so a test that changes one changes nobody else's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evidence_roles import FITTED_READINGS
from kgmind.models import Evidence

KIND_OF_LETTER = {"P": "path", "N": "neighbor", "C": "chain", "K": "kgcot", "D": "doc"}


def evidence_item(ev_id: str, text: str, *triples: tuple[str, str, str], **fields: Any) -> Evidence:
    """One numbered evidence item: its kind from the id's letter, its readings as a tool gives them."""
    readings = {r: FITTED_READINGS[r] for _, r, _ in triples if r in FITTED_READINGS}
    fields = {"readings": readings, **fields}
    return Evidence(id=ev_id, kind=KIND_OF_LETTER[ev_id[0]], text=text, triples=list(triples), **fields)


# -- flu: fever points to influenza, which drugs treat and a rapid test checks ------------------


def fever_flu(relation_ids: Sequence[str] = ("r1",)) -> Evidence:
    """``P1``: Fever may be a sign of Influenza."""
    triple = ("Fever", "possible_disease", "Influenza")
    return evidence_item("P1", "Fever may be a sign of Influenza.", triple, relation_ids=list(relation_ids))


def flu_drugs(*medications: str, relation_ids: Sequence[str] = ()) -> Evidence:
    """``N1``: Influenza can be treated with the ``medications``."""
    text = f"Influenza can be treated with {' and '.join(medications)}."
    triples = [("Influenza", "need_medication", m) for m in medications]
    return evidence_item("N1", text, *triples, relation_ids=list(relation_ids))


def flu_test() -> Evidence:
    """``N2``: Influenza can be checked with a Rapid influenza test."""
    triple = ("Influenza", "need_medical_test", "Rapid influenza test")
    return evidence_item("N2", "Influenza can be checked with Rapid influenza test.", triple)


def flu_case() -> list[Evidence]:
    """The two-item flu case (``P1`` fever → influenza, ``N1`` → oseltamivir) with relation ids r1, r2."""
    return [fever_flu(), flu_drugs("Oseltamivir", relation_ids=["r2"])]


# -- pneumonia: cough points to pneumonia, which tests check and drugs treat ------------------


def cough_pneumonia() -> Evidence:
    """``P1``: Cough may be a sign of Pneumonia, which may present with Fever."""
    return evidence_item(
        "P1",
        "Cough may be a sign of Pneumonia, and Pneumonia may present with Fever.",
        ("Cough", "possible_disease", "Pneumonia"),
        ("Pneumonia", "has_symptom", "Fever"),
    )


def workup_item(
    ev_id: str, text: str, disease: str, tests: Sequence[str], medications: Sequence[str]
) -> Evidence:
    """A neighbour item: the ``tests`` that check ``disease`` and the ``medications`` that treat it."""
    triples = [(disease, "need_medical_test", t) for t in tests]
    triples += [(disease, "need_medication", m) for m in medications]
    return evidence_item(ev_id, text, *triples)


def pneumonia_workup(tests: Sequence[str], medications: Sequence[str]) -> Evidence:
    """``N1``: the ``tests`` that check pneumonia and the ``medications`` that treat it."""
    text = f"Pneumonia can be checked with {' and '.join(tests)}, treated with {', '.join(medications)}."
    return workup_item("N1", text, "Pneumonia", tests, medications)


def pneumonia_case(tests: Sequence[str], medications: Sequence[str]) -> list[Evidence]:
    """The two-item pneumonia case: ``N1`` its workup, then ``P1`` cough → pneumonia → fever."""
    return [pneumonia_workup(tests, medications), cough_pneumonia()]
