"""The calib learning split both scripts use: a fresh copy of the eval store, the learnt and held-out items.

The base store is a copy of the EMCKG-full eval store (``~/.kgmind/eval-emckg-full`` and its
``.index``) under ``/tmp/kg/learn/base/kg``; each run learns into its own copy.
"""

import shutil

from kgmind.eval.learn import learning_order
from kgmind.eval.runner import EvalConfig, EvalItem, build_items

BASE = "/tmp/kg/learn/base"
RUN = "/tmp/kg/learn/run"


def calib_split(ntrain: int) -> tuple[str, list[EvalItem], list[EvalItem], set[str]]:
    """(store URI of a fresh copy, learnt items, held-out items, lower-cased learnt gold diseases)."""
    shutil.rmtree(RUN, ignore_errors=True)
    shutil.copytree(BASE, RUN)
    items, _ = build_items(EvalConfig(split="calib"))
    items = learning_order([i for i in items if i.gold_names], 0)
    train, test = items[:ntrain], items[ntrain:]
    with open(f"{RUN}/train.txt", "w") as f:
        f.write("\n".join(i.id for i in train))
    return f"ladybug:{RUN}/kg", train, test, {g[0].lower() for i in train for g in i.gold_diseases}
