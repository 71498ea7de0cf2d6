"""A private jieba tokenizer that knows a KG's Chinese names without a dict entry for each.

jieba cuts with a word → frequency map (``Tokenizer.FREQ``). ``add_word`` stores a name at
the frequency it is given and each prefix the map lacks at 0 (which tells the cutter to keep
scanning), as dict entries. The generated 10M KG has 495k Chinese names of 9.4 characters on
average, so adding them held the names again as strings and 605k more entries beside a copy of
jieba's 498k-entry default dictionary. :class:`KgWords` answers the same lookups from what the
gazetteer holds anyway (its key table), one sorted array of the prefixes' hashes and the default
dictionary shared by every tokenizer, so the cuts are the same (issue 42).

That default dictionary is itself 498k words and prefixes, ~75 MB of Python objects in every
worker that reads Chinese. :class:`PackedFreq` holds it as flat arrays in a file in kgmind's
cache folder, made once per jieba dictionary and mapped by every later process.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from kgmind.retrievers.key_table import KeyTable
from kgmind.retrievers.packed import KeyedRuns, read_arrays, write_arrays
from kgmind.tuning import JIEBA_MEMO_WORDS

__all__ = ["KG_WORD_FREQ", "KgWords", "PackedFreq", "new_jieba"]

#: The frequency a KG name gets: high enough that jieba keeps a name whole.
KG_WORD_FREQ = 2000

#: Bumped when :class:`PackedFreq`'s arrays change meaning: an older file is then made again.
_PACKED_FORMAT = 2

#: The memo's "not asked yet" (``None`` is an answer: not a word or prefix).
_UNKNOWN: Any = object()

_base_lock = threading.Lock()
_base_dict: tuple[Mapping[str, int], int] | None = None


class PackedFreq(Mapping[str, int]):
    """A word → frequency map (jieba's ``FREQ``: its words, and their prefixes at 0) as flat arrays.

    A :class:`~kgmind.retrievers.packed.KeyedRuns` of one frequency a word: a lookup answers
    exactly what the dict did.
    """

    def __init__(self, runs: KeyedRuns, total: int) -> None:
        self.runs = runs
        self.total = total

    @classmethod
    def pack(cls, freq: Mapping[str, int], total: int) -> PackedFreq:
        """``freq``'s words and frequencies, in its order."""
        return cls(KeyedRuns.of(_Single(freq), "freq"), total)

    def write(self, path: Path, source: str) -> None:
        """Save into ``path`` (atomically), stamped with ``source`` (the digest of the dictionary packed)."""
        write_arrays(
            path, self.runs.arrays, {"format": _PACKED_FORMAT, "source": source, "total": self.total}
        )

    @classmethod
    def read(cls, path: Path, source: str) -> PackedFreq | None:
        """The map saved in ``path``, mapped; ``None`` when missing, unreadable or not of ``source``."""
        try:
            arrays, meta = read_arrays(path)
            if meta.get("format") != _PACKED_FORMAT or meta.get("source") != source:
                return None
            if set(arrays) != KeyedRuns.names("freq"):
                return None
            return cls(KeyedRuns(arrays, "freq"), int(meta["total"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def get(self, word: str, default: Any = None) -> Any:
        """The frequency of ``word``, else ``default`` (jieba asks ``FREQ.get``)."""
        i = self.runs.position(word)
        return default if i is None else self.runs.first(i)

    def __getitem__(self, word: str) -> int:
        i = self.runs.position(word)
        if i is None:
            raise KeyError(word)
        return self.runs.first(i)

    def __contains__(self, word: object) -> bool:
        return word in self.runs

    def __iter__(self) -> Iterator[str]:
        return iter(self.runs)

    def __len__(self) -> int:
        return len(self.runs)


class _Single(Mapping[str, tuple[int]]):
    """``{word: (frequency,)}`` over a word → frequency map, made one run at a time."""

    def __init__(self, freq: Mapping[str, int]) -> None:
        self._freq = freq

    def __getitem__(self, word: str) -> tuple[int]:
        return (self._freq[word],)

    def __iter__(self) -> Iterator[str]:
        return iter(self._freq)

    def __len__(self) -> int:
        return len(self._freq)


def _default_dictionary() -> tuple[Mapping[str, int], int]:
    """Jieba's default dictionary and its total, loaded once per process and never modified.

    Packed (:class:`PackedFreq`) and mapped from ``jieba-<digest>.bin`` in kgmind's cache folder,
    named by the digest of jieba's dictionary file: made there by the first process, read by
    every later one. Where the folder cannot be written, the packed form is kept in memory.
    """
    global _base_dict
    import jieba

    from kgmind.settings import kgmind_home

    logging.getLogger("jieba").setLevel(logging.WARNING)
    with _base_lock:
        if _base_dict is None:
            tk = jieba.Tokenizer()
            with tk.get_dict_file() as f:
                source = hashlib.blake2b(f.read(), digest_size=16).hexdigest()
            path = kgmind_home() / "cache" / f"jieba-{source}.bin"
            packed = PackedFreq.read(path, source)
            if packed is None:
                freq, total = jieba.Tokenizer.gen_pfdict(tk.get_dict_file())
                packed = PackedFreq.pack(freq, total)
                del freq
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    packed.write(path, source)
                    packed = PackedFreq.read(path, source) or packed
                except OSError:
                    pass  # kept in memory
            _base_dict = (packed, packed.total)
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

    def __init__(self, base: Mapping[str, int], table: KeyTable, is_word: np.ndarray) -> None:
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
        # the answers given, up to a bound: jieba asks ``frag in FREQ`` and then ``FREQ[frag]``, and
        # questions repeat most of their fragments, which the packed dictionary answers slower than a dict
        self._memo: dict[str, int | None] = {}

    def get(self, word: str, default: Any = None) -> Any:
        """What ``add_word`` would have stored for ``word``, else ``default``."""
        memo = self._memo
        freq = memo.get(word, _UNKNOWN)
        if freq is _UNKNOWN:
            freq = self._lookup(word)
            if len(memo) >= JIEBA_MEMO_WORDS:
                memo.clear()  # a thread racing this loses at most an answer to recompute
            memo[word] = freq
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
