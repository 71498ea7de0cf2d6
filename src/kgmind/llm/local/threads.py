"""How many threads llama.cpp runs a local model with: one per usable physical core."""

from __future__ import annotations

from kgmind.machine import physical_cores
from kgmind.settings import get_settings

__all__ = ["llm_threads"]


def llm_threads() -> int:
    """Threads llama.cpp runs a local model with, generating and reading prompts alike.

    ``$KGMIND_LLM_THREADS`` wins. Otherwise llama.cpp's own rule, one thread per physical
    core (hyperthread siblings share a core's vector units), applied to the CPUs this process
    may use (:func:`kgmind.machine.physical_cores`: affinity and cgroup CPU quota).
    llama-cpp-python's defaults count the host's CPUs instead (half of them to generate, all
    to read prompts), so in a container limited to 2 CPUs on a 64-CPU host it would run 64
    threads on 2 CPUs' time. Oversubscribed on the 2-core AMD box (2 physical cores: 2
    threads, as before this rule), 8 generation threads took 45.0 ms per token against 22.4,
    and 16 prompt threads read 151 tokens/s against 164.

    Raises:
        kgmind.settings.SettingsError: ``$KGMIND_LLM_THREADS`` is not a whole number ≥ 1.

    """
    return get_settings().llm_threads or physical_cores()
