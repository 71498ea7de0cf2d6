"""Greedy JSON-schema decoding for local models: the model is asked only where the schema leaves a choice.

llama.cpp's grammar sampler holds a model to a JSON schema, but the model still generates
every token one by one, including those the schema already fixes: keys, braces, commas,
a ``const`` evidence id, the rest of an entity name once its first token has told it
apart from the other names of an ``enum``. In a grounded answer (a per-question schema of
ids and entity enums, :mod:`kgmind.prompts.grounded`) that is most of the output. Here the
schema is walked in Python instead:

- fixed text is appended without asking the model and evaluated in one batch with the
  next decision, at prompt speed (a batch of tokens costs about what one generated
  token costs on a CPU, which is bound by reading the weights);
- an ``enum``/``const`` choice asks the model only until one option is left; the model
  may pick any token that starts, or is, a prefix of an option;
- a free string is generated token by token, held to JSON string content (no quote,
  backslash or control character) and ``maxLength``; a token that closes the string
  (``"`` or ``.",``) ends it; the strings that end because the model's own next token did
  not fit are reported (:attr:`DecodeResult.cut`), so a reader can end them where a
  person can stop (:func:`kgmind.text.end_cut`);
- with ``east_asian=False`` (the prompt has no East Asian character) a free string holds
  none either: the 0.5B model drifts into Chinese in English answers ("lack of休息");
- whether an array goes on is one choice between ``,`` and ``]``;
- the last token of fixed text is held back and the next decision must start with it
  (token healing), so the model picks ``":"`` or ``" "Fever`` as it would have.

Decoding is greedy (temperature 0), as the local models run. Only the subset of JSON
schema kgmind's answer schemas use is supported (objects with their properties in
order, arrays with ``minItems``/``maxItems``, strings with ``minLength``/``maxLength``,
string ``enum``/``const``, ``anyOf`` of objects told apart by a constant first property,
``$ref`` into ``$defs``); :func:`supports` says whether a schema is, and anything else
stays with llama.cpp's grammar. Every object property is written, in schema order.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import zipfile
from collections import deque
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

__all__ = [
    "DecodeResult",
    "SchemaNotSupportedError",
    "TokenModel",
    "TokenTable",
    "decode_json",
    "has_east_asian",
    "iter_json",
    "supports",
]


class SchemaNotSupportedError(ValueError):
    """The schema uses a construct the walker does not write (the caller falls back to a grammar)."""


class _BudgetSpent(Exception):
    """The generation limit was reached; the output so far is returned, cut off."""


class TokenModel(Protocol):
    """What the decoder needs from a model: its tokenizer, a batch evaluation and the last logits."""

    def tokenize_text(self, text: bytes) -> list[int]:
        """Tokens of ``text`` (no BOS, special tokens not parsed)."""
        ...

    def eval_tokens(self, tokens: Sequence[int]) -> None:
        """Append ``tokens`` to the context and evaluate them in one batch."""
        ...

    def last_logits(self) -> np.ndarray:
        """The logits after the last evaluated token (a view is fine: it is read before the next eval)."""
        ...


def _chars(data: bytes) -> int:
    """Characters in UTF-8 ``data`` (continuation bytes not counted; a cut-off character counts once)."""
    return sum(1 for c in data if not 0x80 <= c < 0xC0)


def _utf8_need(data: bytes, need: int = 0) -> int | None:
    """Continuation bytes still owed after ``data`` when ``need`` were owed before; None: not UTF-8.

    Byte-level BPE splits rare characters (many CJK ones) over tokens; a string may only
    go on with a token that completes what the last one started.
    """
    for c in data:
        if 0x80 <= c < 0xC0:
            if not need:
                return None
            need -= 1
        elif need:
            return None
        elif c >= 0x80:
            if 0xC2 <= c < 0xE0:
                need = 1
            elif 0xE0 <= c < 0xF0:
                need = 2
            elif 0xF0 <= c < 0xF5:
                need = 3
            else:
                return None
    return need


def _is_content(data: bytes) -> bool:
    """Whether ``data`` may stand inside a JSON string as is (no quote, backslash or control byte)."""
    return b'"' not in data and b"\\" not in data and all(c >= 0x20 for c in data)


#: UTF-8 lead bytes of U+3000..U+D7FF: CJK punctuation, kana, Bopomofo, the CJK ideographs
#: (and extension A), Yi and Hangul (0xED also leads the surrogates, never valid UTF-8).
#: A token holding one starts such a character.
_EAST_ASIAN_LEADS = bytes(range(0xE3, 0xEE))
_EAST_ASIAN = re.compile(r"[\u3000-\ud7ff]")


def has_east_asian(text: str) -> bool:
    """Whether ``text`` has a character of the blocks a token with an East Asian lead byte starts.

    The decoder's ``east_asian`` switch reads this on the prompt: a prompt without such a
    character is answered without one.
    """
    return _EAST_ASIAN.search(text) is not None


class TokenTable:
    """The vocabulary as bytes, with the masks the decoder needs (built once per model).

    Args:
        token_bytes: Every token's bytes; empty for special (control, end-of-generation) tokens.

    """

    def __init__(self, token_bytes: Sequence[bytes]) -> None:
        self.bytes: list[bytes] = list(token_bytes)
        n = len(self.bytes)
        self.content = np.zeros(n, dtype=bool)  # may stand inside a string
        self.chars = np.zeros(n, dtype=np.int32)
        self.close_at = np.full(n, -1, dtype=np.int32)  # a string's closing quote at this byte
        self.east_asian = np.zeros(n, dtype=bool)  # starts a character of U+3000..U+D7FF
        # UTF-8 continuation bytes owed after the token when 0..3 were owed before (-1: invalid);
        # for a closing token, of its content part, which must leave none owed
        self.need_after = np.full((4, n), -1, dtype=np.int8)
        self._index_bytes()
        for i, b in enumerate(self.bytes):
            if not b:
                continue
            self.chars[i] = _chars(b)
            self.east_asian[i] = any(c in _EAST_ASIAN_LEADS for c in b)
            q = b.find(b'"')
            if q < 0:
                self.content[i] = _is_content(b)
            elif _is_content(b[:q]):
                self.close_at[i] = q
            part = b if q < 0 else b[:q]
            if part.isascii():
                self.need_after[0, i] = 0
                continue
            for before in range(4):
                after = _utf8_need(part, before)
                self.need_after[before, i] = -1 if after is None else after
        self._after: dict[bytes, np.ndarray] = {}

    def _index_bytes(self) -> None:
        """``index``: each non-empty byte string's first token id."""
        self.index: dict[bytes, int] = {}
        for i, b in enumerate(self.bytes):
            if b:
                self.index.setdefault(b, i)

    #: What :meth:`save` writes; a table saved by an older layout is rebuilt, not read.
    FORMAT = 1
    #: The per-token arrays, saved and loaded as they are.
    _MASKS = ("content", "chars", "close_at", "east_asian", "need_after")

    def save(self, path: Path) -> None:
        """Write the table (bytes and masks) to ``path`` (``.npz``), atomically.

        Building it walks the whole vocabulary in Python (~0.4 s for Qwen's 151,936
        tokens, after ~0.4 s of reading their bytes from llama.cpp): every new process paid
        that before its first answer. Loading takes a few tens of ms.
        """
        lengths = np.fromiter((len(b) for b in self.bytes), dtype=np.uint32, count=len(self.bytes))
        blob = np.frombuffer(b"".join(self.bytes), dtype=np.uint8)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            with tmp.open("wb") as out:
                np.savez(
                    out,
                    format=np.array([self.FORMAT]),
                    lengths=lengths,
                    blob=blob,
                    **{name: getattr(self, name) for name in self._MASKS},
                )
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: Path) -> TokenTable | None:
        """The table :meth:`save` wrote to ``path``; ``None`` when it is missing, unreadable or stale."""
        try:
            with np.load(path, allow_pickle=False) as data:
                if int(data["format"][0]) != cls.FORMAT:
                    return None
                lengths = data["lengths"].astype(np.int64)
                blob = data["blob"].tobytes()
                arrays = {name: data[name] for name in cls._MASKS}
        except (OSError, KeyError, ValueError, IndexError, EOFError, zipfile.BadZipFile):
            return None
        n = len(lengths)
        ends = np.cumsum(lengths)
        if (ends[-1] if n else 0) != len(blob) or any(len(a) != n for a in arrays.values() if a.ndim == 1):
            return None
        if arrays["need_after"].shape != (4, n):
            return None
        table = cls.__new__(cls)
        starts = (ends - lengths).tolist()
        table.bytes = [blob[a:b] for a, b in zip(starts, ends.tolist(), strict=True)]
        table._index_bytes()
        for name, array in arrays.items():
            setattr(table, name, array)
        table._after = {}
        return table

    def starting_with(self, head: bytes) -> np.ndarray:
        """Ids of the tokens that are ``head`` followed by string content (cached per ``head``)."""
        got = self._after.get(head)
        if got is None:
            ids = [
                i
                for i, b in enumerate(self.bytes)
                if b.startswith(head)
                and _is_content(b[len(head) :])
                and _utf8_need(b[len(head) :]) is not None
            ]
            got = self._after[head] = np.asarray(ids, dtype=np.int64)
        return got


