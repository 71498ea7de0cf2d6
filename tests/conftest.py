"""Shared test setup.

Its presence puts ``tests/`` on ``sys.path`` (so test modules can import ``entity_fakes``).

kgmind reads its ``KGMIND_*`` variables once per process (:func:`kgmind.settings.get_settings`).
Tests change the environment through ``pytest.MonkeyPatch``; here every ``setenv``,
``delenv`` and ``undo`` is followed by a fresh read, and every test starts with one, so a
test sees the environment it set up and never the one a previous test left.

Hypothesis profiles of the fuzz tests (``tests/reliability/test_fuzz_*.py``): ``ci``, the
default, a seeded sample of 25 cases per test; ``long``, 500 random cases per test, chosen
with ``pytest --hypothesis-profile=long`` or ``HYPOTHESIS_PROFILE=long``; ``--fuzz-counts=FILE``
writes how many cases of each input kind ran and how each ended (JSON).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from kgmind.settings import get_settings

# the autouse fixtures (settings, KGMIND_HOME, hash embeddings) are set once per test and hold for
# every example; each example restores what it wrote itself
_UNCHECKED = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
settings.register_profile(
    "ci", max_examples=25, derandomize=True, deadline=None, database=None, suppress_health_check=_UNCHECKED
)
settings.register_profile(
    "long", max_examples=500, deadline=None, database=None, suppress_health_check=_UNCHECKED
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fuzz-counts",
        default=None,
        metavar="FILE",
        help="write the fuzz tests' cases per input kind and outcome to FILE (JSON)",
    )


def _then_reread(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(self: pytest.MonkeyPatch, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        finally:
            get_settings.cache_clear()

    return wrapper


for _name in ("setenv", "delenv", "undo"):
    setattr(pytest.MonkeyPatch, _name, _then_reread(getattr(pytest.MonkeyPatch, _name)))


@pytest.fixture(autouse=True)
def _fresh_settings() -> Iterator[None]:
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()
