"""memdir.ingest.archive: an export's zip read as users download it, or refused with a reason."""

from __future__ import annotations

import json
import stat
import warnings
import zipfile
from pathlib import Path

import pytest

from memdir.ingest import IngestError, detect_format, parse_file
from memdir.ingest import archive as archive_module

EXPORTS = Path(__file__).parent / "data" / "exports"
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000")


def export_zip(tmp_path: Path, kind: str, folder: str = "", name: str = "") -> Path:
    """The zip ChatGPT or claude.ai sends, built from tests/data/exports/<kind>/."""
    path = tmp_path / (name or f"{kind}-export.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted((EXPORTS / kind).iterdir()):
            archive.write(file, folder + file.name)
        if kind == "chatgpt":  # an uploaded image travels with the export
            archive.writestr(folder + "file-Kq81starterjar-IMG_2041.png", PNG)
    return path


def a_zip(tmp_path: Path, members: dict[str, str | bytes], name: str = "x.zip") -> Path:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return path


HELLO = {"author": {"role": "user"}, "content": {"content_type": "text", "parts": ["hello"]}}
CONVERSATION = [{"title": "One", "mapping": {"a": {"parent": None, "message": HELLO}}}]


@pytest.mark.parametrize(("kind", "folder"), [("chatgpt", ""), ("claude", "data-2023-12-05/")])
def test_an_export_zip_reads_as_its_conversations_json(
    tmp_path: Path, kind: str, folder: str
) -> None:
    """At the top (ChatGPT) or in the folder the archive was made from (claude.ai)."""
    plain = parse_file(EXPORTS / kind / "conversations.json")
    path = export_zip(tmp_path, kind, folder)
    assert detect_format(path) == kind
    zipped = parse_file(path)
    assert zipped == plain  # the same conversations, the same left out, the same format
    assert len(zipped.conversations) == 2 and len(zipped.left_out) == 2


def test_shards_are_read_in_order_as_one_list(tmp_path: Path) -> None:
    """Large ChatGPT exports split conversations.json into conversations-000.json, ..."""
    data = json.loads((EXPORTS / "chatgpt" / "conversations.json").read_text())
    path = a_zip(tmp_path, {
        "chat.html": "<html></html>",
        "conversations-001.json": json.dumps(data[2:]),
        "conversations-000.json": json.dumps(data[:2]),
    })  # fmt: skip
    parsed = parse_file(path)
    assert parsed == parse_file(EXPORTS / "chatgpt" / "conversations.json")
    assert [item.position for item in parsed.left_out] == [3, 4]  # counted across the shards


def test_macos_copies_and_deeper_files_are_not_the_export(tmp_path: Path) -> None:
    path = a_zip(tmp_path, {
        "__MACOSX/conversations.json": "junk",
        "__MACOSX/._conversations.json": b"\x00\x05\x16\x07",
        "backup/old/conversations.json": "[]",
        "conversations.json": json.dumps(CONVERSATION),
    })  # fmt: skip
    [conversation] = parse_file(path).conversations
    assert conversation.title == "One"


REFUSALS: list[tuple[str, dict[str, str | bytes], str]] = [
    ("not-an-export", {"chat.html": "<html></html>", "user.json": "{}"},
     "not a ChatGPT or claude.ai export: the archive holds no conversations.json "
     "(it holds chat.html, user.json); an export split in parts keeps it in the first part"),
    ("second-part", {"file_0001.dat": PNG}, "holds no conversations.json"),
    ("parent-path", {"../conversations.json": "[]"},
     "refused: the member '../conversations.json' names a path outside the archive"),
    ("absolute", {"conversations.json": "[]", "/etc/cron.d/x": "x"},
     "'/etc/cron.d/x' names a path"),
    ("drive", {"C:\\Users\\x\\conversations.json": "[]"}, "names a path outside the archive"),
    ("windows-parent", {"a\\..\\..\\x": "x", "conversations.json": "[]"}, "outside the archive"),
    ("two-exports", {"a/conversations.json": "[]", "b/conversations.json": "[]"},
     "the archive holds several exports (a, b): import each alone"),
    ("not-json", {"conversations.json": "<html>"},
     "conversations.json in the archive: not JSON or JSON Lines"),
    ("not-utf8", {"conversations.json": b"\xff\xfe["},
     "conversations.json in the archive is not UTF-8"),
    ("empty", {"conversations.json": ""}, "conversations.json in the archive is empty"),
    ("shard-object", {"conversations-000.json": "{}", "conversations-001.json": "[]"},
     "conversations-000.json in the archive: expected a list of conversations, found an empty"),
    ("malformed-only", {"conversations.json": '[{"title": "X", "mapping": 3}]'},
     "conversations[0].mapping: expected an object, found a number (conversation #1 'X'"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "members", "expected"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_what_is_not_an_export_is_refused(
    tmp_path: Path, case: str, members: dict[str, str | bytes], expected: str
) -> None:
    path = a_zip(tmp_path, members)
    with pytest.raises(IngestError) as caught:
        parse_file(path)
    assert expected in str(caught.value)
    assert str(caught.value).startswith(f"{path}: ")


def test_a_member_that_would_decompress_past_the_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = a_zip(tmp_path, {"conversations.json": json.dumps(CONVERSATION) + " " * 5000})
    assert parse_file(path).conversations  # fits under the real cap
    monkeypatch.setattr(archive_module, "ARCHIVE_MAX_BYTES", 4096)
    with pytest.raises(IngestError, match="decompresses to more than 4096 bytes, the most memdir"):
        parse_file(path)
    shards = a_zip(tmp_path, {"conversations-000.json": " " * 3000 + "[]",
                              "conversations-001.json": " " * 3000 + "[]"}, "s.zip")  # fmt: skip
    with pytest.raises(IngestError, match="conversations-001.json decompresses to more than"):
        parse_file(shards)  # the cap counts every shard read


def _with_info(tmp_path: Path, info: zipfile.ZipInfo, data: str) -> Path:
    path = tmp_path / "odd.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(info, data)
    return path


def test_links_encrypted_and_doubled_members_are_refused(tmp_path: Path) -> None:
    link = zipfile.ZipInfo("conversations.json")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    with pytest.raises(IngestError, match="conversations.json in the archive is a link"):
        parse_file(_with_info(tmp_path, link, "/home/someone/.ssh/id_rsa"))
    locked = _with_info(tmp_path, zipfile.ZipInfo("conversations.json"), "[]")
    data = bytearray(locked.read_bytes())  # zipfile cannot encrypt: set the flag by hand
    for signature, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        data[data.index(signature) + flags_at] |= 0x1
    locked.write_bytes(bytes(data))
    with pytest.raises(IngestError, match="is encrypted: memdir cannot read it"):
        parse_file(locked)
    path = tmp_path / "twice.zip"
    with zipfile.ZipFile(path, "w") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate it is asked to write
        archive.writestr("conversations.json", "[]")
        archive.writestr("conversations.json", json.dumps(CONVERSATION))
    with pytest.raises(IngestError, match="holds conversations.json twice: which one"):
        parse_file(path)


def test_a_damaged_archive_is_refused(tmp_path: Path) -> None:
    whole = export_zip(tmp_path, "chatgpt").read_bytes()
    cut = tmp_path / "cut.zip"
    cut.write_bytes(whole[: len(whole) // 2])  # a download that stopped half way
    with pytest.raises(IngestError, match="not a readable zip archive"):
        parse_file(cut)
    corrupt = tmp_path / "corrupt.zip"
    with zipfile.ZipFile(corrupt, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", json.dumps(CONVERSATION) * 50)
    data = bytearray(corrupt.read_bytes())
    data[60:80] = b"\x00" * 20  # inside the compressed bytes
    corrupt.write_bytes(bytes(data))
    with pytest.raises(IngestError, match="conversations.json in the archive is damaged"):
        parse_file(corrupt)
