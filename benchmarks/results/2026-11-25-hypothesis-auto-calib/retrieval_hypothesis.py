"""Calib only: kgmind's evidence with and without HyKGE's hypothesis call (the retrieval graph, a real LLM).

For a seeded sample of a data set's ``calib`` items, the compiled retrieval graph runs twice per
question, ``Context(hypothesis=True)`` and ``Context(hypothesis=False)``, everything else the
shipped defaults (full mode, 300-token budget); each run's evidence is scored as ``kgmind eval``
scores it. Switches (environment, as run):

* ``DS``: ``genmedgpt5k`` (default) or ``cmcqa``; ``MODEL``: ``local`` (default) or ``local-1.5b``;
* ``OWN=1``: no stored entities (kgmind's own NER, as ``kgmind ask``), else the data set's;
* ``TAG``: suffix of the output pickle (``/tmp/exp/hypgate_{n}_{seed}_{TAG}.pkl``).

Usage: ``python retrieval_hypothesis.py N SEED STORE_URI`` (``KGMIND_DATA_DIR`` set). The rows of
the runs in NOTES.md are in ``retrieval_rows.json``.
"""

import os
import pickle
import random
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
from kgmind.eval import gold as gd
from kgmind.eval.methods import MethodResult, Resources
from kgmind.eval.runner import EvalConfig, _score, build_items
from kgmind.graphs.context import Context
from kgmind.graphs.pipeline import build_retrieval_graph

n, seed, uri = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
dataset = os.environ.get("DS", "genmedgpt5k")
items, _ = build_items(EvalConfig(dataset=dataset, split="calib"))
items = [i for i in items if i.gold_names]
random.Random(seed).shuffle(items)
items = items[:n]
vocab = gd.load_cmckg_vocabulary(None) if dataset == "cmcqa" else gd.load_emckg_vocabulary()
res = Resources(store_uri=uri, seed=0)
g = build_retrieval_graph().compile()
out = []
t0 = time.time()
for k, it in enumerate(items):
    row = {"id": it.id}
    for hyp in (True, False):
        ctx = Context(
            mode="full",
            store=uri,
            model=os.environ.get("MODEL", "local"),
            hypothesis=hyp,
            budget_tokens=300,
            seed=0,
            feedback="off",
        )
        payload = {"question": it.question}
        ents = [] if os.environ.get("OWN") else [e for e in it.entities if isinstance(e, str) and e.strip()]
        if ents:
            payload["entities"] = ents
        st = g.invoke(payload, context=ctx)
        mr = MethodResult(
            evidence=list(st.get("selected_evidence") or []),
            linked=[le.entity_id for le in st.get("linked_entities") or []],
        )
        sc = _score(it, mr, res, vocab)
        row["h" if hyp else "q"] = {
            "recall": sc["evidence_recall"],
            "hit": sc["gold_disease_hit"],
            "prec": sc["evidence_precision"],
            "linked": [
                (le.mention, le.name, le.type, round(le.score, 3)) for le in st.get("linked_entities") or []
            ],
            "ev": [e.text for e in mr.evidence],
            "hypothesis": st.get("hypothesis"),
        }
    out.append(row)
    if k % 10 == 0:
        print(k, round(time.time() - t0), flush=True)
with open(f"/tmp/exp/hypgate_{n}_{seed}_{os.environ.get('TAG', '')}.pkl", "wb") as fh:
    pickle.dump(out, fh)
