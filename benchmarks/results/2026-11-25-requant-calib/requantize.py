"""Requantize the shipped 0.5B GGUF with llama.cpp's own quantizer: python requantize.py OUT_DIR."""

import ctypes
import sys
from pathlib import Path

import llama_cpp

from kgmind.llm import ensure_local_model

src = str(ensure_local_model("local")).encode()
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
for name, ftype in (("q8_0", llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0), ("q4_0", llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0)):
    params = llama_cpp.llama_model_quantize_default_params()
    params.allow_requantize = True
    params.ftype = ftype
    params.nthread = 2
    rc = llama_cpp.llama_model_quantize(src, str(out / f"{name}.gguf").encode(), ctypes.byref(params))
    print(name, "ok" if rc == 0 else f"failed ({rc})")
