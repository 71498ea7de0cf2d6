"""What this process may use of the machine: its CPUs and their physical cores.

``os.cpu_count()`` (and ``multiprocessing.cpu_count()``, which llama-cpp-python's thread
defaults read) counts every CPU of the host. A process may use fewer: its CPU affinity
(``taskset``, a cpuset) and, in a container, a CFS quota (``docker --cpus=2``,
a Kubernetes CPU limit) that lets it run only so many CPUs' worth of time. Threads
beyond that wait on one another: on the 2-core AMD box, 8 llama.cpp generation threads
took 45 ms per token where 2 took 22 ms. This module sits at the level of
:mod:`kgmind.models` and imports nothing from kgmind; what kgmind makes of these facts
(thread counts, the embedding dtype) is decided where they are used
(:mod:`kgmind.retrievers.embeddings.runtime`, :mod:`kgmind.llm`).
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
from pathlib import Path
from typing import Any

__all__ = ["cpu_flags", "cpu_quota", "physical_cores", "release_free_heap", "usable_cpus"]

#: Where the kernel tells a process its CFS quota: cgroup v2, then v1.
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: Where it tells which CPUs share a core (hyperthread siblings).
CPU_SYSFS = Path("/sys/devices/system/cpu")
#: Where it lists the CPU's feature flags.
CPUINFO = Path("/proc/cpuinfo")


def _affinity() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return set(range(os.cpu_count() or 1))


def cpu_quota(root: Path = CGROUP_ROOT) -> int | None:
    """CPUs' worth of time the process's cgroup may use (rounded up), or ``None`` when unlimited or unknown.

    Reads cgroup v2's ``cpu.max`` (``"max 100000"`` or ``"200000 100000"``) or v1's
    ``cpu/cpu.cfs_quota_us`` and ``cpu/cpu.cfs_period_us`` (quota ``-1``: unlimited).
    """
    candidates = (
        (root / "cpu.max", None),
        (root / "cpu" / "cpu.cfs_quota_us", root / "cpu" / "cpu.cfs_period_us"),
        (root / "cpu,cpuacct" / "cpu.cfs_quota_us", root / "cpu,cpuacct" / "cpu.cfs_period_us"),
    )
    for quota_file, period_file in candidates:
        try:
            if period_file is None:
                quota, period = quota_file.read_text().split()[:2]
            else:
                quota, period = quota_file.read_text().strip(), period_file.read_text().strip()
        except (OSError, ValueError):
            continue
        if quota in ("max", "-1"):
            return None
        try:
            q, p = int(quota), int(period)
        except ValueError:
            continue
        return max(1, math.ceil(q / p)) if q > 0 and p > 0 else None
    return None


def usable_cpus(root: Path = CGROUP_ROOT) -> int:
    """The CPUs this process can keep busy: its affinity, capped by its cgroup's CPU quota."""
    return _within_quota(len(_affinity()) or 1, root)


def physical_cores(sysfs: Path = CPU_SYSFS, root: Path = CGROUP_ROOT) -> int:
    """Physical cores among the CPUs this process may use (hyperthread siblings count once), quota-capped.

    A CPU whose topology cannot be read counts as its own core.
    """
    cores: set[str] = set()
    for cpu in sorted(_affinity()):
        try:
            cores.add((sysfs / f"cpu{cpu}" / "topology" / "thread_siblings_list").read_text().strip())
        except OSError:
            cores.add(f"cpu{cpu}")
    return _within_quota(len(cores) or 1, root)


def _within_quota(n: int, root: Path) -> int:
    quota = cpu_quota(root)
    return min(n, quota) if quota else n


def cpu_flags(cpuinfo: Path = CPUINFO) -> set[str]:
    """The CPU feature flags of this machine (``/proc/cpuinfo``'s ``flags`` line; empty elsewhere)."""
    try:
        with cpuinfo.open(encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:  # pragma: no cover - non-Linux
        pass
    return set()


@functools.cache
def _malloc_trim() -> Any:
    """The C library's ``malloc_trim`` (glibc), or ``None`` where it has none (musl, macOS)."""
    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)
    except (OSError, TypeError):  # pragma: no cover - no C library to open (Windows)
        return None


def release_free_heap() -> bool:
    """Hand the C heap's free pages back to the operating system (glibc ``malloc_trim(0)``).

    What a question frees goes back to the C allocator, which keeps the pages: a worker's
    RSS stays near the most it ever held. A pushed-down worker calls this after each
    question (:func:`kgmind.graphs.services.release_question_heap`): at the generated 10M
    KG its RSS from 200 to 1,000 questions was 1,827–1,860 MB instead of 1,931–1,979, for
    ~5 ms a question (``benchmarks/results/2026-11-29-gazetteer``).

    Returns:
        Whether there was a ``malloc_trim`` to call.
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
