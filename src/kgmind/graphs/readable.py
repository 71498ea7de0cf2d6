"""Reasoning a person can read: inference steps as sentences, a summary that agrees with the chosen diagnoses.

The 0.5B model's step texts are often fragments ("present with fever and cough", "诊断",
"1") and its summary sometimes names another disease first than its own list ("a sign of
influenza … would be pneumonia"). Both are repaired after the model answers, without
another call:

- a step is a *fragment* (:func:`is_fragment`) when it is shorter than
  :data:`MIN_STEP_WORDS` words (:data:`MIN_STEP_CJK` characters in Chinese), or when its
  cited items state facts (triples) and the text names the two ends of none of them — a
  sentence that infers something names what it relates. A fragment is replaced by the
  cited evidence sentence (:func:`evidence_sentence`, the aggregation's template sentence
  of the triples about the step's entity), which names its entities and keeps the ids; so
  is a step that only pastes the patient's words (below);
- the summary must name the list's first diagnosis before any other disease
  (:func:`first_named`); when it names another one first, its first sentence naming a
  disease is replaced by one naming the chosen diagnosis and, as also considered, the other
  diseases that sentence named (the model's candidates stay in the answer; only their order
  changes), and when it names none, that sentence is put first (:func:`consistent_summary`);
- the summary is advice to the patient, yet the model often pastes the patient's own
  messages into it (on 77 CMCQA calibration answers, 26 summaries held a verbatim run of
  the question, up to 150 characters of dialogue turns, "谢谢" included, often after the
  prompt's own label "患者输入："), and sometimes loops on one phrase ("血常规检查，" twenty
  times). Once the summary is consistent (so a disease the pasted words name stays, as also
  considered), a run of sentences mostly copied from the question in the patient's voice is
  dropped and a looping phrase is said once (:func:`without_echoes`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from kgmind.graphs.check_grounding import mention_position
from kgmind.models import Evidence, normalize_name
from kgmind.prompts.grounded import evidence_names
from kgmind.retrievers.aggregate.render import render_evidence
from kgmind.text import CJK, has_cjk

__all__ = [
    "ECHO_RUN_CJK",
    "ECHO_RUN_WORDS",
    "ECHO_SHARE",
    "MAX_SENTENCE_FACTS",
    "MIN_STEP_CJK",
    "MIN_STEP_WORDS",
    "consistent_summary",
    "copied_share",
    "evidence_sentence",
    "first_named",
    "is_fragment",
    "named_in_order",
    "readable_steps",
    "without_echoes",
]

#: Fewest words of an English step that can be a sentence (subject, verb, object).
MIN_STEP_WORDS = 3
#: Fewest CJK characters of a Chinese step that can be a sentence (``流感可致发热``).
MIN_STEP_CJK = 4

#: Most facts (triples) of an evidence sentence shown for a fragment step.
MAX_SENTENCE_FACTS = 3

#: Shortest run of the question's units (CJK characters / words) that counts as copied: a shorter
#: shared run (a symptom's name, "joint pain and headaches lately") is the summary's own wording.
ECHO_RUN_CJK = 8
ECHO_RUN_WORDS = 8
#: Share of a summary sentence's units copied from the question above which it is dropped.
ECHO_SHARE = 0.5

_SENTENCES = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
#: The summary's sentences, for dropping echoes: a line break ends one too.
_SUMMARY_SENTENCES = re.compile(_SENTENCES.pattern + r"|\n+")
#: What a sentence's copy is counted in: CJK characters one by one (``kgmind.text.CJK``), other words whole.
_UNITS = re.compile(f"{CJK.pattern}|[^\\W_{CJK.pattern[1:-1]}]+")
#: The patient's own voice: the first person, a question, thanks. A sentence mostly copied from the
#: question that keeps it is the patient speaking; one in the third person restates the findings
#: ("The patient has been experiencing wrist weakness, …"), which a reader may want said back.
#: The particles 吗 and 呢 count wherever they stand (pasted dialogue often has no punctuation:
#: "这个严重吗大夫"), except in 吗啡, a drug.
_PATIENT_VOICE = re.compile(r"[我咱您？?]|谢谢|吗(?!啡)|呢|\b(?:i|i'm|i've|i'd|me|my|we|our)\b", re.I)
#: The prompt's label of the patient's words, which the model repeats before pasting them.
_INPUT_LABEL = re.compile(r"^\s*(?:患者输入了?\s*[:：]?|(?:the\s+)?patient(?:'s)?\s+input\s*[:：])\s*", re.I)
#: A phrase said three times or more in a row, separated by commas or spaces (a decoding loop).
_LOOP = re.compile(r"(\S{2,40}?)(?:\s*[，,、；;]\s*\1){2,}")
_LETTER = re.compile(r"[^\W\d_]")


def _once(loop: re.Match[str]) -> str:
    """A looping phrase said once; digits are left alone ("1,000,000" is a number, not a loop)."""
    return loop.group(1) if _LETTER.search(loop.group(1)) else loop.group(0)


def _too_short(text: str) -> bool:
    if has_cjk(text):
        return len(CJK.findall(text)) < MIN_STEP_CJK
    return len(re.findall(r"\w+", text)) < MIN_STEP_WORDS


def is_fragment(text: str, cited: Sequence[Evidence]) -> bool:
    """Whether a step's text is a fragment rather than a sentence naming what it relates.

    Args:
        text: The step as the model wrote it.
        cited: The evidence items the step cites.

    Returns:
        True when the text is too short (:data:`MIN_STEP_WORDS` words, :data:`MIN_STEP_CJK`
        CJK characters), or when the cited items have triples and the text names both the
        head and the tail of none of them.

    """
    if _too_short(text):
        return True
    triples = [t for ev in cited for t in ev.triples]
    if not triples:
        return False
    return not any(mention_position(text, h) >= 0 and mention_position(text, t) >= 0 for h, _r, t in triples)


def evidence_sentence(ev: Evidence, about: str = "", said: str = "") -> str:
    """The evidence item as a template sentence of the facts the step used.

    The full item can be a long path or a list of every test of a disease; the step is
    about one entity. So the sentence renders the item's triples that name ``about`` (all
    when none does), of those the ones whose other end the model's words ``said`` name when
    some do, else the first :data:`MAX_SENTENCE_FACTS`. Notes (descriptions, KGCoT
    knowledge) are left out.
    """
    if not ev.triples:
        return ev.text.strip()
    key = normalize_name(about)
    triples = [t for t in ev.triples if key and key in (normalize_name(t[0]), normalize_name(t[2]))]
    triples = triples or list(ev.triples)
    named = [
        t
        for t in triples
        if any(mention_position(said, n) >= 0 for n in (t[0], t[2]) if normalize_name(n) != key)
    ]
    return render_evidence(
        Evidence(
            kind="path",
            triples=named or triples[:MAX_SENTENCE_FACTS],
            readings=ev.readings,
            entity_types=ev.entity_types,
        )
    )


def readable_steps(
    chain: Sequence[Mapping[str, Any]], evidence: Sequence[Evidence], question: str = ""
) -> list[dict[str, Any]]:
    """The inference chain with each fragment step replaced by its cited evidence sentence.

    A step that is nothing but the patient's words pasted (:func:`without_echoes` leaves
    nothing of it; ``question`` given) infers nothing either, and is replaced the same way.
    Steps that cite nothing shown (an answer without evidence) are kept as written.
    """
    by_id = {ev.id: ev for ev in evidence if ev.id}
    out: list[dict[str, Any]] = []
    for step in chain:
        cited = [by_id[str(i)] for i in step.get("evidence_ids") or [] if str(i) in by_id]
        text = str(step.get("step") or "").strip()
        pasted = bool(question and text) and not without_echoes(text, question)
        if cited and (pasted or is_fragment(text, cited)):
            about = str(step.get("about") or "")
            key = normalize_name(about)
            naming = [ev for ev in cited if key in {normalize_name(n) for n in evidence_names(ev)}] or cited
            text = evidence_sentence(naming[0], about, text)
        out.append({**step, "step": text})
    return out


def first_named(text: str, names: Sequence[str]) -> str | None:
    """Of ``names``, the one ``text`` names first (earliest position; the longer name on a tie)."""
    in_order = named_in_order(text, names)
    return in_order[0] if in_order else None


def named_in_order(text: str, names: Sequence[str]) -> list[str]:
    """The ``names`` that ``text`` names, in the order it names them.

    A name found inside a longer one's mention (感冒 in 病毒性感冒) is that mention, not another.
    """
    found = sorted((pos, -len(name), name) for name in names if (pos := mention_position(text, name)) >= 0)
    out: list[str] = []
    end = -1  # where the last kept mention ends
    for pos, _longer_first, name in found:
        if pos >= end:
            out.append(name)
            end = pos + len(normalize_name(name))
    return out


def _lead(diagnosis: str, also: Sequence[str], language: str) -> str:
    """The sentence that names the chosen diagnosis first, then the replaced sentence's other diseases."""
    if language == "zh":
        return f"最可能的诊断是{diagnosis}" + (f"，也考虑{'、'.join(also)}。" if also else "。")
    if not also:
        return f"The most likely diagnosis is {diagnosis}."
    if len(also) == 1:
        return f"The most likely diagnosis is {diagnosis}; {also[0]} is also considered."
    others = ", ".join(also[:-1]) + f" and {also[-1]}"
    return f"The most likely diagnosis is {diagnosis}; {others} are also considered."


