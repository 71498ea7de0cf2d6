"""The KG-aware jieba tokenizer without a dict entry per name cuts as ``add_word`` would have made it cut."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import jieba
import numpy as np
import pytest

from kgmind.importers.demo import parse_demo
from kgmind.retrievers.key_table import KeyTable
from kgmind.retrievers.ner import Gazetteer
from kgmind.retrievers.ner.jieba_words import KG_WORD_FREQ, KgWords, PackedFreq, new_jieba
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


def test_the_packed_default_dictionary_answers_as_jiebas_dict(tmp_path: Path) -> None:
    """jieba's 498k words and prefixes are a file mapped instead of ~75 MB of dict (issue 42): every
    lookup jieba makes must give what its dict gave, a word, a prefix (0) or nothing."""
    base = jieba.Tokenizer()
    base.initialize()
    path = tmp_path / "jieba.bin"
    PackedFreq.pack(base.FREQ, base.total).write(path, "dict-a")
    assert PackedFreq.read(path, "dict-b") is None  # another dictionary's file is not used
    packed = PackedFreq.read(path, "dict-a")
    assert packed is not None and packed.total == base.total and len(packed) == len(base.FREQ)
    rng = random.Random(5)
    words = rng.sample(sorted(base.FREQ), 20_000)
    assert any(base.FREQ[w] == 0 for w in words) and any(base.FREQ[w] > 0 for w in words)
    for w in words:
        assert packed.get(w) == base.FREQ[w] and packed[w] == base.FREQ[w] and w in packed, w
    for p in [w + "犇" for w in words[:2_000]] + ["", "x", "不在词典里的一串字", "\ud800"]:
        assert packed.get(p, -1) == base.FREQ.get(p, -1) and (p in packed) == (p in base.FREQ), p
    with pytest.raises(KeyError):
        packed["不在词典里的一串字"]
    assert list(packed)[:1_000] == list(base.FREQ)[:1_000]


def test_the_default_dictionary_is_packed_once_into_the_cache_and_mapped_after(tmp_path: Path) -> None:
    """The first process packs jieba's dictionary into kgmind's cache folder; a later one maps the
    file and never parses the dictionary; a folder it cannot write gets the packed form in memory."""
    script = textwrap.dedent(
        """
        import sys, jieba
        from kgmind.retrievers.ner import jieba_words as jw
        if sys.argv[1] == "mapped":
            jieba.Tokenizer.gen_pfdict = None  # parsing the dictionary again would fail
        base, total = jw._default_dictionary()
        print(type(base).__name__, len(base), total, base.get("头痛"), base.get("头"))
        """
    )
    home = tmp_path / "home"

    def run(mode: str, where: Path) -> str:
        env = {**os.environ, "KGMIND_HOME": str(where)}
        done = subprocess.run(
            [sys.executable, "-c", script, mode], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    first = run("parse", home)
    assert len(list((home / "cache").glob("jieba-*.bin"))) == 1
    assert run("mapped", home) == first and first.startswith("PackedFreq ")
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the home folder should be")
    assert run("parse", blocked) == first


def test_the_memo_of_answers_stays_bounded_and_changes_no_cut(demo, monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers are remembered up to a bound (the packed dictionary is slower than a dict): past the
    bound the memo starts again, and no cut differs from ``add_word``'s."""
    g, words, others, ref = demo
    monkeypatch.setattr("kgmind.retrievers.ner.jieba_words.JIEBA_MEMO_WORDS", 50)
    tk = new_jieba(g.keys, g._cjk_words)
    sizes = []
    for text in _texts(words, others, 9)[:300]:
        assert list(tk.cut(text, HMM=False)) == list(ref.cut(text, HMM=False)), text
        sizes.append(len(tk.FREQ._memo))
    assert max(sizes) == 50 and min(sizes[10:]) < 50  # filled, and started again
