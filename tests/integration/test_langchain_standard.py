"""LangChain's own standard tests (``langchain-tests``) on kgmind's retriever and tools.

``RetrieversIntegrationTests`` runs ``KGMindRetriever`` on the shipped demo KG in a temporary
store and ``KGMIND_HOME``, with ``hypothesis=False`` and a ``fake:`` model, so no LLM runs (the
real MiniLM embedder links the entities). ``ToolsUnitTests`` checks every exploration tool and
``update_edge_weights`` (name, input schema, the example arguments); ``ToolsIntegrationTests``
calls them, sync and async, on the same store. A new tool in ``EXPLORATION_TOOLS`` fails
:func:`test_every_tool_runs_the_standard_suites` until it gets its two classes here.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_tests", reason="needs langchain-tests (pip install -e '.[dev]')")
pytest.importorskip("pytest_asyncio", reason="the standard suites' async tests need pytest-asyncio")

from langchain_core.tools import BaseTool
from langchain_tests.integration_tests import RetrieversIntegrationTests, ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests

from kgmind.graphs.retriever import KGMindRetriever
from kgmind.models import entity_id
from kgmind.tools.exploration import EXPLORATION_TOOLS
from kgmind.tools.feedback import get_update_edge_weights_tool

QUESTION = "I have had a fever, a cough and body aches for two days. What could it be?"
#: Demo-KG entities (two findings and the disease they point to), as the linker would give them.
ENTITY_IDS = [entity_id("Fever"), entity_id("Cough"), entity_id("Influenza")]
TOOLS: dict[str, BaseTool] = {t.name: t for t in [*EXPLORATION_TOOLS, get_update_edge_weights_tool()]}


@pytest.mark.slow
class TestKGMindRetrieverStandard(RetrieversIntegrationTests):
    """The retriever on the real demo KG: ``k`` (constructor and invoke) and Documents, sync and async."""

    @pytest.fixture(autouse=True)
    def _demo_store(self, demo_uri: str) -> None:
        self.store_uri = demo_uri

    @property
    def retriever_constructor(self) -> type[KGMindRetriever]:
        return KGMindRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"context": {"store": self.store_uri, "hypothesis": False, "model": "fake:standard"}}

    @property
    def retriever_query_example(self) -> str:
        return QUESTION


def _example(name: str, store_uri: str | None) -> dict[str, Any]:
    """Example arguments of tool ``name``: the demo entities (or, for feedback, the edges they explore)."""
    if name != "update_edge_weights":
        return {"entity_ids": ENTITY_IDS, "store_uri": store_uri}
    relation_ids = ["r0"]  # schema only (unit tests)
    if store_uri is not None:  # real edges of the store (integration tests)
        found = TOOLS["path_evidence"].invoke({"entity_ids": ENTITY_IDS, "store_uri": store_uri})
        relation_ids = sorted({rid for ev in found for rid in ev["relation_ids"]})
    return {"run_id": "langchain-standard-tests", "rating": "excellent", "relation_ids": relation_ids}


class _ToolUnit(ToolsUnitTests):
    tool_name = ""

    @property
    def tool_constructor(self) -> BaseTool:
        return TOOLS[self.tool_name]

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return _example(self.tool_name, None)


class _ToolIntegration(ToolsIntegrationTests):
    tool_name = ""

    @pytest.fixture(autouse=True)
    def _demo_store(self, demo_uri: str) -> None:
        self.store_uri = demo_uri

    @property
    def tool_constructor(self) -> BaseTool:
        return TOOLS[self.tool_name]

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        params = _example(self.tool_name, self.store_uri)
        if self.tool_name == "update_edge_weights":
            params["store"] = self.store_uri
        return params


class TestPathEvidenceToolUnit(_ToolUnit):
    tool_name = "path_evidence"


class TestNeighborEvidenceToolUnit(_ToolUnit):
    tool_name = "neighbor_evidence"


class TestHykgeChainsToolUnit(_ToolUnit):
    tool_name = "hykge_chains"


class TestWeightedDfsChainsToolUnit(_ToolUnit):
    tool_name = "weighted_dfs_chains"


class TestUpdateEdgeWeightsToolUnit(_ToolUnit):
    tool_name = "update_edge_weights"


@pytest.mark.slow
class TestPathEvidenceToolIntegration(_ToolIntegration):
    tool_name = "path_evidence"


@pytest.mark.slow
class TestNeighborEvidenceToolIntegration(_ToolIntegration):
    tool_name = "neighbor_evidence"


@pytest.mark.slow
class TestHykgeChainsToolIntegration(_ToolIntegration):
    tool_name = "hykge_chains"


@pytest.mark.slow
class TestWeightedDfsChainsToolIntegration(_ToolIntegration):
    tool_name = "weighted_dfs_chains"


@pytest.mark.slow
class TestUpdateEdgeWeightsToolIntegration(_ToolIntegration):
    """Last: it writes weights (to this module's temporary store only; idempotent by feedback id)."""

    tool_name = "update_edge_weights"


def test_every_tool_runs_the_standard_suites() -> None:
    for base in (_ToolUnit, _ToolIntegration):
        assert {cls.tool_name for cls in base.__subclasses__()} == set(TOOLS)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TOOLS))
def test_examples_reach_real_evidence(demo_uri: str, name: str) -> None:
    """The integration suites' example calls do real work on the demo KG (not empty answers)."""
    out = TOOLS[name].invoke(
        {**_example(name, demo_uri), **({"store": demo_uri} if name == "update_edge_weights" else {})}
    )
    if name == "update_edge_weights":
        assert out["relation_ids"] and out["rating"] == "excellent"
    else:
        assert out and all(ev["relation_ids"] for ev in out)


@pytest.mark.slow
def test_retriever_k_and_order_on_the_demo_kg(demo_uri: str) -> None:
    retriever = KGMindRetriever(context={"store": demo_uri, "hypothesis": False, "model": "fake:standard"})
    every = retriever.invoke(QUESTION)
    assert len(every) > 3
    scores = [d.metadata["score"] for d in every]
    assert scores == sorted(scores, reverse=True)
    assert retriever.invoke(QUESTION, k=3) == every[:3]
