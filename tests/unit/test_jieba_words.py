"""The KG-aware jieba tokenizer without a dict entry per name cuts as ``add_word`` would have made it cut."""

from __future__ import annotations

import random

import jieba
import numpy as np
import pytest

from kgmind.importers.demo import parse_demo
from kgmind.retrievers.key_table import KeyTable
from kgmind.retrievers.ner import Gazetteer
from kgmind.retrievers.ner.jieba_words import KG_WORD_FREQ, KgWords, new_jieba
from random_texts import name_texts


def _added_words(words: list[str]) -> jieba.Tokenizer:
    """The reference: jieba's default dictionary copied, each word added with ``add_word``."""
    base = jieba.Tokenizer()
    base.initialize()
    tk = jieba.Tokenizer()
    tk.FREQ, tk.total, tk.initialized = dict(base.FREQ), base.total, True
    for w in words:
        tk.add_word(w, freq=KG_WORD_FREQ)
    return tk


@pytest.fixture(scope="module")
def demo():
    g = Gazetteer(parse_demo().entities)
    words = [g.keys.key(int(i)) for i in np.flatnonzero(g._cjk_words)]
    others = [g.keys.key(int(i)) for i in np.flatnonzero(~g._cjk_words)]  # English names: not jieba's words
    assert len(words) > 50 and len(others) > 50
    return g, words, others, _added_words(words)


def _texts(words: list[str], others: list[str], seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    filler = [
        "我",
        "最近",
        "一直",
        "还",
        "，",
        "。",
        "医生说",
        "发烧友",
        "伤风感冒",
        "吃了",
        "ing",
        "x1",
        " ",
        "（",
    ]
    return name_texts(rng, words + others[::4], filler, "".join(words), piece=0.25)


def test_lookups_and_total_are_what_add_word_stores(demo):
    g, words, others, ref = demo
    tk = g.tokenizer
    assert isinstance(tk.FREQ, KgWords) and tk.total == ref.total
    probes = (
        {w[:n] for w in words for n in range(1, len(w) + 1)}
        | set(_texts(words, others, 3)[:200])
        | set(others)
        | {"", "发烧友"}
    )
    for p in probes:
        assert tk.FREQ.get(p) == ref.FREQ.get(p), p
        assert (p in tk.FREQ) == (p in ref.FREQ), p
    assert set(tk.FREQ) == set(tk.FREQ._base) | set(words)  # jieba's words and the names, not the prefixes
    assert len(tk.FREQ) == len(set(tk.FREQ))
    with pytest.raises(KeyError):
        tk.FREQ["不在词典里的一串字"]
    assert "小儿金翘颗粒" not in jieba.dt.FREQ  # jieba's own tokenizer is untouched


def test_cuts_equal_those_of_the_added_words(demo):
    g, words, others, ref = demo
    for text in _texts(words, others):
        assert list(g.tokenizer.cut(text, HMM=False)) == list(ref.cut(text, HMM=False)), text


class _Colliding(KgWords):
    _hash = staticmethod(lambda s: len(s) % 3)  # almost every string "is" a prefix


def test_prefix_hash_collisions_change_no_cut(demo):
    g, words, others, ref = demo
    tk = new_jieba(g.keys, g._cjk_words)
    tk.FREQ = _Colliding(tk.FREQ._base, g.keys, g._cjk_words)
    assert tk.FREQ.get("不在词典里的一串字") == 0  # looks like a prefix
    for text in _texts(words, others, 5):
        assert list(tk.cut(text, HMM=False)) == list(ref.cut(text, HMM=False)), text


def test_no_words_is_jiebas_default_dictionary():
    tk = new_jieba(KeyTable([("头痛", ["e1"])]), np.array([False]))
    assert tk.total == _added_words([]).total
    assert list(tk.cut("我头痛", HMM=False)) == ["我", "头痛"]
