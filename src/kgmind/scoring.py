"""Automatic answer scoring that turns into feedback ratings (KGCoT's BLEU experiments).

KGCoT rates an answer automatically by comparing it with a reference answer and uses the
rating to update edge weights. A :class:`Scorer` returns a score in [0, 1] (BLEU is
divided by 100 so every scorer shares the scale); :func:`rate` maps a score to
``excellent`` / ``poor`` / ``None`` with two thresholds.

Chinese is handled explicitly, and the same way in both scores: one token per CJK
character. BLEU uses sacrebleu's ``zh`` tokenizer; ROUGE-L (:func:`rouge_l`, the one
ROUGE-L of the package: the evaluation reports it too, so the auto-feedback thresholds
sit on the reported scale) splits each CJK ideograph into its own token and other text
into lower-cased ASCII letter/digit runs. rouge-score's default tokenizer would drop
every non-ASCII character and score any two Chinese texts 0; characters rather than
jieba words keep the score independent of a segmentation dictionary.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, Literal, Protocol, runtime_checkable

from kgmind.models import normalize_name
from kgmind.text import CJK, Language, has_cjk

__all__ = [
    "BleuScorer",
    "EntityRecallScorer",
    "RougeLScorer",
    "Scorer",
    "rate",
    "rouge_l",
    "rouge_tokens",
]

_ASCII_WORD = re.compile(r"[a-z0-9]+")
_ROUGE_TOKEN = re.compile(CJK.pattern + r"|[a-z0-9]+")


def _any_cjk(*texts: str) -> bool:
    return any(has_cjk(t) for t in texts)


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

        lang = self.language or ("zh" if _any_cjk(answer, reference) else "en")
        tok = "zh" if lang == "zh" else "13a"
        result = sacrebleu.sentence_bleu(answer, [reference], tokenize=tok, smooth_method=self.smooth_method)
        return float(result.score) / 100.0


def rouge_tokens(text: str, *, cjk: bool = True) -> list[str]:
    """ROUGE tokens: each CJK ideograph alone, other text as lower-cased ASCII letter/digit runs.

    Without CJK this is rouge-score's default tokenizer without stemming.

    Args:
        text: Any text.
        cjk: Keep CJK ideographs (``False``: drop them, as rouge-score does).
    """
    return (_ROUGE_TOKEN if cjk else _ASCII_WORD).findall(text.lower())


class _RougeTokenizer:
    """The ``tokenize`` object rouge-score expects, over :func:`rouge_tokens`."""

    def __init__(self, cjk: bool) -> None:
        self.cjk = cjk

    def tokenize(self, text: str) -> list[str]:
        return rouge_tokens(text, cjk=self.cjk)


@lru_cache(maxsize=2)
def _rouge_scorer(cjk: bool) -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], tokenizer=_RougeTokenizer(cjk))


def rouge_l(prediction: str, reference: str, *, cjk: bool = True) -> float:
    """ROUGE-L F-measure (rouge-score) over :func:`rouge_tokens`: Chinese per character.

    Args:
        prediction: The answer.
        reference: The reference answer.
        cjk: Count CJK characters (``False``: ASCII words only).

    Returns:
        F1 in [0, 1]; 0.0 when either side is blank.
    """
    if not prediction.strip() or not reference.strip():
        return 0.0
    result = _rouge_scorer(cjk).score(reference, prediction)  # (target, prediction)
    return float(result["rougeL"].fmeasure)


class RougeLScorer:
    """ROUGE-L F-measure as a :class:`Scorer` (:func:`rouge_l`; Chinese per character).

    Args:
        language: ``en`` to score ASCII words only; ``zh`` or ``None`` (default) to
            count CJK characters too (mixed text needs no language switch).

    """

    name = "rougeL"

    def __init__(self, language: Language | None = None) -> None:
        if language not in (None, "en", "zh"):
            raise ValueError(f"language must be 'en', 'zh' or None, got {language!r}")
        self.language = language

    def score(self, answer: str, reference: str) -> float:
        """Return the ROUGE-L F-measure of ``answer`` against ``reference`` in [0, 1]."""
        return rouge_l(answer, reference, cjk=self.language != "en")


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
