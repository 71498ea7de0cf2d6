"""The supported subset of JSON schema, walked to write one value (:func:`iter_json`).

See :mod:`kgmind.llm.schema_decoding` for the subset and how a value is written.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping, Sequence
from typing import Any

from kgmind.llm.schema_decoding.vocabulary import TokenTable
from kgmind.llm.schema_decoding.writer import (
    BudgetSpent,
    DecodeResult,
    SchemaNotSupportedError,
    TokenModel,
    Writer,
)

__all__ = ["decode_json", "iter_json", "supports"]


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
        w: Writer,
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

    def _array(self, w: Writer, node: Mapping[str, Any], opened: bool) -> Generator[str, None, list[Any]]:
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
    writer = Writer(model, table, max_tokens, repeat_penalty, penalty_last_n, east_asian)
    finish = "stop"
    try:
        yield from walker.write(writer, schema)
        writer.tokens += len(model.tokenize_text(writer.pending)) if writer.pending else 0
    except BudgetSpent:
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
