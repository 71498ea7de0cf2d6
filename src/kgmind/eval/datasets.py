"""Loaders for the evaluation data sets, in exactly their upstream file formats.

* GenMedGPT-5k ``dialogues.json``: ``[{id, instruction, input, output}]``.
* ``ner_chatgpt.jsonl``: ``{id?, qustion_output, answer_output}`` (field name misspelt
  upstream), each ``"<CLS>text<SEP>The extracted entities are a, b, c<EOS>"``. Some rows
  separate entities with ``<EntityMarker>``, some lack ``<EOS>``, and a few are ChatGPT
  refusals with no ``<SEP>`` at all (no entities). Rows align with dialogues **by id**
  when every row has one (the shared file: all 4,362 ids equal the dialogues' ids in
  order), otherwise **by order** (then the counts must be equal).
* ``gold_kg_entities.jsonl``: ``{id, input, input_KG, output, output_KG}``, names
  comma-separated with ``_`` for spaces. Ids repeat (7, 12 and 66 twice): rows are kept
  as rows.
* CMCQA ``qa_ner.jsonl``: ``{id, question, question_kg, answer}`` (``question_kg``
  comma-separated).
* ExplainCPE ``{train,dev,test}.json``: ``[{id, question, options[5], answer, explanation, …}]``.
* medical_dialogue_zh ``*.csv``: ``department, title, ask, answer``. The shared file is
  UTF-8; upstream files are GB18030, so the loader tries UTF-8 (with BOM) first and
  falls back to GB18030.

Default paths are under :func:`kgmind.settings.data_dir` (``$KGMIND_DATA_DIR``).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgmind.relations import schema_from_graph
from kgmind.settings import data_dir

__all__ = [
    "CMCQAItem",
    "ChoiceItem",
    "Dialogue",
    "DialogueQA",
    "GoldRow",
    "NerRow",
    "align_ner",
    "default_path",
    "kg_disease_documents",
    "load_cmcqa",
    "load_dialogues",
    "load_explaincpe",
    "load_gold",
    "load_medical_dialogue_zh",
    "load_ner",
    "parse_ner_output",
    "split_names",
]

#: Default file (relative to the data dir) per data set and role.
DEFAULT_FILES: dict[str, str] = {
    "dialogues": "genmedgpt5k/dialogues.json",
    "ner": "genmedgpt5k/ner_chatgpt.jsonl",
    "gold": "genmedgpt5k/gold_kg_entities.jsonl",
    "docs": "genmedgpt5k/disease_documents",
    "emckg": "emckg/format_dataset.csv",
    "recrawl": "cmckg/recrawl_full",
    "cmcqa": "cmcqa/qa_ner.jsonl",
    "cmckg_names": "cmcqa/cmckg_entity_names.txt",
    "explaincpe": "explaincpe/test.json",
    "medical_dialogue_zh": "medical_dialogue_zh",
}


def default_path(role: str) -> Path:
    """Return the default path of a data file: ``data_dir() / DEFAULT_FILES[role]``."""
    return data_dir() / DEFAULT_FILES[role]


@dataclass
class Dialogue:
    """One GenMedGPT-5k dialogue.

    Attributes:
        id: The upstream id.
        question: The patient's question (``input``).
        answer: The reference answer (``output``).
        instruction: The upstream instruction.
        question_entities: ChatGPT-extracted question entities (from ``ner_chatgpt``).
        answer_entities: ChatGPT-extracted answer entities.

    """

    id: int
    question: str
    answer: str
    instruction: str = ""
    question_entities: list[str] = field(default_factory=list)
    answer_entities: list[str] = field(default_factory=list)


@dataclass
class NerRow:
    """One row of ``ner_chatgpt.jsonl`` parsed."""

    id: int | None
    question: str
    question_entities: list[str]
    answer: str
    answer_entities: list[str]


@dataclass
class GoldRow:
    """One annotated row of ``gold_kg_entities.jsonl``."""

    id: int
    question: str
    answer: str
    input_kg: list[str]
    output_kg: list[str]


@dataclass
class CMCQAItem:
    """One CMCQA row: Chinese question, its KG entities and the reference answer."""

    id: int
    question: str
    question_kg: list[str]
    answer: str


@dataclass
class ChoiceItem:
    """One ExplainCPE multiple-choice item (answer is a letter A–E)."""

    id: int
    question: str
    options: list[str]
    answer: str
    explanation: str = ""


@dataclass
class DialogueQA:
    """One medical_dialogue_zh row."""

    id: int
    department: str
    title: str
    ask: str
    answer: str

    @property
    def question(self) -> str:
        """Title and question body, as the patient wrote them."""
        if self.title and self.title not in self.ask:
            return f"{self.title} {self.ask}".strip()
        return self.ask


_ENTITY_PREFIX = re.compile(r"^\s*the extracted entities are\s*:?\s*", re.I)


def split_names(text: str, sep: str = ",") -> list[str]:
    """Split a separated name list, trimming blanks and ``.``; keeps order, drops duplicates."""
    out: list[str] = []
    for part in text.split(sep):
        name = part.strip().strip(".").strip()
        if name and name not in out:
            out.append(name)
    return out


def parse_ner_output(raw: str) -> tuple[str, list[str]]:
    """Parse MindMap's ``<CLS>text<SEP>The extracted entities are a, b, c<EOS>`` string.

    Args:
        raw: One ``qustion_output`` or ``answer_output`` value.

    Returns:
        ``(text, entities)``. Entities are split on ``,`` and ``<EntityMarker>``; a row
        without ``<SEP>`` (a ChatGPT refusal) yields no entities and its text is the
        raw string without markers.

    """
    s = raw.strip()
    if s.startswith("<CLS>"):
        s = s[len("<CLS>") :]
    if "<SEP>" not in s:
        return s.replace("<EOS>", "").strip(), []
    text, _, rest = s.partition("<SEP>")
    rest = rest.split("<EOS>", 1)[0]
    rest = _ENTITY_PREFIX.sub("", rest)
    rest = rest.replace("<EntityMarker>", ",").replace("\n", ",")
    return text.strip(), split_names(rest)


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not JSON: {exc.msg}") from exc
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{lineno}: expected a JSON object")
            yield row


def _read_json_list(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of objects")
    return [r for r in data if isinstance(r, dict)]


def _require(row: dict[str, Any], keys: Sequence[str], where: str) -> None:
    missing = [k for k in keys if k not in row]
    if missing:
        raise ValueError(f"{where}: missing field(s) {', '.join(missing)}")


def _checked_rows(path: Path, required: Sequence[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(index, row)`` for each object of a JSONL file once it has the ``required`` fields.

    The loaders of the JSONL data sets share this, so a row that lacks a field fails the
    same way everywhere (named by its 1-based position).
    """
    for i, row in enumerate(_read_jsonl(path)):
        _require(row, required, f"{path} row {i + 1}")
        yield i, row


