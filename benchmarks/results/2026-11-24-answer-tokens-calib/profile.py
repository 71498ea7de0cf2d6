"""Profile the schema decoder on calib questions: each evaluation, each free string, each call's prompt.

Usage: python profile.py METHODS LIMIT SEED LOG.json (then ``python analyze.py LOG.json``).
"""

import json
import sys
import time
from typing import Any

import kgmind.llm as L
import kgmind.schema_decoding as SD
from kgmind.eval.runner import EvalConfig, run_eval

LOG: dict[str, list[Any]] = {"evals": [], "strings": [], "calls": [], "outputs": []}
cur: dict[str, Any] = {"in_string": False, "tokens": None, "call": None, "ncall": 0}

orig_eval = L._LlamaTokens.eval_tokens


def eval_tokens(self: Any, tokens: Any) -> None:
    t = time.perf_counter()
    orig_eval(self, tokens)
    LOG["evals"].append((len(tokens), time.perf_counter() - t, cur["in_string"], cur["call"], cur["ncall"]))


orig_string = SD._Writer.string


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


orig_take = SD._Writer._take


def take(self: Any, token: int) -> bytes:
    if cur["tokens"] is not None:
        cur["tokens"].append(int(token))
    return orig_take(self, token)


Locked = L._locked_llama_class()
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


L._LlamaTokens.eval_tokens = eval_tokens
SD._Writer.string = string
SD._Writer._take = take
Locked._schema_stream = schema_stream
Locked._evaluate_prompt = evaluate_prompt

methods, limit, seed, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
cfg = EvalConfig(
    dataset="genmedgpt5k",
    methods=methods,
    llm="local",
    split="calib",
    limit=limit,
    seed=seed,
    memory_sample=0,
    bertscore=False,
    llm_cache="off",
    interleave=True,
)
res = run_eval(cfg, keep_rows=True)
with open(out, "w") as fh:
    json.dump(LOG, fh)
for m, r in res["methods"].items():
    print(m, {k: r.get(k) for k in ("wall_ms_p50", "answer_entity_recall", "answer_precision")})