@dataclass
class DecodeResult:
    """What :func:`decode_json` returns.

    Attributes:
        text: The JSON text (cut off when ``finish_reason`` is ``"length"``).
        completion_tokens: Tokens added after the prompt (chosen and fixed).
        decisions: Times the model was asked (one evaluation each, fixed text batched with it).
        finish_reason: ``"stop"`` or ``"length"``.
        cut: The free strings (their content) that ended at their ``maxLength`` where the
            model had not ended them: its own next token did not fit.

    """

    text: str
    completion_tokens: int
    decisions: int
    finish_reason: str
    cut: tuple[str, ...] = ()


class _Writer:
    """Appends fixed text lazily and asks the model at decisions (see the module docstring)."""

    def __init__(
        self,
        model: TokenModel,
        table: TokenTable,
        max_tokens: int,
        repeat_penalty: float,
        penalty_last_n: int,
        east_asian: bool = True,
    ) -> None:
        self.model = model
        self.t = table
        # tokens a free string may not hold (None: any)
        self.banned: np.ndarray | None = None if east_asian else table.east_asian
        self.max_tokens = max_tokens
        self.repeat_penalty = repeat_penalty
        self.recent: deque[int] = deque(maxlen=max(penalty_last_n, 0))  # tokens written, for the penalty
        self.out = bytearray()
        self.unsent = 0  # bytes of ``out`` not yet handed out by :meth:`fresh_text`
        self.pending = b""  # fixed text not yet evaluated
        self.chosen: list[int] = []  # tokens the model chose, not yet evaluated
        self.heal = b""  # the held-back last token of the fixed text, set by _logits
        self.carry: bytes | None = None  # string content a string-opening token carried
        self.tokens = 0
        self.decisions = 0
        self.cut: list[str] = []  # free strings ended by their maxLength, not by the model
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")

    # -- output --------------------------------------------------------------------------
    def _emit(self, data: bytes) -> None:
        self.out += data

    def fresh_text(self, final: bool = False) -> Generator[str, None, None]:
        """Yield the text decided since the last call (whole characters only, unless ``final``)."""
        data = bytes(self.out[self.unsent :])
        self.unsent = len(self.out)
        text = self._utf8.decode(data, final=final)
        if text:
            yield text

    def literal(self, text: str) -> None:
        data = text.encode("utf-8")
        self.pending += data
        self._emit(data)

    def _spend(self, n: int) -> None:
        self.tokens += n
        if self.tokens > self.max_tokens:
            raise _BudgetSpent

    def _take(self, token: int) -> bytes:
        """Record the model's choice; returns its bytes past the healed prefix."""
        self.chosen.append(token)
        self.decisions += 1
        self._spend(1)
        self.recent.append(token)
        data = self.t.bytes[token][len(self.heal) :]
        self.heal = b""
        return data

    def _logits(self) -> np.ndarray:
        """Evaluate what is pending, holding the fixed text's last token back as :attr:`heal`."""
        batch = self.chosen
        self.chosen = []
        self.heal = b""
        if self.pending:
            fixed = self.model.tokenize_text(self.pending)
            if fixed and b"".join(self.t.bytes[x] for x in fixed) == self.pending:
                self.heal = self.t.bytes[fixed[-1]]
                fixed = fixed[:-1]
            self._spend(len(fixed))
            self.recent.extend(fixed)
            batch = batch + fixed
            self.pending = b""
        if batch:
            self.model.eval_tokens(batch)
        logits = self.model.last_logits()
        if self.repeat_penalty == 1.0 or not self.recent:
            return logits
        # llama.cpp's repetition penalty over the last tokens written (the prompt not included)
        seen = np.fromiter(set(self.recent), dtype=np.int64)
        logits = logits.copy()
        vals = logits[seen]
        logits[seen] = np.where(vals > 0, vals / self.repeat_penalty, vals * self.repeat_penalty)
        return logits

    def _best(self, logits: np.ndarray, ids: np.ndarray) -> int:
        return int(ids[int(np.argmax(logits[ids]))])

    # -- decisions ----------------------------------------------------------------------
    def choose(self, options: Sequence[str], opens_string: bool = False) -> Generator[str, None, int]:
        """Write one of ``options`` (the model's greedy pick); returns its index.

        With ``opens_string`` the options open a string, and a token may go on past the
        option into the string's content (kept in :attr:`carry` for :meth:`string`).
        """
        opts = [o.encode("utf-8") for o in options]
        done = b""
        alive = list(range(len(opts)))
        while True:
            rest = {i: opts[i][len(done) :] for i in alive}
            if len(set(rest.values())) == 1:  # one option left: the rest is fixed text
                i = alive[0]
                self.pending += rest[i]
                self._emit(rest[i])
                return i
            ended = [i for i in alive if not rest[i]]
            if ended:  # an option that is a prefix of another one: the shorter one
                return ended[0]
            yield from self.fresh_text()
            logits = self._logits()
            heal = self.heal
            cand: dict[int, int | None] = {}
            for i in alive:
                full = heal + rest[i]
                for k in range(len(heal) + 1, len(full) + 1):
                    tok = self.t.index.get(full[:k])
                    if tok is not None:
                        cand.setdefault(tok, None)
                if opens_string:
                    for tok in self.t.starting_with(full).tolist():
                        if self.t.bytes[tok] != full and (self.banned is None or not self.banned[tok]):
                            cand.setdefault(tok, i)
            if heal and heal in self.t.index:
                cand.setdefault(self.t.index[heal], None)
            best = self._best(logits, np.fromiter(cand, dtype=np.int64))
            into = cand[best]
            data = self._take(best)
            self._emit(data)
            if into is not None:  # opened the string and went on into its content
                self.carry = data[len(rest[into]) :]
                return into
            done += data
            alive = [i for i in alive if opts[i].startswith(done)]

    def string(
        self, min_len: int, max_len: int | None, *, opened: bool = False, space: bool = False
    ) -> Generator[str, None, str]:
        """Write a free JSON string (its quotes too); returns its content.

        Args:
            min_len: ``minLength`` (a close before it is not taken).
            max_len: ``maxLength`` in characters (``None``: until the model closes it).
            opened: The opening quote is already written.
            space: The model may put a space before the opening quote.

        """
        content = bytearray()
        if not opened:
            if space:
                yield from self.choose(['"', ' "'], opens_string=True)
            else:
                self.literal('"')
        if self.carry is not None:
            content += self.carry
            self.carry = None
        need = _utf8_need(bytes(content)) or 0  # continuation bytes owed (a split character)
        cut = False  # whether the string ended where the model's own next token would not have ended it
        # at maxLength only a split character may still be completed
        while max_len is None or _chars(bytes(content)) < max_len or need:
            yield from self.fresh_text()
            logits = self._logits()
            if self.banned is not None:
                logits = np.where(self.banned, -np.inf, logits)
            have = _chars(bytes(content))
            room = None if max_len is None else max(max_len - have, 0)
            if self.heal:  # the first token must continue the held-back quote
                ids = self.t.starting_with(self.heal)
                if room is not None:
                    ids = ids[self.t.chars[ids] - _chars(self.heal) <= room]
                if self.heal in self.t.index:
                    ids = np.append(ids, self.t.index[self.heal])
                piece = self._take(self._best(logits, ids))
                need = _utf8_need(piece) or 0
            else:
                best = int(np.argmax(logits))
                cut = not self._fits(best, have, need, min_len, room)
                if cut:
                    allowed = self.t.content & (self.t.need_after[need] >= 0)
                    if room is not None:
                        allowed &= self.t.chars <= room
                    closes = (self.t.close_at >= 0) & (self.t.need_after[need] == 0)
                    masked = np.where(allowed | closes, logits, -np.inf)
                    best = int(np.argmax(masked))
                    if not self._fits(best, have, need, min_len, room):
                        masked = np.where(allowed, logits, -np.inf)
                        best = int(np.argmax(masked))
                    if not np.isfinite(masked[best]):  # nothing may follow: end the string here
                        break
                q = int(self.t.close_at[best])
                if q >= 0:  # the model closes the string: its content part is fixed text now
                    self.decisions += 1
                    piece = self.t.bytes[best][:q]
                    self.pending += piece
                    self._emit(piece)
                    content += piece
                    break
                need = int(self.t.need_after[need, best])
                piece = self._take(best)
            self._emit(piece)
            content += piece
        else:  # the bound is reached: the model was not asked whether it would end here
            cut = True
        text = bytes(content).decode("utf-8", "replace")
        if cut:
            self.cut.append(text)
        self.literal('"')
        return text

    def _fits(self, token: int, have: int, need: int, min_len: int, room: int | None) -> bool:
        """Whether ``token`` may come next in a string with ``have`` characters, ``need`` bytes owed."""
        q = int(self.t.close_at[token])
        after = int(self.t.need_after[need, token])
        if q >= 0:
            n = _chars(self.t.bytes[token][:q])
            return after == 0 and have + n >= min_len and (room is None or n <= room)
        return (
            bool(self.t.content[token]) and after >= 0 and (room is None or int(self.t.chars[token]) <= room)
        )


