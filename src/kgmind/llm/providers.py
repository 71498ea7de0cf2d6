"""Chat models by name: the bundled local models, the ``fake:`` test model, or any LangChain provider.

``get_chat_model("local")`` (the default) loads a bundled GGUF model (:mod:`kgmind.llm.local`);
``"fake:<tag>"`` gives :class:`kgmind.llm.fake.FakeChatModel`; any other name goes to
``langchain.chat_models.init_chat_model``. For the providers in :data:`PROVIDERS` the
integration package and API key are checked first, so a missing one is a
:class:`~kgmind.llm.errors.ModelUnavailableError` naming the fix rather than a provider
SDK's traceback.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel

from kgmind.llm.errors import LocalModelUnavailableError, ModelUnavailableError
from kgmind.llm.local.files import LOCAL_MODELS, ensure_local_model
from kgmind.llm.local.threads import llm_threads
from kgmind.tuning import DEFAULT_MODEL

__all__ = [
    "PROVIDERS",
    "ProviderSpec",
    "get_chat_model",
    "local_tokenizer",
    "unreachable_model_error",
    "with_max_tokens",
]


@dataclass(frozen=True)
class ProviderSpec:
    """What a hosted or server model provider needs before ``init_chat_model`` can build it.

    Attributes:
        package: PyPI name of the LangChain integration.
        module: Its import name.
        key_env: Environment variable holding the API key (None: no key needed).
        url_envs: Environment variables that move the endpoint (shown when it is unreachable).

    """

    package: str
    module: str
    key_env: str | None
    url_envs: tuple[str, ...]

    def extra(self, provider: str) -> str:
        """The ``pip install`` argument that brings the integration in (kgmind's extra)."""
        return f"kgmind[{provider}]"


#: Providers with a kgmind extra (``pip install 'kgmind[openai]'`` …).
PROVIDERS: dict[str, ProviderSpec] = {
    "openai": ProviderSpec("langchain-openai", "langchain_openai", "OPENAI_API_KEY", ("OPENAI_BASE_URL",)),
    "anthropic": ProviderSpec(
        "langchain-anthropic", "langchain_anthropic", "ANTHROPIC_API_KEY", ("ANTHROPIC_BASE_URL",)
    ),
    "ollama": ProviderSpec("langchain-ollama", "langchain_ollama", None, ("OLLAMA_HOST",)),
}


def _module_available(module: str) -> bool:
    """Whether ``module`` can be imported (checked without importing it: SDKs are slow to import)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _provider_of(name: str) -> str:
    return name.partition(":")[0].strip().lower() if ":" in name else ""


def _check_provider(name: str) -> None:
    """Raise :class:`ModelUnavailableError` when ``name``'s provider package or API key is missing."""
    provider = _provider_of(name)
    spec = PROVIDERS.get(provider)
    if spec is None:
        return
    if not _module_available(spec.module):
        raise ModelUnavailableError(
            f"the model {name} needs {spec.package}: pip install '{spec.extra(provider)}'"
        )
    if spec.key_env and not os.environ.get(spec.key_env, "").strip():
        raise ModelUnavailableError(f"the model {name} needs an API key: export {spec.key_env}=...")


_CONNECTION_ERROR_NAMES = frozenset(
    {"APIConnectionError", "APITimeoutError", "ConnectError", "ConnectTimeout"}
)


def unreachable_model_error(exc: BaseException, name: str) -> ModelUnavailableError | None:
    """Return a one-line error when ``exc`` means the model's endpoint could not be reached.

    Provider SDKs raise their own connection errors (``openai.APIConnectionError``,
    ``httpx.ConnectError``, the builtin ``ConnectionError`` for Ollama), often chained; the
    chain is walked so each is recognised without importing any SDK.

    Args:
        exc: What the run raised.
        name: The model name the run used.

    Returns:
        The error to show, or None when ``exc`` is not a connection failure.

    """
    if name in LOCAL_MODELS or name == "fake" or name.startswith("fake:"):
        return None  # in-process models: a connection error came from somewhere else
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, ConnectionError) or type(cur).__name__ in _CONNECTION_ERROR_NAMES:
            break
        cur = cur.__cause__ or cur.__context__
    else:
        return None
    provider = _provider_of(name)
    spec = PROVIDERS.get(provider)
    where = ""
    fix = "check the endpoint and the network"
    if spec is not None:
        urls = [os.environ[env] for env in spec.url_envs if os.environ.get(env)]
        where = f" at {urls[0]}" if urls else ""
        fix = (
            "start `ollama serve` or set OLLAMA_HOST"
            if provider == "ollama"
            else f"check {spec.url_envs[0]} and the network"
        )
    return ModelUnavailableError(f"cannot reach the model {name}{where}: {fix}")


@functools.cache
def get_chat_model(name: str = DEFAULT_MODEL) -> BaseChatModel:
    """Return the chat model called ``name`` (cached: one instance per name and process).

    Args:
        name: ``local`` (the default: offline Qwen2.5-Coder-0.5B GGUF), ``local-1.5b``
            (Qwen2.5-1.5B GGUF; needs ``kgmind[local-1-5b]``), ``fake:<tag>`` (deterministic test
            model) or any ``init_chat_model`` string such as ``openai:gpt-4o-mini``.

    Returns:
        A LangChain chat model.

    Raises:
        LocalModelUnavailableError: A local model's packages are missing.
        ModelUnavailableError: A provider's integration package or API key is missing.

    """
    if name.startswith("fake:") or name == "fake":
        from kgmind.llm.fake import FakeChatModel

        return FakeChatModel(tag=name.partition(":")[2] or "fake")
    if name in LOCAL_MODELS:
        path = ensure_local_model(name)
        threads = llm_threads()
        try:
            from kgmind.llm.local.model import load_local_model
        except ImportError as exc:  # pragma: no cover - depends on extras
            raise LocalModelUnavailableError(
                "the local model needs llama-cpp-python: pip install 'kgmind[local]'"
            ) from exc
        return load_local_model(path, threads)
    _check_provider(name)
    from langchain.chat_models import init_chat_model

    try:
        return init_chat_model(name)
    except ImportError as exc:  # a provider without a kgmind extra whose package is missing
        raise ModelUnavailableError(f"the model {name} needs a package that is not installed: {exc}") from exc


def with_max_tokens(llm: Any, max_tokens: int | None) -> Any:
    """Return ``llm`` limited to ``max_tokens`` generated tokens when the model supports it.

    Pydantic chat models with a ``max_tokens`` field get a shallow copy (the loaded
    weights are shared); anything else is returned unchanged.
    """
    if max_tokens is None or not isinstance(llm, BaseModel):
        return llm
    if "max_tokens" not in type(llm).model_fields:
        return llm
    return llm.model_copy(update={"max_tokens": max_tokens})


def local_tokenizer(name: str) -> Callable[[str], list[int]] | None:
    """The token ids of a text as the local model ``name`` reads it; ``None`` for any other model.

    Evidence budgets and call logs count in these when the reader is a local llama.cpp
    model: the word-based approximation undercounts medical names about twofold (12 drug
    names: 29 words, 102 Qwen tokens). The text is data, so special tokens are not parsed.
    API models have no tokenizer at hand offline and keep the approximation.
    """
    if name not in LOCAL_MODELS:
        return None
    client = get_chat_model(name).client  # type: ignore[attr-defined]

    def tokenize(text: str) -> list[int]:
        return list(client.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    return tokenize
