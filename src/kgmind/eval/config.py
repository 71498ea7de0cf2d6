"""The settings of an evaluation run and of a learn pass: which items, from which files, on which KG.

:class:`ItemSource` holds what both read alike (the data set, its split and files, the
KG store and the evidence budget); :class:`EvalConfig` adds the ``kgmind eval`` options
(methods, LLM, timing passes) and :class:`kgmind.eval.learn.LearnConfig` the ``kgmind
learn`` ones, so a learn pass selects its items and opens its store exactly as an
evaluation of the same settings does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgmind.graphs.context import Context

__all__ = ["EvalConfig", "ItemSource"]


@dataclass
class ItemSource:
    """Which data set items a run reads, from which files, and the KG store it reads them against.

    Attributes:
        dataset: A data set of :data:`kgmind.eval.items.DATASETS`.
        split: GenMedGPT-5k / CMCQA split (see :data:`kgmind.eval.items.SPLITS`).
        ids: A file of item ids: only those items (after the split), in the file's order.
        dialogues: GenMedGPT-5k ``dialogues.json`` (default under the data directory).
        ner: ``ner_chatgpt.jsonl``, the stored question entities.
        gold: ``gold_kg_entities.jsonl``.
        qa: CMCQA ``qa_ner.jsonl`` / ExplainCPE split / medical_dialogue_zh CSV.
        vocab: The gold vocabulary (EMCKG ``format_dataset.csv``, CMCKG entity dictionary).
        store: KG store URI (``None``: the data set's default store, if it has one).
        kg: KG file imported into an empty store.
        kg_format: Importer format of ``kg`` (``None``: the default KG's format, else chatdoctor).
        budget: Evidence token budget per question (default: what users get, the Context's).
    """

    dataset: str = "genmedgpt5k"
    split: str = "dev"
    ids: str | None = None
    dialogues: str | None = None
    ner: str | None = None
    gold: str | None = None
    qa: str | None = None
    vocab: str | None = None
    store: str | None = None
    kg: str | None = None
    kg_format: str | None = None
    budget: int = field(default_factory=lambda: Context().budget_tokens)


@dataclass
class EvalConfig(ItemSource):
    """Settings of one evaluation run (the ``kgmind eval`` options).

    Attributes:
        methods: ``all`` or a comma list of :data:`kgmind.eval.methods.METHODS`.
        entities: ``chatgpt`` (stored question entities) or ``own`` (kgmind's NER).
        llm: ``none`` or a chat model name.
        limit: Evaluate a seeded sample of this many items.
        seed: Seed of the sample and of KGCoT's DFS.
        docs: Folder of ``*.txt`` documents for the document baselines.
        memory_sample: Items in the tracemalloc memory pass.
        bertscore: Compute BERTScore when an LLM answered.
        llm_cache: SQLite LLM cache file, or ``off``.
        interleave: Run every method on an item before the next item.
        threads: torch intra-op threads.
        max_tokens: Most tokens the LLM generates per call.
        context: :class:`Context` overrides for kgmind's graph runs (an ablation).
    """

    methods: str = "all"
    entities: str = "chatgpt"
    llm: str = "none"
    limit: int | None = None
    seed: int = 0
    docs: str | None = None
    memory_sample: int = 20
    bertscore: bool = True
    llm_cache: str | None = None
    interleave: bool = False
    threads: int | None = None
    max_tokens: int | None = None
    context: dict[str, Any] = field(default_factory=dict)
