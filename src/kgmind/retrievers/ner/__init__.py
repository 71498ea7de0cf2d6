"""Mention extraction: the spans of a question that may name KG entities, merged into one list.

Two extractors run on the question, and names given with it (an LLM's, a data set's
stored NER) join them:

* :mod:`.gazetteer` — :class:`Gazetteer`, exact dictionary matches of every KG name and
  alias;
* :mod:`.spans` — :func:`embedding_spans`, n-grams whose embedding is close to a KG name;
* :mod:`.mentions` — :func:`extract_mentions`, the union, cleaned (:mod:`.cleaning`) and
  deduplicated; :func:`parse_entity_list` reads MindMap-style NER answers.
"""

from __future__ import annotations

from kgmind.retrievers.ner.cleaning import EN_STOPWORDS, ZH_STOPWORDS, clean_mention
from kgmind.retrievers.ner.gazetteer import GAZETTEER_RECHECK_S, Gazetteer, clear_gazetteer_cache
from kgmind.retrievers.ner.mentions import extract_mentions, mask_spans, parse_entity_list
from kgmind.retrievers.ner.spans import (
    candidate_spans,
    contextual_span_embedder,
    embedding_spans,
    span_threshold,
)

__all__ = [
    "EN_STOPWORDS",
    "GAZETTEER_RECHECK_S",
    "ZH_STOPWORDS",
    "Gazetteer",
    "candidate_spans",
    "clean_mention",
    "clear_gazetteer_cache",
    "contextual_span_embedder",
    "embedding_spans",
    "extract_mentions",
    "mask_spans",
    "parse_entity_list",
    "span_threshold",
]