def copied_share(sentence: str, question: str) -> float:
    """The share of ``sentence``'s units inside runs that ``question`` holds verbatim.

    A run is :data:`ECHO_RUN_CJK` units (CJK) or :data:`ECHO_RUN_WORDS`. Punctuation is
    skipped on both sides (the model turns "红肿,很胀" into "红肿，很胀"). A sentence shorter
    than a run counts as copied when all of it is in the question ("谢谢！", "这样正常不？"),
    if it has two CJK characters or three words at least.
    """
    units = [u.lower() for u in _UNITS.findall(sentence)]
    cjk = has_cjk(sentence)
    n = min(ECHO_RUN_CJK if cjk else ECHO_RUN_WORDS, len(units))
    if n < (2 if cjk else 3):
        return 0.0
    asked = [u.lower() for u in _UNITS.findall(question)]
    runs = {tuple(asked[i : i + n]) for i in range(len(asked) - n + 1)}
    covered: set[int] = set()
    for i in range(len(units) - n + 1):
        if tuple(units[i : i + n]) in runs:
            covered.update(range(i, i + n))
    return len(covered) / len(units)


def without_echoes(summary: str, question: str) -> str:
    """``summary`` without the patient's words pasted into it, and with each looping phrase said once.

    A sentence at least :data:`ECHO_SHARE` copied from the question (:func:`copied_share`,
    the prompt's label "患者输入：" left out first) is a copy. A run of consecutive copies is
    the patient's words pasted, and goes whole, when one of them came after the label or keeps
    the patient's voice (the first person, a question, thanks). A copy in the third person
    alone restates the findings ("The patient has been experiencing wrist weakness, …") and
    stays, as does every sentence not copied, as written and in order; punctuation left alone
    goes.

    Returns:
        The summary left; empty when all of it was pasted.
    """
    text = _LOOP.sub(_once, summary.strip())
    runs: list[tuple[bool, bool, list[str]]] = []  # (copied, pasted, sentences)
    for sentence in _SUMMARY_SENTENCES.split(text):
        body = _INPUT_LABEL.sub("", sentence).strip()
        if not _UNITS.search(body):
            continue
        copied = copied_share(body, question) >= ECHO_SHARE
        voice = body != sentence.strip() or _PATIENT_VOICE.search(body) is not None
        said = sentence.strip()  # a sentence kept is kept as written, label and all
        if runs and copied and runs[-1][0]:
            runs[-1] = (True, runs[-1][1] or voice, [*runs[-1][2], said])
        else:
            runs.append((copied, copied and voice, [said]))
    kept = [said for copied, pasted, run in runs if not (copied and pasted) for said in run]
    return ("" if has_cjk(text) else " ").join(kept)


