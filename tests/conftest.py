"""Shared test setup.

Its presence puts ``tests/`` on ``sys.path`` (so test modules can import ``entity_fakes``).

kgmind reads its ``KGMIND_*`` variables once per process (:func:`kgmind.settings.get_settings`).
Tests change the environment through ``pytest.MonkeyPatch``; here every ``setenv``,
``delenv`` and ``undo`` is followed by a fresh read, and every test starts with one, so a
test sees the environment it set up and never the one a previous test left.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kgmind.settings import get_settings


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
