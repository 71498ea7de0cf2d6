"""The process's settings from the environment: every ``KGMIND_*`` variable, read once, typed.

Why one object: the variables used to be read in five files with three boolean parsers,
so ``KGMIND_LOCAL_GRAMMAR=off`` and ``KGMIND_VECTOR_CACHE=off`` meant different things.
Here each variable has one field, one parser (pydantic's) and one error message, and
:func:`get_settings` reads them once per process. Per-run choices are not here: they are
:class:`kgmind.graphs.context.Context` fields (Studio's form); tuning constants are in
:mod:`kgmind.tuning`.

A process that changes the environment after start-up (tests, a host application
configuring kgmind) calls :func:`reload_settings`.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal

from pydantic import Field, NonNegativeInt, PositiveInt, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = [
    "DEFAULT_KG_NAME",
    "Settings",
    "SettingsError",
    "data_dir",
    "default_store_uri",
    "get_settings",
    "kgmind_home",
    "reload_settings",
    "uri_path",
]

#: The KG the default store holds (the shipped demo KG, imported on first use).
DEFAULT_KG_NAME = "demo"


class SettingsError(ValueError):
    """A ``KGMIND_*`` variable holds a value kgmind cannot use (the message names it)."""


_OFF = frozenset({"off", "0", "none", "false", "no"})


class Settings(BaseSettings):
    """Every ``KGMIND_*`` environment variable kgmind reads (an empty value counts as unset)."""

    model_config = SettingsConfigDict(
        env_prefix="KGMIND_", env_ignore_empty=True, frozen=True, extra="ignore"
    )

    home: Path = Field(
        default_factory=lambda: Path.home() / ".kgmind",
        description="KGMIND_HOME: stores, indexes, models, caches and checkpoints (default ~/.kgmind).",
    )
    data_dir: Path = Field(
        default=Path("../shared/data"),
        description="KGMIND_DATA_DIR: the public KGs and QA sets that eval and benchmarks read.",
    )
    checkpoint_uri: str | None = Field(
        default=None,
        description="KGMIND_CHECKPOINT_URI: default checkpoint database (sqlite:PATH or postgresql://…).",
    )
    llm_threads: PositiveInt | None = Field(
        default=None,
        description="KGMIND_LLM_THREADS: llama.cpp threads (default: one per usable physical core).",
    )
    local_decoder: Literal["schema", "grammar"] = Field(
        default="schema",
        description="KGMIND_LOCAL_DECODER: 'schema' (kgmind's JSON-schema decoder) or 'grammar' (llama.cpp).",
    )
    local_grammar: bool = Field(
        default=True, description="KGMIND_LOCAL_GRAMMAR: off lets local models answer in free text."
    )
    local_prefix_cache: bool = Field(
        default=True,
        description="KGMIND_LOCAL_PREFIX_CACHE: off stops keeping system-prompt KV states on disk.",
    )
    torch_threads: PositiveInt | None = Field(
        default=None,
        description="KGMIND_TORCH_THREADS: threads of the embedding models (default: chosen per CPU).",
    )
    embed_dtype: Literal["float32", "bfloat16", "auto"] = Field(
        default="auto",
        description="KGMIND_EMBED_DTYPE: MiniLM weights' dtype; auto = bfloat16 where the CPU has it.",
    )
    en_embedder: Literal["minilm", "minilm-int8"] = Field(
        default="minilm", description="KGMIND_EN_EMBEDDER: the English embedding model."
    )
    embed_backend: Literal["torch", "onnx", "auto"] = Field(
        default="auto",
        description="KGMIND_EMBED_BACKEND: what runs MiniLM; auto = ONNX Runtime if installed.",
    )
    vector_cache: str | None = Field(
        default=None,
        description="KGMIND_VECTOR_CACHE: folder of the embedding vector cache; 'off' = none; "
        "unset = $KGMIND_HOME/cache.",
    )

    store_buffer_mb: PositiveInt | None = Field(
        default=None,
        description="KGMIND_STORE_BUFFER_MB: the embedded store's page cache in MiB, the bound on what a "
        "long-running worker keeps of the pages it read; unset = LadybugDB's default (80 % of the RAM).",
    )
    pushdown_kept_edges: NonNegativeInt | None = Field(
        default=None,
        description="KGMIND_PUSHDOWN_KEPT_EDGES: edges a pushed-down worker keeps of what questions read, for"
        " later questions to share; 0 = an index per question; unset = tuning.KEPT_NEIGHBORHOOD_EDGES.",
    )
    dispute_rule: tuple[PositiveInt, PositiveInt] | None = Field(
        default=None,
        description="KGMIND_DISPUTE_RULE: MIN_WRONG,MARGIN of the rule that disputes an edge (e.g. 2,1 for "
        "two independent flags); unset = kgmind.tuning.DISPUTE_RULE.",
    )

    @field_validator("dispute_rule", mode="before")
    @classmethod
    def _pair(cls, value: object) -> object:
        """``"2,1"`` (or ``"2 1"``) as two integers."""
        if isinstance(value, str):
            parts = value.replace(",", " ").split()
            if len(parts) != 2:
                raise ValueError("expected MIN_WRONG,MARGIN, e.g. 2,1")
            return tuple(parts)
        return value

    @field_validator("home", "data_dir", mode="after")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser()

    @field_validator("local_decoder", "embed_dtype", "en_embedder", "embed_backend", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        """Names are case-blind, and the short dtype names (fp32, bf16) are accepted."""
        if isinstance(value, str):
            value = value.strip().lower()
            return {"fp32": "float32", "bf16": "bfloat16"}.get(value, value)
        return value

    def vector_cache_folder(self) -> Path | None:
        """Where embedding vectors are cached, or ``None`` when ``KGMIND_VECTOR_CACHE=off``."""
        where = (self.vector_cache or "").strip()
        if where.lower() in _OFF:
            return None
        return Path(where).expanduser() if where else self.home / "cache"


@functools.cache
def get_settings() -> Settings:
    """The process's settings, read from the environment on first use.

    Raises:
        SettingsError: A variable holds a value of the wrong kind; the message names it.
    """
    try:
        return Settings()
    except ValidationError as exc:
        problems = "; ".join(
            f"KGMIND_{str(err['loc'][0]).upper()}={err.get('input')!r}: {err['msg']}" for err in exc.errors()
        )
        raise SettingsError(f"bad environment: {problems}") from None


def reload_settings() -> Settings:
    """Read the environment again (after a test or a host application changed it)."""
    get_settings.cache_clear()
    return get_settings()


def kgmind_home() -> Path:
    """``$KGMIND_HOME`` (default ``~/.kgmind``): stores, indexes, models, checkpoints."""
    return get_settings().home


def data_dir() -> Path:
    """``$KGMIND_DATA_DIR`` (default ``../shared/data``): public KGs and QA sets."""
    return get_settings().data_dir


def default_store_uri(name: str = DEFAULT_KG_NAME) -> str:
    """The embedded store URI for the KG called ``name``: ``ladybug:$KGMIND_HOME/<name>``."""
    return f"ladybug:{kgmind_home() / name}"


def uri_path(uri: str, scheme: str, what: str, example: str) -> str:
    """The path after ``scheme:`` (an optional ``//`` dropped) in a ``what`` (store, checkpoint) URI.

    Raises:
        ValueError: The path is empty (``example`` shows a valid URI).
    """
    path = uri[len(scheme) + 1 :]
    if path.startswith("//"):
        path = path[2:]
    if not path.strip():
        raise ValueError(f"{what} URI '{scheme}:' needs a path, e.g. {example}")
    return path
