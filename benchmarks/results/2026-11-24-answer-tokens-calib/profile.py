"""Profile the schema decoder on calib questions: each evaluation, each free string, each call's prompt.

Usage: python profile.py LOG.json ../2026-11-24-grounded-calib/run_variant.py METHODS LIMIT SEED OUT
(the driver runs the eval; then ``python analyze.py LOG.json``).
"""

import atexit
import json
import runpy
import sys
import time
from typing import Any

import kgmind.llm.local.model as L
import kgmind.llm.schema_decoding.writer as SD

LOG: dict[str, list[Any]] = {"evals": [], "strings": [], "calls": [], "outputs": []}
cur: dict[str, Any] = {"in_string": False, "tokens": None, "call": None, "ncall": 0}

orig_eval = L.LlamaTokens.eval_tokens


def eval_tokens(self: Any, tokens: Any) -> None:
    t = time.perf_counter()
    orig_eval(self, tokens)
    LOG["evals"].append((len(tokens), time.perf_counter() - t, cur["in_string"], cur["call"], cur["ncall"]))


orig_string = SD.Writer.string


def string(self: Any, *a: Any, **k: Any) -> Any:
    cur["in_string"], cur["tokens"], t0 = True, [], time.perf_counter()
    llama = getattr(self.model, "_llama", None)
    ctx0 = [int(x) for x in llama.input_ids[: llama.n_tokens]] if llama is not None else []
    try:
        res = yield from orig_string(self, *a, **k)
    finally:
        cur["in_string"] = False
        LOG["strings"].append(
            {
                "ctx": ctx0,  # context before the string's first evaluation (pending fixed text not in it)
                "chosen": cur["tokens"],
                "secs": time.perf_counter() - t0,
                "args": [a[0] if a else None, a[1] if len(a) > 1 else None],
                "call": cur["call"],
                "out": bytes(self.out[-200:]).decode("utf-8", "replace"),
            }
        )
        cur["tokens"] = None
    return res


orig_take = SD.Writer._take


def take(self: Any, token: int) -> bytes:
    if cur["tokens"] is not None:
        cur["tokens"].append(int(token))
    return orig_take(self, token)


Locked = L.LocalChatModel
orig_stream = Locked._schema_stream
orig_prompt = Locked._evaluate_prompt


def schema_stream(self: Any, messages: Any, schema: Any, kwargs: Any) -> Any:
    cur["call"], cur["ncall"], t = schema.get("title"), cur["ncall"] + 1, time.perf_counter()
    parts = []
    for chunk in orig_stream(self, messages, schema, kwargs):
        parts.append(chunk.message.content)
        yield chunk
    LOG["outputs"].append({"ncall": cur["ncall"], "title": cur["call"], "text": "".join(parts)})
    LOG["calls"].append({"title": cur["call"], "secs": time.perf_counter() - t})


def evaluate_prompt(self: Any, messages: Any) -> int:
    t = time.perf_counter()
    n = orig_prompt(self, messages)
    LOG["calls"].append({"prompt": n, "secs": time.perf_counter() - t, "title": cur["call"]})
    return int(n)


L.LlamaTokens.eval_tokens = eval_tokens
SD.Writer.string = string
SD.Writer._take = take
Locked._schema_stream = schema_stream
Locked._evaluate_prompt = evaluate_prompt


def dump(path: str = sys.argv[1]) -> None:
    with open(path, "w") as fh:
        json.dump(LOG, fh)


atexit.register(dump)
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
