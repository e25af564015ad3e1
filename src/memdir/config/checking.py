"""Validating settings: in plain Python when they are valid, through pydantic when not.

Each settings class is a frozen dataclass (a ``Settings``) whose field types carry
their constraints (``Annotated[int, Bound(ge=1)]``, ``Annotated[str, Check(rule)]``) and
whose ``check`` method holds the rules across its fields. Pydantic validates those
very classes (a ``TypeAdapter``): its coercions, its errors. ``build`` first reads the
data strictly, accepting only values of exactly the declared type that meet every
constraint and every rule (the same rules pydantic then applies) and hands anything
else to pydantic. So a valid manifest is read without importing pydantic (the largest
cost of starting memdir: tests/test_startup.py), and a bad one gets pydantic's error.
The two readings agree on every manifest the strict one accepts
(tests/test_config_checking.py).

Rules are pure functions: they may run twice on the same value (strictly, then
through pydantic), and raise ``ValueError`` with the sentence the user reads.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal, TypeVar, Union, get_args, get_origin

S = TypeVar("S", bound="Settings")


class Bound:
    """Bounds on one field, in its type: ``Annotated[int, Bound(ge=1)]``; pydantic applies
    them as its own ``Field(ge=1)`` would (the same checks, the same messages)."""

    KNOWN: ClassVar[frozenset[str]] = frozenset({"ge", "gt", "le", "min_length"})

    def __init__(self, **bounds: float) -> None:
        if not set(bounds) <= self.KNOWN:
            raise TypeError(f"unknown bounds: {sorted(set(bounds) - self.KNOWN)}")
        self.bounds = bounds

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic import Field
        from pydantic_core import core_schema

        schema = handler(typing.Annotated[source, Field(**self.bounds)])  # type: ignore[call-overload]
        if source in (int, float):  # pydantic reads true as 1: observations_max = true kept one
            return core_schema.no_info_before_validator_function(_not_a_bool, schema)
        return schema

    def met_by(self, value: Any) -> bool:
        bounds = self.bounds
        return (
            ("ge" not in bounds or value >= bounds["ge"])
            and ("gt" not in bounds or value > bounds["gt"])
            and ("le" not in bounds or value <= bounds["le"])
            and ("min_length" not in bounds or len(value) >= bounds["min_length"])
        )


def _not_a_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("Input should be a number, not true or false")
    return value


class Check:
    """A rule on one field, in its type: ``Annotated[list[str], Check(rule)]``. ``rule``
    returns the value (or raises ``ValueError``); pydantic runs it after the field's own
    validation, as a field validator."""

    def __init__(self, rule: Callable[[Any], Any]) -> None:
        self.rule = rule

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_after_validator_function(self.rule, handler(source))


class Settings:
    """The base of every settings dataclass: unknown keys are errors, ``check`` runs
    after the fields (as a model validator), and the few pydantic methods callers use."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "forbid"}

    def check(self: S) -> S:
        """Rules across fields: return ``self`` or raise ``ValueError``."""
        return self

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_after_validator_function(lambda v: v.check(), handler(source))

    @classmethod
    def model_validate(cls: type[S], data: Any) -> S:
        """``data`` validated into this class (pydantic's ``ValidationError`` if it is bad)."""
        return build(cls, data)

    def model_copy(self: S, *, update: Mapping[str, Any] | None = None) -> S:
        """A copy with the fields in ``update`` replaced, unvalidated (as pydantic's)."""
        return dataclasses.replace(self, **dict(update or {}))  # type: ignore[type-var]

    def model_dump(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload, no-any-return]


def build(cls: type[S], data: Any) -> S:
    """``data`` (a TOML table) as a ``cls``: strictly when it is valid, else through
    pydantic, which coerces what it can (``"5"`` for an int) or raises its
    ``ValidationError``."""
    try:
        return strict(cls, data)  # type: ignore[no-any-return]
    except _Unsure:
        pass
    from pydantic import TypeAdapter

    adapter = _ADAPTERS.get(cls)
    if adapter is None:
        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter.validate_python(data)  # type: ignore[no-any-return]


_SCALARS = (str, int, float, bool)
_ADAPTERS: dict[type, Any] = {}
_HINTS: dict[type, dict[str, Any]] = {}


class _Unsure(Exception):
    """The strict reading does not accept this: pydantic decides."""


def strict(kind: Any, value: Any) -> Any:
    """``value`` read as ``kind`` if it is exactly that type and meets every constraint and
    rule; ``_Unsure`` otherwise (pydantic may still accept it, coerced, or say why not)."""
    origin = get_origin(kind)
    if origin is typing.Annotated:
        base, *metadata = get_args(kind)
        return _constrained(strict(base, value), metadata)
    if origin is Union or origin is types.UnionType:
        options = get_args(kind)
        if value is None and type(None) in options:
            return None
        real = [option for option in options if option is not type(None)]
        if len(real) > 1 and all(option in _SCALARS for option in real):  # str | int | ...
            if type(value) in real:
                return value
            raise _Unsure
        if len(real) != 1:
            raise _Unsure  # memdir's other unions are all "X | None"
        return strict(real[0], value)
    if origin is Literal:
        if any(type(value) is type(choice) and value == choice for choice in get_args(kind)):
            return value
        raise _Unsure
    if origin is list:
        if type(value) is not list:
            raise _Unsure
        (item,) = get_args(kind)
        return [strict(item, entry) for entry in value]
    if origin is dict:
        if type(value) is not dict:
            raise _Unsure
        key_kind, value_kind = get_args(kind)
        return {strict(key_kind, k): strict(value_kind, v) for k, v in value.items()}
    if kind is float:
        if type(value) is float:
            return value
        if type(value) is int:
            return float(value)  # pydantic's lax float takes an int, as a float
        raise _Unsure
    if kind in (int, str, bool):
        if type(value) is kind:
            return value
        raise _Unsure
    if isinstance(kind, type) and issubclass(kind, Settings) and dataclasses.is_dataclass(kind):
        return _settings(kind, value)
    raise _Unsure


def _settings(cls: type[Settings], value: Any) -> Settings:
    if type(value) is not dict:
        raise _Unsure
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls, include_extras=True)
    fields = {field.name: field for field in dataclasses.fields(cls)}  # type: ignore[arg-type]
    if not set(value) <= set(fields):
        raise _Unsure  # an unknown key
    missing = dataclasses.MISSING
    if any(f.default is missing and f.default_factory is missing and name not in value
           for name, f in fields.items()):  # fmt: skip
        raise _Unsure  # a required key
    made = cls(**{name: strict(hints[name], given) for name, given in value.items()})
    try:
        return made.check()
    except (ValueError, AssertionError) as exc:
        raise _Unsure from exc


def _constrained(value: Any, metadata: list[Any]) -> Any:
    for rule in metadata:
        if isinstance(rule, Check):
            try:
                value = rule.rule(value)
            except (ValueError, AssertionError) as exc:
                raise _Unsure from exc
        elif not (isinstance(rule, Bound) and rule.met_by(value)):
            raise _Unsure  # out of bounds, or metadata this reading does not know
    return value
