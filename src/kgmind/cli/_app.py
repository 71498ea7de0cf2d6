"""The CLI's Typer app class, whose ``--help`` renders boolean options as flags (``--json``, no ``<bool>``).

Typer's rich help prints a type column for every option, ``<bool>`` included, so a
flag such as ``--json`` or ``--help`` reads as if it took a value. The command and
group classes here give every flag an empty metavar before help is drawn; parsing is
untouched, so the flags do what they did. Every ``kgmind`` app is a :class:`KgmindTyper`,
so a new boolean option renders as a flag without anything to remember.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

__all__ = ["FlagCommand", "FlagGroup", "KgmindTyper"]


def _flags_without_metavar(params: list[Any]) -> list[Any]:
    """``params`` with an empty metavar on each flag option (boolean or ``--help``), so help shows no type."""
    for param in params:
        if getattr(param, "is_flag", False) and not getattr(param, "count", False):
            param.metavar = ""
    return params


class FlagCommand(TyperCommand):
    """A Typer command whose flags render in ``--help`` without a ``<bool>`` type."""

    def get_params(self, ctx: Any) -> list[Any]:
        """The command's parameters, ``--help`` included, flags without a metavar."""
        return _flags_without_metavar(super().get_params(ctx))


class FlagGroup(TyperGroup):
    """A Typer group whose own flags (a callback's options, ``--help``) render without a ``<bool>`` type."""

    def get_params(self, ctx: Any) -> list[Any]:
        """The group's parameters, ``--help`` included, flags without a metavar."""
        return _flags_without_metavar(super().get_params(ctx))


class KgmindTyper(typer.Typer):
    """``typer.Typer`` making :class:`FlagGroup` groups and :class:`FlagCommand` commands by default."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", FlagGroup)
        super().__init__(**kwargs)

    def command(self, name: str | None = None, **kwargs: Any) -> Callable[[Any], Any]:
        """``typer.Typer.command`` with :class:`FlagCommand` as the default ``cls``."""
        kwargs.setdefault("cls", FlagCommand)
        return super().command(name, **kwargs)
