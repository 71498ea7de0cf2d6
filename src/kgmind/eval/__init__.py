"""Evaluation harness: data set loaders, derived gold, metrics, methods side by side, reports.

Importing this package loads no model and opens no store; see :mod:`kgmind.eval.runner`.
"""

from __future__ import annotations

__all__ = ["EvalConfig", "run_eval"]


def __getattr__(name: str) -> object:
    if name == "EvalConfig":
        from kgmind.eval.config import EvalConfig

        return EvalConfig
    if name == "run_eval":
        from kgmind.eval.runner import run_eval

        return run_eval
    raise AttributeError(name)
