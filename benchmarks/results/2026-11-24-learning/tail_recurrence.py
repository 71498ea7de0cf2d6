"""Do the tests and medications a reference answer names recur for the next patient with the same disease?

GenMedGPT-5k ``dev`` items with a gold disease, shuffled (seed 0): the first 2,000 stand for training,
the rest are held out. For each held-out item whose (first) gold disease has at least 2 training items,
count its gold tests and medications that any training answer of that disease named, and the precision of
listing the k tails most often named in training. Run from the repository root with KGMIND_DATA_DIR set
(no store, no model).
"""

import collections
import random

from kgmind.eval import gold as gd
from kgmind.eval.runner import EvalConfig, build_items
from kgmind.models import normalize_name

TAILS = ("test", "medication")
vocab = gd.load_emckg_vocabulary(None)
types = {key: e.type for key, e in vocab.entities.items()}
items, _ = build_items(EvalConfig(dataset="genmedgpt5k", split="dev", methods="kgmind", llm="none"))
items = [i for i in items if i.gold_names and i.gold_diseases]
random.Random(0).shuffle(items)
train, held_out = items[:2000], items[2000:]


def disease(item: object) -> str:
    return normalize_name(item.gold_diseases[0][0])  # type: ignore[attr-defined]


named: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
seen: collections.Counter[str] = collections.Counter()
for it in train:
    d = disease(it)
    seen[d] += 1
    named[d].update(k for k in map(normalize_name, it.gold_names) if k != d and types.get(k) in TAILS)
n = gold = recurred = 0
top_hits: collections.Counter[int] = collections.Counter()
for it in held_out:
    d = disease(it)
    if seen[d] < 2:
        continue
    n += 1
    tails = [k for k in map(normalize_name, it.gold_names) if types.get(k) in TAILS]
    gold += len(tails)
    recurred += sum(t in named[d] for t in tails)
    for k in (1, 3, 5):
        top = {t for t, _ in named[d].most_common(k)}
        top_hits[k] += sum(t in top for t in tails)
print(f"held-out items {n}, their gold tests/medications {gold}, named by a training answer of it {recurred}")
for k, hits in sorted(top_hits.items()):
    print(f"the {k} most-named tails: {hits} gold, precision {hits / (k * n):.4f}")
