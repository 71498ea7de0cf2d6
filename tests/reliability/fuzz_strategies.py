"""Hypothesis strategies of the fuzz tests: what users put in files and payloads, and how files go wrong.

A file strategy starts from a well-formed document of its kind (a triples CSV, a
ChatDoctor CSV, JSON lines of records or verdicts, a schema file) built from names that
mix the demo KG's, hostile ones (quotes, backticks, Cypher) and generated text, with
values of the wrong type and JSON objects with repeated keys. :func:`damaged` then hands
it in as bytes, whole or truncated, in UTF-8, UTF-16, GBK or Latin-1, with a BOM, CRLF
line ends, NUL or random bytes spliced in, or replaced by random bytes or nothing.

:func:`count_outcome` tallies what each case did (``pytest --fuzz-counts=FILE`` writes
the tally, per input kind, when the session ends): the counts of a long run.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st
from rel_harness import HOSTILE_NAMES, HOSTILE_REL_TYPES

#: ``(input kind, outcome)`` → cases, over the session (:func:`count_outcome`).
OUTCOMES: Counter[tuple[str, str]] = Counter()


def count_outcome(kind: str, outcome: str) -> None:
    """Tally one case of ``kind`` (``import:triples``, ``resume payload`` …) that ended in ``outcome``.

    Called after the case's checks passed, so a failure outcome counts a case whose
    "nothing was written" check held.
    """
    OUTCOMES[(kind, outcome)] += 1


def outcome_table() -> dict[str, dict[str, int]]:
    """The tally as ``{kind: {outcome: cases, "total": cases}}``."""
    table: dict[str, dict[str, int]] = {}
    for (kind, outcome), n in sorted(OUTCOMES.items()):
        row = table.setdefault(kind, {"total": 0})
        row[outcome] = n
        row["total"] += n
    return table


#: A big field: past the csv module's default field limit (128 KiB) and any sane cell.
HUGE = "x" * 200_000

#: Strings a user may hand in that are not plain text: NUL, control and surrogate-escaped bytes.
ODD_TEXT = ["", " ", "\x00", "a\x00b", "\ufeff", "\udcff\udcfe", "\r\n", "\u3000", "N1\x00", "💊" * 3]

plain_text = st.text(max_size=20)
odd_text = st.one_of(
    plain_text,
    st.sampled_from([*HOSTILE_NAMES, *ODD_TEXT]),
    st.text(st.characters(min_codepoint=0xDC80, max_codepoint=0xDCFF), min_size=1, max_size=4),
    st.just(HUGE),
)

#: Any JSON value (small): the wrong type for whatever field it lands in.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | plain_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(plain_text, inner, max_size=3),
    max_leaves=6,
)


def names(known: Sequence[str] = ()) -> st.SearchStrategy[str]:
    """Entity names: ``known`` ones (so some rows hit real entities), hostile ones and generated text."""
    pool = st.sampled_from(list(known)) if known else st.nothing()
    return st.one_of(pool, odd_text)


relation_types = st.one_of(
    st.sampled_from(["has_symptom", "need_medication", "possible_disease", "treats", "Has Symptom"]),
    st.sampled_from(HOSTILE_REL_TYPES),
    st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True),
    odd_text,
)


@st.composite
def json_object(draw: st.DrawFn, fields: dict[str, st.SearchStrategy[Any]], *, extra: bool = True) -> str:
    """A JSON object with some of ``fields`` (in any order), maybe an unknown key, maybe a key twice.

    Built as text, since a dict cannot hold a repeated key.
    """
    pairs = [(k, draw(v)) for k, v in fields.items() if draw(st.integers(0, 9)) > 0]
    if extra and draw(st.booleans()) and draw(st.booleans()):
        pairs.append((draw(plain_text), draw(json_values)))
    if pairs and draw(st.integers(0, 5)) == 0:  # a repeated key with another value
        key = draw(st.sampled_from([k for k, _ in pairs]))
        pairs.insert(draw(st.integers(0, len(pairs))), (key, draw(json_values)))
    body = ", ".join(f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=draw(st.booleans()))}" for k, v in pairs)
    return "{" + body + "}"


def or_wrong(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly ``valid``, sometimes any JSON value (a wrong type)."""
    return st.one_of(valid, valid, valid, json_values)