class _Schema:
    """The supported subset of JSON schema, walked to write one value."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.defs: Mapping[str, Any] = schema.get("$defs", {})

    def resolve(self, node: Mapping[str, Any]) -> Mapping[str, Any]:
        seen = 0
        while "$ref" in node:
            ref = str(node["$ref"])
            name = ref.removeprefix("#/$defs/")
            if name == ref or name not in self.defs or seen > 32:
                raise SchemaNotSupportedError(f"reference {ref}")
            node, seen = self.defs[name], seen + 1
        return node

    def check(self, node: Mapping[str, Any], refs: set[str] | None = None) -> None:
        refs = set() if refs is None else refs
        if "$ref" in node:
            if node["$ref"] in refs:
                return
            refs.add(str(node["$ref"]))
        node = self.resolve(node)
        if "const" in node:
            return
        if "enum" in node:
            if not node["enum"] or not all(isinstance(v, str) for v in node["enum"]):
                raise SchemaNotSupportedError("enum of non-strings")
            return
        if "anyOf" in node:
            self.variants(node["anyOf"])
            for variant in node["anyOf"]:
                self.check(variant, refs)
            return
        kind = node.get("type")
        if kind == "object":
            for sub in node.get("properties", {}).values():
                self.check(sub, refs)
        elif kind == "array":
            self.check(node.get("items", {}), refs)
        elif kind != "string":
            raise SchemaNotSupportedError(f"type {kind!r}")

    def variants(self, variants: Sequence[Mapping[str, Any]]) -> tuple[str, list[str]]:
        """``anyOf`` of objects told apart by their first property: its key, each variant's value (JSON)."""
        keys: set[str] = set()
        texts: list[str] = []
        for variant in variants:
            obj = self.resolve(variant)
            props = obj.get("properties") or {}
            if obj.get("type") != "object" or not props:
                raise SchemaNotSupportedError("anyOf of non-objects")
            key, first = next(iter(props.items()))
            keys.add(key)
            texts.append(self._constant(self.resolve(first)))
        if len(keys) != 1 or len(set(texts)) != len(texts):
            raise SchemaNotSupportedError("anyOf variants not told apart by one constant first property")
        return keys.pop(), texts

    @staticmethod
    def _constant(node: Mapping[str, Any]) -> str:
        if "const" in node:
            return json.dumps(node["const"], ensure_ascii=False)
        items = node.get("items", {})
        if (
            node.get("type") == "array"
            and "const" in items
            and node.get("minItems") == node.get("maxItems") == 1
        ):
            return "[" + json.dumps(items["const"], ensure_ascii=False) + "]"
        raise SchemaNotSupportedError("anyOf variant whose first property is not constant")

    @staticmethod
    def _first_text(value: Any) -> str:
        """An array item's identity for :meth:`write`'s ``used``: an object's first property as JSON."""
        if isinstance(value, dict) and value:
            return json.dumps(next(iter(value.values())), ensure_ascii=False)
        return json.dumps(value, ensure_ascii=False)

    @staticmethod
    def _opening(node: Mapping[str, Any]) -> str:
        if "const" in node:
            return json.dumps(node["const"], ensure_ascii=False)[0]
        if "anyOf" in node or node.get("type") == "object":
            return "{"
        if "enum" in node or node.get("type") == "string":
            return '"'
        if node.get("type") == "array":
            return "["
        raise SchemaNotSupportedError("an optional array item of this kind")

    def write(
        self,
        w: _Writer,
        node: Mapping[str, Any],
        *,
        used: Sequence[str] = (),
        opened: bool = False,
        space: bool = False,
    ) -> Generator[str, None, Any]:
        """Write a value of ``node``.

        Args:
            w: The writer.
            node: Its schema.
            used: What the same array holds already (enum values; an ``anyOf`` variant's first
                property as JSON), not offered again: a grammar cannot forbid repeats.
            opened: Its first character is already written.
            space: The model may put a space before it (where it makes a decision anyway).

        """
        node = self.resolve(node)
        if "enum" in node:
            values = [v for v in node["enum"] if v not in used] or list(node["enum"])
            texts = [json.dumps(v, ensure_ascii=False) for v in values]
            if opened:
                return values[(yield from w.choose([t[1:] for t in texts]))]
            i = yield from w.choose(texts + [" " + t for t in texts] if space else texts)
            return values[i % len(values)]
        if node.get("type") == "string" and "const" not in node:
            length = int(node.get("minLength", 0)), node.get("maxLength")
            return (yield from w.string(*length, opened=opened, space=space))
        if space:
            w.literal(" ")
        if "const" in node:
            text = json.dumps(node["const"], ensure_ascii=False)
            w.literal(text[1:] if opened else text)
            return node["const"]
        if "anyOf" in node:
            key, texts = self.variants(node["anyOf"])
            w.literal(("" if opened else "{") + json.dumps(key, ensure_ascii=False) + ": ")
            offered = [i for i, t in enumerate(texts) if t not in used] or list(range(len(texts)))
            i = offered[(yield from w.choose([texts[i] for i in offered]))]
            value = {key: json.loads(texts[i])}
            for k, sub in list(self.resolve(node["anyOf"][i])["properties"].items())[1:]:
                w.literal(", " + json.dumps(k, ensure_ascii=False) + ":")
                value[k] = yield from self.write(w, sub, space=True)
            w.literal("}")
            return value
        if node.get("type") == "object":
            w.literal("" if opened else "{")
            obj: dict[str, Any] = {}
            for j, (k, sub) in enumerate(node.get("properties", {}).items()):
                w.literal((", " if j else "") + json.dumps(k, ensure_ascii=False) + ":")
                obj[k] = yield from self.write(w, sub, space=True)
            w.literal("}")
            return obj
        return (yield from self._array(w, node, opened))

    def _array(self, w: _Writer, node: Mapping[str, Any], opened: bool) -> Generator[str, None, list[Any]]:
        low, high = int(node.get("minItems", 0)), node.get("maxItems")
        items = node.get("items", {})
        w.literal("" if opened else "[")
        out: list[Any] = []
        while high is None or len(out) < int(high):
            item_opened = False
            if len(out) >= low:
                if out:
                    if (yield from w.choose([",", "]"])) == 1:
                        return out
                else:
                    if (yield from w.choose(["]", self._opening(self.resolve(items))])) == 0:
                        return out
                    item_opened = True
            elif out:
                w.literal(",")
            used = [x if isinstance(x, str) else self._first_text(x) for x in out]
            out.append((yield from self.write(w, items, used=used, opened=item_opened, space=bool(out))))
        w.literal("]")
        return out


