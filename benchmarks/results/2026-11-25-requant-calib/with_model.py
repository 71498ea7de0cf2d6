"""Run a driver script with the local model's GGUF swapped for another file (KGV_GGUF), nothing else."""

import os
import runpy
import sys
from pathlib import Path

import kgmind.llm.providers as L  # where get_chat_model finds ensure_local_model

gguf = Path(os.environ["KGV_GGUF"]).resolve()
L.ensure_local_model = lambda name="local", home=None, progress=None: gguf  # type: ignore[assignment]
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
