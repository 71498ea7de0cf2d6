"""One evaluation of 1/2/4/8 tokens after a 400-token context, median of 5: python speed.py FILE.gguf."""

import sys
import time
from pathlib import Path

from llama_cpp import Llama

path = sys.argv[1]
model = Llama(model_path=path, n_ctx=4096, n_batch=512, n_threads=2, verbose=False, flash_attn=True, seed=1)
text = (Path(__file__).resolve().parents[3] / "README.md").read_text()[:6000]
context = model.tokenize(text.encode())[:400]
more = model.tokenize(b" the quick brown fox jumps over the lazy dog and more words here", add_bos=False)


def run() -> dict[str, float]:
    model.reset()
    model._ctx.kv_cache_clear()
    t = time.perf_counter()
    model.eval(context)
    out = {"prompt400": time.perf_counter() - t}
    for n in (1, 2, 4, 8):
        took = []
        for _ in range(5):
            t = time.perf_counter()
            model.eval(more[:n])
            took.append(time.perf_counter() - t)
            model.n_tokens -= n
            model._ctx.kv_cache_seq_rm(0, model.n_tokens, -1)
        out[f"{n} tokens"] = sorted(took)[2]
    return out


run()  # warm-up
for key, seconds in run().items():
    print(Path(path).name, key, f"{seconds * 1000:.1f} ms")
