"""Say in words what a model has written so far, from the partial JSON of its answer.

The local models write their answers as JSON under a schema (``{"inference_chain": [{"evidence_ids":
["C1"], "about"…``); the CLI's status line showed that raw text. :func:`progress_words` reads the
partial text instead, finds the field being written (the innermost open key and the item number in
each open list) and says it the way a person would: "writing step 2 of the reasoning: fever and…",
"choosing test 2 for Influenza", "正在写第 2 步推理". The text is scanned by hand, not repaired with
a JSON library, because what matters is exactly what a repair throws away: which string is still
open, whether it is a key or a value, and how many items a list has begun.

Fields not named here (a schema may grow) are said by their key, so the line never shows JSON.

How many items a list will get is not in the text until the list closes. Where the schema the model
is held to bounds it (:func:`kgmind.prompts.grounded.list_bounds`, passed as ``bounds``), the line
says "choosing test 2 of 3-4 for Influenza"; without bounds it says how many are chosen so far:
"choosing test 3 for Influenza (2 so far)".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["Cursor", "progress_words", "scan_partial_json"]

#: Longest piece of the model's own words shown after the step.
TAIL_CHARS = 40

#: Lists whose items are chosen names: key -> "English noun/Chinese measure word + noun".
CHOICES: dict[str, str] = {
    "diagnoses": "diagnosis/个诊断",
    "tests": "test/项检查",
    "medications": "medication/种药物",
    "conclusions": "conclusion/个结论",
    "findings": "finding/个表现",
    "symptoms": "symptom/个症状",
    "entities": "entity/个实体",
}

#: Free-text fields: key -> (English, Chinese).
FIELDS: dict[str, tuple[str, str]] = {
    "hypothesis": ("writing a first answer", "正在写初步答案"),
    "own_knowledge": ("adding a point of the model's own knowledge", "正在补充模型自身的知识"),
    "summary": ("writing the summary", "正在写总结"),
    "mind_map": ("drawing the mind map", "正在画思维导图"),
}

#: Keys whose values are ids, not words: never shown as the model's words.
ID_KEYS = frozenset({"evidence_ids", "id", "ids"})

_START = ("starting the answer", "开始作答")
_DONE = ("answer written", "答案已写完")
#: Keys that name the item an inner list is about (``{"disease": "Influenza", "tests": [...]}``).
_NAME_KEYS = ("disease", "label", "about", "name")


@dataclass
class Frame:
    """One open container of the partial JSON."""

    is_object: bool
    key: str | None = None  # the key whose value is being written (objects)
    last_key: str | None = None  # the key written before the current one
    index: int = 0  # the item being written (lists): commas seen so far
    strings: dict[str, str] = field(default_factory=dict)  # finished string values by key (objects)
    counts: dict[str, int] = field(default_factory=dict)  # items of the finished lists by key (objects)


@dataclass
class Cursor:
    """Where the writer of a partial JSON text stands.

    Attributes:
        frames: The open containers, outermost first.
        text: The string being written (decoded so far); empty outside a string.
        in_key: ``text`` is an object key, not a value.
        started: The text holds JSON (a ``{`` or ``[`` was seen).
        done: The outermost container was closed.

    """

    frames: list[Frame] = field(default_factory=list)
    text: str = ""
    in_key: bool = False
    started: bool = False
    done: bool = False


def _decode_escape(raw: str) -> str:
    """The character of a finished JSON escape (``raw`` without its backslash)."""
    if raw.startswith("u"):
        try:
            return chr(int(raw[1:5], 16))
        except ValueError:
            return ""
    return {"n": " ", "t": " ", "r": " ", "b": "", "f": ""}.get(raw, raw)


class _Scanner:
    """A forgiving, incremental reader of the structure of one partial JSON text."""

    def __init__(self) -> None:
        self.cur = Cursor()
        self.in_string = False
        self.escape: str | None = None  # the escape being read (after a backslash)

    def feed(self, text: str) -> Cursor:
        for ch in text:
            if self.cur.done:
                break
            if self.in_string:
                self._string_char(ch)
            else:
                self._structure_char(ch)
        return self.cur

    def _string_char(self, ch: str) -> None:
        cur = self.cur
        if self.escape is not None:
            self.escape += ch
            if not self.escape.startswith("u") or len(self.escape) == 5:
                cur.text += _decode_escape(self.escape)
                self.escape = None
        elif ch == "\\":
            self.escape = ""
        elif ch == '"':
            self.in_string = False
            self._string_done()
        else:
            cur.text += ch

    def _string_done(self) -> None:
        cur = self.cur
        frame = cur.frames[-1] if cur.frames else None
        if cur.in_key and frame is not None:
            frame.key = cur.text
        elif frame is not None and frame.is_object and frame.key is not None:
            frame.strings[frame.key] = cur.text
        cur.text, cur.in_key = "", False

    def _structure_char(self, ch: str) -> None:
        cur = self.cur
        top = cur.frames[-1] if cur.frames else None
        if ch in "{[":
            cur.started = True
            cur.frames.append(Frame(is_object=ch == "{"))
        elif not cur.started:
            return  # prose or a code fence before the JSON
        elif ch in "}]":
            closed = cur.frames.pop() if cur.frames else None
            parent = cur.frames[-1] if cur.frames else None
            if closed is not None and not closed.is_object and parent and parent.is_object and parent.key:
                parent.counts[parent.key] = closed.index + 1  # the list is said as it ended, not restarted
            cur.done = not cur.frames
        elif ch == '"':
            self.in_string = True
            cur.text = ""
            cur.in_key = bool(top and top.is_object and top.key is None)
        elif ch == "," and top is not None:
            if top.is_object:
                top.last_key, top.key = top.key or top.last_key, None
            else:
                top.index += 1


def scan_partial_json(text: str) -> Cursor:
    """Read ``text`` (a JSON document, possibly cut anywhere) up to its end; see :class:`Cursor`."""
    return _Scanner().feed(text)


def _tail(text: str) -> str:
    """The last words of ``text`` on one line, at most :data:`TAIL_CHARS` characters."""
    flat = " ".join(text.split())
    if len(flat) <= TAIL_CHARS:
        return flat
    cut = flat[-TAIL_CHARS:]
    space = cut.find(" ")
    return "…" + (cut[space + 1 :] if 0 <= space < TAIL_CHARS // 2 else cut)


def _unique_prefix(partial: str, known: list[str]) -> str | None:
    """The one known key that ``partial`` (a key being written) can still become."""
    hits = [k for k in known if k.startswith(partial)] if partial else []
    return hits[0] if len(hits) == 1 else None


def _path(cur: Cursor) -> list[tuple[str, int, dict[str, str]]]:
    """``(key, item number, strings of the object holding the key)`` of each open key, outermost first.

    The item number is that of the list the key's value is (1 when it is none); the strings
    are what that object already finished (a diagnosis's ``disease`` before its tests).
    """
    out: list[tuple[str, int, dict[str, str]]] = []
    for depth, frame in enumerate(cur.frames):
        if frame.is_object:
            key = frame.key
            if key is None and depth == 0 and len(cur.frames) == 1 and cur.in_key:
                key = _unique_prefix(cur.text, [*FIELDS, *CHOICES, "inference_chain"])
            key = key or frame.last_key
            if key is not None:
                out.append((key, frame.counts.get(key, 1), frame.strings))
        elif out:
            out[-1] = (out[-1][0], frame.index + 1, out[-1][2])
    return out


#: A list's bounds: ``(minItems, maxItems)`` by field, or by ``NAME/field`` inside item ``NAME``.
Bounds = Mapping[str, Sequence[int]]


def _count(key: str, n: int, bounds: Sequence[int] | None, zh: bool) -> str:
    """How far a list is: "of 3-4" / "of up to 3" where bounded, else "(2 so far)" after the first."""
    measure = CHOICES[key].split("/")[1][:1]
    if bounds and len(bounds) == 2:
        low, high = int(bounds[0]), int(bounds[1])
        total = f"{high}" if low == high else (f"{low}-{high}" if low else "")
        if zh:
            return f"（共 {total} {measure}）" if total else f"（最多 {high} {measure}）"
        return f" of {total}" if total else f" of up to {high}"
    if n < 2:
        return ""
    return f"（已选 {n - 1} {measure}）" if zh else f" ({n - 1} so far)"


def _choice_words(key: str, n: int, owner: str, zh: bool, bounds: Bounds) -> str:
    noun, noun_zh = CHOICES[key].split("/")
    verb, verb_zh = ("naming", "列出") if key == "entities" else ("choosing", "选择")
    count = _count(key, n, bounds.get(f"{owner}/{key}" if owner else key), zh)
    if zh:
        head = f"正在为{owner}{verb_zh}" if owner else f"正在{verb_zh}"
        return f"{head}第 {n} {noun_zh}{count}"
    if count.startswith(" of"):
        return f"{verb} {noun} {n}{count}" + (f" for {owner}" if owner else "")
    return f"{verb} {noun} {n}" + (f" for {owner}" if owner else "") + count


def _step_words(path: list[tuple[str, int, dict[str, str]]], zh: bool, bounds: Bounds) -> str:
    """The words of the innermost open field that has words (its parents say what it is about)."""
    key, n, _strings = path[0]
    if key == "inference_chain":
        return f"正在写第 {n} 步推理" if zh else f"writing step {n} of the reasoning"
    if key == "mind_map":
        branch = next((m for k, m, _s in path[1:] if k == "children"), 0)
        if branch:
            return f"正在画思维导图：第 {branch} 个分支" if zh else f"drawing the mind map: branch {branch}"
    if key in CHOICES:
        inner = next(((k, m, s) for k, m, s in path[1:] if k in CHOICES), None)
        if inner is not None:  # a list inside an item (a diagnosis's tests): say whose
            owner = next((inner[2][k] for k in _NAME_KEYS if inner[2].get(k)), "")
            return _choice_words(inner[0], inner[1], owner, zh, bounds)
        return _choice_words(key, n, "", zh, bounds)
    if key in FIELDS:
        return FIELDS[key][int(zh)]
    words = key.replace("_", " ")
    return f"正在写 {words}" if zh else f"writing the {words}"


def progress_words(partial_json_text: str, language: str = "en", bounds: Bounds | None = None) -> str:
    """What the model has written so far, in words, from the partial JSON of its answer.

    Args:
        partial_json_text: The model's output so far (a JSON document cut anywhere: mid-key,
            mid-string, between list items). Text that holds no JSON is prose: its last words
            are returned.
        language: ``zh`` for Chinese words, anything else for English.
        bounds: How many items each list may hold, from the answer's schema (``list_bounds``):
            ``{"diagnoses": (2, 2), "Influenza/tests": (3, 4)}``; without them a list says how
            many items it has so far.

    Returns:
        One line such as ``writing step 2 of the reasoning: fever and cough…``,
        ``choosing test 2 of 3-4 for Influenza: Chest X-…`` or ``正在写总结：发热…``; the
        empty string when nothing has been written. Never JSON.

    """
    if not partial_json_text.strip():
        return ""
    cur = scan_partial_json(partial_json_text)
    if not cur.started:
        return _tail(partial_json_text)
    zh = language == "zh"
    if cur.done:
        return _DONE[int(zh)]
    path = _path(cur)
    if not path:
        return _START[int(zh)] + "…"
    words = _step_words(path, zh, bounds or {})
    shown = "" if cur.in_key or path[-1][0] in ID_KEYS else _tail(cur.text)
    if not shown:
        return words + "…"
    return f"{words}{'：' if zh else ': '}{shown}…"
