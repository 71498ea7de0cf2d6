"""The KG gazetteer: every normalised entity name and alias, looked up at a text's word boundaries.

Simple plural/singular variants are matched too, and the shipped lay terms
(:mod:`kgmind.retrievers.lay_terms`: "throwing up" → Vomiting, 发烧 → 发热) of the
clinical names the KG has. English matches respect word boundaries; Chinese matches
must start and end on word boundaries of a private jieba tokenizer that knows the KG
names (and those lay terms). Longest non-overlapping matches win. One gazetteer
per store URI is cached and rebuilt when the store fingerprint changes.

A match can only start and end where those boundary rules allow, so the gazetteer looks
up the text's spans between allowed starts and ends, at the lengths of the keys that begin
with the span's first two characters, in a :class:`~kgmind.retrievers.key_table.KeyTable`.
That finds exactly what an Aho-Corasick automaton's occurrences give once they are
filtered by the same rules, without an automaton beside the keys: building the gazetteer of
the generated 10M KG (495k keys) grew a worker by 354 MB instead of 429 MB (issue 42,
``benchmarks/results/2026-11-29-gazetteer``). A question is a few hundred characters, so its
lookups are a few hundred, in one array search.

A big embedded (LadybugDB) KG's gazetteer is saved beside its entity indexes (``gazetteer.bin``)
and mapped by every later process: its arrays are the key table and the key lengths per
two-character prefix. The file is stamped with the store's fingerprint and a digest of the code
and data that make the keys (normalisation, variants, stopwords, lay terms), so a changed KG or
changed key rules make it anew.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import sys
import threading
import time
import unicodedata
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from kgmind import models
from kgmind import text as text_module
from kgmind.models import Entity, Mention, normalize_name
from kgmind.retrievers import key_table, lay_terms, linker
from kgmind.retrievers.key_table import KeyTable
from kgmind.retrievers.lay_terms import LANGUAGES, lay_synonyms
from kgmind.retrievers.linker import key_variants
from kgmind.retrievers.ner import cleaning
from kgmind.retrievers.ner.cleaning import EN_STOPWORDS, NUMERIC, ZH_STOPWORDS, is_word_char
from kgmind.retrievers.ner.jieba_words import new_jieba
from kgmind.retrievers.packed import KeyedRuns, read_arrays, write_arrays
from kgmind.stores.protocol import GraphStore
from kgmind.text import has_cjk
from kgmind.tuning import GAZETTEER_SAVED_KEYS

__all__ = [
    "GAZETTEER_FILE",
    "GAZETTEER_RECHECK_S",
    "Gazetteer",
    "clear_gazetteer_cache",
    "gazetteer_file",
    "lay_keys",
]

_log = logging.getLogger(__name__)

#: A cached gazetteer is trusted this many seconds before the store fingerprint is read
#: again (as :class:`~kgmind.retrievers.linker.EntityLinker` trusts its entity index).
GAZETTEER_RECHECK_S = 1.0

#: The saved gazetteer's name, in the folder that holds the store's entity indexes.
GAZETTEER_FILE = "gazetteer.bin"

#: Bumped when the saved arrays change meaning: an older file is then made again.
_SAVED_FORMAT = 3


def gazetteer_file(store_uri: str) -> Path:
    """Where the gazetteer of ``store_uri`` is saved: beside its entity indexes (``<store>.index/``)."""
    from kgmind.retrievers.entity_index_cache import entity_index_dir

    return entity_index_dir(store_uri, "any").parent / GAZETTEER_FILE


@functools.cache
def _key_rules_digest() -> str | None:
    """A digest of the code and data that make a gazetteer's keys, or ``None`` where they cannot be read.

    Whole modules are digested (normalisation, variants, stopwords, lay terms, the key table and
    this module), so any change to them makes saved gazetteers anew; a change elsewhere in
    them costs one rebuild.
    """
    h = hashlib.blake2b(digest_size=16)
    try:
        for module in (models, text_module, cleaning, lay_terms, linker, key_table, sys.modules[__name__]):
            h.update(Path(str(module.__file__)).read_bytes())
        for lang in LANGUAGES:
            h.update((resources.files("kgmind") / "data" / f"lay_terms_{lang}.tsv").read_bytes())
    except (OSError, TypeError):
        return None
    return h.hexdigest()


def _normalize_with_offsets(text: str) -> tuple[str, list[int]]:
    """Normalise like :func:`normalize_name`, keeping each output char's index in ``text``."""
    chars: list[str] = []
    offsets: list[int] = []
    prev_space = True
    for i, c in enumerate(text):
        for ch in unicodedata.normalize("NFKC", c).casefold().replace("_", " "):
            if ch.isspace():
                if prev_space:
                    continue
                ch = " "
                prev_space = True
            else:
                prev_space = False
            chars.append(ch)
            offsets.append(i)
    while chars and chars[-1] == " ":
        chars.pop()
        offsets.pop()
    return "".join(chars), offsets


