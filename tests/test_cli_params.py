"""The command line reads its parameters without pydantic (memdir.cli.params), exactly as
typer's own coercion does: checked on every parameter of every command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer._coercion import build_runtime_param

from memdir.cli import app
from memdir.cli.params import _Unread, read, readable
from memdir.cli.reference import commands

SAMPLES: list[Any] = [
    "5", "0", "-1", "007", "1.5", "-0.5", "1e3", " 5", "5 ", "abc", "", "-", "x.md",
    "/nonexistent/folder", ".", "deep", "DEEP", "normal", "fact", "auto", "default",
    "all", "vault", "99999999999999999999", True, False, 0, 10, 900, 1.5, Path("x"),
]  # fmt: skip


def parameters() -> list[tuple[str, Any, Any]]:
    found = []
    for path, command, ctx in commands():
        for param in command.get_params(ctx):
            if hasattr(param, "type_descriptor"):
                found.append((f"{path} {param.name}", param, ctx))
    return found


PARAMETERS = parameters()


def outcome(function: Any, value: Any) -> tuple[str, Any]:
    try:
        value = function(value)
    except _Unread:
        return ("unread", None)
    except (typer.BadParameter, ValueError) as exc:
        return ("error", str(exc))
    return ("value", (type(value), value))


def test_every_command_has_parameters_to_check() -> None:
    names = {name for name, _, _ in PARAMETERS}
    assert {"memdir search query", "memdir search k", "memdir search mode"} <= names
    descriptors = [param.type_descriptor for _, param, _ in PARAMETERS]
    read_plainly = [d for d in descriptors if readable(d.annotation, d.parameter_info)]
    assert len(read_plainly) > 0.9 * len(PARAMETERS)


@pytest.mark.parametrize(("name", "param", "ctx"), PARAMETERS, ids=[p[0] for p in PARAMETERS])
def test_the_plain_reading_agrees_with_typer(name: str, param: Any, ctx: Any) -> None:
    descriptor = param.type_descriptor
    annotation, info = descriptor.annotation, descriptor.parameter_info
    if not readable(annotation, info):
        return
    full = build_runtime_param(descriptor)
    multiple = param.multiple or param.nargs == -1
    values = [(v, "x.md") for v in SAMPLES] if multiple else SAMPLES
    for value in values:
        expected = outcome(lambda v: full._coerce_value(v, param=param, ctx=ctx), value)
        got = outcome(lambda v: read(annotation, info, v, param, ctx), value)
        if got[0] == "unread":
            continue  # typer's adapter reads it (or refuses it), as before
        assert got == expected, f"{name}: {value!r}"


def test_a_command_runs_without_pydantic(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    code = (
        "import sys\n"
        "from memdir.cli import main\n"
        f"sys.argv = ['memdir', 'init', {str(folder)!r}]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "assert 'pydantic' not in sys.modules, 'pydantic was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (folder / "memdir.toml").is_file()


def test_a_bad_value_is_refused_in_typer_s_words(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["search", "x", "-k", "0", "--dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "-k" in result.output and "greater than or equal to 1" in result.output