def load_dialogues(path: str | Path | None = None) -> list[Dialogue]:
    """Load GenMedGPT-5k ``dialogues.json`` (``[{id, instruction, input, output}]``).

    Args:
        path: The file; default ``$KGMIND_DATA_DIR/genmedgpt5k/dialogues.json``.

    Returns:
        Dialogues in file order (ids default to the position when absent).

    """
    p = Path(path) if path else default_path("dialogues")
    out: list[Dialogue] = []
    for i, row in enumerate(_read_json_list(p)):
        _require(row, ("input", "output"), f"{p} item {i}")
        out.append(
            Dialogue(
                id=int(row.get("id", i)),
                question=str(row["input"]).strip(),
                answer=str(row["output"]).strip(),
                instruction=str(row.get("instruction", "")),
            )
        )
    return out


def load_ner(path: str | Path | None = None) -> list[NerRow]:
    """Load ``ner_chatgpt.jsonl`` (``{id?, qustion_output, answer_output}``)."""
    p = Path(path) if path else default_path("ner")
    out: list[NerRow] = []
    for i, row in enumerate(_read_jsonl(p)):
        qkey = "qustion_output" if "qustion_output" in row else "question_output"
        _require(row, (qkey,), f"{p} row {i + 1}")
        q_text, q_ents = parse_ner_output(str(row[qkey]))
        a_text, a_ents = parse_ner_output(str(row.get("answer_output", "")))
        out.append(NerRow(int(row["id"]) if "id" in row else None, q_text, q_ents, a_text, a_ents))
    return out


