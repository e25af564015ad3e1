"""The public facade: ``__all__`` is explicit, sorted, and matches what is exported."""

from __future__ import annotations

import memdir


def test_all_is_sorted_and_complete() -> None:
    assert memdir.__all__ == sorted(memdir.__all__)
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
