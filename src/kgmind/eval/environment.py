"""What an evaluation ran on, recorded beside its figures: the machine, and torch's thread count.

Embedding speed depends on the CPU's AVX-512 / AMX support and on torch's intra-op
threads, so both go into ``results.json``; the harness may also pin the threads.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any

__all__ = ["machine_info", "set_torch_threads", "torch_threads"]


def machine_info() -> dict[str, Any]:
    """CPU (with the AVX-512 / AMX flags that change embedding speed), core count, OS and Python."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from kgmind.machine import cpu_flags

    flags = cpu_flags()
    return {
        "cpu": cpu,
        "isa": [f for f in ("avx512f", "avx512_bf16", "amx_bf16") if f in flags],
        "cores": os.cpu_count(),
        "gpu": None,
        "os": platform.platform(),
        "python": platform.python_version(),
    }


def set_torch_threads(n: int | None) -> None:
    """Set torch's intra-op threads to ``n`` when given (torch is not imported otherwise).

    On a small, shared CPU two torch threads per single-query encode can be far slower
    than one (thread oversubscription), so the harness lets the run pin it.
    """
    if not n:
        return
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(n)


def torch_threads() -> int | None:
    """The intra-op threads of torch, or ``None`` when the run never imported torch."""
    torch = sys.modules.get("torch")
    return int(torch.get_num_threads()) if torch is not None else None