def align_ner(dialogues: list[Dialogue], ner: Sequence[NerRow]) -> list[Dialogue]:
    """Attach ChatGPT entities to dialogues, by id when every NER row has one, else by order.

    Dialogues without a NER row keep empty entity lists.

    Raises:
        ValueError: Aligning by order and the counts differ.

    """
    if ner and all(r.id is not None for r in ner):
        by_id = {r.id: r for r in ner}
        for d in dialogues:
            row = by_id.get(d.id)
            if row is not None:
                d.question_entities = list(row.question_entities)
                d.answer_entities = list(row.answer_entities)
        return dialogues
    if len(ner) != len(dialogues):
        raise ValueError(
            f"NER rows have no ids and their count ({len(ner)}) differs from "
            f"the dialogues' ({len(dialogues)})"
        )
    for d, row in zip(dialogues, ner, strict=True):
        d.question_entities = list(row.question_entities)
        d.answer_entities = list(row.answer_entities)
    return dialogues


def load_gold(path: str | Path | None = None) -> list[GoldRow]:
    """Load ``gold_kg_entities.jsonl``; names are returned with ``_`` turned into spaces."""
    p = Path(path) if path else default_path("gold")
    out: list[GoldRow] = []
    for _, row in _checked_rows(p, ("id", "output_KG")):
        out.append(
            GoldRow(
                id=int(row["id"]),
                question=str(row.get("input", "")).strip(),
                answer=str(row.get("output", "")).strip(),
                input_kg=[n.replace("_", " ") for n in split_names(str(row.get("input_KG", "")))],
                output_kg=[n.replace("_", " ") for n in split_names(str(row["output_KG"]))],
            )
        )
    return out


def load_cmcqa(path: str | Path | None = None) -> list[CMCQAItem]:
    """Load CMCQA ``qa_ner.jsonl`` (``{id, question, question_kg, answer}``)."""
    p = Path(path) if path else default_path("cmcqa")
    out: list[CMCQAItem] = []
    for i, row in _checked_rows(p, ("question", "answer")):
        kg = row.get("question_kg", "")
        names = [str(x) for x in kg] if isinstance(kg, list) else split_names(str(kg).replace("，", ","))
        out.append(
            CMCQAItem(int(row.get("id", i)), str(row["question"]).strip(), names, str(row["answer"]).strip())
        )
    return out


def load_explaincpe(path: str | Path | None = None) -> list[ChoiceItem]:
    """Load one ExplainCPE split (``train.json``, ``dev.json`` or ``test.json``; default test)."""
    p = Path(path) if path else default_path("explaincpe")
    out: list[ChoiceItem] = []
    for i, row in enumerate(_read_json_list(p)):
        _require(row, ("question", "options", "answer"), f"{p} item {i}")
        options = [str(o) for o in row["options"]]
        answer = str(row["answer"]).strip().upper()
        if answer not in "ABCDE"[: len(options)] or not answer:
            raise ValueError(f"{p} item {i}: answer {answer!r} is not one of the {len(options)} options")
        out.append(
            ChoiceItem(
                int(row.get("id", i)),
                str(row["question"]).strip(),
                options,
                answer,
                str(row.get("explanation", "")),
            )
        )
    return out


def _read_csv_text(path: Path) -> str:
    raw = path.read_bytes()
    for enc in ("utf-8-sig", "gb18030"):
        try:
            return raw.decode(enc)
        except UnicodeDecodeError:
            continue
    raise ValueError(f"{path}: neither UTF-8 nor GB18030")