def lay_keys(exact: dict[str, list[str]]) -> dict[str, list[str]]:
    """Lay-term keys of a KG: each shipped lay term whose clinical name ``exact`` holds → those entities.

    Args:
        exact: The KG's normalised names and aliases → entity ids.

    Returns:
        Normalised lay term → the ids of its clinical entities in this KG (lay terms
        whose clinical names the KG lacks are left out, so such a KG is unaffected).
    """
    out: dict[str, list[str]] = {}
    for lay, clinical in lay_synonyms().items():
        ids = [eid for name in clinical for eid in exact.get(name, ())]
        if ids:
            out[lay] = list(dict.fromkeys(ids))
    return out


# -- gazetteer --------------------------------------------------------------------------------


class Gazetteer:
    """Exact dictionary matcher over a KG's entity names and aliases.

    Args:
        entities: The entities to match (names, aliases).
        min_chars: Shortest Latin key matched (CJK keys need 2 characters).
    """

    def __init__(self, entities: Iterable[Entity], *, min_chars: int = 3) -> None:
        exact: dict[str, list[str]] = {}
        for ent in entities:
            for text in (ent.name, *ent.aliases):
                key = normalize_name(text)
                if not self._keep_key(key, min_chars):
                    continue
                ids = exact.setdefault(key, [])
                if ent.id not in ids:
                    ids.append(ent.id)
        keys: dict[str, list[str]] = dict(exact)
        self._add_variants(keys, exact, min_chars)
        # lay terms come after every KG name and its variants: the KG's own names win
        lay = {k: ids for k, ids in lay_keys(exact).items() if k not in keys and self._keep_key(k, min_chars)}
        keys.update(lay)
        self._add_variants(keys, lay, min_chars)
        # the tokenizer's words: the KG's own keys and lay terms (not their variants), built when first cut
        cjk_words = np.fromiter(
            (k in exact or k in lay for k in keys), dtype=bool, count=len(keys)
        ) & np.fromiter((has_cjk(k) for k in keys), dtype=bool, count=len(keys))
        # the lengths of the keys beginning with each two characters (every key has at least two)
        by_prefix: dict[str, set[int]] = {}
        for key in keys:
            by_prefix.setdefault(key[:2], set()).add(len(key))
        lengths = KeyedRuns.of({prefix: sorted(n) for prefix, n in by_prefix.items()}, "prefix_lengths")
        self._set(KeyTable(keys.items()), lengths, cjk_words)

    def _set(self, keys: KeyTable, lengths: KeyedRuns, cjk_words: np.ndarray) -> None:
        self.keys = keys
        self._lengths = lengths
        self._cjk_words = cjk_words
        self._tokenizer: Any = None
        self._tk_lock = threading.Lock()

    def write(self, path: Path, stamp: str) -> None:
        """Save into ``path`` (atomically), stamped with ``stamp`` (the store's state and the key rules)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {**self.keys.arrays, **self._lengths.arrays, "cjk_words": self._cjk_words.astype(np.uint8)}
        write_arrays(path, arrays, {"format": _SAVED_FORMAT, "stamp": stamp})

    @classmethod
    def read(cls, path: Path, stamp: str) -> Gazetteer | None:
        """The gazetteer saved in ``path``, mapped; ``None`` when missing, unreadable or not of ``stamp``."""
        try:
            arrays, meta = read_arrays(path)
        except (OSError, ValueError):
            return None
        if meta.get("format") != _SAVED_FORMAT or meta.get("stamp") != stamp:
            return None
        if set(arrays) != KeyTable.ARRAYS | KeyedRuns.names("prefix_lengths") | {"cjk_words"}:
            return None
        gaz = cls.__new__(cls)
        table = KeyTable.from_arrays({k: arrays[k] for k in KeyTable.ARRAYS})
        gaz._set(table, KeyedRuns(arrays, "prefix_lengths"), arrays["cjk_words"].view(np.bool_))
        return gaz

    @classmethod
    def _saved_or_built(cls, store: GraphStore, fingerprint: str) -> Gazetteer:
        """The store's saved gazetteer if it is of this store state and these key rules, else built.

        One of at least :data:`~kgmind.tuning.GAZETTEER_SAVED_KEYS` keys of a LadybugDB store is
        saved when built and mapped from its file; a failed save is logged (info) and the built one used.
        """
        rules = _key_rules_digest()
        # Only LadybugDB's fingerprint names one store state for good (a new random load version per
        # write); Neo4j's counter can come back to the same value after a wipe and another import.
        path = gazetteer_file(store.uri) if rules and store.uri.startswith("ladybug:") else None
        stamp = f"{fingerprint}|{rules}"
        if path is not None:
            saved = cls.read(path, stamp)
            if saved is not None:
                return saved
        gaz = cls(store.iter_entities())
        if path is None or len(gaz) < GAZETTEER_SAVED_KEYS:
            return gaz
        try:
            gaz.write(path, stamp)
        except OSError as exc:
            _log.info("gazetteer not saved to %s (it is built again next time): %s", path, exc)
            return gaz
        return cls.read(path, stamp) or gaz

    @classmethod
    def _add_variants(cls, keys: dict[str, list[str]], base: dict[str, list[str]], min_chars: int) -> None:
        """Add the singular/plural variants of ``base``'s keys that ``keys`` lacks."""
        for key, ids in base.items():
            for variant in key_variants(key)[1:]:
                if variant not in keys and cls._keep_key(variant, min_chars):
                    keys[variant] = ids

    @staticmethod
    def _keep_key(key: str, min_chars: int) -> bool:
        if not key or key in EN_STOPWORDS or key in ZH_STOPWORDS or NUMERIC.match(key):
            return False
        if any(has_cjk(c) for c in key):
            return len(key) >= 2
        return len(key) >= min_chars

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def tokenizer(self) -> Any:
        """A private ``jieba.Tokenizer`` whose dictionary includes the KG's Chinese names."""
        with self._tk_lock:
            if self._tokenizer is None:
                self._tokenizer = new_jieba(self.keys, self._cjk_words)
            return self._tokenizer

    def cut(self, text: str) -> list[str]:
        """Segment ``text`` with the KG-aware jieba tokenizer (no HMM: dictionary words only)."""
        return list(self.tokenizer.cut(text, HMM=False))

    @classmethod
    def for_store(cls, store: GraphStore, *, recheck_s: float = GAZETTEER_RECHECK_S) -> Gazetteer:
        """The cached gazetteer of ``store``: one per URI, rebuilt when the store fingerprint changes.

        The fingerprint is three store queries (1.4 ms a question on LadybugDB, a round trip
        each on Neo4j), so like the linker's entity index and the explorations' graph index
        a cached gazetteer is trusted for ``recheck_s`` seconds after its last check. Built
        outside the cache lock (two threads may both build a cold one; the same content
        either way).
        """
        now = time.monotonic()
        with _gaz_lock:
            hit = _gazetteers.get(store.uri)
            if hit is not None and now - hit[2] < recheck_s:
                return hit[1]
        fp = store.fingerprint()
        with _gaz_lock:
            hit = _gazetteers.get(store.uri)
            if hit is not None and hit[0] == fp:
                _gazetteers[store.uri] = (fp, hit[1], now)
                return hit[1]
        gaz = cls._saved_or_built(store, fp)
        with _gaz_lock:
            _gazetteers[store.uri] = (fp, gaz, now)
        return gaz

    def find_spans(self, text: str) -> list[tuple[int, int, Mention]]:
        """Matches as ``(start, end, mention)`` with offsets into ``text``, in text order."""
        if not self.keys or not text.strip():
            return []
        norm, offsets = _normalize_with_offsets(text)
        bounds: set[int] | None = None
        if any(has_cjk(c) for c in norm):
            bounds = {0}
            pos = 0
            for tok in self.cut(norm):
                pos += len(tok)
                bounds.add(pos)
        found = self._occurrences(norm, bounds)
        found.sort(key=lambda m: (-(m[1] - m[0]), m[0]))
        taken = bytearray(len(norm))
        chosen: list[tuple[int, int, tuple[str, ...]]] = []
        for start, end, ids in found:
            if any(taken[start:end]):
                continue
            taken[start:end] = b"\x01" * (end - start)
            chosen.append((start, end, ids))
        chosen.sort()
        out: list[tuple[int, int, Mention]] = []
        for start, end, ids in chosen:
            o_start, o_end = offsets[start], offsets[end - 1] + 1
            span = text[o_start:o_end]
            for eid in ids:
                out.append((o_start, o_end, Mention(text=span, source="gazetteer", entity_id=eid, score=1.0)))
        return out

    def find(self, text: str) -> list[Mention]:
        """Longest non-overlapping KG name matches in ``text``.

        Args:
            text: A question or hypothesis (English or Chinese).

        Returns:
            One :class:`Mention` (``source="gazetteer"``, ``entity_id`` set) per matched
            entity, in text order.
        """
        return [m for _, _, m in self.find_spans(text)]

    def _occurrences(self, norm: str, bounds: set[int] | None) -> list[tuple[int, int, tuple[str, ...]]]:
        """Every ``(start, end, ids)`` where a key occurs in ``norm`` between an allowed start and end.

        Whether a match may start (or end) at a position depends on that position alone
        (:meth:`_start_ok`, :meth:`_end_ok`), so only those spans are looked up, and only at
        the lengths of the keys that begin with the span's first two characters.
        """
        n = len(norm)
        end_ok = [False] + [self._end_ok(norm, e, bounds) for e in range(1, n + 1)]
        spans: list[tuple[int, int]] = []
        for start in range(n - 1):
            lengths = self._lengths.get(norm[start : start + 2])
            if lengths is None or not self._start_ok(norm, start, bounds):
                continue
            spans.extend(
                (start, start + length)
                for length in lengths
                if start + length <= n and end_ok[start + length]
            )
        found = self.keys.find([norm[a:b] for a, b in spans])
        return [(a, b, self.keys.ids(i)) for (a, b), i in zip(spans, found, strict=True) if i is not None]

    @staticmethod
    def _start_ok(norm: str, start: int, bounds: set[int] | None) -> bool:
        """Whether a match may start at ``start``: not inside a Latin word, on a jieba boundary before CJK."""
        first = norm[start]
        if is_word_char(first) and start > 0 and is_word_char(norm[start - 1]):
            return False
        return bounds is None or not has_cjk(first) or start in bounds

    @staticmethod
    def _end_ok(norm: str, end: int, bounds: set[int] | None) -> bool:
        """Whether a match may end before ``end``: not inside a Latin word, on a jieba boundary after CJK."""
        last = norm[end - 1]
        if is_word_char(last) and end < len(norm) and is_word_char(norm[end]):
            return False
        return bounds is None or not has_cjk(last) or end in bounds


_gaz_lock = threading.Lock()
#: ``uri -> (fingerprint, gazetteer, when the fingerprint was last read)``
_gazetteers: dict[str, tuple[str, Gazetteer, float]] = {}


def clear_gazetteer_cache() -> None:
    """Forget every cached gazetteer (tests)."""
    with _gaz_lock:
        _gazetteers.clear()
