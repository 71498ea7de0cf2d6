"""The vocabulary as bytes, with the masks the schema decoder reads (built once per model).

Byte-level BPE splits characters over tokens and lets one token hold a string's content and
its closing quote; the decoder asks these tables, not the tokenizer, what a token may do next
inside a JSON string.
"""

from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["TokenTable", "char_count", "has_east_asian", "utf8_owed"]


def char_count(data: bytes) -> int:
    """Characters in UTF-8 ``data`` (continuation bytes not counted; a cut-off character counts once)."""
    return sum(1 for c in data if not 0x80 <= c < 0xC0)


def utf8_owed(data: bytes, need: int = 0) -> int | None:
    """Continuation bytes still owed after ``data`` when ``need`` were owed before; None: not UTF-8.

    Byte-level BPE splits rare characters (many CJK ones) over tokens; a string may only
    go on with a token that completes what the last one started.
    """
    for c in data:
        if 0x80 <= c < 0xC0:
            if not need:
                return None
            need -= 1
        elif need:
            return None
        elif c >= 0x80:
            if 0xC2 <= c < 0xE0:
                need = 1
            elif 0xE0 <= c < 0xF0:
                need = 2
            elif 0xF0 <= c < 0xF5:
                need = 3
            else:
                return None
    return need


def _is_content(data: bytes) -> bool:
    """Whether ``data`` may stand inside a JSON string as is (no quote, backslash or control byte)."""
    return b'"' not in data and b"\\" not in data and all(c >= 0x20 for c in data)


#: UTF-8 lead bytes of U+3000..U+D7FF: CJK punctuation, kana, Bopomofo, the CJK ideographs
#: (and extension A), Yi and Hangul (0xED also leads the surrogates, never valid UTF-8).
#: A token holding one starts such a character.
_EAST_ASIAN_LEADS = bytes(range(0xE3, 0xEE))
_EAST_ASIAN = re.compile(r"[\u3000-\ud7ff]")


def has_east_asian(text: str) -> bool:
    """Whether ``text`` has a character of the blocks a token with an East Asian lead byte starts.

    The decoder's ``east_asian`` switch reads this on the prompt: a prompt without such a
    character is answered without one.
    """
    return _EAST_ASIAN.search(text) is not None


class TokenTable:
    """The vocabulary as bytes, with the masks the decoder needs (built once per model).

    Args:
        token_bytes: Every token's bytes; empty for special (control, end-of-generation) tokens.

    """

    def __init__(self, token_bytes: Sequence[bytes]) -> None:
        self.bytes: list[bytes] = list(token_bytes)
        n = len(self.bytes)
        self.content = np.zeros(n, dtype=bool)  # may stand inside a string
        self.chars = np.zeros(n, dtype=np.int32)
        self.close_at = np.full(n, -1, dtype=np.int32)  # a string's closing quote at this byte
        self.east_asian = np.zeros(n, dtype=bool)  # starts a character of U+3000..U+D7FF
        # UTF-8 continuation bytes owed after the token when 0..3 were owed before (-1: invalid);
        # for a closing token, of its content part, which must leave none owed
        self.need_after = np.full((4, n), -1, dtype=np.int8)
        self._index_bytes()
        for i, b in enumerate(self.bytes):
            if not b:
                continue
            self.chars[i] = char_count(b)
            self.east_asian[i] = any(c in _EAST_ASIAN_LEADS for c in b)
            q = b.find(b'"')
            if q < 0:
                self.content[i] = _is_content(b)
            elif _is_content(b[:q]):
                self.close_at[i] = q
            part = b if q < 0 else b[:q]
            if part.isascii():
                self.need_after[0, i] = 0
                continue
            for before in range(4):
                after = utf8_owed(part, before)
                self.need_after[before, i] = -1 if after is None else after
        self._after: dict[bytes, np.ndarray] = {}

    def _index_bytes(self) -> None:
        """``index``: each non-empty byte string's first token id."""
        self.index: dict[bytes, int] = {}
        for i, b in enumerate(self.bytes):
            if b:
                self.index.setdefault(b, i)

    #: What :meth:`save` writes; a table saved by an older layout is rebuilt, not read.
    FORMAT = 1
    #: The per-token arrays, saved and loaded as they are.
    _MASKS = ("content", "chars", "close_at", "east_asian", "need_after")

    def save(self, path: Path) -> None:
        """Write the table (bytes and masks) to ``path`` (``.npz``), atomically.

        Building it walks the whole vocabulary in Python (~0.4 s for Qwen's 151,936
        tokens, after ~0.4 s of reading their bytes from llama.cpp): every new process paid
        that before its first answer. Loading takes a few tens of ms.
        """
        lengths = np.fromiter((len(b) for b in self.bytes), dtype=np.uint32, count=len(self.bytes))
        blob = np.frombuffer(b"".join(self.bytes), dtype=np.uint8)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            with tmp.open("wb") as out:
                np.savez(
                    out,
                    format=np.array([self.FORMAT]),
                    lengths=lengths,
                    blob=blob,
                    **{name: getattr(self, name) for name in self._MASKS},
                )
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: Path) -> TokenTable | None:
        """The table :meth:`save` wrote to ``path``; ``None`` when it is missing, unreadable or stale."""
        try:
            with np.load(path, allow_pickle=False) as data:
                if int(data["format"][0]) != cls.FORMAT:
                    return None
                lengths = data["lengths"].astype(np.int64)
                blob = data["blob"].tobytes()
                arrays = {name: data[name] for name in cls._MASKS}
        except (OSError, KeyError, ValueError, IndexError, EOFError, zipfile.BadZipFile):
            return None
        n = len(lengths)
        ends = np.cumsum(lengths)
        if (ends[-1] if n else 0) != len(blob) or any(len(a) != n for a in arrays.values() if a.ndim == 1):
            return None
        if arrays["need_after"].shape != (4, n):
            return None
        table = cls.__new__(cls)
        starts = (ends - lengths).tolist()
        table.bytes = [blob[a:b] for a, b in zip(starts, ends.tolist(), strict=True)]
        table._index_bytes()
        for name, array in arrays.items():
            setattr(table, name, array)
        table._after = {}
        return table

    def starting_with(self, head: bytes) -> np.ndarray:
        """Ids of the tokens that are ``head`` followed by string content (cached per ``head``)."""
        got = self._after.get(head)
        if got is None:
            ids = [
                i
                for i, b in enumerate(self.bytes)
                if b.startswith(head)
                and _is_content(b[len(head) :])
                and utf8_owed(b[len(head) :]) is not None
            ]
            got = self._after[head] = np.asarray(ids, dtype=np.int64)
        return got
