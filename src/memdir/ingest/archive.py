"""Reading an export archive, the zip ChatGPT and claude.ai send, without extracting it.

Both hold ``conversations.json`` beside files memdir does not read (ChatGPT:
``chat.html``, ``user.json``, ``message_feedback.json``,
``shared_conversations.json``, attachments; claude.ai: ``users.json``,
``projects.json``). Large ChatGPT exports shard it as ``conversations-000.json``,
``conversations-001.json``...: the shards are read in order, one list. The file
is looked for at the top, or in the one folder the archive was made from
(``data-2024-05-01/conversations.json``); ``__MACOSX`` copies are never it.

Nothing is written to disk, and the archive is refused whole, with a reason,
when it is not an export (no conversations file, or several exports), when a
member's name could point outside it (absolute, ``..``, a drive letter) since an
export never has one, when the conversations are encrypted or a link, or when
they would decompress past ``ARCHIVE_MAX_BYTES`` (counted while reading, so a
size the archive lies about changes nothing).
"""

from __future__ import annotations

import re
import stat
import zipfile
import zlib
from collections import Counter
from pathlib import Path, PurePosixPath

from memdir.ingest.model import IngestError

ARCHIVE_MAX_BYTES = 1 << 30
"""The most memdir decompresses from an archive (1 GiB): far above the largest
exports seen, far below what a zip bomb would make."""
_CHUNK = 1 << 20
_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip's first member, or an empty zip
_NAME_RE = re.compile(r"^conversations(?:-(\d+))?\.json$")
_DRIVE_RE = re.compile(r"^[A-Za-z]:")


def is_archive(path: Path) -> bool:
    """True if ``path`` starts as a zip archive does (a name ending in .zip is not asked)."""
    try:
        with path.open("rb") as handle:
            return handle.read(4) in _MAGIC
    except OSError:
        return False


def read_conversations(path: Path) -> list[tuple[str, str]]:
    """``(member name, its text)`` for the archive's conversations file, or each shard."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            for info in members:
                _check_name(info.filename)
            chosen = _choose(members)
            budget = ARCHIVE_MAX_BYTES
            texts = []
            for info in chosen:
                data = _read(archive, info, budget)
                budget -= len(data)
                texts.append((info.filename, _decode(info.filename, data)))
            return texts
    except zipfile.BadZipFile as err:
        raise IngestError(f"not a readable zip archive: {err}") from None
    except OSError as err:
        raise IngestError(f"cannot read the archive: {err.strerror or err}") from None


def _check_name(name: str) -> None:
    parts = name.replace("\\", "/").split("/")
    unsafe = (
        "\x00" in name
        or name.startswith(("/", "\\"))
        or _DRIVE_RE.match(name) is not None
        or ".." in parts
    )
    if unsafe:
        raise IngestError(
            f"refused: the member {name!r} names a path outside the archive (absolute, "
            "'..' or a drive); an export never holds one, so this archive is not one"
        )


def _choose(members: list[zipfile.ZipInfo]) -> list[zipfile.ZipInfo]:
    """The conversations file, or its shards in order; IngestError if there is none."""
    found: dict[str, list[tuple[int, zipfile.ZipInfo]]] = {}
    for info in members:
        path = PurePosixPath(info.filename.replace("\\", "/"))
        match = _NAME_RE.match(path.name)
        if info.is_dir() or match is None or "__MACOSX" in path.parts or len(path.parts) > 2:
            continue
        shard = -1 if match.group(1) is None else int(match.group(1))
        found.setdefault(str(path.parent), []).append((shard, info))
    if not found:
        names = ", ".join(sorted(info.filename for info in members)[:8]) or "nothing"
        raise IngestError(
            "not a ChatGPT or claude.ai export: the archive holds no conversations.json "
            f"(it holds {names}{', ...' if len(members) > 8 else ''}); an export split in "
            "parts keeps it in the first part"
        )
    folder = "." if "." in found else None
    if folder is None:
        if len(found) > 1:
            folders = ", ".join(sorted(found))
            raise IngestError(f"the archive holds several exports ({folders}): import each alone")
        folder = next(iter(found))
    files = sorted(found[folder], key=lambda pair: pair[0])
    twice = [name for name, n in Counter(info.filename for _, info in files).items() if n > 1]
    if twice:
        raise IngestError(f"the archive holds {twice[0]} twice: which one is the export?")
    whole = [info for shard, info in files if shard < 0]
    chosen = whole or [info for _, info in files]  # conversations.json, else its shards
    for info in chosen:
        if stat.S_ISLNK(info.external_attr >> 16):
            raise IngestError(f"refused: {info.filename} in the archive is a link, not a file")
        if info.flag_bits & 0x1:
            raise IngestError(f"{info.filename} in the archive is encrypted: memdir cannot read it")
    return chosen


def _read(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int) -> bytes:
    too_big = IngestError(
        f"refused: {info.filename} decompresses to more than {_size(ARCHIVE_MAX_BYTES)}, "
        "the most memdir reads from an archive (a zip bomb would be endless); extract it "
        "and import the file itself"
    )
    if info.file_size > budget:
        raise too_big
    chunks, total = [], 0
    try:
        with archive.open(info) as member:
            while chunk := member.read(_CHUNK):
                total += len(chunk)
                if total > budget:  # the declared size lied: stop at the budget
                    raise too_big
                chunks.append(chunk)
    except NotImplementedError as err:
        raise IngestError(f"{info.filename} in the archive: {err}") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError) as err:  # CRC, truncation
        raise IngestError(f"{info.filename} in the archive is damaged: {err}") from None
    return b"".join(chunks)


def _size(count: int) -> str:
    return f"{count >> 20} MiB" if count >= 1 << 20 else f"{count} bytes"


def _decode(name: str, data: bytes) -> str:
    if not data.strip():
        raise IngestError(f"{name} in the archive is empty")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise IngestError(f"{name} in the archive is not UTF-8 text (byte {err.start})") from None
