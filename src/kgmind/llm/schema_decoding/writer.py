"""The writer of one JSON value: fixed text appended lazily, the model asked only at decisions.

See :mod:`kgmind.llm.schema_decoding` for what is fixed and what is asked.
"""

from __future__ import annotations

import codecs
from collections import deque
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from kgmind.llm.schema_decoding.vocabulary import TokenTable, char_count, utf8_owed

__all__ = ["BudgetSpent", "DecodeResult", "SchemaNotSupportedError", "TokenModel", "Writer"]


class SchemaNotSupportedError(ValueError):
    """The schema uses a construct the walker does not write (the caller falls back to a grammar)."""


class BudgetSpent(Exception):
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


class Writer:
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
        """Append fixed text (evaluated with the next decision, never generated)."""
        data = text.encode("utf-8")
        self.pending += data
        self._emit(data)

    def _spend(self, n: int) -> None:
        self.tokens += n
        if self.tokens > self.max_tokens:
            raise BudgetSpent

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
        need = utf8_owed(bytes(content)) or 0  # continuation bytes owed (a split character)
        cut = False  # whether the string ended where the model's own next token would not have ended it
        # at maxLength only a split character may still be completed
        while max_len is None or char_count(bytes(content)) < max_len or need:
            yield from self.fresh_text()
            logits = self._logits()
            if self.banned is not None:
                logits = np.where(self.banned, -np.inf, logits)
            have = char_count(bytes(content))
            room = None if max_len is None else max(max_len - have, 0)
            if self.heal:  # the first token must continue the held-back quote
                ids = self.t.starting_with(self.heal)
                if room is not None:
                    ids = ids[self.t.chars[ids] - char_count(self.heal) <= room]
                if self.heal in self.t.index:
                    ids = np.append(ids, self.t.index[self.heal])
                piece = self._take(self._best(logits, ids))
                need = utf8_owed(piece) or 0
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
            n = char_count(self.t.bytes[token][:q])
            return after == 0 and have + n >= min_len and (room is None or n <= room)
        return (
            bool(self.t.content[token]) and after >= 0 and (room is None or int(self.t.chars[token]) <= room)
        )
