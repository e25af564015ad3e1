"""How ``memdir --help`` and docs/cli.md read: typer's help, tidied once per command tree.

``HelpGroup`` is the top group's class (``typer.Typer(cls=HelpGroup)``): when typer
builds the click command tree (for a run, ``CliRunner`` or the docs), it tidies every
command and parameter below it:

- A flag shows no type: typer's rich help prints ``<bool>`` beside each one.
- An argument shows its name only (``PATH``, not ``PATH <str>``), and the usage line
  names a required one bare (``memdir get PATH``, not ``{PATH}``).
- A choice shows ``a|b|c`` when that is short; a longer list shows the option's name
  (``--type TYPE``), and the help names the choices unless it already does.
- Help text is reflowed: a line break inside a paragraph becomes a space (rich markup
  keeps a docstring's line breaks, so help broke mid-phrase at the source's width);
  a blank line still separates paragraphs.

Every option and argument also reads its value without pydantic when it can
(``params.plain_runtime_param``). Everything else (panels, colours, the plain formatter
behind docs/cli.md) is typer's.
Click's objects are typed ``Any`` here: typer ships its own copy of click (``typer._click``)
in some versions and uses the click package in others.
"""

from __future__ import annotations

import enum
import inspect
import re
from collections.abc import Iterator
from typing import Any

from typer.core import TyperArgument, TyperGroup, TyperOption

from memdir.cli.params import plain_runtime_param

CHOICES_INLINE_MAX = 24
"""the longest ``a|b|c`` shown as an option's type; past it, the option's name"""
_NAMES = {"install_completion": "SHELL", "show_completion": "SHELL"}  # typer's own options


class HelpGroup(TyperGroup):
    """The ``memdir`` group: typer's, with every command below it tidied (see above)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for command in walk(self):
            tidy(command)

    def get_params(self, ctx: Any) -> list[Any]:
        return _tidied(super().get_params(ctx))

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            if _text_taken_for_an_option(exc):
                said: Any = exc
                where = said.ctx.command_path if said.ctx is not None else "memdir COMMAND"
                said.message = (
                    f"{said.message.rstrip()}; a text that starts with - goes after --: "
                    f"{where} ... -- TEXT"
                )
            raise


def _text_taken_for_an_option(exc: Exception) -> bool:
    """A ``No such option`` for what reads as text, not a mistyped flag: a markdown
    bullet (``memdir update conventions "- Money in cents"``), a number (``-5 degrees``)
    or words with spaces. A typo such as ``--mdoe`` gets click's message as it is."""
    name = getattr(exc, "option_name", None)
    if type(exc).__name__ != "NoSuchOption" or not isinstance(name, str):
        return False
    return " " in name or not name.lstrip("-")[:1].isalpha()


def walk(command: Any) -> Iterator[Any]:
    """``command`` and every command below it."""
    yield command
    for sub in getattr(command, "commands", {}).values():
        yield from walk(sub)


def tidy(command: Any) -> None:
    if command.help:
        command.help = reflow(command.help)
    for param in command.params:
        tidy_param(param)
    if not isinstance(command, HelpGroup):
        # click adds --help on each call of get_params: tidy what it returns
        plain = command.get_params
        command.get_params = lambda ctx: _tidied(plain(ctx))


def _tidied(params: list[Any]) -> list[Any]:
    for param in params:
        tidy_param(param)
    return params


def tidy_param(param: Any) -> None:
    """Give typer's option or argument memdir's display (once: a tidied one is left)."""
    if type(param) is TyperOption:
        param.__class__ = _Option
    elif type(param) is TyperArgument:
        param.__class__ = _Argument
    else:
        return
    choices = _choices(param)
    if choices and not _inline(param, choices):
        help_text = param.help or ""
        if not all(re.search(rf"\b{re.escape(c)}\b", help_text) for c in choices):
            joined = ", ".join(choices)
            param.help = f"{help_text.rstrip()} One of: {joined}.".lstrip()


def reflow(text: str) -> str:
    """``text`` with each paragraph on one line (``\\b`` paragraphs kept as they are)."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        p if p.startswith("\b") else " ".join(line.strip() for line in p.splitlines())
        for p in paragraphs
    )


def _choices(param: Any) -> list[str]:
    kind = getattr(param, "type_descriptor", None)
    if kind is None or not kind.is_choice:
        return []
    return [c.value if isinstance(c, enum.Enum) else str(c) for c in kind.choices or ()]


def _inline(param: Any, choices: list[str]) -> bool:
    return isinstance(param, TyperOption) and len("|".join(choices)) <= CHOICES_INLINE_MAX


class _Option(TyperOption):
    def get_runtime_param(self) -> Any:
        return plain_runtime_param(self) or super().get_runtime_param()

    def display_type_rich(self, ctx: Any) -> str | None:
        if self.is_flag:
            return None  # a flag takes no value
        if self.metavar is None:
            choices = _choices(self)
            if choices:
                inline = _inline(self, choices)
                named = _NAMES.get(self.name or "", (self.name or "value").upper())
                name = "|".join(choices) if inline else named
                return name + ("..." if self.multiple or self.nargs != 1 else "")
        return super().display_type_rich(ctx)


class _Argument(TyperArgument):
    def get_runtime_param(self) -> Any:
        return plain_runtime_param(self) or super().get_runtime_param()

    def display_type_rich(self, ctx: Any) -> str | None:
        return None  # the name (its metavar) says what it is

    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")
