"""The items of an evaluation: each data set's questions with their gold, by split, sampled.

GenMedGPT-5k's gold is derived from each reference answer (the EMCKG entities it names,
:func:`kgmind.eval.gold.derive_gold`), except on ``gold203``, the annotated rows, whose
gold is their ``output_KG``. The ``calib`` and ``test`` splits partition ``dev`` by a
hash of the row id (:func:`in_calibration`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgmind.eval import datasets as ds
from kgmind.eval import gold as gd
from kgmind.eval.config import EvalConfig

__all__ = [
    "CALIB_ONE_IN",
    "DATASETS",
    "SPLITS",
    "EvalItem",
    "build_items",
    "in_calibration",
    "question_text",
    "read_ids",
]

#: Data sets ``kgmind eval`` knows.
DATASETS: tuple[str, ...] = ("genmedgpt5k", "cmcqa", "explaincpe", "medical_dialogue_zh")

#: Splits of GenMedGPT-5k. ``calib`` and ``test`` partition ``dev``: every tuned default
#: (δ, δ_span, the reranker) is fitted on ``calib``; README figures are reported on ``test``.
SPLITS: tuple[str, ...] = ("dev", "calib", "test", "gold203", "all")

#: One dev row in this many (by a hash of its id) joins the calibration split, beside
#: the annotated rows. A hash, not a shuffle: a row's side never depends on which other
#: rows a data file holds, so held-out data splits the same way.
CALIB_ONE_IN = 5

_CALIB_HASH = "sha256('kgmind-calib:'+id)"


def in_calibration(row_id: str, annotated: set[str]) -> bool:
    """Whether a GenMedGPT-5k row belongs to the calibration split.

    The calibration split is the rows annotated in ``gold_kg_entities.jsonl`` (the
    linking thresholds were calibrated on their ``input_KG``) plus one in
    :data:`CALIB_ONE_IN` of the other rows, chosen by ``sha256("kgmind-calib:" + id)``.
    """
    if row_id in annotated:
        return True
    digest = hashlib.sha256(f"kgmind-calib:{row_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % CALIB_ONE_IN == 0


def _in_split(split: str, row_id: str, annotated: set[str]) -> bool:
    """Whether a row is in ``split`` as far as the calib/test partition goes (other splits: always)."""
    return split not in ("calib", "test") or in_calibration(row_id, annotated) == (split == "calib")


@dataclass
class EvalItem:
    """One evaluation question with its gold.

    Attributes:
        id: Row id (string).
        question: The question.
        reference: The reference answer (may be empty).
        entities: Stored question entities (ChatGPT NER / ``question_kg``).
        gold: Gold entities, each as its surface forms.
        gold_names: Gold entity names (for precision).
        gold_diseases: Gold diseases, each as its surface forms.
        options: Choice options (ExplainCPE).
        answer_key: The right option letter (ExplainCPE).

    """

    id: str
    question: str
    reference: str = ""
    entities: list[str] = field(default_factory=list)
    gold: list[tuple[str, ...]] = field(default_factory=list)
    gold_names: list[str] = field(default_factory=list)
    gold_diseases: list[tuple[str, ...]] = field(default_factory=list)
    options: list[str] | None = None
    answer_key: str | None = None


def _derived_item(
    item_id: str, question: str, answer: str, entities: Sequence[str], vocab: gd.Vocabulary
) -> EvalItem:
    """An item whose gold is derived from its reference answer (the KG entities it names)."""
    derived = gd.derive_gold(answer, vocab)
    return EvalItem(
        id=item_id,
        question=question,
        reference=answer,
        entities=list(entities),
        gold=[e.forms for e in derived],
        gold_names=[e.name for e in derived],
        gold_diseases=[e.forms for e in derived if e.type == "disease"],
    )


# -- GenMedGPT-5k ----------------------------------------------------------------------


def _genmedgpt5k_split_rule(split: str) -> str:
    dev_rule = (
        "every dialogue whose derived gold (EMCKG diseases/tests/medications named in the reference "
        "answer) is non-empty"
    )
    calib_rule = (
        f"the rows annotated in gold_kg_entities.jsonl plus one in {CALIB_ONE_IN} of the others "
        f"by {_CALIB_HASH}"
    )
    return {
        "dev": dev_rule,
        "calib": f"{dev_rule}, in the calibration slice: {calib_rule}",
        "test": f"{dev_rule}, outside the calibration slice ({calib_rule}); disjoint from calib",
        "all": "every dialogue",
    }[split]


def _gold203_items(
    gold_rows: Sequence[ds.GoldRow], by_id: dict[Any, ds.Dialogue], vocab: gd.Vocabulary
) -> list[EvalItem]:
    """The annotated rows, whose gold is their ``output_KG`` (a row may repeat: its index joins the id)."""
    items: list[EvalItem] = []
    for i, r in enumerate(gold_rows):
        d = by_id.get(r.id)
        items.append(
            EvalItem(
                id=f"{r.id}#{i}",
                question=d.question if d else r.question,
                reference=d.answer if d else r.answer,
                entities=list(d.question_entities) if d else [],
                gold=[vocab.forms_of(n) for n in r.output_kg],
                gold_names=list(r.output_kg),
                gold_diseases=[vocab.forms_of(n) for n in r.output_kg if vocab.type_of(n) == "disease"],
            )
        )
    return items


def _genmedgpt5k_items(cfg: EvalConfig, info: dict[str, Any]) -> list[EvalItem]:
    if cfg.split not in SPLITS:
        raise ValueError(f"unknown split {cfg.split!r}; choose from {', '.join(SPLITS)}")
    vocab = gd.load_emckg_vocabulary(cfg.vocab)
    dialogues = ds.load_dialogues(cfg.dialogues)
    ner_path = Path(cfg.ner) if cfg.ner else ds.default_path("ner")
    if ner_path.exists():
        ds.align_ner(dialogues, ds.load_ner(ner_path))
    elif cfg.entities == "chatgpt":
        raise FileNotFoundError(str(ner_path))
    by_id = {d.id: d for d in dialogues}
    gold_path = Path(cfg.gold) if cfg.gold else ds.default_path("gold")
    gold_rows = ds.load_gold(gold_path) if gold_path.exists() else []
    if gold_rows:
        pairs = [
            (
                [e.name for e in gd.derive_gold(by_id[r.id].answer if r.id in by_id else r.answer, vocab)],
                r.output_kg,
            )
            for r in gold_rows
        ]
        info["derived_vs_output_kg"] = gd.gold_agreement(pairs)
    if cfg.split == "gold203":
        info["split_rule"] = "the annotated rows of gold_kg_entities.jsonl; gold = output_KG"
        items = _gold203_items(gold_rows, by_id, vocab)
    else:
        info["split_rule"] = _genmedgpt5k_split_rule(cfg.split)
        annotated = {str(r.id) for r in gold_rows}
        derived = (
            _derived_item(str(d.id), d.question, d.answer, d.question_entities, vocab)
            for d in dialogues
            if _in_split(cfg.split, str(d.id), annotated)
        )
        items = [item for item in derived if cfg.split == "all" or item.gold]
    info["vocabulary"] = {"source": vocab.source, "entities": len(vocab.entities)}
    return items


# -- the Chinese data sets ---------------------------------------------------------------


def _cmcqa_items(cfg: EvalConfig, info: dict[str, Any]) -> list[EvalItem]:
    rule = "entities = question_kg; gold = CMCKG diseases/checks/drugs named in the answer"
    info["split_rule"] = {
        "calib": f"one row in {CALIB_ONE_IN} by {_CALIB_HASH}; {rule}",
        "test": f"the rows outside calib (one in {CALIB_ONE_IN} by {_CALIB_HASH}); {rule}",
    }.get(cfg.split, f"every row; {rule}")
    try:
        vocab = gd.load_cmckg_vocabulary(cfg.vocab)
    except FileNotFoundError:
        vocab = gd.Vocabulary()
    return [
        _derived_item(str(q.id), q.question, q.answer, q.question_kg, vocab)
        for q in ds.load_cmcqa(cfg.qa)
        if _in_split(cfg.split, str(q.id), set())
    ]


def _explaincpe_items(cfg: EvalConfig, info: dict[str, Any]) -> list[EvalItem]:
    info["split_rule"] = "every item of the given split file (default test.json); metric: accuracy"
    return [
        EvalItem(
            id=str(c.id), question=c.question, reference=c.explanation, options=c.options, answer_key=c.answer
        )
        for c in ds.load_explaincpe(cfg.qa)
    ]


def _medical_dialogue_items(cfg: EvalConfig, info: dict[str, Any]) -> list[EvalItem]:
    info["split_rule"] = "every row with ask and answer; answer metrics only"
    return [
        EvalItem(id=str(m.id), question=m.question, reference=m.answer)
        for m in ds.load_medical_dialogue_zh(cfg.qa)
    ]


_BUILDERS: dict[str, Callable[[EvalConfig, dict[str, Any]], list[EvalItem]]] = {
    "genmedgpt5k": _genmedgpt5k_items,
    "cmcqa": _cmcqa_items,
    "explaincpe": _explaincpe_items,
    "medical_dialogue_zh": _medical_dialogue_items,
}


def build_items(cfg: EvalConfig) -> tuple[list[EvalItem], dict[str, Any]]:
    """Build the items of ``cfg.dataset`` / ``cfg.split`` (sampled by ``limit``/``seed``) and gold facts.

    Returns:
        ``(items, info)``; ``info`` holds the split definition, the sizes and, for
        GenMedGPT-5k, the agreement of derived gold with ``output_KG`` on the annotated rows.

    Raises:
        ValueError: Unknown data set or split.

    """
    build = _BUILDERS.get(cfg.dataset)
    if build is None:
        raise ValueError(f"unknown dataset {cfg.dataset!r}; choose from {', '.join(DATASETS)}")
    info: dict[str, Any] = {}
    items = build(cfg, info)
    if cfg.ids:
        items = _only_ids(items, cfg.ids)
        info["ids_file"] = cfg.ids
    info["size"] = len(items)
    items = gd.sample(items, cfg.limit, cfg.seed)
    return items, info


def read_ids(path: str | Path) -> list[str]:
    """Item ids from a file, one per line, in file order (blank lines and ``#`` comments skipped).

    Raises:
        FileNotFoundError: No such file.

    """
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return list(dict.fromkeys(s for s in (line.strip() for line in lines) if s and not s.startswith("#")))


def _only_ids(items: Sequence[EvalItem], path: str) -> list[EvalItem]:
    """The items named in the ids file ``path``, in the file's order; every id must be an item."""
    by_id = {it.id: it for it in items}
    wanted = read_ids(path)
    missing = [i for i in wanted if i not in by_id]
    if missing:
        raise ValueError(
            f"{len(missing)} of the {len(wanted)} ids in {path} are not items of this data set and split "
            f"(first: {missing[0]!r})"
        )
    return [by_id[i] for i in wanted]


def question_text(item: EvalItem) -> str:
    """The question as every method receives it: with the choices appended for a choice item."""
    if not item.options:
        return item.question
    choices = "\n".join(f"{'ABCDE'[i]}. {o}" for i, o in enumerate(item.options))
    return (
        f"{item.question}\n\nOptions:\n{choices}\n\n"
        "Reply with the letter of the single best option first (答案：X), then a short reason."
    )
