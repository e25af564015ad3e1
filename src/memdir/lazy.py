"""A package's exports, imported on first use (PEP 562 ``__getattr__``).

    __getattr__, __dir__ = lazy_exports(globals(), {"Card": "memdir.files.cards"})

``from package import Card`` and ``package.Card`` work as with an import at the top,
but importing the package costs nothing: a command pays only for what it uses. A
name maps to ``"module"`` (the same name there) or ``"module:attribute"``; once
imported, it is kept in the package's namespace, so the next lookup is a plain one.
The names are also imported under ``if TYPE_CHECKING:``, for type checkers.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    namespace: dict[str, Any], exports: Mapping[str, str], *, submodules: bool = False
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose ``globals()`` is
    ``namespace``. With ``submodules``, a submodule not imported yet is an attribute too
    (``memdir.tools`` after ``import memdir``)."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        where = exports.get(name)
        if where is None:
            wanted = submodules and not name.startswith("_")
            if wanted and importlib.util.find_spec(f"{package}.{name}") is not None:
                return importlib.import_module(f"{package}.{name}")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = where.partition(":")
        value = getattr(importlib.import_module(module), attribute or name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
