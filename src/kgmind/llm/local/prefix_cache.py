"""System-prompt KV states of a local model: an LRU in memory over files on disk (a new process starts warm).

A prompt is evaluated message by message (:meth:`LocalChatModel._evaluate_prompt`); the state
after each message but the last (the KV cache of sequence 0, a few MB) is kept here, and the
next prompt with the same system message starts from it. The states are also written to
``$KGMIND_HOME/cache/prefix-states/`` (:func:`prefix_state_dir`), so each new ``kgmind ask``
does not read the system messages again (~0.9 s on 2 cores).

Not llama-cpp-python's ``LlamaDiskCache``: it keeps the whole ``LlamaState`` (every prefix token's
logits: 30 MB, not 0.6 MB) and drops an entry when read, so restoring took 0.11-0.37 s, not 0.002 s,
and a fresh process's grounded call 4.37 s, not 3.57 s (medians of 3; 2-core box, 1 thread; issue 43).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import threading
from pathlib import Path
from typing import Any

import llama_cpp
from cachetools import LRUCache

from kgmind.llm.local.files import model_cache_path
from kgmind.settings import get_settings

__all__ = ["PREFIX_STATES", "PrefixStates", "prefix_state_dir", "read_prefix_state", "write_prefix_state"]

#: Prompt prefixes (a system message) whose evaluated state a local model keeps, in memory and on disk.
PREFIX_STATES = 8

#: Bytes of the digest that heads a kept prefix state.
_HEAD = 16

Tokens = tuple[int, ...]


def prefix_state_dir(llama: Any) -> Path | None:
    """Where evaluated prompt prefixes of ``llama`` are kept between processes (``None``: not kept).

    A prefix's state is the KV cache after reading it: it is only valid for the same model
    file, llama.cpp build and CPU kernels, and context settings (batch sizes and threads
    could change the arithmetic), all of which name the folder. Off with
    ``KGMIND_LOCAL_PREFIX_CACHE=0``.
    """
    if not get_settings().local_prefix_cache:
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
    return model_cache_path(llama, "prefix-states", f"{settings}|{system!r}", "")


def _state_file(folder: Path, tokens: Tokens) -> Path:
    digest = hashlib.blake2b(repr(tokens).encode(), digest_size=16).hexdigest()
    return folder / f"{digest}.kv"


def read_prefix_state(folder: Path, tokens: Tokens) -> Any:
    """The state :func:`write_prefix_state` kept for ``tokens``; ``None`` when missing or damaged."""
    path = _state_file(folder, tokens)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head, body = data[:_HEAD], data[_HEAD:]
    if not body or head != hashlib.blake2b(body, digest_size=_HEAD).digest():
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # most recently used: kept when the folder is trimmed
    return (ctypes.c_uint8 * len(body)).from_buffer_copy(body)


def write_prefix_state(folder: Path, tokens: Tokens, state: Any) -> None:
    """Keep ``state`` for ``tokens`` on disk (atomically; the oldest beyond :data:`PREFIX_STATES` go)."""
    body = bytes(state)
    path = _state_file(folder, tokens)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(hashlib.blake2b(body, digest_size=_HEAD).digest() + body)
        os.replace(tmp, path)
        kept = sorted(folder.glob("*.kv"), key=lambda f: f.stat().st_mtime_ns, reverse=True)
        for old in kept[PREFIX_STATES:]:
            old.unlink()
    except OSError:  # a full or read-only disk costs the next process the prefix, nothing more
        with contextlib.suppress(OSError):
            tmp.unlink()


class PrefixStates:
    """The prefix states of one loaded model: the newest :data:`PREFIX_STATES` in memory, all on disk.

    Not locked itself: only the model's calls use it, and they hold the model's lock.

    Args:
        folder: Where the states are kept between processes (``None``: memory only).

    """

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.memory: LRUCache[Tokens, Any] = LRUCache(maxsize=PREFIX_STATES)

    def restore(self, llama: Any, tokens: Tokens) -> bool:
        """Load the state kept for ``tokens`` into ``llama``'s sequence 0; whether one was loaded.

        A state llama.cpp refuses is forgotten, and the context is reset to position 0.
        """
        state = self.memory.get(tokens)
        if state is None and self.folder is not None:
            state = read_prefix_state(self.folder, tokens)
        if state is None:
            return False
        if llama_cpp.llama_state_seq_set_data(llama.ctx, state, len(state), 0):
            self.memory[tokens] = state
            llama.input_ids[: len(tokens)] = tokens
            llama.n_tokens = len(tokens)
            return True
        self.memory.pop(tokens, None)
        llama.reset()  # a state that did not load: read from position 0
        return False

    def keep(self, llama: Any, tokens: Tokens) -> None:
        """Keep the state of ``llama``'s sequence 0, which has just evaluated ``tokens``."""
        if tokens in self.memory:
            return
        size = llama_cpp.llama_state_seq_get_size(llama.ctx, 0)
        state = (ctypes.c_uint8 * size)()
        llama_cpp.llama_state_seq_get_data(llama.ctx, state, size, 0)
        self.memory[tokens] = state
        if self.folder is not None:
            write_prefix_state(self.folder, tokens, state)
