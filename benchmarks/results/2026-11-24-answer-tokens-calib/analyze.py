"""Read profile.py's log: where the decoder's evaluations go, per call, and what prompt lookup would accept.

Usage: python analyze.py LOG.json
"""

import collections
import json
import sys

with open(sys.argv[1]) as fh:
    log = json.load(fh)
ev = log["evals"]  # (tokens in the batch, seconds, inside a free string, schema title, call number)
print("decoder evaluations (prompts not included):", round(sum(e[1] for e in ev), 2), "s")
by: dict[tuple[str, str], list[float]] = collections.defaultdict(lambda: [0, 0.0, 0])
for n, d, s, _call, _nc in ev:
    size = "1 token" if n == 1 else ("2-8 tokens" if n <= 8 else ">8 tokens")
    k = ("in a string" if s else "enum/fixed", size)
    by[k][0] += 1
    by[k][1] += d
    by[k][2] += n
for k, (c, d, n) in sorted(by.items()):
    print(f"  {k}: {c} evals, {d:.2f} s, {n} tokens, {1000 * d / c:.1f} ms per eval")

print("\nper call kind (means per call):")
outs = {o["ncall"]: o for o in log["outputs"]}
per: dict[int, dict[str, float]] = collections.defaultdict(
    lambda: {"string_s": 0, "string_evals": 0, "enum_fixed_s": 0, "enum_fixed_evals": 0, "fixed_tokens": 0}
)
for n, d, s, _call, nc in ev:
    p = per[nc]
    if s:
        p["string_s"] += d
        p["string_evals"] += 1
    else:
        p["enum_fixed_s"] += d
        p["enum_fixed_evals"] += 1
        p["fixed_tokens"] += n
kinds = collections.defaultdict(list)
for nc, p in per.items():
    o = outs[nc]
    kind = {"GroundedAnswer": "answer", "HypothesisOut": "hypothesis"}[o["title"]]
    kinds[kind + (" over evidence" if "evidence_ids" in o["text"] else "")].append(p)
prompts = collections.defaultdict(list)
for c in log["calls"]:
    if "prompt" in c:
        prompts[c["title"]].append(c)
for name, ps in kinds.items():
    print(f"  {name} ({len(ps)} calls):", {x: round(sum(p[x] for p in ps) / len(ps), 2) for x in ps[0]})
for t, cs in prompts.items():
    n, s = sum(c["prompt"] for c in cs) / len(cs), sum(c["secs"] for c in cs) / len(cs)
    print(f"  prompt of {t} ({len(cs)} calls, evidence or not): {n:.0f} tokens, {s:.2f} s")

print("\nprompt lookup on the strings (draft: what followed the last n-gram earlier in prompt + output):")


def draft(ctx: list[int], ngram: int, k: int) -> list[int]:
    for n in range(ngram, 0, -1):
        if len(ctx) < n:
            continue
        tail = ctx[-n:]
        for i in range(len(ctx) - n - 1, -1, -1):
            if ctx[i : i + n] == tail:
                return ctx[i + n : i + n + k]
    return []


for most in (2, 4, 8):
    for ngram in (1, 2, 3):
        tokens = steps = 0
        for s in log["strings"]:
            ctx, ch, i = list(s["ctx"]), s["chosen"], 0
            while i < len(ch):
                ctx.append(ch[i])
                i += 1
                d = draft(ctx, ngram, most)
                acc = 0
                while acc < len(d) and i + acc < len(ch) and d[acc] == ch[i + acc]:
                    acc += 1
                ctx.extend(ch[i : i + acc])
                i += acc
                steps += 1
            tokens += len(ch)
        rate = tokens / steps
        print(f"  draft <= {most}, n-gram <= {ngram}: {tokens} tokens in {steps} evals, {rate:.2f} per eval")