def supports(schema: Mapping[str, Any]) -> bool:
    """Whether :func:`decode_json` can write values of ``schema`` (else keep llama.cpp's grammar)."""
    try:
        _Schema(schema).check(schema)
    except SchemaNotSupportedError:
        return False
    return True


def iter_json(
    model: TokenModel,
    table: TokenTable,
    schema: Mapping[str, Any],
    *,
    max_tokens: int,
    repeat_penalty: float = 1.0,
    penalty_last_n: int = 64,
    east_asian: bool = True,
) -> Generator[str, None, DecodeResult]:
    """Write a JSON value of ``schema`` after the prompt the model has already evaluated.

    A generator: it yields the text as it is decided (for streaming) and returns the
    :class:`DecodeResult` (``result = yield from iter_json(...)``).

    Args:
        model: The model, its context holding the prompt.
        table: The model's :class:`TokenTable`.
        schema: The JSON schema (see :func:`supports`).
        max_tokens: Most tokens to add; past it the text is returned cut off.
        repeat_penalty: llama.cpp's repetition penalty (logits of the tokens among the last
            ``penalty_last_n`` written, fixed ones included, divided by it when positive and
            multiplied when negative), as the model's sampler would apply it; 1.0: none.
        penalty_last_n: The window of that penalty.
        east_asian: Whether free strings may hold characters of U+3000..U+D7FF (CJK, kana,
            Hangul). False where the prompt has none (:func:`has_east_asian`): such a prompt
            is answered in its own script.

    Raises:
        SchemaNotSupportedError: ``schema`` is outside the supported subset (raised before
            anything is generated).

    """
    walker = _Schema(schema)
    walker.check(schema)
    writer = _Writer(model, table, max_tokens, repeat_penalty, penalty_last_n, east_asian)
    finish = "stop"
    try:
        yield from walker.write(writer, schema)
        writer.tokens += len(model.tokenize_text(writer.pending)) if writer.pending else 0
    except _BudgetSpent:
        finish = "length"
    yield from writer.fresh_text(final=True)
    return DecodeResult(
        text=bytes(writer.out).decode("utf-8", "replace"),
        completion_tokens=min(writer.tokens, max_tokens),
        decisions=writer.decisions,
        finish_reason=finish,
        cut=tuple(writer.cut),
    )


def decode_json(
    model: TokenModel, table: TokenTable, schema: Mapping[str, Any], *, max_tokens: int, **options: Any
) -> DecodeResult:
    """:func:`iter_json` run to its end: the whole text at once (``options``: its keyword arguments)."""
    gen = iter_json(model, table, schema, max_tokens=max_tokens, **options)
    while True:
        try:
            next(gen)
        except StopIteration as done:
            result: DecodeResult = done.value
            return result
