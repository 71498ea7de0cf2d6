"""A local model's vocabulary as the schema decoder reads it, built once per model file and kept on disk.

Building the :class:`~kgmind.llm.schema_decoding.TokenTable` cost every new ``kgmind ask``
process ~0.9 s before its first answer; it is read from ``$KGMIND_HOME/cache/token-tables/``
instead, and a loaded table whose sampled tokens do not spell what the model says they spell
is rebuilt.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import llama_cpp

from kgmind.llm.local.files import model_cache_path
from kgmind.llm.schema_decoding import TokenTable

__all__ = ["TOKEN_TABLE_CHECKS", "token_table", "token_table_path"]

#: Tokens of a cached token table compared with the model's own on load.
TOKEN_TABLE_CHECKS = 256


def token_table(llama: Any) -> TokenTable:
    """The vocabulary of ``llama`` as a :class:`TokenTable` (control tokens empty), from disk when kept."""
    vocab = llama._model.vocab
    n = llama.n_vocab()

    def token_bytes(i: int) -> bytes:
        if llama_cpp.llama_vocab_is_control(vocab, i) or llama_cpp.llama_vocab_is_eog(vocab, i):
            return b""
        return bytes(llama.detokenize([i], special=False))

    path = token_table_path(llama, n)
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


def token_table_path(llama: Any, n_vocab: int) -> Path | None:
    """Where the token table of ``llama``'s model file is cached (``None``: no file to key it by)."""
    return model_cache_path(llama, "token-tables", str(n_vocab), ".npz")
