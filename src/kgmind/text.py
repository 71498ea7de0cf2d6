r"""Text facts shared by every layer: which characters are CJK, and which language a text is.

This module sits at the level of :mod:`kgmind.models` and imports nothing from kgmind,
so tools, retrievers, graphs and eval can all use the same rule.

* :data:`CJK` matches one CJK ideograph (the unified ideographs, extension A, the
  compatibility ideographs and extension B). CJK punctuation and full-width forms are
  deliberately not included: full-width Latin letters are not Chinese.
* :func:`has_cjk` asks whether a text *contains* an ideograph (a character fact, used
  where any Chinese must change the matching, e.g. names matched as substrings).
* :func:`detect_language` is the one "is this Chinese" rule (prompt language, the
  embedder of a name, the rendering templates).
* :func:`repair_escapes` undoes escaping left by earlier dumps of a dataset (``\xcb\x90``
  as literal text, ``swimmer\'s``); importers run every name and text through it.
* :func:`shorten` and :func:`end_cut` end a text that is too long where a reader can
  stop: the mind map's root (the patient's input) and the model's free texts that ran
  into their schema's ``maxLength``.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = [
    "CJK",
    "Language",
    "detect_language",
    "end_cut",
    "has_cjk",
    "repair_escapes",
    "shorten",
]

Language = Literal["en", "zh"]

#: One CJK ideograph.
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df]")

_LATIN = re.compile(r"[A-Za-z]")


def has_cjk(text: str) -> bool:
    """Return whether ``text`` contains at least one CJK ideograph."""
    return CJK.search(text) is not None


def detect_language(text: str) -> Language:
    """Guess whether ``text`` is Chinese or English.

    A CJK character carries about as much as a short word, so the text counts as
    Chinese when CJK characters make up at least 30% of its CJK + Latin letters
    (digits, spaces and punctuation are not counted).

    Args:
        text: Any text.

    Returns:
        ``"zh"`` if CJK characters dominate, else ``"en"``.
    """
    cjk = len(CJK.findall(text))
    if cjk == 0:
        return "en"
    latin = len(_LATIN.findall(text))
    return "zh" if cjk >= 0.3 * (cjk + latin) else "en"


_ESCAPED_BYTES = re.compile(r"(?:\\x[0-9a-fA-F]{2})+")
_HEX_PAIR = re.compile(r"\\x([0-9a-fA-F]{2})")
_ESCAPED_QUOTE = re.compile(r"\\+(?=['\"])")


def repair_escapes(text: str) -> str:
    r"""Decode literal ``\xHH`` byte escapes as UTF-8 and drop backslashes escaping quotes.

    Public KG dumps were written through ``repr`` of byte strings at some point, so the
    text holds ``/hi\xcb\x90m`` (backslash-x as text, meant as "/hiːm") and ``swimmer\'s``.
    A run of escapes is decoded only when it is valid UTF-8 (a lone ``\xe9`` stays as it
    is rather than being guessed); a backslash is dropped only before a quote, where no
    author writes one on purpose.

    Args:
        text: A name or text from an input file.

    Returns:
        The repaired text (``text`` itself when there is nothing to repair).

    """
    if "\\" not in text:
        return text

    def decode(match: re.Match[str]) -> str:
        raw = bytes(int(h, 16) for h in _HEX_PAIR.findall(match.group(0)))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return match.group(0)

    return _ESCAPED_QUOTE.sub("", _ESCAPED_BYTES.sub(decode, text))


#: A sentence ends here: a Latin closing mark followed by a space or the end (not "e.g" or "2.5"), or a
#: Chinese one (no space follows it).
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|[。！？]")
#: Left at the end of a shortened text, these would read as a dangling clause.
_TRAILING = " ,;:-(/，、；：（"
#: Where a text may be cut without cutting a word.
_BREAKS = (" ", "，", "、", "；")


def shorten(text: str, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` at a word boundary, the cut marked by ``…``.

    The last word is dropped, since it may be cut inside: the cut falls at the last space,
    or in Chinese (no spaces) after the last ``，、；``, in the second half of what fits;
    with neither there, between characters.

    Args:
        text: Any text.
        max_chars: The most characters kept before the ``…``.

    Returns:
        ``text`` itself when it fits, else the cut text ending in ``…``.

    """
    if len(text) <= max_chars:
        return text
    return _marked_cut(text[:max_chars])


def _marked_cut(text: str) -> str:
    """``text`` without its last word (at the last break in its second half, else whole), then ``…``."""
    at = max(text.rfind(mark) for mark in _BREAKS)
    return (text[:at] if at > len(text) // 2 else text).rstrip(_TRAILING) + "…"


def end_cut(text: str, limit: int, *, cut: bool = False) -> str:
    """A model's free text ended where a reader can stop, when its bound cut it.

    A schema's ``maxLength`` stops a small model wherever the bound falls, mostly inside a
    sentence and often inside a word ("which may be a sign ofEs"). A text is cut when the
    decoder says so (``cut``: kgmind's schema decoder reports where it stopped the model,
    which may be a few characters short of the bound) or it reached ``limit``; any other
    text was ended by the model and is returned as it is. A cut text ends after its last
    full sentence when that keeps at least half of it, else before its last word (which may be
    cut inside) with ``…``, or whole with ``…`` when it has no space or clause mark to cut at.

    Args:
        text: The text the model wrote.
        limit: The ``maxLength`` it was written under.
        cut: The decoder ended it where the model had not.

    Returns:
        The text to show.

    """
    if not cut and len(text) < limit:
        return text
    body = text.rstrip()
    ends = [m.end() for m in _SENTENCE_END.finditer(body) if m.end() >= len(body) // 2]
    if ends:
        return body[: ends[-1]]
    return _marked_cut(body)