def load_medical_dialogue_zh(path: str | Path | None = None) -> list[DialogueQA]:
    """Load medical_dialogue_zh CSV files (a file, or every ``*.csv`` of a folder, sorted).

    Rows with an empty ``ask`` or ``answer`` are skipped.
    """
    p = Path(path) if path else default_path("medical_dialogue_zh")
    files = sorted(p.glob("*.csv")) if p.is_dir() else [p]
    if not files:
        raise FileNotFoundError(str(p / "*.csv"))
    out: list[DialogueQA] = []
    for f in files:
        reader = csv.DictReader(io.StringIO(_read_csv_text(f), newline=""))
        if reader.fieldnames is None or not {"ask", "answer"} <= set(reader.fieldnames):
            raise ValueError(f"{f}: expected columns department,title,ask,answer")
        for row in reader:
            ask, answer = (row.get("ask") or "").strip(), (row.get("answer") or "").strip()
            if ask and answer:
                out.append(
                    DialogueQA(
                        len(out),
                        (row.get("department") or "").strip(),
                        (row.get("title") or "").strip(),
                        ask,
                        answer,
                    )
                )
    return out


#: The roles a disease document lists, in order, with their English and Chinese labels: the
#: content of MindMap's English disease documents (symptoms, tests, medications).
DOCUMENT_ROLES: tuple[tuple[str, str, str], ...] = (
    ("symptom", "The symptoms of this disease include", "症状"),
    ("test", "Medical tests that can be conducted to diagnose this disease include", "检查"),
    ("treatment", "The medications that can be prescribed for the treatment include", "常用药物"),
)


def kg_disease_documents(kg_path: str | Path, kg_format: str, language: str) -> list[tuple[str, str]]:
    """One short document per disease of a KG file: its symptoms, tests and medications.

    MindMap's document baselines (BM25, dense) search 100 English disease documents that
    state exactly these three lists; no such corpus exists for the Chinese KG, so this
    writes one from the KG's own triples, in the same shape, for every disease that has
    any of them (the CMCKG re-crawl: ~8,800 documents). The lists follow the relations'
    roles (:mod:`kgmind.relations`), whatever their names and stored direction: facts stored
    from the disease come first, the same fact stored the other way is listed once.

    Args:
        kg_path: The KG file or folder (e.g. ``cmckg/recrawl_full``).
        kg_format: Its importer (:data:`kgmind.importers.FORMATS`, e.g. ``recrawl-json``).
        language: ``zh`` (``名称。症状：a、b。检查：…``) or ``en``.

    Returns:
        ``(disease name, text)`` in the importer's entity order.

    """
    from kgmind.importers import parse

    kg = parse(kg_path, kg_format)
    names = {e.id: e.name for e in kg.entities}
    schema = schema_from_graph(kg.entities, kg.relations)
    wanted = {role for role, _, _ in DOCUMENT_ROLES}
    tails: dict[str, dict[str, list[str]]] = {}
    toward: list[tuple[str, str, str]] = []  # facts stored toward the disease, added after
    for rel in kg.relations:
        r = schema.role(rel.type)
        if r.role not in wanted:
            continue
        if r.disease_end == "head":
            tails.setdefault(rel.head, {}).setdefault(r.role, []).append(names[rel.tail])
        else:
            toward.append((rel.tail, r.role, names[rel.head]))
    for disease, role, name in toward:
        listed = tails.setdefault(disease, {}).setdefault(role, [])
        if name not in listed:
            listed.append(name)
    out: list[tuple[str, str]] = []
    for ent in kg.entities:
        lists = tails.get(ent.id)
        if ent.type != "disease" or not lists:
            continue
        if language == "zh":
            parts = [ent.name]
            parts += [f"{zh}：{'、'.join(lists[r])}" for r, _, zh in DOCUMENT_ROLES if r in lists]
            out.append((ent.name, "。".join(parts) + "。"))
        else:
            parts = [f"The given csv contains information about a disease called {ent.name}"] + [
                f"{en} {', '.join(lists[r])}" for r, en, _ in DOCUMENT_ROLES if r in lists
            ]
            out.append((ent.name, ". ".join(parts) + "."))
    return out
