"""A private jieba tokenizer that knows a KG's Chinese names without a dict entry for each.

jieba cuts with a word → frequency map (``Tokenizer.FREQ``). ``add_word`` stores a name at
the frequency it is given and each prefix the map lacks at 0 (which tells the cutter to keep
scanning), as dict entries. The generated 10M KG has 495k Chinese names of 9.4 characters on
average, so adding them held the names again as strings and 605k more entries beside a copy of
jieba's 498k-entry default dictionary. :class:`KgWords` answers the same lookups from what the
gazetteer holds anyway (its key table), one sorted array of the prefixes' hashes and the default
dictionary shared by every tokenizer, so the cuts are the same (issue 42).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from kgmind.retrievers.key_table import KeyTable

__all__ = ["KG_WORD_FREQ", "KgWords", "new_jieba"]

#: The frequency a KG name gets: high enough that jieba keeps a name whole.
KG_WORD_FREQ = 2000

_base_lock = threading.Lock()
_base_dict: tuple[dict[str, int], int] | None = None


def _default_dictionary() -> tuple[dict[str, int], int]:
    """Jieba's default dictionary and its total, loaded once per process and never modified."""
    global _base_dict
    import jieba

    logging.getLogger("jieba").setLevel(logging.WARNING)
    with _base_lock:
        if _base_dict is None:
            base = jieba.Tokenizer()
            base.initialize()
            _base_dict = (base.FREQ, base.total)
        return _base_dict


class KgWords(Mapping[str, int]):
    """jieba's ``FREQ`` with the keys of ``table`` marked in ``is_word`` added as ``add_word`` adds them.

    A lookup gives what ``add_word(name, freq=KG_WORD_FREQ)`` for each name would have stored: a
    name's frequency, else the default dictionary's, else 0 for a prefix of a name. Prefixes are
    known by hash only; a collision makes a string look like a prefix, which only lets jieba scan
    one character further (a prefix adds no word), so it cannot change a cut. Iterating gives the
    default dictionary's words and the names (not the prefixes).
    """

    #: The names' and prefixes' hash (a test's subclass makes many equal: collisions change no cut).
    _hash = staticmethod(hash)

    def __init__(self, base: dict[str, int], table: KeyTable, is_word: np.ndarray) -> None:
        self._base = base
        self._table = table
        self._is_word = is_word
        numbers = np.flatnonzero(is_word)
        self.words = len(numbers)
        # every prefix of every name, the whole name too: a string outside is neither, in one search
        keys = (table.key(i) for i in numbers.tolist())
        hashes = np.fromiter(
            (self._hash(key[:n]) for key in keys for n in range(1, len(key) + 1)), dtype=np.int64
        )
        self._prefixes = np.unique(hashes)  # sorted
        # the names jieba's dictionary holds too (add_word raises them): the dictionary is asked first
        self._raised = {key: KG_WORD_FREQ for i in numbers.tolist() if (key := table.key(i)) in base}
        # jieba asks ``frag in FREQ`` and then ``FREQ[frag]``: the second is answered from here
        self._last: tuple[str | None, int | None] = (None, None)

    def get(self, word: str, default: Any = None) -> Any:
        """What ``add_word`` would have stored for ``word``, else ``default``."""
        last = self._last
        if last[0] == word:
            freq = last[1]
        else:
            freq = self._lookup(word)
            self._last = (word, freq)  # one tuple: a thread reads a whole pair or the one before
        return default if freq is None else freq

    def _lookup(self, word: str) -> int | None:
        freq = self._raised.get(word)
        if freq is None:
            freq = self._base.get(word)
        if freq is not None:
            return freq
        h = self._hash(word)
        p = int(self._prefixes.searchsorted(h))
        if p == len(self._prefixes) or self._prefixes[p] != h:
            return None
        i = self._table.position(word)
        return KG_WORD_FREQ if i is not None and self._is_word[i] else 0

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self.get(word) is not None

    def __getitem__(self, word: str) -> int:
        freq: int | None = self.get(word)
        if freq is None:
            raise KeyError(word)
        return freq

    def __iter__(self) -> Iterator[str]:
        yield from self._base
        for i in np.flatnonzero(self._is_word).tolist():
            key = self._table.key(i)
            if key not in self._base:
                yield key

    def __len__(self) -> int:
        return sum(1 for _ in self)


def new_jieba(table: KeyTable, is_word: np.ndarray) -> Any:
    """A private ``jieba.Tokenizer``: jieba's default dictionary plus ``table``'s keys marked in ``is_word``.

    jieba's global tokenizer is never modified.
    """
    import jieba

    base, total = _default_dictionary()
    tk = jieba.Tokenizer()
    words = KgWords(base, table, is_word)
    tk.FREQ, tk.total = words, total + KG_WORD_FREQ * words.words
    tk.initialized = True
    return tk