# -- documents of each kind --------------------------------------------------------------------


def _csv(rows: list[list[str]], delimiter: str = ",") -> str:
    out = io.StringIO()
    csv.writer(out, delimiter=delimiter, lineterminator="\n").writerows(rows)
    return out.getvalue()


@st.composite
def triples_doc(draw: st.DrawFn, known: Sequence[str] = ()) -> str:
    """A ``head,relation,tail[,weight]`` CSV or TSV, quoted properly or joined raw."""
    delim = draw(st.sampled_from([",", "\t"]))
    weight = st.one_of(
        st.just([]), st.lists(st.sampled_from(["1", "0.5", "-1", "nan", "inf", "x", ""]), max_size=1)
    )
    row = st.builds(lambda h, r, t, w: [h, r, t, *w], names(known), relation_types, names(known), weight)
    rows = draw(st.lists(st.one_of(row, st.lists(odd_text, max_size=5)), min_size=1, max_size=6))
    if draw(st.booleans()):
        rows.insert(0, ["head", "relation", "tail"])
    if draw(st.booleans()):
        return _csv(rows, delim)
    return "\n".join(delim.join(r) for r in rows) + "\n"


def _list_cell(known: Sequence[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.lists(names(known), max_size=4).map(repr),
        st.sampled_from(
            ["[", "['a', ", "[[[[[[[[[[", "{'a': 1}", "1", "None", "__import__('os')", "[1, None]"]
        ),
        odd_text,
    )


@st.composite
def chatdoctor_doc(draw: st.DrawFn, known: Sequence[str] = ()) -> str:
    """A ChatDoctor CSV (the full or the mini header, or a wrong one) with list-literal cells."""
    header = draw(
        st.sampled_from(
            [
                ["idx", "disease", "Symptom", "reason", "TestsAndProcedures", "commonMedications"],
                ["idx", "disease", "Symptom", "Medical Tests", "Medications"],
                ["idx", "name", "what"],
            ]
        )
    )
    cell = _list_cell(known)
    rows = [header]
    for i in range(draw(st.integers(0, 4))):
        row = [str(i), draw(names(known)), *[draw(cell) for _ in header[2:]]]
        if "reason" in header:
            row[3] = draw(odd_text)
        if draw(st.integers(0, 6)) == 0:
            row = row[: draw(st.integers(0, len(row)))]  # a short row
        rows.append(row)
    return _csv(rows)


def _qasystem_fields(known: Sequence[str]) -> dict[str, st.SearchStrategy[Any]]:
    items = or_wrong(st.lists(names(known), max_size=3))
    fields: dict[str, st.SearchStrategy[Any]] = {"name": or_wrong(names(known)), "desc": or_wrong(odd_text)}
    for key in ("symptom", "acompany", "check", "common_drug", "do_eat", "cure_department", "drug_detail"):
        fields[key] = items
    return fields


@st.composite
def qasystem_doc(draw: st.DrawFn, known: Sequence[str] = ()) -> str:
    """JSON lines of QASystemOnMedicalKG records (some not objects, some not JSON)."""
    line = st.one_of(json_object(_qasystem_fields(known)), json_values.map(json.dumps), odd_text)
    return "\n".join(draw(st.lists(line, min_size=1, max_size=5))) + "\n"


@st.composite
def recrawl_doc(draw: st.DrawFn, known: Sequence[str] = ()) -> str:
    """A MedicalKGQA ``medical_*.json`` part: ``{key: record}`` or a list of records."""
    items = or_wrong(st.lists(names(known), max_size=3))
    record = json_object(
        {
            "name": or_wrong(names(known)),
            "gaishu_info": or_wrong(st.fixed_dictionaries({"desc": odd_text, "has_complication": items})),
            "symptom_data": or_wrong(st.fixed_dictionaries({"symptoms": items})),
            "inspect_info": items,
            "food_info": or_wrong(st.fixed_dictionaries({"good_food": items, "avoid_food": items})),
        }
    )
    recs = draw(st.lists(record, max_size=4))
    if draw(st.booleans()):
        return "[" + ", ".join(recs) + "]"
    keys = draw(st.lists(st.sampled_from(["1", "2", "3"]), min_size=len(recs), max_size=len(recs)))
    return "{" + ", ".join(f"{json.dumps(k)}: {r}" for k, r in zip(keys, recs, strict=True)) + "}"


ROLES = ["symptom", "test", "treatment", "other", "cause", ""]
ENDS = ["head", "tail", "", "both"]


@st.composite
def schema_doc(draw: st.DrawFn) -> str:
    """A ``--schema`` file: a JSON object of roles, or ``relation,role[,disease_end]`` lines."""
    if draw(st.booleans()):
        spec = json_object(
            {"role": or_wrong(st.sampled_from(ROLES)), "disease_end": or_wrong(st.sampled_from(ENDS))}
        )
        entry = st.tuples(relation_types, st.one_of(spec, spec, json_values.map(json.dumps)))
        pairs = draw(st.lists(entry, max_size=4))
        return "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in pairs) + "}"
    cells = st.tuples(relation_types, st.sampled_from(ROLES), st.sampled_from(ENDS))
    line = st.one_of(
        cells.map(lambda c: ",".join(c)),
        cells.map(lambda c: "\t".join(c[:2])),
        st.sampled_from(["relation,role,disease_end", "# a comment", ""]),
        odd_text,
    )
    return "\n".join(draw(st.lists(line, max_size=5))) + "\n"


