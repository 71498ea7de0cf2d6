"""generate_hypothesis / extract_entities / link_entities with injected fakes."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from langgraph.runtime import Runtime

from kgmind.graphs import services
from kgmind.graphs.context import Context
from kgmind.graphs.extract_entities import extract_entities
from kgmind.graphs.generate_hypothesis import generate_hypothesis
from kgmind.graphs.link_entities import link_entities
from kgmind.models import LinkedEntity, Mention
from kgmind.prompts.schemas import HypothesisOut


def _rt(**kw: Any) -> Runtime[Context]:
    return Runtime(context=Context(**kw))


def _call(**kw: Any) -> Runtime[Context]:
    """A run that makes the hypothesis call (the default model's ``auto`` skips it in full mode)."""
    return _rt(hypothesis=True, **kw)


def test_hypothesis_structured_fake_runnable(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    def fake(messages: Any) -> HypothesisOut:
        seen.append(messages)
        return HypothesisOut(hypothesis="Probably influenza.", entities=["influenza", " fever ", "influenza"])

    monkeypatch.setattr(services, "get_llm", lambda ctx, purpose="reason", **kw: RunnableLambda(fake))
    out = generate_hypothesis({"question": "I have a fever.", "language": "en"}, _call())
    assert out["hypothesis"] == "Probably influenza."
    assert out["hypothesis_entities"] == ["influenza", "fever"]  # stripped, deduplicated, ordered
    assert out["llm_calls"] == 1
    assert out["flags"] == {"fallback_parse": False}
    assert "generate_hypothesis" in out["timings_ms"]
    system, human = seen[0]
    assert "Question: I have a fever." in human.content
    assert "entities" in system.content


def test_hypothesis_chinese_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    def fake(messages: Any) -> HypothesisOut:
        seen.append(messages)
        return HypothesisOut(hypothesis="可能是感冒。", entities=["感冒"])

    monkeypatch.setattr(services, "get_llm", lambda ctx, purpose="reason", **kw: RunnableLambda(fake))
    out = generate_hypothesis({"question": "我发烧咳嗽怎么办？"}, _call())
    assert out["hypothesis_entities"] == ["感冒"]
    assert "问题：我发烧咳嗽怎么办？" in seen[0][1].content


def test_hypothesis_text_fallback_with_plain_chat_model(monkeypatch: pytest.MonkeyPatch) -> None:
    # GenericFakeChatModel cannot do structured output: the node must fall back to the text parser.
    reply = 'Sure! ```json\n{"hypothesis": "It is likely asthma.", "entities": ["asthma", "wheezing",]}\n```'
    model = GenericFakeChatModel(messages=iter([AIMessage(content=reply)]))
    monkeypatch.setattr(services, "get_llm", lambda ctx, purpose="reason", **kw: model)
    out = generate_hypothesis({"question": "I wheeze at night.", "language": "en"}, _call())
    assert out["hypothesis"] == "It is likely asthma."
    assert out["hypothesis_entities"] == ["asthma", "wheezing"]
    assert out["flags"]["fallback_parse"] is True
    assert out["llm_calls"] == 1


def test_hypothesis_uses_hypothesis_model_and_token_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, Any]] = []

    def get_llm(ctx: Context, purpose: str = "reason", **kw: Any) -> Any:
        calls.append((purpose, kw.get("max_tokens")))
        return RunnableLambda(lambda m: HypothesisOut(hypothesis="h", entities=[]))

    monkeypatch.setattr(services, "get_llm", get_llm)
    generate_hypothesis({"question": "q?", "language": "en"}, _call(max_tokens=512))
    generate_hypothesis({"question": "q?", "language": "en"}, _call(max_tokens=64))
    assert calls == [("hypothesis", 192), ("hypothesis", 64)]


@pytest.mark.parametrize(
    ("settings", "skipped"),
    [
        ({}, True),  # the default: auto, the bundled 0.5B model, full mode
        ({"mode": "mindmap"}, False),  # only full mode was measured; MindMap takes its entities as NER
        ({"mode": "hykge"}, False),  # HyKGE's chains are reranked against the hypothesis
        ({"model": "local-1.5b"}, False),  # its hypotheses raised evidence recall on calib
        ({"model": "openai:gpt-4o-mini"}, False),  # not measured: HyKGE's call stays
        ({"model": "openai:gpt-4o-mini", "hypothesis_model": "local"}, True),  # the writer decides
        ({"model": "local", "hypothesis_model": "local-1.5b"}, False),
        ({"hypothesis": True}, False),
        ({"hypothesis": False, "model": "openai:gpt-4o-mini"}, True),
    ],
)
def test_which_runs_make_the_hypothesis_call(settings: dict[str, Any], skipped: bool) -> None:
    reason = services.hypothesis_skip(Context(**settings))
    assert (reason is not None) is skipped
    if settings.get("hypothesis") is False:
        assert reason == "hypothesis=false"
    elif skipped:
        assert "hypothesis=auto" in str(reason) and "local" in str(reason)


