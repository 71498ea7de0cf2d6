"""LangGraph (and so Studio's input form) can read the graph's schemas on this Python."""

from __future__ import annotations

import dataclasses
import warnings

from kgmind.graphs.context import Context
from kgmind.graphs.pipeline import graph


def test_input_output_and_context_schemas_introspect() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # LangGraph only warns when a schema cannot be built
        inp = graph.get_input_jsonschema()
        out = graph.get_output_jsonschema()
        ctx = graph.get_context_jsonschema()
    assert "question" in inp["properties"]
    assert "answer" in out["properties"]
    assert ctx is not None
    assert {f.name for f in dataclasses.fields(Context)} <= set(ctx["properties"])
