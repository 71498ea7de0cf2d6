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
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["CJK", "Language", "detect_language", "has_cjk", "repair_escapes"]

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
