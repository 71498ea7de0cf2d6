"""Automatic answer scoring that turns into feedback ratings (KGCoT's BLEU experiments).

KGCoT rates an answer automatically by comparing it with a reference answer and uses the
rating to update edge weights. A :class:`Scorer` returns a score in [0, 1] (BLEU is
divided by 100 so every scorer shares the scale); :func:`rate` maps a score to
``excellent`` / ``poor`` / ``None`` with two thresholds.

Chinese is handled explicitly: BLEU uses sacrebleu's ``zh`` tokenizer (one token per CJK
character), ROUGE-L tokenises with jieba first (rouge-score's default tokenizer drops
every non-ASCII character, which would score any two Chinese texts 0).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, Literal, Protocol, runtime_checkable

from kgmind.models import normalize_name

__all__ = [
    "BleuScorer",
    "EntityRecallScorer",
    "RougeLScorer",
    "Scorer",
    "is_chinese",
    "rate",
]

Language = Literal["en", "zh"]

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"\w")


def is_chinese(*texts: str) -> bool:
    """Return whether any of ``texts`` contains a CJK ideograph."""
    return any(_CJK.search(t) for t in texts)


@runtime_checkable
class Scorer(Protocol):
    """Scores an answer against a reference answer."""

    name: str

    def score(self, answer: str, reference: str) -> float:
        """Return a similarity in [0, 1] (higher is better)."""
        ...


class BleuScorer:
    """Sentence BLEU-4 (sacrebleu), divided by 100.

    Args:
        language: ``en`` (tokenizer ``13a``), ``zh`` (tokenizer ``zh``) or ``None`` to pick
            ``zh`` whenever the answer or the reference contains CJK characters.
        smooth_method: sacrebleu's smoothing for sentence BLEU (default ``exp``).

    """

    name = "bleu"

    def __init__(self, language: Language | None = None, smooth_method: str = "exp") -> None:
        if language not in (None, "en", "zh"):
            raise ValueError(f"language must be 'en', 'zh' or None, got {language!r}")
        self.language = language
        self.smooth_method = smooth_method

    def score(self, answer: str, reference: str) -> float:
        """Return sentence BLEU-4 of ``answer`` against ``reference`` in [0, 1]."""
        import sacrebleu

        lang = self.language or ("zh" if is_chinese(answer, reference) else "en")
        tok = "zh" if lang == "zh" else "13a"
        result = sacrebleu.sentence_bleu(answer, [reference], tokenize=tok, smooth_method=self.smooth_method)
        return float(result.score) / 100.0


@lru_cache(maxsize=1)
def _jieba() -> Any:
    import jieba

    jieba.setLogLevel(logging.WARNING)
    return jieba


class _JiebaTokenizer:
    """rouge-score tokenizer: jieba words, lower-cased, punctuation and spaces dropped."""

    def tokenize(self, text: str) -> list[str]:
        return [t.lower() for t in _jieba().lcut(text) if _WORD.search(t)]


class RougeLScorer:
    """ROUGE-L F-measure (rouge-score); Chinese text is tokenised with jieba first.

    Args:
        language: ``en``, ``zh`` or ``None`` to pick ``zh`` whenever the answer or the
            reference contains CJK characters.

    """

    name = "rougeL"

    def __init__(self, language: Language | None = None) -> None:
        if language not in (None, "en", "zh"):
            raise ValueError(f"language must be 'en', 'zh' or None, got {language!r}")
        self.language = language
        self._scorers: dict[str, Any] = {}

    def _scorer(self, lang: str) -> Any:
        scorer = self._scorers.get(lang)
        if scorer is None:
            from rouge_score import rouge_scorer

            tokenizer = _JiebaTokenizer() if lang == "zh" else None
            scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False, tokenizer=tokenizer)
            self._scorers[lang] = scorer
        return scorer

    def score(self, answer: str, reference: str) -> float:
        """Return the ROUGE-L F-measure of ``answer`` against ``reference`` in [0, 1]."""
        lang = self.language or ("zh" if is_chinese(answer, reference) else "en")
        result = self._scorer(lang).score(reference, answer)  # (target, prediction)
        return float(result["rougeL"].fmeasure)


class EntityRecallScorer:
    """Share of gold entity names the answer mentions (normalised substring match).

    Names and answer are compared after :func:`kgmind.models.normalize_name` (case,
    full/half width, ``_`` vs space). The reference answer is not used.

    Args:
        gold: The gold entity names; blank ones are ignored, duplicates count once.

    Raises:
        ValueError: No non-blank gold name.

    """

    name = "entity_recall"

    def __init__(self, gold: Iterable[str]) -> None:
        keys = {normalize_name(g) for g in gold}
        keys.discard("")
        if not keys:
            raise ValueError("EntityRecallScorer needs at least one non-blank gold entity name")
        self.gold = frozenset(keys)

    def score(self, answer: str, reference: str = "") -> float:
        """Return the fraction of gold names found in ``answer`` (0 to 1)."""
        text = normalize_name(answer)
        return sum(1 for g in self.gold if g in text) / len(self.gold)


def rate(score: float, excellent_at: float, poor_at: float) -> Literal["excellent", "poor"] | None:
    """Map a score to a feedback rating.

    Args:
        score: The answer's score.
        excellent_at: Scores at or above this are ``excellent``.
        poor_at: Scores at or below this are ``poor``; must be below ``excellent_at``.

    Returns:
        ``excellent``, ``poor``, or ``None`` (in between: no feedback).

    Raises:
        ValueError: ``poor_at >= excellent_at`` or a NaN score/threshold.

    """
    if any(math.isnan(x) for x in (score, excellent_at, poor_at)):
        raise ValueError("score and thresholds must not be NaN")
    if not poor_at < excellent_at:
        raise ValueError(f"poor_at ({poor_at}) must be below excellent_at ({excellent_at})")
    if score >= excellent_at:
        return "excellent"
    if score <= poor_at:
        return "poor"
    return None
