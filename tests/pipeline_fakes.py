"""Fakes for the retrieval half of the graph, so graph and CLI tests run it with no KG and no models.

:func:`fake_retrieval` replaces the store (and the default store's first-use import), NER,
entity linking, the four explorations and aggregation by fakes; the LLM is left to the caller
(usually the ``fake:`` model).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from kgmind.graphs import services
from kgmind.models import Evidence, LinkedEntity, Mention
from kgmind.retrievers import aggregate, exploration

#: The exploration functions the graph's ``explore_*`` nodes call.
EXPLORATIONS = ("path_evidence", "neighbor_evidence", "hykge_chains", "weighted_dfs_chains")


def fake_retrieval(
    monkeypatch: pytest.MonkeyPatch,
    *,
    get_store: Callable[[str], Any],
    linked: Callable[[], list[LinkedEntity]],
    evidence: Mapping[str, Sequence[Evidence]],
    number: Callable[..., list[Evidence]],
) -> None:
    """Make every question find the mention "fever", link it with ``linked`` and explore ``evidence``.

    Args:
        monkeypatch: The test's monkeypatch.
        get_store: Stands in for ``services.get_store`` (URI to store).
        linked: The linked entities, asked for per question (a test may change what it returns).
        evidence: What each exploration of :data:`EXPLORATIONS` finds (copies, per call); one not
            named finds nothing.
        number: Stands in for ``aggregate.aggregate_evidence`` (selects and numbers the evidence).
    """
    monkeypatch.setattr(services, "get_store", get_store)
    # a run without a store would import the demo KG into the user's default store first
    monkeypatch.setattr(services, "ensure_default_store", lambda: None)
    monkeypatch.setattr(services, "get_graph_index", lambda store, **_: "GI")
    monkeypatch.setattr(
        services,
        "extract_mentions",
        lambda text, store, extra=(), language=None, embedding_spans="always": [Mention(text="fever")],
    )
    monkeypatch.setattr(
        services,
        "link_mentions",
        lambda store, mentions, top_k=5, threshold=None, max_entities=None: linked(),
    )
    for name in EXPLORATIONS:
        found = list(evidence.get(name, ()))
        monkeypatch.setattr(exploration, name, lambda gi, ids, f=found, **kw: [e.model_copy() for e in f])
    monkeypatch.setattr(aggregate, "aggregate_evidence", number)
