"""Log the schema decoder's decisions (the token chosen, the held-back heal) around a calib run.

Usage: ``python takes.py llm_only,kgmind 6 22 OUT.json``; ``takes.txt`` was made from the log it writes.
"""

import json
import sys

import kgmind.llm.schema_decoding.writer as sd
from kgmind.eval.runner import EvalConfig, run_eval
from kgmind.llm.local.model import LocalChatModel

takes: list[tuple[str, str, str]] = []
orig_take = sd.Writer._take


def _take(self, token):  # type: ignore[no-untyped-def]
    heal = self.heal
    out = orig_take(self, token)
    takes.append(
        (
            heal.decode("utf8", "replace"),
            self.t.bytes[token].decode("utf8", "replace"),
            bytes(self.out[-40:]).decode("utf8", "replace"),
        )
    )
    return out


sd.Writer._take = _take
cls = LocalChatModel
orig_stream = cls._schema_stream
calls: list[dict] = []


def wrapped(self, messages, schema, kwargs):  # type: ignore[no-untyped-def]
    takes.clear()
    yield from orig_stream(self, messages, schema, kwargs)
    grounded = "evidence_ids" in json.dumps(schema)
    calls.append({"ev": grounded, "title": schema.get("title"), "takes": list(takes)})


cls._schema_stream = wrapped
cfg = EvalConfig(
    dataset="genmedgpt5k",
    methods=sys.argv[1],
    llm="local",
    split="calib",
    limit=int(sys.argv[2]),
    seed=int(sys.argv[3]),
    memory_sample=0,
    bertscore=False,
    llm_cache="off",
    interleave=True,
)
run_eval(cfg, keep_rows=True)
with open(sys.argv[4], "w") as fh:
    json.dump(calls, fh)
