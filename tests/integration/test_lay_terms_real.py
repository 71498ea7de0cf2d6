"""Everyday words link on the demo KG through the product's nodes, with the real embedding models."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.runtime import Runtime

from kgmind.graphs.context import Context
from kgmind.graphs.extract_entities import extract_entities
from kgmind.graphs.link_entities import link_entities

pytestmark = pytest.mark.slow


def _linked(uri: str, question: str) -> dict[str, str]:
    """Entity name → the mention that linked it, for ``question`` on the store at ``uri``."""
    runtime = Runtime(context=Context(store=uri))
    state: dict[str, Any] = {"question": question}
    state.update(extract_entities(state, runtime))  # type: ignore[arg-type]
    return {le.name: le.mention for le in link_entities(state, runtime)["linked_entities"]}  # type: ignore[arg-type]


def test_chinese_everyday_words_reach_the_clinical_symptoms(demo_uri: str) -> None:
    linked = _linked(demo_uri, "我最近一直咳嗽、发烧，还胸口疼")
    assert {"咳嗽": "咳嗽", "发热": "发烧", "胸痛": "胸口疼"}.items() <= linked.items()


def test_english_everyday_words_reach_the_clinical_symptoms(demo_uri: str) -> None:
    linked = _linked(demo_uri, "I have a tummy ache and I keep throwing up, and I feel short of breath")
    assert linked.get("Vomiting") == "throwing up"
    assert linked.get("Abdominal cramps") == "tummy ache"
    assert linked.get("Shortness of breath") == "short of breath"
