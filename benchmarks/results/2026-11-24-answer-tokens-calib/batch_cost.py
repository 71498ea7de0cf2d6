"""What one llama.cpp evaluation of n tokens costs after a 400-token context (local 0.5B, median of 7)."""

import time

from kgmind.llm import get_chat_model

llama = get_chat_model("local").client
text = b"The patient has a persistent cough with fever and chest pain for three days. " * 40
tokens = llama.tokenize(text, add_bos=False)
llama.reset()
llama.eval(tokens[:400])
for n in (1, 2, 3, 4, 6, 8, 16):
    times = []
    for _ in range(7):
        llama.n_tokens = 400  # the next eval drops what the last one added
        t = time.perf_counter()
        llama.eval(tokens[400 : 400 + n])
        times.append(time.perf_counter() - t)
    times.sort()
    print(f"{n:2d} tokens: {1000 * times[3]:.1f} ms")