VERDICT_WORDS = ["wrong", "right", " WRONG ", "Right", "maybe", "", "wrong\x00"]


@st.composite
def verdict_doc(draw: st.DrawFn, edges: Sequence[tuple[str, str, str]]) -> str:
    """JSON lines ``{head, relation, tail, verdict, source}`` about real ``edges`` or junk."""
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            lines.append(draw(odd_text))
            continue
        if kind == 1:
            lines.append(json.dumps(draw(json_values)))
            continue
        head, rel, tail = draw(st.sampled_from(list(edges)))
        fields = {
            "head": or_wrong(st.one_of(st.just(head), st.just(head), names())),
            "relation": or_wrong(st.one_of(st.just(rel), st.just(rel), relation_types)),
            "tail": or_wrong(st.one_of(st.just(tail), st.just(tail), names())),
            "verdict": or_wrong(st.sampled_from(VERDICT_WORDS)),
            "source": or_wrong(st.one_of(st.just("curator"), odd_text)),
        }
        lines.append(draw(json_object(fields)))
    return "\n".join(lines) + "\n"


# -- how a file goes wrong ---------------------------------------------------------------------


@st.composite
def damaged(draw: st.DrawFn, doc: st.SearchStrategy[str]) -> bytes:
    """``doc`` as the bytes of a file: often intact, else re-encoded, truncated, spliced or replaced."""
    choice = draw(st.integers(0, 11))
    if choice == 0:
        return b""
    if choice == 1:
        return draw(st.binary(max_size=300))
    text = draw(doc)
    if choice == 2:
        text = text.replace("\n", "\r\n")
    encoding = "utf-8"
    if choice == 3:
        encoding = draw(st.sampled_from(["utf-16", "gbk", "latin-1", "utf-8-sig", "utf-32"]))
    data = text.encode(encoding, errors="surrogateescape" if encoding == "utf-8" else "replace")
    if choice == 4:
        data = data[: draw(st.integers(0, len(data)))]
    if choice == 5:
        cut = draw(st.integers(0, len(data)))
        data = (
            data[:cut]
            + draw(st.sampled_from([b"\x00", b"\xff\xfe", b"\xc3", b"\xe4\xb8", b"\r"]))
            + data[cut:]
        )
    if choice == 6:
        data = b"\xef\xbb\xbf" + data
    return data
