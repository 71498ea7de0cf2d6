"""What may be a mention: the stop-words and the cleaning rule every extractor applies.

A span is never a mention when it is blank, numeric, a stop-word, too short (fewer
than 2 letters, or one CJK character) or too long; an English n-gram holding a
conjunction names two things.
"""

from __future__ import annotations

import re
import string

from kgmind.models import normalize_name
from kgmind.text import CJK, has_cjk

__all__ = ["EN_JOINERS", "EN_STOPWORDS", "NUMERIC", "PUNCT", "ZH_STOPWORDS", "clean_mention", "is_word_char"]

#: Words that join two mentions: an n-gram holding one spans two things ("eyes and a headache").
EN_JOINERS: frozenset[str] = frozenset({"and", "or", "but", "nor", "plus"})

_EN_STOP_TEXT = """a about above after again against all also am an and any are as at be because
    been before being below between both but by can could did do does doing done down during
    each few for from further had has have having he her here hers herself him himself his how i
    if in into is it its itself just let me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours
    yourself yourselves doctor doc hi hello hey dear thanks thank please sir madam lately
    recently past week weeks day days month months year years time times today yesterday ago now
    since really quite bit lot little feel feeling felt get getting got go going think know want
    need experiencing experience having been also suffering suffer problem problems issue issues
    thing things something anything everything worried worry concern concerned help tell could
    should might may also last few several some many much every sometimes often always
    constantly sudden suddenly frequent frequently severe mild bad worse better lot still even
    like just what's i'm i've it's don't can't wrong cause causes causing test tests check
    wondering do done"""
#: English words that are never a mention on their own and never start or end an n-gram.
EN_STOPWORDS: frozenset[str] = frozenset(_EN_STOP_TEXT.split())

#: Chinese function words and question fillers.
_ZH_STOP_TEXT = """的 了 吗 呢 吧 啊 呀 哦 嗯 是 有 在 和 与 及 或 也 都 就 还 又 很 太 更 最 我 你 他 她 它
    我们 你们 他们 这 那 这个 那个 什么 怎么 怎么办 怎样 如何 为什么 哪 哪些 哪里 多少 几 一 一下 一些 一点
    一直 一般 医生 大夫 您好 你好 谢谢 请问 问题 情况 现在 最近 时候 时间 今天 昨天 已经 可能 可以 需要 应该
    没有 不是 不 会 能 要 想 到 去 来 说 做 吃 用 看 比较 非常 特别 有点 感觉 觉得 出现 经常 总是 偶尔 之前
    以后 然后 但是 因为 所以 如果 孩子 宝宝 患者 病人 治疗 检查 药 病 症状"""
ZH_STOPWORDS: frozenset[str] = frozenset(_ZH_STOP_TEXT.split())

#: ASCII and CJK punctuation, stripped from both ends of a mention.
PUNCT = string.punctuation + "，。！？；：、（）【】《》“”‘’「」…—·～　"
#: A span of digits, signs and units only.
NUMERIC = re.compile(r"^[\d\s.,%/:+\-×x]+$")
_WS = re.compile(r"\s+")


def is_word_char(ch: str) -> bool:
    """A letter or digit that is not CJK (word boundaries of Latin text)."""
    return ch.isalnum() and not has_cjk(ch)


def clean_mention(text: str, *, max_chars: int = 64, max_words: int = 8) -> str | None:
    """Clean one mention candidate, or reject it.

    Strips punctuation and whitespace at both ends and collapses inner whitespace;
    rejects blank, numeric-only, stop-word, too short (fewer than 2 letters, or one
    CJK character) and too long spans.

    Args:
        text: The candidate.
        max_chars: Longest accepted span in characters.
        max_words: Most words accepted in a (non-CJK) span.

    Returns:
        The cleaned mention, or ``None`` when rejected.
    """
    s = _WS.sub(" ", text.replace("<EOS>", " ")).strip().strip(PUNCT + " ").strip()
    if not s or NUMERIC.match(s):
        return None
    key = normalize_name(s)
    if key in EN_STOPWORDS or key in ZH_STOPWORDS:
        return None
    cjk = len(CJK.findall(s))
    letters = sum(ch.isalpha() for ch in s)
    if cjk:
        if len(s) < 2 or len(s) > min(max_chars, 24):
            return None
    else:
        if letters < 2 or len(s) > max_chars or len(s.split()) > max_words:
            return None
    return s