def consistent_summary(
    summary: str, diagnoses: Sequence[str], diseases: Sequence[str] = (), language: str = "en"
) -> str:
    """The summary made to name the list's first diagnosis before any other disease.

    Args:
        summary: The model's summary.
        diagnoses: The answer's chosen diagnoses, in order (nothing to do when empty).
        diseases: Every disease the evidence shows (the other names the summary may put first).
        language: ``zh`` or English, for the sentence naming the diagnosis.

    Returns:
        ``summary`` when it names ``diagnoses[0]`` first; else the summary with its first
        sentence naming a disease replaced by "The most likely diagnosis is X; Y is also
        considered." (Y: the other diseases that sentence named, so a candidate the model
        gave is not lost; when the summary names none, "The most likely diagnosis is X." goes
        first).

    """
    if not diagnoses:
        return summary
    first = diagnoses[0]
    key = normalize_name(first)
    names = list(dict.fromkeys([*diagnoses, *diseases]))
    named = first_named(summary, names)
    if named is not None and normalize_name(named) == key:
        return summary
    sentences = [s for s in _SENTENCES.split(summary.strip()) if s.strip()]
    for n, sentence in enumerate(sentences):
        if in_order := named_in_order(sentence, names):
            also = list(dict.fromkeys(x for x in in_order if normalize_name(x) != key))
            sentences[n] = _lead(first, also, language)
            break
    else:
        sentences.insert(0, _lead(first, (), language))
    return ("" if language == "zh" else " ").join(sentences)
