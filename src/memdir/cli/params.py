"""Reading a command's parameters without pydantic, for the plain types memdir's use.

Typer (0.2x) coerces every parameter through a pydantic ``TypeAdapter``, built when
the command line is parsed: importing pydantic and building a dozen adapters was the
largest part of a ``memdir save``. ``plain_runtime_param`` (used by the options and
arguments ``helpfmt`` gives every command) reads a ``str``, a flag's ``bool``, an
``int`` or ``float`` in plain digits within its bounds, a choice (``enum``) and a
``Path`` as typer does, with typer's own functions for choices and paths, and a list
of those; anything else, and any value it cannot read, goes to typer's adapter, so an
error reads as before (tests/test_cli_params.py checks both against every parameter
of every command). Without typer's coercion layer (an older typer) nothing changes.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import types
from pathlib import Path
from typing import Any, Union, get_args, get_origin

try:
    from typer import _coercion, _param_types
except ImportError:  # pragma: no cover - a typer without its pydantic coercion layer
    _coercion = _param_types = None  # type: ignore[assignment]

_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")
_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]{1,17})?")


class _Unread(Exception):
    """The plain reading does not take this value: typer's adapter decides."""


def plain_runtime_param(param: Any) -> Any:
    """``param``'s plain coercion (kept on it, as typer keeps its own), or None when its
    type is not one this module reads: typer's then."""
    if param._runtime_param is None and _coercion is not None:
        descriptor = param.type_descriptor
        if readable(descriptor.annotation, descriptor.parameter_info):
            param._runtime_param = _PlainParam(
                parameter_info=descriptor.parameter_info,
                annotation=descriptor.annotation,
                descriptor=descriptor,
            )
    return param._runtime_param


def readable(annotation: Any, info: Any) -> bool:
    """True if the plain reading handles this parameter's type (some values may still go
    to typer's adapter)."""
    if getattr(info, "parser", None) is not None or getattr(info, "click_type", None):
        return False
    leaf = _leaf(annotation)
    if get_origin(leaf) is list:
        (item,) = get_args(leaf)
        return readable(item, info)
    if leaf in (str, bool, int, float):
        return leaf in (str, bool) or not getattr(info, "clamp", False)
    if isinstance(leaf, type) and issubclass(leaf, enum.Enum):
        return True
    return leaf is Path and not getattr(info, "path_type", None)


def _leaf(annotation: Any) -> Any:
    """``X`` for ``X | None``, else ``annotation``."""
    if get_origin(annotation) in (Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        return options[0] if len(options) == 1 else None
    return annotation


if _coercion is not None:

    @dataclasses.dataclass(frozen=True)
    class _PlainParam(_coercion.RuntimeParam):
        descriptor: Any

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            try:
                return read(self.annotation, self.parameter_info, value, param, ctx)
            except _Unread:
                full = _coercion.build_runtime_param(self.descriptor)
                return full._coerce_value(value, param=param, ctx=ctx)


def read(annotation: Any, info: Any, value: Any, param: Any = None, ctx: Any = None) -> Any:
    """``value`` (from the command line, or a default) as typer's adapter would give it;
    ``_Unread`` when this reading is not sure."""
    leaf = _leaf(annotation)
    if get_origin(leaf) is list:
        (item,) = get_args(leaf)
        items = value if isinstance(value, (list, tuple)) else [value]
        return [read(item, info, entry, param, ctx) for entry in items]
    if leaf is str or leaf is bool:
        if type(value) is leaf:
            return value  # a flag's bool, or the text as given
    elif leaf is int or leaf is float:
        return _number(leaf, info, value)
    elif isinstance(leaf, type) and issubclass(leaf, enum.Enum):
        choices = list(leaf)
        try:
            return _param_types.coerce_cli_choice(
                value, choices=choices, case_sensitive=info.case_sensitive, ctx=ctx
            )
        except ValueError as exc:
            raise _Unread from exc
    elif leaf is Path and (isinstance(value, Path) or (type(value) is str and value)):
        path = value if isinstance(value, Path) else Path(value)  # what pydantic makes of it
        return _param_types.coerce_cli_path(path, info, path_type=Path, param=param, ctx=ctx)
    raise _Unread


def _number(kind: type, info: Any, value: Any) -> Any:
    if type(value) is kind:
        number = value
    elif kind is float and type(value) is int:
        number = float(value)  # pydantic's lax float: an int default, such as 900
    elif type(value) is str and (_INT if kind is int else _FLOAT).fullmatch(value):
        number = kind(value)
    else:
        raise _Unread
    low, high = info.min, info.max
    if (low is not None and number < low) or (high is not None and number > high):
        raise _Unread  # out of bounds: typer's adapter says so
    return number
