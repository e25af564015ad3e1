"""``memdir --help`` without building every command's parameters.

The top help lists each command's name, panel and help, never its options; typer
still turns every parameter of every command into a click option to build the tree
(inspecting ~60 signatures and evaluating their annotations), the largest part of
printing that list. ``listing(app)`` is a copy of the app whose commands keep their
names, docstrings, panels and flags but take no parameters, so the same help prints
from a tree built in a fraction of the time. It serves only a run that prints the top
help or the version (``wants_listing``); a command, its own ``--help`` and shell
completion get the real tree. tests/test_cli.py checks the two print the same help.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Sequence
from typing import Any

import typer

LISTING_ARGS = frozenset({"--help", "--version"})


def wants_listing(args: Sequence[str]) -> bool:
    """True if ``memdir ARGS`` prints the top help or the version, and nothing else (shell
    completion sets ``_<PROG>_COMPLETE`` and completes any command's options)."""
    completing = any(key.startswith("_") and key.endswith("_COMPLETE") for key in os.environ)
    return not completing and all(arg in LISTING_ARGS for arg in args)


def listing(app: typer.Typer) -> typer.Typer:
    """``app`` as its top help shows it: the root's own options, and each command and
    group with its help and panel but without parameters."""
    shown = copy.copy(app)
    shown.registered_commands = [_command(info) for info in app.registered_commands]
    shown.registered_groups = [_group(info) for info in app.registered_groups]
    return shown


def _command(info: Any) -> Any:
    listed = copy.copy(info)
    listed.callback = _bare(info.callback)
    return listed


def _group(info: Any) -> Any:
    listed = copy.copy(info)
    if callable(info.callback):
        listed.callback = _bare(info.callback)
    sub = info.typer_instance
    if sub is not None:
        listed.typer_instance = shown = copy.copy(sub)
        shown.registered_commands = [_command(c) for c in sub.registered_commands]
        shown.registered_groups = [_group(g) for g in sub.registered_groups]
        if sub.registered_callback is not None and callable(sub.registered_callback.callback):
            shown.registered_callback = _command(sub.registered_callback)
    return listed


def _bare(callback: Callable[..., Any]) -> Callable[[], None]:
    """A function that takes nothing, named and documented as ``callback``."""

    def bare() -> None:
        raise RuntimeError("a listed command only shows its help")  # pragma: no cover

    bare.__name__ = callback.__name__
    bare.__qualname__ = callback.__qualname__
    bare.__doc__ = callback.__doc__
    bare.__module__ = callback.__module__
    return bare
