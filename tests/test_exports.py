"""The public facade: ``__all__`` is explicit, sorted, and matches what is exported.

``import memdir`` imports its names on first use (PEP 562), so each test that looks at
the module's namespace asks for every name first."""

from __future__ import annotations

import subprocess
import sys

import memdir


def test_every_name_in_all_resolves_in_a_fresh_process() -> None:
    names = [name for name in memdir.__all__ if name != "__version__"]
    code = (
        f"from memdir import {', '.join(names)}\n"
        "import memdir\n"
        "assert all(getattr(memdir, n) is not None for n in memdir.__all__)\n"
        "star = {}\n"
        "exec('from memdir import *', star)\n"
        "assert set(memdir.__all__) <= set(star), set(memdir.__all__) - set(star)\n"
        "assert set(memdir.__all__) <= set(dir(memdir))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_submodule_not_yet_imported_is_an_attribute_too() -> None:
    code = "import memdir, sys\nassert 'memdir.tools' not in sys.modules\nassert memdir.tools.Tools"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        memdir.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("memdir.no_such_name resolved")


def test_all_is_sorted_and_complete() -> None:
    assert memdir.__all__ == sorted(memdir.__all__)
    for name in memdir.__all__:
        getattr(memdir, name)
    public = {name for name in vars(memdir) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(memdir, name)).__name__ == "module"}
    assert set(memdir.__all__) - {"__version__"} == public - modules


def test_every_exported_error_derives_from_memdir_error() -> None:
    errors = [getattr(memdir, name) for name in memdir.__all__ if name.endswith("Error")]
    errors += [memdir.NotAMemoryFolder, memdir.LayerNotConfigured, memdir.LockTimeout]
    errors += [memdir.WriteRefused]
    for error in errors:
        assert issubclass(error, memdir.MemdirError), error
    assert not issubclass(memdir.MemdirError, MemoryError)


def test_open_is_the_memory_opener() -> None:
    assert memdir.open.__name__ == "open_memory"
    assert memdir.init.__name__ == "init_folder"