def test_a_bad_hypothesis_setting_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="hypothesis must be true, false or 'auto'"):
        services.hypothesis_skip(Context(hypothesis="sometimes"))  # type: ignore[arg-type]


def test_a_skipped_hypothesis_makes_no_call_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_model(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("a skipped hypothesis must not build or call a model")

    events: list[dict[str, Any]] = []
    monkeypatch.setattr(services, "get_llm", no_model)
    monkeypatch.setattr(services, "emit", events.append)
    out = generate_hypothesis({"question": "I have a fever.", "language": "en"}, _rt())
    assert out == {"hypothesis": "", "hypothesis_entities": [], "flags": {"hypothesis_skipped": True}}
    assert "llm_calls" not in out
    assert events == [
        {
            "node": "generate_hypothesis",
            "status": "skipped",
            "why": "hypothesis=auto: the local model's hypotheses measured no gain in full mode",
        }
    ]


def test_extract_entities_passes_hypothesis_entities(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    store = object()
    monkeypatch.setattr(services, "get_store", lambda uri: store)

    def fake_extract(
        text: str, st: Any, *, extra: Any = (), language: Any = None, embedding_spans: Any = None
    ) -> list[Mention]:
        calls.append(
            {"text": text, "store": st, "extra": list(extra), "language": language, "spans": embedding_spans}
        )
        return [Mention(text="fever", source="gazetteer"), *[Mention(text=e, source="llm") for e in extra]]

    monkeypatch.setattr(services, "extract_mentions", fake_extract)
    state: Any = {"question": "fever?", "hypothesis_entities": ["influenza"], "language": "en"}
    out = extract_entities(state, _rt(store="ladybug:/x"))
    assert [m.text for m in out["mentions"]] == ["fever", "influenza"]
    assert calls == [
        {"text": "fever?", "store": store, "extra": ["influenza"], "language": "en", "spans": "always"}
    ]
    extract_entities(state, _rt(store="ladybug:/x", embedding_spans="unnamed"))
    assert calls[-1]["spans"] == "unnamed"  # the Context setting reaches NER


def test_link_entities_dedupes_and_passes_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    got: dict[str, Any] = {}
    monkeypatch.setattr(services, "get_store", lambda uri: "STORE")

    def fake_link(
        store: Any,
        mentions: Any,
        *,
        top_k: int = 5,
        threshold: float | None = None,
        max_entities: int | None = None,
    ) -> Any:
        got.update(store=store, n=len(mentions), top_k=top_k, threshold=threshold, max_entities=max_entities)
        return [
            LinkedEntity(mention="fever", entity_id="e1", name="Fever", score=0.8),
            LinkedEntity(mention="high fever", entity_id="e1", name="Fever", score=0.95),
            LinkedEntity(mention="cough", entity_id="e2", name="Cough", score=0.9),
        ]

    monkeypatch.setattr(services, "link_mentions", fake_link)
    mentions = [Mention(text="fever"), Mention(text="high fever"), Mention(text="cough")]
    out = link_entities({"question": "q", "mentions": mentions}, _rt(top_k=3, threshold=0.65, max_linked=4))
    assert got == {"store": "STORE", "n": 3, "top_k": 3, "threshold": 0.65, "max_entities": 4}
    assert [(le.entity_id, le.mention) for le in out["linked_entities"]] == [
        ("e1", "high fever"),
        ("e2", "cough"),
    ]
    assert out["flags"] == {"no_kg_evidence": False}


def test_link_entities_without_mentions_flags_no_evidence(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*a: Any, **k: Any) -> Any:
        raise AssertionError("must not link without mentions")

    monkeypatch.setattr(services, "link_mentions", boom)
    monkeypatch.setattr(services, "get_store", boom)
    out = link_entities({"question": "q", "mentions": []}, _rt())
    assert out["linked_entities"] == []
    assert out["flags"] == {"no_kg_evidence": True}
