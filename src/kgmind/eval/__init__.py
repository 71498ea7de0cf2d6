"""Evaluation harness: data set loaders, derived gold, metrics, methods side by side, reports.

Importing this package loads no model and opens no store; see :mod:`kgmind.eval.runner`.
"""

from __future__ import annotations

__all__ = ["EvalConfig", "run_eval"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from kgmind.eval import runner

        return getattr(runner, name)
    raise AttributeError(name)
