"""kgmind inside a host application's LCEL chains (real demo KG, fake LLM), with no import clash."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HOST_APP = Path(__file__).resolve().parents[1] / "fixtures" / "host_app"
QUESTION = "I have a fever and a cough. What disease could it be and which medication helps?"


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    import kgmind.importers.demo_store  # noqa: F401 - a broken import must fail, not skip

    mp = pytest.MonkeyPatch()
    mp.setenv("KGMIND_HOME", str(tmp_path_factory.mktemp("kgmind_home")))
    saved_tools = sys.modules.pop("tools", None)
    sys.path.insert(0, str(HOST_APP))
    try:
        from kgmind.importers.demo_store import ensure_demo_store

        ensure_demo_store(None)
        yield importlib.import_module("host_main")
    finally:
        sys.path.remove(str(HOST_APP))
        for name in [m for m in sys.modules if m == "tools" or m.startswith("tools.") or m == "host_main"]:
            del sys.modules[name]
        if saved_tools is not None:
            sys.modules["tools"] = saved_tools
        from kgmind.stores.factory import close_all_stores

        close_all_stores()
        mp.undo()


def test_no_import_clash(host: Any) -> None:
    import tools

    import kgmind.tools.exploration

    assert tools.HOST_TOOLS_MARKER == "host-app-tools"
    assert Path(tools.__file__).resolve().is_relative_to(HOST_APP)
    assert hasattr(kgmind.tools.exploration, "EXPLORATION_TOOLS")
    assert sys.modules["kgmind.tools"] is kgmind.tools
    assert Path(kgmind.tools.__file__).resolve().parent.name == "tools"
    assert not Path(kgmind.tools.__file__).resolve().is_relative_to(HOST_APP)


def test_graph_as_runnable_in_lcel(host: Any) -> None:
    chain = host.build_answer_chain({"model": "fake:host", "mode": "mindmap"})
    text = chain.invoke({"question": QUESTION})
    first, sources = text.rsplit("\n", 1)
    assert "[host] answer" in first  # the fake model's summary (after the first diagnosis it names none of)
    cited = sources.removeprefix("sources: ").split(", ")
    assert cited and all(c[0] in "PN" and c[1:].isdigit() for c in cited)


def test_retriever_in_lcel(host: Any) -> None:
    out = host.build_rag_chain({"model": "fake:host", "mode": "full"}).invoke(QUESTION)
    docs = out["docs"]
    assert out["question"] == QUESTION
    assert docs, "the demo KG has evidence about fever and cough"
    ids = [d.metadata["id"] for d in docs]
    assert len(ids) == len(set(ids))
    assert {d.metadata["kind"] for d in docs} <= {"path", "neighbor", "chain", "kgcot"}
    assert all(d.metadata["relation_ids"] for d in docs)
    assert all(r.startswith("r") for d in docs for r in d.metadata["relation_ids"])
    assert out["context"].splitlines()[0].startswith(f"[{ids[0]}] ")
    assert any("fever" in d.page_content.lower() or "cough" in d.page_content.lower() for d in docs)
