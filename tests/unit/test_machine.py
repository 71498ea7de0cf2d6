"""kgmind.machine: the CPUs a process may use (affinity, cgroup quota) and their physical cores."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kgmind import llm, machine
from kgmind.llm.local import threads


def _cgroup(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("files", "quota"),
    [
        ({"cpu.max": "max 100000\n"}, None),  # cgroup v2, unlimited
        ({"cpu.max": "150000 100000\n"}, 2),  # --cpus=1.5: two CPUs' worth, rounded up
        ({"cpu.max": "50000 100000\n"}, 1),
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),  # v1, unlimited
        ({"cpu/cpu.cfs_quota_us": "400000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 4),
        ({"cpu,cpuacct/cpu.cfs_quota_us": "200000\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"}, 2),
        ({"cpu.max": "garbage\n"}, None),  # unreadable: no cap rather than a wrong one
        ({}, None),
    ],
)
def test_cpu_quota_reads_cgroup_v2_and_v1(tmp_path: Path, files: dict[str, str], quota: int | None) -> None:
    assert machine.cpu_quota(_cgroup(tmp_path, files)) == quota


def test_usable_cpus_is_the_affinity_capped_by_the_quota(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(machine, "_affinity", lambda: set(range(64)))
    assert machine.usable_cpus(_cgroup(tmp_path / "none", {})) == 64
    assert machine.usable_cpus(_cgroup(tmp_path / "two", {"cpu.max": "200000 100000"})) == 2
    monkeypatch.setattr(machine, "_affinity", lambda: {3})
    assert machine.usable_cpus(_cgroup(tmp_path / "eight", {"cpu.max": "800000 100000"})) == 1


def test_physical_cores_count_hyperthread_siblings_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sysfs = tmp_path / "cpu"
    siblings = {0: "0,4", 1: "1,5", 2: "2,6", 3: "3,7", 4: "0,4", 5: "1,5", 6: "2,6", 7: "3,7"}
    for cpu, text in siblings.items():
        (sysfs / f"cpu{cpu}" / "topology").mkdir(parents=True)
        (sysfs / f"cpu{cpu}" / "topology" / "thread_siblings_list").write_text(text + "\n")
    no_quota = _cgroup(tmp_path / "cg", {})
    monkeypatch.setattr(machine, "_affinity", lambda: set(range(8)))
    assert machine.physical_cores(sysfs, no_quota) == 4
    monkeypatch.setattr(machine, "_affinity", lambda: {0, 4, 1})  # two siblings and one more core
    assert machine.physical_cores(sysfs, no_quota) == 2
    monkeypatch.setattr(machine, "_affinity", lambda: {0, 1, 2, 3, 9})  # cpu9: no topology, its own core
    assert machine.physical_cores(sysfs, no_quota) == 5
    assert machine.physical_cores(sysfs, _cgroup(tmp_path / "q", {"cpu.max": "300000 100000"})) == 3


def test_llm_threads_follow_the_cores_or_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KGMIND_LLM_THREADS", raising=False)
    monkeypatch.setattr(threads, "physical_cores", lambda: 6)
    assert llm.llm_threads() == 6
    monkeypatch.setenv("KGMIND_LLM_THREADS", "3")
    assert llm.llm_threads() == 3
    for bad in ("0", "two", "-1", "1.5"):
        monkeypatch.setenv("KGMIND_LLM_THREADS", bad)
        with pytest.raises(ValueError, match="KGMIND_LLM_THREADS"):
            llm.llm_threads()


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs Linux CPU affinity")
def test_a_process_pinned_to_one_cpu_gets_one_llm_thread() -> None:
    """The real machine: a process pinned to one CPU (as ``taskset -c 0`` does) counts one."""
    code = (
        "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
        "from kgmind import llm, machine; print(machine.usable_cpus(), llm.llm_threads())"
    )
    env = {k: v for k, v in os.environ.items() if k != "KGMIND_LLM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == ["1", "1"]


def test_cpu_flags_read_the_flags_line(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx512f amx_bf16\nbugs\t\t: spectre_v1\n")
    assert machine.cpu_flags(info) == {"fpu", "avx512f", "amx_bf16"}
    assert machine.cpu_flags(tmp_path / "missing") == set()


_FREED_HEAP = """
import ctypes
from kgmind.machine import release_free_heap

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) // 1024

held = [ctypes.create_string_buffer(64 * 1024) for _ in range(3000)]  # ~190 MB of the C heap
last = held[-1]  # the heap's top stays in use, so freeing the rest trims nothing by itself
del held
freed = rss_mb()
print(release_free_heap(), freed, rss_mb())
"""


@pytest.mark.skipif(not machine._malloc_trim(), reason="no malloc_trim in this C library (glibc only)")
def test_release_free_heap_gives_freed_pages_back() -> None:
    """Freed C-heap pages stay resident until trimmed (a fresh process, so nothing else moves its RSS)."""
    out = subprocess.run(
        [sys.executable, "-c", _FREED_HEAP], capture_output=True, text=True, check=True, env=os.environ
    ).stdout.split()
    assert out[0] == "True"
    freed, trimmed = int(out[1]), int(out[2])
    assert freed > 150 and freed - trimmed > 100, (freed, trimmed)


def test_release_free_heap_without_malloc_trim_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(machine, "_malloc_trim", lambda: None)
    assert machine.release_free_heap() is False
