"""Random texts built from a KG's names, for tests that compare a matcher or a cutter with a reference."""

from __future__ import annotations

import random
from collections.abc import Sequence

#: Words between the names of a random text: English and Chinese, a letter, spaces and punctuation.
FILLER = ("the", "and", "pain", "s", " ", ",", "。", "我", "有点", "最近")


def name_texts(
    rng: random.Random,
    names: Sequence[str],
    filler: Sequence[str],
    chars: str,
    *,
    count: int = 600,
    piece: float = 0.2,
    run_on: bool = False,
) -> list[str]:
    """``2 * count`` texts: 1-12 names (a piece of one with probability ``piece``) or filler words, then
    characters of ``chars`` mixed. With ``run_on``, odd texts put a space after about half of their words.
    """
    texts = []
    for n in range(count):
        parts = []
        for _ in range(rng.randint(1, 12)):
            word = rng.choice(names) if rng.random() < 0.6 else rng.choice(filler)
            if rng.random() < piece and len(word) > 2:  # a piece of a name
                a = rng.randrange(len(word) - 1)
                word = word[a : a + rng.randint(1, len(word) - a)]
            parts.append(word + (" " if run_on and n % 2 and rng.random() < 0.5 else ""))
        texts.append("".join(parts))
        texts.append("".join(rng.choice(chars) for _ in range(rng.randint(5, 40))))  # names' characters mixed
    return texts
